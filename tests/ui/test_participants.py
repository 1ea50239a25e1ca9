"""Participants, speaker names in Messages, message filters, show in context, working memory, thread metadata filter.

collab.db (written by real Mastra) holds four speakers in `<turn>` tags, one named
"Siobhán O'Brien & <Co>" with author_id `u_o"brien` (escaped in the tag). Names must be decoded and
shown literally: never as markup. Filter results are checked against Mastra's recall semantics
(studio.store.history, itself checked against Mastra's oracles).
"""

from __future__ import annotations

import collections
import html
import json
import re
import uuid

import libsql
from PySide6.QtCore import Qt

from studio.app.messages import AGENT, UNTAGGED, MessageFilters
from studio.engine.speakers import thread_speakers
from studio.store import open_store
from studio.store.history import list_threads, recall
from studio.ui.models.messages import MessageColumn, MessageTableModel
from studio.ui.models.participants import AnomalyModel, ParticipantColumn, ParticipantModel
from studio.ui.models.roles import ID_ROLE
from tests.conftest import load_oracle
from tests.mastra_facts import raw_messages

OBRIEN = "Siobhán O'Brien & <Co>"
MARKUP_NAME = "<b>Eve</b> & <i>Co</i>"
MARKUP_BODY = "<script>alert(1)</script> <b>not bold</b> &amp;"


def esc(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def add_message(path, thread_id: str, role: str, text: str, *, metadata: dict | None = None) -> str:
    """Append a message to THREAD_ID through a read-write connection (as another process would); return its id."""
    conn = libsql.connect(str(path))
    resource, created = conn.execute('SELECT "resourceId", MAX("createdAt") FROM mastra_messages WHERE thread_id = ?',
                                     (thread_id,)).fetchall()[0]
    msg_id = str(uuid.uuid4())
    content = {"format": 2, "parts": [{"type": "text", "text": text}], "content": text}
    if metadata is not None:
        content["metadata"] = metadata
    conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                 "VALUES (?, ?, ?, ?, 'v2', ?, ?)",
                 (msg_id, thread_id, json.dumps(content), role, created[:-4] + "999Z", resource))
    conn.commit()
    conn.close()
    return msg_id


def raw_speakers(path, thread_id: str) -> tuple[collections.Counter, collections.Counter, int]:
    """Return (messages per role, user messages per `<turn author_id>`, messages) of THREAD_ID's raw rows."""
    messages = raw_messages(path, thread_id)
    roles = collections.Counter(m["role"] for m in messages)
    authors = collections.Counter()
    for m in messages:
        text = "".join(p.get("text") or "" for p in m["parts"] if p.get("type") == "text")
        found = re.match(r'\s*<turn author_id="([^"]*)"', text)
        if m["role"] == "user" and found:
            authors[html.unescape(found.group(1))] += 1
    return roles, authors, len(messages)


def load_all(model, runner) -> None:
    runner.wait_idle()
    while model.canFetchMore():
        model.fetchMore()
        runner.wait_idle()


def test_participants_of_collab(studio, studio_ctx, fixture_db):
    path = fixture_db("collab")
    window = studio(path, thread_id="doc_42", tab="participants")
    tab = window.thread_view.participants_tab
    studio_ctx.runner.wait_idle()
    model = tab.model
    rows = [(model.index(r, ParticipantColumn.NAME).data(), model.index(r, ParticipantColumn.ROLE).data(),
             model.index(r, ParticipantColumn.AUTHOR_ID).data(), model.index(r, ParticipantColumn.MESSAGES).data())
            for r in range(model.rowCount())]
    _roles, authors, _total = raw_speakers(path, "doc_42")
    assert rows == [("Alice", "editor", "u_alice", str(authors["u_alice"])), ("Bob", "reviewer", "u_bob",
                    str(authors["u_bob"])), (OBRIEN, "approver", 'u_o"brien', str(authors['u_o"brien'])),
                    ("李小龍", "editor", "u_李", str(authors["u_李"]))]
    per_message = load_oracle("collab")["tokens"]["doc_42"]["perMessage"]
    report = tab.report
    for r, sp in enumerate(report.speakers):
        mine = [mid for mid, key in report.by_message.items() if key == sp.key]
        assert model.index(r, ParticipantColumn.TOKENS).data() == f"{sum(per_message[m] for m in mine):,}"
    assert tab.summary.textFormat() == Qt.TextFormat.PlainText
    assert tab.summary.text().startswith(f"4 participants · {sum(authors.values())} tagged messages · 0 untagged")
    assert tab.anomaly_model.rowCount() == 0

    # The speaker filter offers the same participants.
    combo = window.thread_view.messages_tab.speaker_combo
    assert [combo.itemData(i) for i in range(combo.count())] == [None, "u_alice", "u_bob", 'u_o"brien', "u_李", AGENT]
    obrien = authors['u_o"brien']
    assert combo.itemText(3) == f"{OBRIEN} (approver) · {obrien}"


def test_messages_show_speaker_and_text_without_tags_raw_on_request(studio, studio_ctx, fixture_db):
    path = fixture_db("collab")
    window = studio(path, thread_id="doc_42", tab="messages")
    tab = window.thread_view.messages_tab
    model = tab.model
    load_all(model, studio_ctx.runner)
    with open_store(path) as store:
        messages = store.list_messages("doc_42")
    row = next(i for i, m in enumerate(messages) if "u_o&quot;brien" in m.text)
    assert model.index(row, MessageColumn.SPEAKER).data() == f"{OBRIEN} (approver)"
    assert model.index(row, MessageColumn.ROLE).data() == "user"
    shown = model.index(row, MessageColumn.TEXT).data()
    assert "<turn" not in shown and shown.startswith("Approved, pending legal review.")
    # The assistant's reply has no speaker; a narrow table folds Role into the Speaker column ("Who").
    folded = tab.view.isColumnHidden(MessageColumn.ROLE)
    assert model.index(row + 1, MessageColumn.SPEAKER).data() == ("assistant" if folded else "")
    assert model.speaker_text(row + 1) == ""
    tab.select_row(row)
    assert tab.text_view.toPlainText().startswith("Approved, pending legal review.")
    assert f"user · {OBRIEN} (approver) · author_id u_o\"brien" in tab.header.text()
    assert tab.header.textFormat() == Qt.TextFormat.PlainText

    tab.raw_check.setChecked(True)
    assert model.index(row, MessageColumn.TEXT).data().startswith('<turn author_id="u_o&quot;brien" author_name="Siob')
    assert tab.text_view.toPlainText() == messages[row].text
    tab.raw_check.setChecked(False)
    assert "<turn" not in tab.text_view.toPlainText()


def test_markup_in_tag_text_shows_literally(studio, studio_ctx, fixture_db):
    path = fixture_db("collab")
    text = (f'<turn author_id="u_eve" author_name="{esc(MARKUP_NAME)}" functional_role="&lt;u&gt;owner&lt;/u&gt;">\n'
            f"{MARKUP_BODY}\n</turn>")
    msg_id = add_message(path, "room_7", "user", text)
    window = studio(path, thread_id="room_7", tab="participants")
    studio_ctx.runner.wait_idle()
    participants = window.thread_view.participants_tab.model
    last = participants.rowCount() - 1
    assert participants.index(last, ParticipantColumn.NAME).data() == MARKUP_NAME
    assert participants.index(last, ParticipantColumn.ROLE).data() == "<u>owner</u>"

    window.thread_view.set_tab("messages")
    tab = window.thread_view.messages_tab
    load_all(tab.model, studio_ctx.runner)
    row = tab.model.row_of(msg_id)
    assert tab.model.index(row, MessageColumn.SPEAKER).data() == f"{MARKUP_NAME} (<u>owner</u>)"
    assert tab.model.index(row, MessageColumn.TEXT).data() == MARKUP_BODY
    tab.select_row(row)
    assert tab.text_view.toPlainText() == MARKUP_BODY              # a QPlainTextEdit: never rich text
    assert MARKUP_NAME in tab.header.text() and tab.header.textFormat() == Qt.TextFormat.PlainText
    # Drawn as the literal characters, not as bold "Eve".
    assert tab.header.sizeHint().width() >= tab.header.fontMetrics().horizontalAdvance(MARKUP_NAME)
    index = [tab.speaker_combo.itemData(i) for i in range(tab.speaker_combo.count())].index("u_eve")
    assert tab.speaker_combo.itemText(index) == f"{MARKUP_NAME} (<u>owner</u>) · 1"


def test_anomalies_are_listed_and_lead_to_their_message(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("collab")
    renamed = add_message(path, "room_7", "user",
                          '<turn author_id="u_bob" author_name="Robert" functional_role="reviewer">\nhi\n</turn>')
    open_tag = add_message(path, "room_7", "assistant", 'Quoting: <turn author_id="u_x">unterminated')
    window = studio(path, thread_id="room_7", tab="participants")
    tab = window.thread_view.participants_tab
    studio_ctx.runner.wait_idle()
    kinds = {(a.kind, a.message_id) for a in tab.report.anomalies}
    assert ("several_names", renamed) in kinds
    assert {("tag_in_non_user_message", open_tag), ("unterminated_tag", open_tag)} <= kinds
    problems = [tab.anomaly_model.index(r, 0).data() for r in range(tab.anomaly_model.rowCount())]
    assert "One author_id, several names: author_id u_bob appears under 2 names: Bob, Robert" in problems

    row = next(r for r in range(tab.anomaly_model.rowCount()) if tab.anomaly_model.anomaly(r).message_id == open_tag)
    with qtbot.waitSignal(window.thread_view.messages_tab.context_shown, timeout=10000) as blocker:
        tab.anomaly_view.activated.emit(tab.anomaly_model.index(row, 0))
    assert blocker.args == [open_tag]
    assert window.thread_view.current_tab() == "messages"
    messages = window.thread_view.messages_tab
    assert messages.view.currentIndex().data(ID_ROLE) == open_tag


def test_speaker_filter_from_the_participants_tab(studio, studio_ctx, fixture_db):
    path = fixture_db("collab")
    window = studio(path, thread_id="doc_42", tab="participants")
    studio_ctx.runner.wait_idle()
    part = window.thread_view.participants_tab
    bob = next(r for r in range(part.model.rowCount()) if part.model.speaker(r).key == "u_bob")
    part.view.activated.emit(part.model.index(bob, 0))
    tab = window.thread_view.messages_tab
    load_all(tab.model, studio_ctx.runner)
    assert window.thread_view.current_tab() == "messages"
    ids = [tab.model.index(r, 0).data(ID_ROLE) for r in range(tab.model.rowCount())]
    roles, authors, total = raw_speakers(path, "doc_42")
    bobs = authors["u_bob"]
    assert sorted(ids) == sorted(m for m, k in part.report.by_message.items() if k == "u_bob") and len(ids) == bobs
    assert tab.summary.text().startswith(f"{bobs} messages match the filters")

    tab.filter_by_speaker(AGENT)
    load_all(tab.model, studio_ctx.runner)
    agent = roles["assistant"]
    assert tab.model.rowCount() == agent and {tab.model.index(r, MessageColumn.ROLE).data()
                                              for r in range(agent)} == {"assistant"}
    tab.filter_by_speaker(UNTAGGED)
    load_all(tab.model, studio_ctx.runner)
    assert tab.model.rowCount() == 0
    tab.clear_filters()
    load_all(tab.model, studio_ctx.runner)
    assert tab.model.rowCount() == total and not tab.model.filtered


def test_date_and_metadata_filters_match_recall(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path, thread_id="support-meta", tab="messages")
    tab = window.thread_view.messages_tab
    tab.from_edit.setText("2026-03-02T10:00:00.000Z")
    tab.to_edit.setText("2026-03-05")                   # a date alone: the whole day, inclusive
    tab.apply_filters()
    load_all(tab.model, studio_ctx.runner)
    with open_store(path) as store:
        expected = recall(store, "support-meta", per_page=False, filter={"date_range": {
            "start": "2026-03-02T10:00:00.000Z", "end": "2026-03-05T23:59:59.999Z"}}).message_ids
        billing = recall(store, "support-meta", per_page=False,
                         filter={"metadata": {"category": "billing", "archivedAt": None}}).message_ids
    got = [tab.model.index(r, 0).data(ID_ROLE) for r in range(tab.model.rowCount())]
    assert got == expected == ["meta-msg-1", "meta-msg-2", "meta-msg-3", "meta-msg-4"]

    tab.from_edit.clear()
    tab.to_edit.clear()
    tab.metadata_edit.setText("category=billing, archivedAt=null")
    tab.apply_filters()
    load_all(tab.model, studio_ctx.runner)
    assert [tab.model.index(r, 0).data(ID_ROLE) for r in range(tab.model.rowCount())] == billing == [
        "meta-msg-0", "meta-msg-5"]

    tab.metadata_edit.setText("bad-key=1")
    tab.apply_filters()
    assert not tab.filter_error.isHidden() and "bad-key" in tab.filter_error.text()
    assert tab.model.rowCount() == 2                     # a bad condition is shown, not applied
    tab.metadata_edit.setText("")
    tab.to_edit.setText("not a date")
    tab.apply_filters()
    assert "not a date" in tab.filter_error.text()

    tab.to_edit.clear()
    tab.text_edit.setText("SECOND")                      # text filter: case-insensitive
    tab.apply_filters()
    load_all(tab.model, studio_ctx.runner)
    assert tab.filter_error.isHidden()
    with open_store(path) as store:
        hits = [m.id for m in store.list_messages("support-meta") if "second" in m.text.casefold()]
    assert [tab.model.index(r, 0).data(ID_ROLE) for r in range(tab.model.rowCount())] == hits


def test_show_in_context_clears_filters_and_selects_the_message(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="messages")
    tab = window.thread_view.messages_tab
    tab.model._page_size = 10
    with open_store(path) as store:
        messages = store.list_messages("support-1")
    target = messages[44]
    tab.text_edit.setText(target.text[:40])
    tab.apply_filters()
    load_all(tab.model, studio_ctx.runner)
    row = tab.model.row_of(target.id)
    assert row >= 0 and tab.model.rowCount() < 57
    tab.select_row(row)
    assert tab.context_button.isEnabled()
    with qtbot.waitSignal(tab.context_shown, timeout=10000):
        tab.context_button.click()
    studio_ctx.runner.wait_idle()
    assert not tab.model.filtered and tab.text_edit.text() == ""
    assert tab.view.currentIndex().row() == 44 and tab.view.currentIndex().data(ID_ROLE) == target.id
    assert tab.model.rowCount() < 57                     # rows up to it were read, not the whole thread


def test_working_memory_tab_says_which_applies(studio, studio_ctx, fixture_db):
    path = fixture_db("collab")
    window = studio(path, thread_id="doc_42", tab="working-memory")
    studio_ctx.runner.wait_idle()
    wm = window.thread_view.working_memory_tab
    with open_store(path) as store:
        stored = store.get_thread("doc_42").metadata["workingMemory"]
    assert wm.thread_text.toPlainText() == stored and "**Alice**" in stored   # markdown as plain text
    assert wm.info.applies == "thread" and "Thread-scoped" in wm.explanation.text()
    assert "(applies)" in wm.thread_heading.text()
    assert wm.resource_text.toPlainText().startswith("(none stored")

    window.select_thread("room_7")
    studio_ctx.runner.wait_idle()
    assert wm.info.applies == "none" and wm.thread_text.toPlainText() == "(none stored)"


def test_working_memory_of_a_resource(studio, studio_ctx, fixture_db):
    path = fixture_db("collab")
    conn = libsql.connect(str(path))
    conn.execute('INSERT INTO mastra_resources (id, "workingMemory", metadata, "createdAt", "updatedAt") '
                 "VALUES ('room_7', '# Room\n- <b>shared</b>', NULL, '2026-01-01T00:00:00.000Z', "
                 "'2026-01-01T00:00:00.000Z')")
    conn.commit()
    conn.close()
    window = studio(path, thread_id="room_7", tab="working-memory")
    studio_ctx.runner.wait_idle()
    wm = window.thread_view.working_memory_tab
    assert wm.info.applies == "resource" and wm.resource_text.toPlainText() == "# Room\n- <b>shared</b>"
    assert "(applies)" in wm.resource_heading.text() and "default" in wm.explanation.text()


def test_thread_list_metadata_filter(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path)
    pane = window.thread_list
    pane.metadata_edit.setText("category=billing, priority=2")
    pane.apply_metadata_filter()
    studio_ctx.runner.wait_idle()
    with open_store(path) as store:
        expected = set(list_threads(store, filter={"metadata": {"category": "billing", "priority": 2}},
                                    per_page=False).thread_ids)
    shown = {r.thread.id for r in window.thread_model.visible_rows()}
    assert shown == expected == {"support-1"}
    assert window.current_thread_id == "support-1"
    assert "matching the metadata (1)" in pane.heading.text()

    window.resources_view.setCurrentIndex(window.resource_model.index(window.resource_model.row_of("user-bob"), 0))
    assert window.thread_model.total_rows == 0           # resource AND metadata
    window.resources_view.setCurrentIndex(window.resource_model.index(0, 0))

    pane.metadata_edit.setText("__proto__=1")
    pane.apply_metadata_filter()
    assert not pane.metadata_error.isHidden() and "reserved" in pane.metadata_error.text()
    pane.metadata_edit.setText("")
    pane.apply_metadata_filter()
    assert window.thread_model.total_rows == 6 and window.thread_model.id_filter is None


def test_models_pass_the_model_tester(qtmodeltester, studio_ctx, fixture_db):
    path = fixture_db("collab")
    with open_store(path) as store:
        report = thread_speakers(store, "doc_42")
    participants = ParticipantModel()
    participants.set_report(report)
    qtmodeltester.check(participants)
    anomalies = AnomalyModel()
    anomalies.set_report(report)
    qtmodeltester.check(anomalies)

    studio_ctx.runner.open_store(str(path))
    studio_ctx.runner.wait_idle()
    model = MessageTableModel(studio_ctx.runner, page_size=5)
    model.set_thread("doc_42", MessageFilters(speaker="u_alice"))
    studio_ctx.runner.wait_idle()
    qtmodeltester.check(model)
    load_all(model, studio_ctx.runner)
    _roles, authors, total = raw_speakers(path, "doc_42")
    assert model.rowCount() == model.total == authors["u_alice"] and model.scanned == total
    qtmodeltester.check(model)


def test_big_databases_filter_and_list_speakers_in_the_helper_process(studio, studio_ctx, fixture_db, monkeypatch):
    from studio.ui.widgets import window_loading

    monkeypatch.setattr(window_loading, "HELPER_MIN_MESSAGES", 0)
    window = studio(fixture_db("collab"), thread_id="doc_42", tab="messages")
    assert window.uses_helper and studio_ctx.runner.helper.pid is not None
    part = window.thread_view.participants_tab
    _roles, authors, _total = raw_speakers(window.database_path, "doc_42")
    assert part.use_helper and [s.messages for s in part.report.speakers] == [
        authors[k] for k in ("u_alice", "u_bob", 'u_o"brien', "u_李")]
    tab = window.thread_view.messages_tab
    assert tab.model.use_helper
    tab.filter_by_speaker('u_o"brien')
    load_all(tab.model, studio_ctx.runner)
    assert [tab.model.index(r, MessageColumn.SPEAKER).data() for r in range(tab.model.rowCount())] == [
        f"{OBRIEN} (approver)"] * 3

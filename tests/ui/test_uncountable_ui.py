"""A thread holding a message Mastra cannot count, in the studio: ⚠ in the thread list and the Overview, the
timeline up to the message with the reason, and no What-if replay (tests/uncountable_db.py)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from studio.ui.models.roles import ID_ROLE
from studio.ui.models.threads import ThreadColumn
from tests.uncountable_db import MESSAGE_ID, THREAD, make_uncountable_db

SENTENCE_START = f"Mastra cannot count the tokens of message {MESSAGE_ID}"


def test_thread_list_marks_the_thread_and_says_why(studio, studio_ctx, tmp_path, qtbot):
    window = studio(make_uncountable_db(tmp_path / "u"))
    model = window.thread_model
    qtbot.waitUntil(lambda: model.statuses_done, timeout=20000)
    model.fetch_all()
    rows = {model.index(r, 0).data(ID_ROLE): r for r in range(model.rowCount())}
    row = rows[THREAD]
    title = model.index(row, ThreadColumn.TITLE)
    assert title.data() == "⚠ Postgres indexing"
    assert SENTENCE_START in title.data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(row, ThreadColumn.OBSERVATION).data() == "⚠"
    assert SENTENCE_START in model.index(row, ThreadColumn.OBSERVATION).data(Qt.ItemDataRole.ToolTipRole)
    others = [r for t, r in rows.items() if t != THREAD]
    assert all(not model.index(r, ThreadColumn.TITLE).data().startswith("⚠") for r in others)


def test_overview_lists_the_thread_with_a_mark_instead_of_a_point(studio, studio_ctx, tmp_path, qtbot):
    window = studio(make_uncountable_db(tmp_path / "u"))
    overview = window.dialogs.show_overview()
    qtbot.waitUntil(lambda: overview.finished, timeout=20000)
    assert studio_ctx.runner.wait_idle()
    assert THREAD not in {e.thread.id for e in overview.entries}
    assert set(overview.uncountable) == {THREAD}
    assert overview.uncountable_label.isVisible()
    assert overview.uncountable_label.text().startswith(f"⚠ {THREAD} “Postgres indexing” (not drawn): {SENTENCE_START}")
    assert "⚠ 1 Mastra cannot count (not drawn)" in overview.summary.text()


def test_timeline_stops_before_the_message_says_why_and_offers_no_whatif(studio, studio_ctx, tmp_path):
    window = studio(make_uncountable_db(tmp_path / "u"), thread_id=THREAD, tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    assert tab.timeline is not None and tab.timeline.thread_id == THREAD
    assert tab.timeline.uncountable is not None and tab.timeline.uncountable.message_id == MESSAGE_ID
    assert MESSAGE_ID not in {m.id for m in tab.timeline.messages}
    assert tab.summary.text().startswith(f"⚠ The series ends here: {SENTENCE_START}")
    assert not tab.whatif_button.isEnabled() and not tab.whatif_button.isChecked()
    assert f"No what-if replay exists for thread {THREAD}: {SENTENCE_START}" in tab.whatif_button.toolTip()


def test_messages_tab_marks_the_message_s_estimate_and_says_why(studio, studio_ctx, tmp_path):
    """Thread ▸ Messages: the message Mastra cannot count shows ⚠ in its estimate cell (not a blank dash) with the
    sentence in the tooltip, as the thread list does; the detail header says it too; every other message has its
    number (each is counted alone, as Mastra's TokenCounter counts one message)."""
    from studio.ui.models.messages import MessageColumn

    window = studio(make_uncountable_db(tmp_path / "u"), thread_id=THREAD, tab="messages")
    tab = window.thread_view.messages_tab
    model = tab.model
    while model.canFetchMore():
        model.fetchMore()
        assert studio_ctx.runner.wait_idle()
    rows = {model.index(r, 0).data(ID_ROLE): r for r in range(model.rowCount())}
    row = rows[MESSAGE_ID]
    cell = model.index(row, MessageColumn.ESTIMATE)
    assert cell.data() == "⚠"
    assert f"⚠ {SENTENCE_START}" in cell.data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(row, MessageColumn.EXACT).data()[0].isdigit()   # the exact o200k count is still there
    others = [model.index(r, MessageColumn.ESTIMATE) for m, r in rows.items() if m != MESSAGE_ID]
    assert others and all(c.data()[0].isdigit() and c.data(Qt.ItemDataRole.ToolTipRole) is None for c in others)
    tab.select_row(row)
    assert "⚠ no Mastra estimate" in tab.header.text() and SENTENCE_START in tab.header.text()

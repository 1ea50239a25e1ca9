"""The Trace tab, the search boxes on the OM and History tabs, and the Turn context tab (offscreen)."""

from __future__ import annotations

from studio.engine.trace import trace_fact
from studio.store import open_store
from tests.conftest import load_oracle
from tests.engine import trace_db as T
from tests.engine import trace_facts as F
from tests.mastra_facts import om_rows, raw_messages, sync_turns, turn_at


def test_search_box_traces_and_a_dropped_step_opens_history_on_the_removed_line(studio, fixture_db, studio_ctx):
    db = T.build_trace_db(fixture_db("history"))
    window = studio(db, thread_id=T.THREAD, tab="observations")
    view = window.thread_view
    view.om_tab.trace_box.setText("teal")
    view.om_tab.trace_box.returnPressed.emit()
    assert studio_ctx.runner.wait_idle()
    assert view.current_tab() == "trace"
    panel = view.trace_panel
    assert panel.result is not None and [ll.text for ll in panel.result.lifelines] == [T.TEAL_0]
    life_item = panel.tree.topLevelItem(0)
    texts = [life_item.child(i).text(0) for i in range(life_item.childCount())]
    assert texts[0].startswith("Observed from 3 message(s) (observation markers, cycle c1)")
    assert "dropped by its reflection" in texts[-1] and T.MODELS[2] in texts[-1]
    # The dropped step opens generation 2's diff with generation 1's line 1 (the removed row) selected.
    panel._on_tree_item_clicked(life_item.child(life_item.childCount() - 1))
    assert studio_ctx.runner.wait_idle()
    assert view.current_tab() == "history"
    history = view.history_tab
    assert history.selected_generation().id == "om-2"
    row = history.diff_view.currentIndex().row()
    chosen = history.diff_model.diff.rows[row]
    assert (chosen.op, chosen.old_number) == ("removed", 1) and T.TEAL_1 in chosen.text
    # A source message opens Messages on it.
    panel._on_tree_item_clicked(life_item.child(0).child(0))
    assert studio_ctx.runner.wait_idle()
    assert view.current_tab() == "messages"
    selected = view.messages_tab.model.message_row(view.messages_tab.view.currentIndex().row())
    assert selected.message.id == "u1"
    # The messages that mention the text close the list.
    last = panel.tree.topLevelItem(panel.tree.topLevelItemCount() - 1)
    assert last.text(0) == "Messages that mention it (2)"


def test_history_search_box_traces_fixture_lines(studio, fixture_db, studio_ctx):
    """The History tab's box traces a line; its row names the generation that dropped it (Mastra's rows).

    Lines picked from the raw rows (tests/engine/trace_facts.py): a 🔴 line of generation 0 that no
    later generation holds (dropped by the first reflection), and one a reflection left out that a
    later observation wrote again (not dropped there: its fate is the first generation whose log
    lacks it, or kept).
    """
    path = fixture_db("support")
    rows = om_rows(path, "thread:support-1")
    dropped = F.dropped_line(path, "support-1")
    reobserved = F.reobserved_lines(path, "support-1")
    assert reobserved, "support-1 has no line a reflection left out and a later observation wrote again"
    window = studio(path, thread_id="support-1", tab="history")
    view = window.thread_view
    for text in (dropped, reobserved[0][2]):
        view.history_tab.trace_box.setText(text)
        view.history_tab.trace_box.returnPressed.emit()
        assert studio_ctx.runner.wait_idle()
        with open_store(path) as store:
            expected = trace_fact(store, "support-1", text)
        assert [ll.text for ll in view.trace_panel.result.lifelines] == [ll.text for ll in expected.lifelines]
        tree = view.trace_panel.tree
        titles = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
        gone = next((r["generationCount"] for r in rows[1:] if text not in r["activeObservations"]), None)
        fate = f"dropped in gen {gone}" if gone is not None else "kept"
        assert f"[high] {fate} · {text}" in titles, titles


def test_clicking_a_timeline_point_shows_that_turns_context(studio, fixture_db, studio_ctx):
    # The turn clicked is support-1's first reflection turn (Mastra's rows): its context shows the
    # generation that reflection wrote, the newest OM row created by the end of that turn.
    path = fixture_db("support")
    messages = raw_messages(path, "support-1")
    _, reflections = sync_turns(path, "support-1")
    assert reflections, "support-1 has no reflection: pick another thread for this test"
    turn = reflections[0]
    generation = max(r["generationCount"] for r in om_rows(path, "thread:support-1")
                     if turn_at(messages, r["createdAt"]) <= turn)
    last = sum(1 for m in messages if m["role"] == "user")
    status = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]
    window = studio(path, thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    view = window.thread_view
    tab = view.timeline_tab
    point = next(p for p in tab.timeline.points if p.turn == turn)
    tab.pointer.select_point(point)
    view.set_tab("context")
    assert studio_ctx.runner.wait_idle()
    ctx = view.context_view.context
    assert ctx is not None and ctx.turn == turn and ctx.generation == generation
    assert view.context_view.turn_box.value() == turn
    assert view.context_view.observations.toPlainText().startswith(ctx.observations.text)
    assert view.context_view.sections.item(0, 0).text() == f"{ctx.observations.estimate:,}"
    assert view.context_view.window_table.rowCount() == len(ctx.window)
    assert f"start of turn {turn}" in view.context_view.after_turn.text()
    view.context_view.show_turn(None)
    assert studio_ctx.runner.wait_idle()
    ctx = view.context_view.context
    assert ctx.turn == ctx.turns == last
    # The table's window is the turn's start; the OM tab's figure (Mastra's getStatus pending tokens,
    # oracle) is named beside it as the window after the turn.
    assert ctx.window_estimate != status["pendingTokens"], "the two figures must differ to tell them apart"
    text = view.context_view.after_turn.text()
    assert f"(after OM's step 0), {ctx.window_estimate:,} tokens" in text
    assert f"After the turn (now): {status['pendingTokens']:,} tokens" in text and "getStatus" in text


def test_long_source_lists_are_cut_in_the_tree(studio, fixture_db, studio_ctx, monkeypatch):
    from studio.ui.widgets import trace_panel

    monkeypatch.setattr(trace_panel, "MAX_SOURCE_ROWS", 1)
    window = studio(T.build_trace_db(fixture_db("history")), thread_id=T.THREAD, tab="trace")
    panel = window.thread_view.trace_panel
    panel.trace("teal")
    assert studio_ctx.runner.wait_idle()
    sources = panel.tree.topLevelItem(0).child(0)
    assert sources.childCount() == 2
    assert sources.child(1).text(0).startswith("… and 2 more")


def test_context_of_a_thread_without_an_om_record_is_its_message_history(studio, fixture_db, studio_ctx):
    # support-meta has messages but no OM record (support.oracle.json: no record for it). The tab
    # says so and shows what the model got: its message history as lastMessages selects it (Mastra's
    # default 10 until the user sets the agent's value, which is remembered for the database).
    path = fixture_db("support")
    with open_store(path) as store:
        assert store.get_thread("support-meta") is not None
        assert not any(k["threadId"] == "support-meta" for k in store.om_lookup_keys())
        messages = store.list_messages("support-meta")
    window = studio(path, thread_id="support-1", tab="context")
    assert studio_ctx.runner.wait_idle()
    cv = window.thread_view.context_view
    assert cv.sections.isVisible() and not cv.no_record.isVisible() and cv.sections.item(0, 0).text()
    assert window.select_thread("support-meta")
    assert studio_ctx.runner.wait_idle()
    assert not cv.sections.isVisible() and cv.no_record.isVisible() and cv.last_messages_box.isVisible()
    assert "No Observational Memory record governs this thread" in cv.no_record.text()
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    shown = messages[max(0, last_user - 10):last_user + 1]   # ten before the input, and the input
    assert cv.context.turn == cv.context.turns and cv.model_table.rowCount() == len(shown)
    assert [cv.model_table.item(r, 3).text() for r in range(len(shown))] == [
        f"message {m.id} (thread support-meta)" for m in shown]
    cv.last_messages_box.setValue(2)
    assert studio_ctx.runner.wait_idle()
    assert cv.model_table.rowCount() == 3
    assert int(studio_ctx.settings.value(f"context/lastMessages/{window.database_path}")) == 2
    # back to a thread with a record: its turns, figures and "of N" again, nothing left of the other thread
    assert window.select_thread("support-1")
    assert studio_ctx.runner.wait_idle()
    assert cv.sections.isVisible() and not cv.no_record.isVisible() and not cv.last_messages_box.isVisible()
    assert cv.context is not None and cv.turn_box.suffix() == f" of {cv.context.turns}"
    assert cv.sections.item(0, 0).text() == f"{cv.context.observations.estimate:,}"


def test_context_tab_shows_what_the_model_saw_with_tokens_and_rows(studio, fixture_db, studio_ctx):
    # support-1's first reflection turn (Mastra's rows): the model view lists the rendered block,
    # the task and suggestion a reflection wrote (source unknown), Mastra's reminder (not stored)
    # and the window's messages by id, each with its tokens; the text pane shows them in order.
    path = fixture_db("support")
    _, reflections = sync_turns(path, "support-1")
    window = studio(path, thread_id="support-1", tab="context")
    assert studio_ctx.runner.wait_idle()
    cv = window.thread_view.context_view
    cv.show_turn(reflections[0])
    assert studio_ctx.runner.wait_idle()
    view = cv.context.model_view
    table = cv.model_table
    cells = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
    assert cells[0][:2] == ["Observation block (rendered)", f"{view['observations']['tokens']['estimate']:,}"]
    assert cells[1][0] == "Current task" and cells[1][3].startswith("source unknown")
    assert cells[3] == ["user: continuation reminder", "0", "0", "injected by Mastra, never stored"]
    stored = [m for m in view["messages"] if "id" in m]
    assert len(cells) == 4 + len(stored) and all(m["id"] in row[3] for m, row in zip(stored, cells[4:], strict=True))
    text = cv.model_text.toPlainText()
    assert text.startswith("[observations]\nDate: ") and "(today)" in text.split("\n")[1]
    assert "->" not in view["observations"]["text"] and "🟡" not in view["observations"]["text"]


def test_context_tab_lists_working_memory_first(studio, fixture_db, studio_ctx):
    # collab: doc_42's thread working memory was written after its turns (gen.mjs), so every turn may
    # have seen another value: the first part says it is the newest value, with its tokens and row
    path = fixture_db("collab")
    with open_store(path) as store:
        stored = store.get_thread("doc_42").working_memory
    window = studio(path, thread_id="doc_42", tab="context")
    assert studio_ctx.runner.wait_idle()
    cv = window.thread_view.context_view
    wm = cv.context.model_view["working_memory"]
    assert wm["text"] == stored and wm["exactness"] == "latest"
    first = [cv.model_table.item(0, c).text() for c in range(cv.model_table.columnCount())]
    assert first[:3] == ["Working memory (newest value)", f"{wm['tokens']['estimate']:,}", f"{wm['tokens']['exact']:,}"]
    assert first[3].startswith("thread doc_42's working memory (metadata), the newest value")
    assert cv.model_table.item(1, 0).text() == "Observation block (rendered)"
    assert cv.model_text.toPlainText().startswith("[working memory (the newest value")

"""The Timeline tab and its What-if panel in the real window (offscreen)."""

from __future__ import annotations

from pathlib import Path

from studio.app import text as fmt
from studio.engine.events import OBSERVATION, REFLECTION
from studio.ui.widgets.timeline_pointer import event_text
from tests.mastra_facts import sync_turns


def _open_timeline(studio, fixture_db, studio_ctx, name="support", thread="support-1", whatif=True):
    window = studio(fixture_db(name), thread_id=thread, tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    assert tab.timeline is not None and tab.timeline.thread_id == thread
    if whatif:  # What-if is off until the user asks
        tab.whatif_button.setChecked(True)
        assert studio_ctx.runner.wait_idle()
    return window, tab


def test_timeline_draws_the_thread_and_the_stored_replay(studio, fixture_db, studio_ctx):
    window, tab = _open_timeline(studio, fixture_db, studio_ctx)
    assert window.thread_view.current_tab() == "timeline"
    assert tab.whatif is not None and tab.whatif.uses_real_sizes
    assert tab.whatif.turns_of(OBSERVATION) == [e.turn for e in tab.timeline.events if e.kind == OBSERVATION]
    panel = tab.whatif_panel
    # Mastra's rows (tests/mastra_facts.py): support-1 observed in turns 5, 10, 16, 17, 24, 25, reflected in 16, 24
    observed, reflected = (str(len(turns)) for turns in sync_turns(Path(window.database_path), "support-1"))
    assert panel.table.item(2, 0).text() == observed and panel.table.item(2, 1).text() == observed
    assert panel.table.item(3, 0).text() == reflected and panel.table.item(3, 1).text() == reflected
    assert f"{int(observed) + int(reflected)} OM events" in tab.summary.text()   # no buffering in this thread
    tab.set_x_mode("time")
    assert tab.x_mode == "time" and tab.pointer.x_of(tab.timeline.points[0]) == tab.timeline.points[0].at_ms / 1000
    tab.set_x_mode("turn")
    assert tab.pointer.x_of(tab.timeline.points[0]) == 1
    assert tab.chart.plot.getPlotItem().getAxis("bottom").labelText == "turn"  # thread scope: the thread's turns


def test_changing_a_setting_replays_and_draws_the_overlay(studio, fixture_db, studio_ctx, qtbot):
    _window, tab = _open_timeline(studio, fixture_db, studio_ctx)
    panel = tab.whatif_panel
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000) as blocker:
        panel.message_tokens.setValue(1200)
        panel.run()
    result = blocker.args[0]
    assert result.settings.message_tokens == 1200 and not result.uses_real_sizes
    assert result.count(OBSERVATION) > 6
    assert int(panel.table.item(2, 1).text()) == result.count(OBSERVATION)
    assert "Estimate" in panel.note.text()
    # settings Mastra rejects are explained, and the overlay goes away
    with qtbot.waitSignal(panel.failed, timeout=10000):
        panel.buffering.setChecked(True)
        panel.buffer_tokens.setValue(5000)
        panel.run()
    assert "bufferTokens" in panel.error.text()
    assert studio_ctx.runner.wait_idle()
    assert tab.whatif is None


def test_clicking_a_point_selects_its_message_and_generation(studio, fixture_db, studio_ctx):
    window, tab = _open_timeline(studio, fixture_db, studio_ctx)
    timeline = tab.timeline
    index = next(i for i, e in enumerate(timeline.events) if e.kind == REFLECTION)
    tab.pointer.select_event(index)
    assert studio_ctx.runner.wait_idle()
    point = tab.pointer.selected_point
    generation = next(g for g in timeline.generations if g.generation_count == point.generation)
    assert window.thread_view.history_tab.selected_generation().id == generation.id
    messages_tab = window.thread_view.messages_tab
    selected = messages_tab.model.message_row(messages_tab.view.currentIndex().row())
    assert selected.message.id == timeline.messages[point.message_index].id
    assert "Selected message" in tab.readout.text()


def test_resource_scope_names_a_message_by_its_place_in_its_own_thread(studio, fixture_db, studio_ctx):
    """A resource-scope record replays every thread of its resource, so the chart's message and turn
    numbers are the resource's: the readout also gives the message's place in its own thread (the order
    the Messages tab lists, read from the store here) and the turn axis says whose turns they are."""
    from studio.store import open_store

    window, tab = _open_timeline(studio, fixture_db, studio_ctx, "resource", "res-a", whatif=False)
    tl = tab.timeline
    assert tl.scope == "resource" and {m.thread_id for m in tl.messages} > {"res-a"}
    with open_store(window.database_path) as store:
        own_ids = [m.id for m in store.list_messages("res-a")]
    def thread_of(p):
        return tl.messages[p.message_index].thread_id if p.message_index is not None else None

    point = max((p for p in tl.points if thread_of(p) == "res-a"), key=lambda p: p.message_index)
    tab.pointer.select_point(point)
    message = tl.messages[point.message_index]
    nth = own_ids.index(message.id) + 1
    assert (f"message {nth} of this thread ({message.role}; {point.message_index + 1} of {len(tl.messages)} "
            "across the resource's threads)") in tab.readout.text()
    other = next(p for p in tl.points if p.message_index is not None and thread_of(p) != "res-a")
    tab.pointer.select_point(other)
    assert f"a message of thread {tl.messages[other.message_index].thread_id}" in tab.readout.text()
    assert tab.chart.plot.getPlotItem().getAxis("bottom").labelText == "turn (all threads of the resource)"


def test_exports(studio, fixture_db, studio_ctx, tmp_path):
    _window, tab = _open_timeline(studio, fixture_db, studio_ctx, "collab", "doc_42")
    png, svg, csv_path = tmp_path / "t.png", tmp_path / "t.svg", tmp_path / "t.csv"
    tab.exporter.write_png(str(png), width=800)
    tab.exporter.write_svg(str(svg))
    tab.exporter.write_csv(str(csv_path))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text(encoding="utf-8")
    lines = csv_path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("series,kind,at,turn")
    assert sum(1 for line in lines if line.startswith("real,")) == len(tab.timeline.points)
    assert sum(1 for line in lines if line.startswith("whatif,")) == len(tab.whatif.points)


def test_export_menu_asks_where_writes_and_says_what_happened(studio, fixture_db, studio_ctx, tmp_path, monkeypatch):
    from studio.ui.widgets import chart_export

    _window, tab = _open_timeline(studio, fixture_db, studio_ctx, "collab", "doc_42")
    offered = []
    answer = tmp_path / "chosen.csv"
    monkeypatch.setattr(chart_export, "ask_export_path",
                        lambda _parent, kind, name: offered.append((kind, name)) or str(answer))
    tab.exporter.export("csv")
    assert offered == [("csv", "doc_42-timeline.csv")]
    assert answer.read_text(encoding="utf-8").startswith("series,kind,at,turn")
    assert tab.readout.text() == f"Exported {answer}"
    answer = tmp_path / "no-such-folder" / "chart.svg"
    tab.exporter.export("svg")
    assert tab.readout.text().startswith("Export failed: ") and not answer.exists()
    monkeypatch.setattr(chart_export, "ask_export_path", lambda *_: None)  # the user cancels: nothing said
    tab.exporter.export("png")
    assert tab.readout.text().startswith("Export failed: ")


def test_thread_without_om_and_tooltips_are_plain_text(studio, fixture_db, studio_ctx):
    window = studio(fixture_db("history"), thread_id="hist-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    assert tab.timeline is None and "no observational memory" in tab._message.text()
    from studio.engine.events import OMEvent

    text = event_text(OMEvent(kind="thread-update", at="2026-01-01T00:00:00.000Z", detail="<b>bold</b> & co"))
    assert "<b>bold</b> & co" in text
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in fmt.plain_tooltip(text)

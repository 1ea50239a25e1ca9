"""The Timeline's semantic-recall marks: a violet dashed line at each turn recall brought messages into.

No corpus has OM and semantic recall together: the support fixture's OM thread support-1 gets a vector per
message (tests/vector_rows.py: LibSQLVector's table, the corpus's hash64 embedder), and the expected marks are
`recall_marks` (`turn_recall` per turn, itself checked against Mastra's prompt log in
tests/interop/test_semantic_turns.py) with the Vectors tab's options.
"""

from __future__ import annotations

import threading

import studio.ui.widgets.recall_marks as recall_marks_module
from studio.app.recall_context import load_recall_marks, recall_marks
from studio.engine.semantic import SemanticConfig
from studio.store import open_store
from tests.ui.vector_steps import open_thread, set_options
from tests.vector_rows import store_hash64_vectors


def _support_with_vectors(fixture_db):
    path = fixture_db("support")
    assert store_hash64_vectors(path, "support-1") == 57
    return path


def _x_of_user_message(tab, message_id: str) -> float:
    timeline = tab.timeline
    index = next(i for i, m in enumerate(timeline.messages) if m.id == message_id)
    point = next(n for n, p in enumerate(timeline.points) if p.kind == "message" and p.message_index == index)
    return float(tab._drawn.series.x[tab.x_mode][point])


def test_a_line_at_each_turn_recall_brought_messages_into(studio, studio_ctx, fixture_db, monkeypatch):
    path = _support_with_vectors(fixture_db)
    reads = []
    monkeypatch.setattr(recall_marks_module, "load_recall_marks",
                        lambda *args: reads.append(args[2:4]) or load_recall_marks(*args))
    _window, view = open_thread(studio, studio_ctx, path, "support-1", tab="timeline")
    tab = view.timeline_tab
    with open_store(str(path)) as store:   # the Vectors tab's options: Mastra's defaults, lastMessages 10
        expected = recall_marks(store, "support-1", SemanticConfig(), 10)
    assert expected and tab.recall_marks.marks == expected
    lines = tab.recall_marks.lines
    assert len(lines) == len(expected)
    assert all(line in tab.plot.getPlotItem().items for line in lines)
    assert lines[0].pen.style().name == "DashLine" and lines[0].pen.color().name() == "#8b5cf6"
    assert tab.legend._key[-1][0] == "Semantic recall brought messages in"   # named under the chart
    # each line's tooltip names every message recall brought in (plain text: escaped)
    first = expected[0]
    assert f"Semantic recall at turn {first['turn']} brought in {len(first['recalled'])} message(s)" \
        in lines[0].toolTip()
    assert lines[0].toolTip().count("•") == len(first["recalled"])
    # the lines follow the axis, and neither a switch nor a redraw reads them again
    loads = len(reads)
    for mode in ("time", "turn", "time"):
        tab.set_x_mode(mode)
        assert [line.value() for line in lines] == [_x_of_user_message(tab, m["message_id"]) for m in expected]
    tab.show_thresholds.setChecked(False)   # a redraw keeps them
    studio_ctx.runner.wait_idle()
    assert all(line in tab.plot.getPlotItem().items for line in lines)
    assert len(reads) == loads and set(reads) == {(SemanticConfig(), 10)}
    # other options: read again with them
    set_options(view.vectors_tab, 3, 2, "thread", 6)
    studio_ctx.runner.wait_idle()
    with open_store(str(path)) as store:
        assert tab.recall_marks.marks == recall_marks(store, "support-1", SemanticConfig(3, 2, "thread"), 6)
    assert reads[-1] == (SemanticConfig(3, 2, "thread"), 6)


def test_a_thread_without_vectors_has_no_line(studio, studio_ctx, fixture_db):
    _window, view = open_thread(studio, studio_ctx, fixture_db("support"), "support-1", tab="timeline")
    tab = view.timeline_tab
    assert tab.recall_marks.marks == [] and tab.recall_marks.lines == []
    assert "Semantic recall brought messages in" not in [key[0] for key in tab.legend._key]


def test_reading_the_marks_stops_when_cancelled(fixture_db):
    path = _support_with_vectors(fixture_db)
    with open_store(str(path)) as store:
        every = recall_marks(store, "support-1", SemanticConfig(), 10)
        asked = []

        def after_ten():   # cancelled once ten turns were read: the marks of those ten only
            asked.append(True)
            return len(asked) > 10
        assert recall_marks(store, "support-1", SemanticConfig(), 10, cancelled=after_ten) == \
            [m for m in every if m["turn"] <= 10]
        stop = threading.Event()
        stop.set()
        assert load_recall_marks(store, "support-1", SemanticConfig(), 10, None, stop) == []

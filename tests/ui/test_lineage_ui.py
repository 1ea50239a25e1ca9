"""The clone line in the thread header and the thread list's clone filter, on the history fixture, whose
`hist-1-branch` real Mastra cloned from another thread (the oracle's metadata.clone says which)."""

from __future__ import annotations

from studio.app.lineage import ThreadLink
from studio.ui.widgets.lineage_bar import LINK_CHARS, link_text
from tests.oracle_facts import threads


def _clone_facts():
    listed = threads("history")
    clone_id = next(tid for tid, t in listed.items() if (t.get("metadata") or {}).get("clone"))
    source_id = listed[clone_id]["metadata"]["clone"]["sourceThreadId"]
    return listed, clone_id, source_id


def test_header_names_source_and_link_opens_it(studio, studio_ctx, fixture_db, qtbot):
    listed, clone_id, source_id = _clone_facts()
    window = studio(fixture_db("history"), thread_id=clone_id)
    bar = window.thread_view.lineage_bar
    qtbot.waitUntil(lambda: bar.lineage is not None and bar.isVisible(), timeout=30_000)
    assert bar.source_button.text() == listed[source_id]["title"]
    assert bar.at_label.text().startswith("at message ")
    assert [a.text() for a in bar.history_button.menu().actions()][-1].endswith("(this thread)")
    bar.source_button.click()
    studio_ctx.runner.wait_idle()
    assert window.thread_view.thread_id == source_id
    qtbot.waitUntil(lambda: bar.lineage is not None and bar.lineage.thread.id == source_id, timeout=30_000)
    assert not bar.source_button.isVisible() and bar.clones_button.isVisible()
    clones = bar.clones_button.menu().actions()
    assert [a.text() for a in clones] == [listed[clone_id]["title"]]
    clones[0].trigger()
    studio_ctx.runner.wait_idle()
    assert window.thread_view.thread_id == clone_id


def test_thread_without_clones_hides_the_line(studio, fixture_db, qtbot, studio_ctx):
    listed, clone_id, source_id = _clone_facts()
    other = next(tid for tid in listed if tid not in (clone_id, source_id))
    window = studio(fixture_db("history"), thread_id=other)
    studio_ctx.runner.wait_idle()
    qtbot.wait(50)
    assert not window.thread_view.lineage_bar.isVisible()


def test_clone_filter(studio, studio_ctx, fixture_db):
    listed, clone_id, source_id = _clone_facts()
    window = studio(fixture_db("history"))
    combo = window.thread_list.lineage_combo
    assert combo.isVisibleTo(window)
    shown = lambda: {window.thread_model.thread_row(i).thread.id for i in range(window.thread_model.rowCount())}  # noqa: E731
    assert shown() == set(listed)
    combo.setCurrentIndex(1)
    assert shown() == {clone_id} and window.thread_list.heading.text() == "Clones (1)"
    combo.setCurrentIndex(2)
    assert shown() == {source_id}
    combo.setCurrentIndex(0)
    assert shown() == set(listed)


def test_no_clone_filter_without_clones(studio, fixture_db):
    window = studio(fixture_db("support"))
    assert not window.thread_list.lineage_combo.isVisibleTo(window)


def test_link_text_is_plain_and_elided():
    assert link_text(ThreadLink("t", "R&D <b>plan</b>")) == "R&&D <b>plan</b>"
    long = link_text(ThreadLink("t", "x" * 100))
    assert len(long) == LINK_CHARS and long.endswith("…")
    assert link_text(ThreadLink("gone", None, exists=False)) == "gone (deleted)"

"""Every item model of the studio passes Qt's QAbstractItemModelTester, filled with real fixture data."""

from __future__ import annotations

from studio.app.listing import load_listing
from studio.app.statuses import iter_thread_statuses
from studio.app.thread_detail import diff_generations
from studio.engine.observations import parse_log
from studio.store import open_store
from studio.ui.models import (
    BufferedChunkModel,
    DiffModel,
    GenerationTableModel,
    MessageTableModel,
    ObservationLogModel,
    ResourceListModel,
    ThreadTableModel,
)
from studio.ui.models.diff import DiffMode
from tests.oracle_facts import generations as oracle_generations


def test_resource_and_thread_models(qtmodeltester, fixture_db):
    with open_store(fixture_db("support")) as store:
        listing = load_listing(store)
        statuses = list(iter_thread_statuses(store, [r.thread for r in listing.rows]))
    resources = ResourceListModel()
    resources.set_resources(listing.resources)
    qtmodeltester.check(resources)
    assert resources.rowCount() == 4 and resources.index(0, 0).data() == "All resources"

    threads = ThreadTableModel(page_size=4)
    threads.set_rows(listing.rows)
    qtmodeltester.check(threads)          # before statuses: bars show "…"
    assert threads.index(0, 4).data() in ("…", "no OM")
    threads.apply_statuses(statuses, final=True)
    threads.sort(4)
    qtmodeltester.check(threads)
    threads.set_resource_filter("user-alice")
    qtmodeltester.check(threads)
    assert threads.rowCount() == 2


def test_message_model(qtmodeltester, studio_ctx, fixture_db):
    studio_ctx.runner.open_store(str(fixture_db("tools")))
    model = MessageTableModel(studio_ctx.runner, page_size=5)
    model.set_thread("tools-1")
    studio_ctx.runner.wait_idle()
    qtmodeltester.check(model)
    studio_ctx.runner.wait_idle()          # the tester may have asked for the next page
    while model.canFetchMore():
        model.fetchMore()
        studio_ctx.runner.wait_idle()
    assert model.rowCount() == 13
    qtmodeltester.check(model)


def test_generation_diff_log_and_chunk_models(qtmodeltester, fixture_db):
    with open_store(fixture_db("buffered")) as store:
        history = store.om_history("thread:long-run")
    generations = GenerationTableModel()
    generations.set_records(history)
    qtmodeltester.check(generations)
    assert generations.rowCount() == len(history) == len(oracle_generations("buffered", "thread:long-run")) >= 2

    diff = DiffModel()
    diff.set_diff(diff_generations(history[1], history[0]), f"Generation {history[1].generation_count}",
                  f"Generation {history[0].generation_count}")
    qtmodeltester.check(diff)
    diff.set_mode(DiffMode.SIDE_BY_SIDE)
    qtmodeltester.check(diff)
    diff.set_diff(diff_generations(None, history[-1]))
    qtmodeltester.check(diff)

    log = ObservationLogModel()
    log.set_log(parse_log(history[0].active_observations))
    qtmodeltester.check(log)
    assert log.rowCount() > 0 and log.rowCount(log.index(0, 0)) > 0

    chunks = BufferedChunkModel()
    chunks.set_chunks(history[0].buffered_chunks)
    qtmodeltester.check(chunks)
    assert chunks.rowCount() == len(history[0].buffered_chunks) > 0


def test_log_model_nests_sub_lines_and_keeps_boundaries(qtmodeltester):
    text = ("Date: Nov 4, 2026\n* 🔴 (09:00) parent\n  * -> ✅ (09:05) child\n    * -> 🟢 grandchild\n"
            "\n--- message boundary (2026-11-29T20:42:27.624Z) ---\n\nloose text\n")
    log = ObservationLogModel()
    log.set_log(parse_log(text))
    qtmodeltester.check(log)
    date = log.index(0, 0)
    assert date.data().startswith("Nov 4, 2026")
    parent = log.index(0, 0, date)
    child = log.index(0, 0, parent)
    assert (parent.data(), child.data(), log.index(0, 0, child).data()) == ("parent", "child", "grandchild")
    assert log.index(0, 1, date).data() == "high" and log.index(0, 1, parent).data() == "completed"
    assert log.index(1, 0, date).data().startswith("message boundary")
    assert log.index(2, 0, date).data() == "loose text"

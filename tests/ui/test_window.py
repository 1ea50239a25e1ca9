"""The main window on real fixture copies: the bars users read equal what Mastra reports."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from studio.ui.models.roles import BAR_ROLE, ID_ROLE
from studio.ui.models.threads import ThreadColumn
from studio.ui.widgets.om_tab import MESSAGES_BAR_TITLE, OBSERVATIONS_BAR_TITLE
from tests.conftest import load_oracle
from tests.oracle_facts import current_generation, threads

ORACLE_FIXTURES = ["support", "buffered", "resource", "collab", "tools", "live/support"]


def thread_rows(window) -> dict[str, int]:
    """Return {thread id: row} of the loaded thread list."""
    model = window.thread_model
    return {model.index(r, 0).data(ID_ROLE): r for r in range(model.rowCount())}


def test_support_1_bars_equal_mastra_oracle(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path)
    assert window.windowTitle() == "Memory Studio — support.db"
    assert window.select_thread("support-1")
    studio_ctx.runner.wait_idle()
    oracle = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]

    om = window.thread_view.om_tab
    assert om.has_record
    assert om.messages_bar.title() == MESSAGES_BAR_TITLE == "Messages before observation"
    assert om.observations_bar.title() == OBSERVATIONS_BAR_TITLE == "Observations before reflection"
    assert (om.messages_bar.value(), om.messages_bar.threshold()) == (oracle["pendingTokens"], oracle["threshold"])
    assert (om.observations_bar.value(), om.observations_bar.threshold()) == (
        oracle["observationTokenCount"], oracle["effectiveObservationTokensThreshold"])
    pending, threshold = oracle["pendingTokens"], oracle["threshold"]
    assert om.messages_bar.figures_text() == f"{pending:,} / {threshold:,} tokens"
    assert om.messages_bar.is_over() is oracle["shouldObserve"]
    assert om.observations_bar.is_over() is oracle["shouldReflect"]

    # The same figures in the thread list's small bars.
    row = thread_rows(window)["support-1"]
    bar = window.thread_model.index(row, ThreadColumn.OBSERVATION).data(BAR_ROLE)
    assert (bar.value, bar.threshold) == (oracle["pendingTokens"], oracle["threshold"])
    assert window.thread_model.index(row, ThreadColumn.OBSERVATION).data() == \
        f"{pending:,} / {threshold:,} · {pending * 100 // threshold}%"   # the percentage rounded down
    bar = window.thread_model.index(row, ThreadColumn.REFLECTION).data(BAR_ROLE)
    assert (bar.value, bar.threshold) == (oracle["observationTokenCount"],
                                          oracle["effectiveObservationTokensThreshold"])
    assert window.current_thread_id == "support-1"
    assert window.thread_view.title.text() == threads("support")["support-1"]["title"]
    assert window.thread_view.title.textFormat() == Qt.TextFormat.PlainText


@pytest.mark.parametrize("name", ORACLE_FIXTURES)
def test_every_thread_bar_equals_oracle(studio, fixture_db, name):
    window = studio(fixture_db(name))
    rows = thread_rows(window)
    oracle = load_oracle(name)["om"]
    checked = 0
    for record in oracle.values():
        for thread_id, st in record["status"].items():
            row = rows[thread_id]
            obs = window.thread_model.index(row, ThreadColumn.OBSERVATION).data(BAR_ROLE)
            ref = window.thread_model.index(row, ThreadColumn.REFLECTION).data(BAR_ROLE)
            assert (obs.value, obs.threshold) == (st["pendingTokens"], st["threshold"]), thread_id
            assert (ref.value, ref.threshold) == (st["observationTokenCount"],
                                                  st["effectiveObservationTokensThreshold"]), thread_id
            checked += 1
    assert checked > 0
    assert not window.progress.isVisible()


def test_thread_without_om_shows_empty_state(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"))
    rows = thread_rows(window)
    assert window.thread_model.index(rows["support-meta"], ThreadColumn.OBSERVATION).data() == "no OM"
    assert window.select_thread("support-meta")
    studio_ctx.runner.wait_idle()
    view = window.thread_view
    assert not view.om_tab.has_record
    assert "No Observational Memory record" in view.om_tab.empty_text()
    assert not view.history_tab.has_history
    view.set_tab("messages")
    assert view.messages_tab.model.rowCount() == len(load_oracle("support")["threads"]["support-meta"]["messages"])


def test_opening_selects_first_thread_with_om_and_remembers_recent_file(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path)
    assert window.current_thread_id is not None
    first = window.first_thread_with_om()
    assert window.current_thread_id == first
    assert studio_ctx.recent_files()[0] == str(path)
    assert window.count_label.text() == f"{len(threads('support'))} threads"
    assert window.mode_label.text() == "read-only"
    assert window.path_label.text() == str(path)


def top_by(statuses: dict[str, dict], value: str, threshold: str) -> str:
    """Return the thread whose VALUE / THRESHOLD (Mastra's getStatus figures) is highest; fail on a tie."""
    ratios = {t: st[value] / st[threshold] for t, st in statuses.items()}
    top = max(ratios, key=ratios.get)
    assert sorted(ratios.values())[-2] < ratios[top], f"two threads share the highest {value} ratio"
    return top


def test_resource_filter_and_sorting(studio, studio_ctx, fixture_db):
    listed = threads("support")
    statuses = {t: st for om in load_oracle("support")["om"].values() for t, st in om["status"].items()}
    n, with_om = len(listed), len(statuses)
    assert n > with_om, "every support thread has OM: none to sort last"
    bobs = {t for t, thread in listed.items() if thread["resourceId"] == "user-bob"}
    window = studio(fixture_db("support"))
    model = window.thread_model
    assert model.rowCount() == n
    row = window.resource_model.row_of("user-bob")
    window.resources_view.setCurrentIndex(window.resource_model.index(row, 0))
    assert model.rowCount() == len(bobs)
    assert {model.index(r, 0).data(ID_ROLE) for r in range(len(bobs))} == bobs
    window.resources_view.setCurrentIndex(window.resource_model.index(0, 0))
    assert model.rowCount() == n

    window.threads_view.sortByColumn(ThreadColumn.OBSERVATION, Qt.SortOrder.DescendingOrder)
    # the fullest message window first; threads without OM sort last
    assert model.index(0, 0).data(ID_ROLE) == top_by(statuses, "pendingTokens", "threshold")
    assert {model.index(r, 0).data(ID_ROLE) for r in range(with_om, n)} == set(listed) - set(statuses)
    window.threads_view.sortByColumn(ThreadColumn.REFLECTION, Qt.SortOrder.DescendingOrder)
    ratios = [model.index(r, ThreadColumn.REFLECTION).data(BAR_ROLE).ratio for r in range(with_om)]
    assert ratios == sorted(ratios, reverse=True)
    assert model.index(0, 0).data(ID_ROLE) == top_by(statuses, "observationTokenCount",
                                                     "effectiveObservationTokensThreshold")
    window.threads_view.sortByColumn(ThreadColumn.LAST_ACTIVITY, Qt.SortOrder.AscendingOrder)
    times = [model.thread_row(r).activity_ms for r in range(n)]
    assert times == sorted(times)
    # The selection follows its thread through the sorts.
    assert window.current_thread_id == model.index(window.threads_view.currentIndex().row(), 0).data(ID_ROLE)


def test_thread_list_is_lazy(qtbot, fixture_db, studio, studio_ctx):
    from studio.ui.models.threads import ThreadTableModel

    window = studio(fixture_db("support"))
    model = ThreadTableModel(page_size=2)
    model.set_rows(window.thread_model.all_threads())
    assert model.rowCount() == 2 and model.canFetchMore()
    with qtbot.waitSignal(model.rowsInserted, timeout=30_000) as blocker:
        model.fetchMore()
    assert blocker.args[1:] == [2, 3]          # first and last (inclusive) inserted rows
    n = len(threads("support"))
    while model.canFetchMore():
        model.fetchMore()
    assert model.rowCount() == n
    # row_of fetches pages up to a thread not yet exposed.
    model.set_rows(window.thread_model.all_threads())
    last = model.visible_rows()[-1].thread.id
    model.set_resource_filter(None)
    assert model.row_of(last) == n - 1


def test_buffered_chunks_and_flags(studio, studio_ctx, fixture_db):
    from studio.store import open_store

    path = fixture_db("buffered")
    window = studio(path)
    assert window.select_thread("long-run")
    studio_ctx.runner.wait_idle()
    om = window.thread_view.om_tab
    with open_store(path) as store:
        chunks = store.om_current("thread:long-run").buffered_chunks
    assert chunks
    assert om.chunk_model.rowCount() == len(chunks)
    assert om.chunk_model.index(0, 2).data() == f"{chunks[0]['tokenCount']:,}"
    oracle = load_oracle("buffered")["om"]["thread:long-run"]["status"]["long-run"]
    assert om.messages_bar.value() == oracle["pendingTokens"]
    assert om.observations_bar.value() == oracle["observationTokenCount"]
    assert om.flag_texts() == dict.fromkeys(
        ["isObserving", "isReflecting", "isBufferingObservation", "isBufferingReflection"], "off")


def test_menus_shortcuts_and_recent_files(studio, studio_ctx, fixture_db):
    first, second = fixture_db("tools"), fixture_db("collab")
    window = studio(first)
    assert window.open_action.shortcut().toString() == "Ctrl+O"
    assert window.refresh_action.shortcut().toString() == "F5"
    assert window.quit_action.shortcut().toString() == "Ctrl+Q"
    window.open_database(second)
    studio_ctx.runner.wait_idle()
    assert window.windowTitle() == "Memory Studio — collab.db"
    assert studio_ctx.recent_files()[:2] == [str(second), str(first)]
    window.recent_menu.aboutToShow.emit()
    actions = [a for a in window.recent_menu.actions() if a.text() == str(first)]
    assert actions
    actions[0].trigger()                               # File ▸ Open Recent ▸ tools.db
    studio_ctx.runner.wait_idle()
    assert window.database_path == str(first)
    assert window.windowTitle() == "Memory Studio — tools.db"
    assert window.current_thread_id == "tools-1"
    window.quit_action.trigger()                       # Ctrl+Q closes the window and stops the worker
    assert not window.isVisible() and studio_ctx.runner.closed


def test_statuses_fill_in_batches_with_progress(studio, studio_ctx, fixture_db, monkeypatch, qtbot):
    from studio.app import open_results

    monkeypatch.setattr(open_results, "RESULTS_CHUNK", 1)     # one thread per batch
    window = studio()
    values = []
    window.progress.valueChanged.connect(values.append)
    window.open_database(fixture_db("support"))
    studio_ctx.runner.wait_idle()
    # every thread's results (its bars and its health findings), OM or not
    every = len(load_oracle("support")["threads"])
    assert values[-1] == every and len(set(values)) >= every   # one batch per thread
    assert not window.progress.isVisible()
    oracle = load_oracle("support")["om"]
    for record in oracle.values():
        for thread_id, st in record["status"].items():
            row = thread_rows(window)[thread_id]
            bar = window.thread_model.index(row, ThreadColumn.OBSERVATION).data(BAR_ROLE)
            assert (bar.value, bar.threshold) == (st["pendingTokens"], st["threshold"])


def test_busy_flags_show_live_and_stale(studio, studio_ctx, fixture_db):
    import time

    import libsql

    from studio.store.records import ms_to_iso

    path = fixture_db("buffered")
    conn = libsql.connect(str(path))
    now = ms_to_iso(int(time.time() * 1000))
    old = ms_to_iso(int(time.time() * 1000) - 3 * 3600 * 1000)
    conn.execute('UPDATE mastra_observational_memory SET "isReflecting" = 1, "isBufferingObservation" = 1, '
                 '"updatedAt" = ?, "lastBufferedAtTime" = ? WHERE "lookupKey" = ? AND "generationCount" = ?',
                 (old, now, "thread:long-run", current_generation("buffered", "thread:long-run")))
    conn.commit()
    conn.close()
    window = studio(path, thread_id="long-run")
    om = window.thread_view.om_tab
    badges = om.flag_texts()
    assert badges["isObserving"] == "off"
    assert badges["isReflecting"].startswith("on · stale (3 h")
    assert badges["isBufferingObservation"].startswith("on · live (")
    assert "reflecting (stale)" in om.summary.text() and "buffering observation (live)" in om.summary.text()

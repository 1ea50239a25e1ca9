"""The studio's open reuses the cross-session result cache (issue 21); a reopen shows what a cold open shows.

Every bar, message count and health badge of the thread list comes from the results round
(`studio.app.open_results`): a second open of an unchanged file reuses every cached result; after a
message edited in place to a text of the same length, a file replaced by another, or a message added
by another process while the studio was closed, the reopen equals an open with an empty cache.
"""

from __future__ import annotations

import os
import shutil
import time

from PySide6.QtCore import QEvent, QSettings
from PySide6.QtWidgets import QApplication

from studio.ui.context import AppContext
from studio.ui.models.roles import BAR_ROLE, ID_ROLE
from studio.ui.models.threads import ThreadColumn
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.main_window import MainWindow
from tests.app.test_thread_results import _edit_same_length
from tests.conftest import copy_fixture
from tests.ui.mastra_edits import delete_thread_row
from tests.ui.test_live import append_message


def _wait_results(runner, window, finished: list, timeout_s: float = 60.0) -> None:
    """Wait until the window's results round (FINISHED holds an item once `statuses_finished` came) and
    health scan are done (a hang guard, not a speed limit)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        runner.wait_idle()
        QApplication.processEvents()
        if finished and not window.health.scan.running:
            return
        time.sleep(0.01)
    raise AssertionError("the results round did not finish")


def _shown(window) -> dict:
    """What the window shows of each thread: both bars (value, threshold), its message count, its badge
    counts; and every finding (canonical)."""
    model = window.thread_model
    out = {}
    for r in range(model.rowCount()):
        tid = model.index(r, 0).data(ID_ROLE)
        bars = []
        for col in (ThreadColumn.OBSERVATION, ThreadColumn.REFLECTION):
            bar = model.index(r, col).data(BAR_ROLE)
            bars.append(None if bar is None else (bar.value, bar.threshold))
        out[tid] = (tuple(bars), model.index(r, ThreadColumn.MESSAGES).data(),
                    tuple(sorted(window.health.scan.thread_counts(tid).items())))
    out["findings"] = sorted(map(repr, window.health.scan.findings))
    return out


def _open(_qtbot, tmp_path, path, cache_dir, monkeypatch, while_open=None) -> tuple[dict, int, int]:
    """Open PATH in a new window on its own TaskRunner (a new session) with the result cache in CACHE_DIR;
    return (what it shows, results reused from the cache, threads of the round). WHILE_OPEN(window,
    runner) runs once every bar and badge is in. All is closed after."""
    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(cache_dir))
    ctx = AppContext(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat),
                     runner=TaskRunner())
    window = MainWindow(ctx)
    window.show()
    reused, total, finished = [], [], []
    window.loader.results_landed.connect(lambda batch, _d, t, partial: (reused.append(batch.reused), total.append(t)))
    window.statuses_finished.connect(lambda: finished.append(True))
    try:
        window.open_database(path)
        _wait_results(ctx.runner, window, finished)
        shown, reused_n, total_n = _shown(window), sum(reused), total[-1]
        if while_open is not None:
            while_open(window, ctx.runner)
        return shown, reused_n, total_n
    finally:
        window.close()
        ctx.runner.wait_idle()
        ctx.runner.shutdown()
        window.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)


def test_a_reopen_reuses_every_result_and_shows_the_same(qtbot, fixture_db, tmp_path, monkeypatch):
    path = fixture_db("support")
    cold, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    assert reused == 0 and total == 6
    assert any(counts for key, (_bars, _n, counts) in cold.items() if key != "findings")   # badges to compare
    assert list((tmp_path / "cache" / "thread-results").iterdir())   # under the cache folder, not beside the data
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(p.name for p in path.parent.iterdir()
                                                                   if p.name.startswith(path.name))
    again, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    assert (again, reused) == (cold, total)


def test_a_reopen_after_a_same_length_edit_equals_a_cold_open(qtbot, fixture_db, tmp_path, monkeypatch):
    path = fixture_db("support")
    _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    _edit_same_length(path)
    warm, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    cold, _, _ = _open(qtbot, tmp_path, path, tmp_path / "empty", monkeypatch)
    assert warm == cold
    assert reused == total - 1   # the edited thread alone was computed again


def test_a_reopen_of_a_replaced_file_equals_a_cold_open(qtbot, fixture_db, tmp_path, monkeypatch):
    path = fixture_db("support")
    before, _, _ = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    # another file of the same threads with other rows in one of them, moved over the opened one
    other = copy_fixture("support", tmp_path / "other")
    append_message(other, "support-2", "only in the replacing file")
    for ext in ("-wal", "-shm"):
        if os.path.exists(f"{path}{ext}"):
            os.remove(f"{path}{ext}")
    for ext in ("", "-wal"):
        if os.path.exists(f"{other}{ext}"):
            shutil.copyfile(f"{other}{ext}", f"{path}.new{ext}")
            os.replace(f"{path}.new{ext}", f"{path}{ext}")
    warm, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    cold, _, _ = _open(qtbot, tmp_path, path, tmp_path / "empty", monkeypatch)
    assert warm == cold
    assert warm["support-2"] != before["support-2"]
    assert reused == total - 1   # another file: every thread's digest checked, the changed one computed again


def test_a_reopen_after_another_process_wrote_equals_a_cold_open(qtbot, fixture_db, tmp_path, monkeypatch):
    path = fixture_db("support")
    before, _, _ = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    append_message(path, "support-1", "written while the studio was closed")
    warm, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    cold, _, _ = _open(qtbot, tmp_path, path, tmp_path / "empty", monkeypatch)
    assert warm == cold
    assert warm["support-1"] != before["support-1"]
    assert reused == total - 1


def test_a_live_refresh_stores_its_threads_results_for_the_next_session(qtbot, fixture_db, tmp_path, monkeypatch):
    path = fixture_db("support")

    def write_and_refresh(window, runner):
        partial = []
        window.loader.results_landed.connect(lambda batch, _d, _t, is_partial: partial.append(
            (is_partial, sorted(batch.handled), batch.reused)))
        append_message(path, "support-3", "written while the studio watches")
        window.loader.check_for_changes()   # the watcher's tick, called at once
        end = time.monotonic() + 60
        while not partial and time.monotonic() < end:   # a hang guard
            runner.wait_idle()
            QApplication.processEvents()
        runner.wait_idle()   # the round's save_results too
        assert partial == [(True, ["support-3"], 0)]   # only the changed thread, computed (not reused)

    _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch, write_and_refresh)
    warm, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    cold, _, _ = _open(qtbot, tmp_path, path, tmp_path / "empty", monkeypatch)
    assert warm == cold
    assert reused == total   # the refreshed thread's result was stored by the live refresh


def test_a_reopen_of_an_unchanged_file_is_one_results_call(qtbot, fixture_db, tmp_path, monkeypatch):
    """Every bar and badge of an unchanged file's reopen comes from one call (`load_stamped_results`), never a
    batch that lists the threads again; the cold open before it computed two threads a batch."""
    from studio.app import open_results

    monkeypatch.setattr(open_results, "RESULTS_CHUNK", 2)
    path = fixture_db("support")
    calls: list[str] = []
    real = TaskRunner.submit_call

    def spy(self, fn, *args, **kwargs):
        calls.append(fn.__name__)
        return real(self, fn, *args, **kwargs)

    monkeypatch.setattr(TaskRunner, "submit_call", spy)
    cold, _, _ = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    assert calls.count("load_results_batch") == 3   # 6 threads, 2 a batch (nothing under the stamp yet)
    calls.clear()
    again, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    assert (again, reused) == (cold, total)
    assert calls.count("load_stamped_results") == 1 and "load_results_batch" not in calls
    # a thread deleted as Mastra's deleteThread leaves it (its OM record kept: an orphan's stand-in row, which
    # has no result): the reopen after it computes nothing for the stand-in, and equals a cold open
    delete_thread_row(path, "support-3")
    _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    calls.clear()
    again, reused, total = _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    warm_calls = list(calls)
    cold, _, _ = _open(qtbot, tmp_path, path, tmp_path / "empty", monkeypatch)
    assert again == cold and "support-3" in again and reused == total == 5
    assert warm_calls.count("load_stamped_results") == 1 and "load_results_batch" not in warm_calls


def test_a_big_files_open_reads_the_result_cache_in_the_helper_beside_the_listing(qtbot, fixture_db, tmp_path,
                                                                                   monkeypatch):
    """A file of HELPER_EARLY_MIN_BYTES or more has its cache read in the helper process (started then) before the
    listing is in; a smaller one does not start it for that."""
    from studio.ui.widgets import window_loading

    path = fixture_db("support")
    calls: list[tuple[str, bool]] = []
    real = TaskRunner.submit_call

    def spy(self, fn, *args, helper=False, **kwargs):
        calls.append((fn.__name__, helper))
        return real(self, fn, *args, helper=helper, **kwargs)

    monkeypatch.setattr(TaskRunner, "submit_call", spy)
    _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    assert ("prepare_results", True) not in calls
    calls.clear()
    monkeypatch.setattr(window_loading, "HELPER_EARLY_MIN_BYTES", os.path.getsize(path))
    _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch)
    assert calls[0] == ("prepare_results", True)   # before the listing's results round


def test_a_reopen_with_the_health_window_open_lists_what_a_cold_open_lists(qtbot, fixture_db, tmp_path, monkeypatch):
    """The findings a reopen takes from the cache come packed; the badges show their counts at once, and the Health
    window, open while they land, lists them decoded: the same findings as a cold open's."""
    path = fixture_db("support")
    listed = []

    def health_window_open(window, _runner):
        listed.append(sorted(map(repr, window.health.health_window.pane.model.all_findings())))

    def opened(window_open):
        real = MainWindow.open_database

        def open_with_window(self, *args, **kwargs):
            self.health.show_window()
            return real(self, *args, **kwargs)

        monkeypatch.setattr(MainWindow, "open_database", open_with_window)
        try:
            return _open(qtbot, tmp_path, path, tmp_path / "cache", monkeypatch, window_open)
        finally:
            monkeypatch.setattr(MainWindow, "open_database", real)

    cold, _, _ = opened(health_window_open)
    again, reused, total = opened(health_window_open)
    assert reused == total and again == cold
    assert listed[0] == listed[1] == cold["findings"] and cold["findings"]

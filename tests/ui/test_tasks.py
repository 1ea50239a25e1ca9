"""TaskRunner: one worker owns the store; results come back on the GUI thread; superseded tasks are dropped."""

from __future__ import annotations

import threading

import pytest

from studio.app.loads import require_store
from studio.errors import StoreError
from studio.ui.tasks import TaskRunner


@pytest.fixture
def runner(qapp):
    r = TaskRunner()
    yield r
    r.wait_idle()
    r.shutdown()


def test_store_lives_in_the_worker_and_results_arrive_on_gui_thread(runner, fixture_db):
    seen = {}
    runner.open_store(str(fixture_db("support")), on_done=lambda info: seen.setdefault("info", info))
    runner.submit(lambda store, _p, _c: (threading.get_ident(), len(store.list_threads())),
                  on_done=lambda result: seen.update(result=result, gui=threading.get_ident()))
    assert runner.wait_idle()
    worker, threads = seen["result"]
    assert threads == 6
    assert worker != threading.get_ident()
    assert seen["gui"] == threading.get_ident()
    assert seen["info"].writable is False and seen["info"].path.endswith("support.db")


def test_keyed_task_supersedes_previous_and_progress_is_delivered(runner):
    gate = threading.Event()
    results, progress = [], []

    def slow(_store, report, cancel):
        gate.wait(5)
        report(1, 2, "half")
        return "slow"

    runner.submit(slow, on_done=results.append, key="k")
    runner.submit(lambda _s, report, _c: (report(1, 1, "done"), "fast")[1], on_done=results.append,
                  on_progress=lambda d, t, p: progress.append((d, t, p)), key="k")
    gate.set()
    assert runner.wait_idle()
    assert results == ["fast"]
    assert progress == [(1, 1, "done")]


def test_errors_reach_on_error_or_task_failed(runner, qtbot, tmp_path):
    errors = []
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"nope" * 100)
    runner.open_store(str(bad), on_error=errors.append)
    assert runner.wait_idle()
    assert isinstance(errors[0], StoreError) and "not a SQLite database" in str(errors[0])
    with qtbot.waitSignal(runner.task_failed, timeout=30_000) as blocker:
        runner.submit(lambda store, _p, _c: require_store(store).list_threads())   # no database is open
    assert "No database is open" in blocker.args[0]


def test_failed_open_keeps_previous_store(runner, fixture_db, tmp_path):
    runner.open_store(str(fixture_db("tools")))
    runner.open_store(str(tmp_path / "missing.db"), on_error=lambda exc: None)
    out = []
    runner.submit(lambda store, _p, _c: [t.id for t in store.list_threads()], on_done=out.append)
    assert runner.wait_idle()
    assert out == [["tools-1"]]


def test_shutdown_cancels_and_refuses_new_work(runner):
    results = []
    runner.shutdown()
    task = runner.submit(lambda *_: "late", on_done=results.append)
    assert task.cancelled and runner.pending == 0
    assert runner.wait_idle(timeout=1)
    assert results == []


def test_pooled_work_does_not_wait_behind_database_work(runner):
    gate = threading.Event()
    ran, delivered = [], []

    def database_work(_store, _p, _c):
        assert gate.wait(5), "the pooled task never ran while the database worker was busy"
        ran.append("db")
        return "db"

    def pooled_work(_p, _c):
        ran.append("pool")
        gate.set()
        return "pool"

    runner.submit(database_work, on_done=delivered.append)
    runner.submit_pooled(pooled_work, on_done=delivered.append)
    assert runner.wait_idle()
    assert ran == ["pool", "db"] and sorted(delivered) == ["db", "pool"]

"""The GUI recovers from any failed load: damaged text is shown, a panicking task reports, F5 retries."""

from __future__ import annotations

import shutil

from studio.errors import StoreError
from studio.ui.tasks import TaskRunner
from tests.conftest import FIXTURES
from tests.store.test_damaged_text import damage


class PanicException(BaseException):
    """Stands for pyo3_runtime.PanicException: a BaseException, not an Exception, named the same."""


def test_damaged_text_database_lists_its_threads(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    targets = damage(path)
    window = studio(path)
    assert window.thread_model.rowCount() == 6
    assert window.select_thread(targets["thread"])
    assert studio_ctx.runner.wait_idle()
    row = window.thread_model.row_of(targets["thread"])
    assert window.thread_model.thread_row(row).thread.title == "Trip \ufffd plan"
    assert window.last_error is None


def test_a_task_that_raises_a_base_exception_reports_and_the_worker_goes_on(qapp):
    runner = TaskRunner()
    errors, results = [], []

    def panics(_store, _p, _c):
        raise PanicException("called `Result::unwrap()` on an `Err` value")

    try:
        runner.submit(panics, on_done=results.append, on_error=errors.append)
        runner.submit(lambda _s, _p, _c: "next", on_done=results.append)
        assert runner.wait_idle(10)
    finally:
        runner.shutdown()
    assert results == ["next"]
    assert len(errors) == 1 and isinstance(errors[0], StoreError)
    assert "PanicException" in str(errors[0]) and "F5" in str(errors[0])


def test_refresh_retries_a_failed_open(studio, studio_ctx, tmp_path):
    path = tmp_path / "memory.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)  # truncated mid-copy
    window = studio(path)
    assert window.database_path is None and window.last_error
    if window.error_box is not None:
        window.error_box.close()
    shutil.copyfile(FIXTURES / "support.db", path)  # the copy finished
    window.refresh()
    assert studio_ctx.runner.wait_idle()
    assert window.database_path == str(path)
    assert window.thread_model.rowCount() == 6

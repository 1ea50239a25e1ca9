"""Run database work off the GUI thread (Anki's TaskManager shape) and deliver results back on it.

One single-worker executor owns the `MemoryStore`: the store is opened, used and closed in that
worker thread only (a libSQL connection belongs to its thread). Every database task is a plain
function `fn(store, progress, cancel) -> result`; work that never reads the database (network
calls, diffs) runs on a second pool as `fn(progress, cancel)`. Results, errors and progress reach
the GUI thread through a queued Qt signal, where the caller's callbacks run. A task submitted with
a `key` supersedes the previous task of that key: the older one is cancelled and its result dropped.

CPU-heavy loader calls of big databases (`submit_call(..., helper=True)`) run in a helper process
with its own read-only connection (`studio.app.helper_process`): Python threads share one GIL, and
a worker thread busy computing statuses would otherwise stall every paint of the GUI thread.

Each database task is one *load* of the store API: it runs inside `store.snapshot()`, so all its
reads see one consistent state (one read transaction, ended when the task returns).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, Qt, Signal

from studio.app.helper_process import HelperProcess, HelperUnavailable, bind_cancel
from studio.app.text import read_failure
from studio.errors import StoreDamaged, StoreError, StudioError
from studio.store import open_store
from studio.store.lock_wait import reporting_lock_waits
from studio.store.memory_store import MemoryStore

log = logging.getLogger(__name__)

#: Workers of the pool for work that does not read the database (network calls, diffs).
POOL_WORKERS = 4

Progress = Callable[..., None]
TaskFn = Callable[[MemoryStore | None, Progress, threading.Event], Any]


def run_load(store: MemoryStore | None, fn: Callable[..., Any], *args: Any) -> Any:
    """Return FN(STORE, *ARGS) run as one load: inside `STORE.snapshot()` (no store: as it is)."""
    if store is None:
        return fn(store, *args)
    with store.snapshot():
        return fn(store, *args)


def as_exception(exc: BaseException) -> Exception:
    """Return EXC as an Exception the GUI can show: a BaseException that is not one (a Rust panic
    from a driver, say) becomes a StoreError with its message, so no load is left waiting for good."""
    return StoreError(f"the read failed inside a driver ({exc.__class__.__name__}: {exc}); "
                      "press F5 to try again, or open a backup of the file")


@dataclass
class Task:
    """A submitted task: its optional supersession key, its cancel event, its function and callbacks.

    The function and callbacks are held here only, and dropped on the GUI thread once the task is
    delivered: a worker thread never holds the last reference to a callback, so a widget that a
    callback keeps alive is never destroyed off the GUI thread (Qt deadlocks or aborts when a
    QObject is deleted from another thread). Likewise nothing a task's function holds may be connected
    to a Qt signal or timer (`QTimer.singleShot(ms, event.set)`, say): PySide watches such an object
    through a weak reference and, when a worker drops the last reference, disconnects from that worker
    (a SIGSEGV in `QMetaObject::Connection::~Connection`). Hand plain Python objects across.
    """

    key: str | None
    cancel: threading.Event = field(default_factory=threading.Event)
    done: bool = False
    fn: Callable[[Progress, threading.Event], Any] | None = field(default=None, repr=False)
    on_done: Callable[[Any], None] | None = field(default=None, repr=False)
    on_error: Callable[[Exception], None] | None = field(default=None, repr=False)
    on_progress: Callable[..., None] | None = field(default=None, repr=False)

    def bind(self, fn, on_done, on_error, on_progress) -> Task:
        """Attach the work function and callbacks (GUI thread, before the task is queued)."""
        self.fn, self.on_done, self.on_error, self.on_progress = fn, on_done, on_error, on_progress
        return self

    def release(self) -> None:
        """Drop the function and callbacks (GUI thread, once the task is delivered)."""
        self.fn = self.on_done = self.on_error = self.on_progress = None

    @property
    def cancelled(self) -> bool:
        """Return True once the task was cancelled (its result will be dropped)."""
        return self.cancel.is_set()


@dataclass
class OpenedStore:
    """What the GUI learns when a database was opened in the worker."""

    path: str                  # the file's path (its real bytes as surrogate escapes), or a server's display URL
    writable: bool
    data_version: Any          # store.fingerprint() when opened (live refresh compares with it); None for a
                               # server store (the listing that follows the open reads it)
    local_path: str | None = None   # the database file, None for a server store (no file to watch)
    notices: tuple[str, ...] = ()   # what the user should know about this open (a token in the URL…)
    write_note: str | None = None   # what a write's confirmation adds (a standalone MongoDB: not atomic there)


def _local_path(store: MemoryStore) -> str | None:
    path = store.location.path   # None for a server store
    return str(path) if path is not None else None


class TaskRunner(QObject):
    """Own the database worker thread; run tasks there; call back on the GUI thread."""

    delivered = Signal(object)          # internal: a closure to run on the GUI thread
    pending_changed = Signal(int)       # number of tasks submitted and not yet delivered
    task_failed = Signal(str)           # an error of a task that has no on_error callback (fmt.read_failure words)
    error_delivered = Signal(str, str)  # every error delivered (key or "", message), on_error or not
    failure_delivered = Signal(str, object)  # the same, with the exception itself (key or "", exception)
    store_damaged = Signal(str)   # the first StoreDamaged of the open store: its sentence (once per store)
    store_replaced = Signal()     # another store was opened (what was said about the previous one is void)
    lock_waiting = Signal(object)  # a database task waits for another process's lock: seconds so far; None: over

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="studio-db")
        self._pool = ThreadPoolExecutor(max_workers=POOL_WORKERS, thread_name_prefix="studio-pool")
        self._store: MemoryStore | None = None   # touched only inside the worker thread
        self._pending = 0
        self._keyed: dict[str, Task] = {}
        self._live: list[Task] = []
        self._closed = False
        self._helper = HelperProcess()
        # One thread waits for the helper's answers, in submission order (like the database worker).
        self._helper_waiter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="studio-helper")
        self._helper_path: str | None = None   # GUI side: the database the worker holds, as last opened
        self._opens = 0                        # GUI side: databases opened so far (the helper re-opens on change)
        self._damage_said = False             # GUI side: store_damaged emitted for the open store
        # the stop events of the tasks waiting for another process's lock now (`stop_lock_wait` sets them): a task
        # that starts meanwhile on another thread (the pool, the helper's waiter) has its own and takes none over
        self._waiting: set[threading.Event] = set()
        self._waiting_lock = threading.Lock()
        self.delivered.connect(self._on_runner_delivered, Qt.ConnectionType.QueuedConnection)

    # -- submitting ------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Return how many tasks are submitted and not yet delivered."""
        return self._pending

    @property
    def closed(self) -> bool:
        """Return True after `shutdown`."""
        return self._closed

    def submit(self, fn: TaskFn, *, on_done: Callable[[Any], None] | None = None,
               on_error: Callable[[Exception], None] | None = None,
               on_progress: Callable[..., None] | None = None, key: str | None = None,
               load: bool = True) -> Task:
        """Run FN(store, progress, cancel) on the database worker; call ON_DONE(result) on the GUI thread.

        PROGRESS(done, total, payload=None) may be called by FN from the worker; ON_PROGRESS gets
        the same arguments on the GUI thread. A task with KEY cancels the previous task of that KEY.
        LOAD (default): FN runs as one load, inside `store.snapshot()`.
        """
        task = self._register(key)
        if not task.cancelled:
            if load:
                task.bind(lambda progress, cancel: run_load(self._store, fn, progress, cancel), on_done, on_error,
                          on_progress)
            else:
                task.bind(lambda progress, cancel: fn(self._store, progress, cancel), on_done, on_error, on_progress)
            self._executor.submit(self._run, task)
        return task

    def submit_pooled(self, fn: Callable[[Progress, threading.Event], Any], *,
                      on_done: Callable[[Any], None] | None = None,
                      on_error: Callable[[Exception], None] | None = None,
                      on_progress: Callable[..., None] | None = None, key: str | None = None) -> Task:
        """Run FN(progress, cancel), which must not touch the database, on the other pool (network, CPU).

        Same delivery, keys and cancellation as `submit`; it never waits behind database reads.
        """
        task = self._register(key)
        if not task.cancelled:
            task.bind(fn, on_done, on_error, on_progress)
            self._pool.submit(self._run, task)
        return task

    def submit_call(self, fn: Callable[..., Any], *args: Any, helper: bool = False,
                    on_done: Callable[[Any], None] | None = None,
                    on_error: Callable[[Exception], None] | None = None, key: str | None = None) -> Task:
        """Run FN(store, *ARGS), a module-level loader; in the helper process when HELPER, else on the database worker.

        The helper opens the database the worker last opened; when it cannot run (not startable, died),
        the call runs on the database worker instead. Same delivery, keys and cancellation as `submit`,
        without progress; a `CANCEL` among ARGS (`studio.app.helper_process.CANCEL`) reaches FN as an
        event set when the task is cancelled, in the helper process as on the worker.
        """
        task = self._register(key)
        if task.cancelled:
            return task
        path, generation = self._helper_path, self._opens
        if helper and path is not None and self._helper.available:
            def in_helper(_progress, cancel: threading.Event) -> Any:
                if cancel.is_set():
                    return None   # superseded while queued: dropped anyway
                try:
                    return self._helper.call(path, generation, fn, *args, cancel=cancel)
                except HelperUnavailable:
                    if cancel.is_set():
                        return None
                    log.info("helper process unavailable; running %s on the database worker", fn.__name__)
                    return self._executor.submit(lambda: run_load(self._store, fn, *bind_cancel(args, cancel))).result()

            task.bind(in_helper, on_done, on_error, None)
            self._helper_waiter.submit(self._run, task)
        else:
            task.bind(lambda _p, cancel: run_load(self._store, fn, *bind_cancel(args, cancel)), on_done, on_error, None)
            self._executor.submit(self._run, task)
        return task

    @property
    def helper(self) -> HelperProcess:
        """Return the helper process (started on its first call)."""
        return self._helper

    def _register(self, key: str | None) -> Task:
        """Create a task (cancelled at once after shutdown), superseding KEY's previous task."""
        task = Task(key)
        if self._closed:
            task.cancel.set()
            return task
        if key is not None:
            previous = self._keyed.get(key)
            if previous is not None:
                previous.cancel.set()
            self._keyed[key] = task
        self._live.append(task)
        self._set_pending(self._pending + 1)
        return task

    def open_store(self, path: str, *, on_done: Callable[[OpenedStore], None] | None = None,
                   on_error: Callable[[Exception], None] | None = None) -> Task:
        """Open PATH read-only in the worker; on success it replaces (and closes) the current store.

        On failure the current store stays open and ON_ERROR gets the StoreError. Tasks submitted
        earlier run (and are delivered) before it, against the previous store; later ones use the new
        one. Opens are never superseded: each outcome is delivered, in order, so the GUI always
        knows which store the worker holds.
        """
        def opened(info: OpenedStore) -> None:
            self._helper_path = path   # the target as given: the display form of a URL has its password as ***
            self._opens += 1
            self._damage_said = False
            self.store_replaced.emit()
            if on_done is not None:
                on_done(info)

        return self.submit(lambda _store, _p, _c: self._open_in_worker(path), on_done=opened, on_error=on_error,
                           load=False)

    def stop_lock_wait(self) -> None:
        """Stop the tasks that wait for another process's lock: a read fails with a StoreError ("Stopped
        waiting …"), a write is refused with nothing written (WriteRefused "busy"), delivered to its on_error."""
        with self._waiting_lock:
            for stop in self._waiting:
                stop.set()

    def _lock_wait_reporter(self, stop: threading.Event) -> Callable[[float | None], None]:
        """The ON_WAIT of one task's lock waits: STOP is listed as waiting (None: no longer), the face told."""
        def on_wait(seconds: float | None) -> None:
            with self._waiting_lock:
                if seconds is None:
                    self._waiting.discard(stop)
                else:
                    self._waiting.add(stop)
            self.lock_waiting.emit(seconds)

        return on_wait

    def cancel(self, key: str) -> None:
        """Cancel the task of KEY, if any (its result is dropped)."""
        task = self._keyed.get(key)
        if task is not None:
            task.cancel.set()

    def cancel_all(self) -> None:
        """Cancel every task not yet delivered."""
        for task in list(self._live):
            task.cancel.set()

    # -- waiting and shutting down ---------------------------------------------------------

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Process GUI events until every task is delivered (tests, screenshots); False on TIMEOUT (s)."""
        deadline = time.monotonic() + timeout
        while self._pending:
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
            if not self._pending:
                break
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        return True

    def shutdown(self) -> None:
        """Cancel all tasks, close the store in its worker and stop the worker (blocks until done)."""
        if self._closed:
            return
        self._closed = True
        self.cancel_all()
        self._helper.close()
        self._executor.submit(self._close_in_worker)
        self._helper_waiter.shutdown(wait=True, cancel_futures=True)
        self._executor.shutdown(wait=True, cancel_futures=False)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._live.clear()
        self._keyed.clear()
        self._set_pending(0)

    # -- worker side -----------------------------------------------------------------------

    def _open_in_worker(self, path: str) -> OpenedStore:
        store = open_store(path)
        old, self._store = self._store, store
        if old is not None:
            old.close()
        local = _local_path(store)
        # a server store's fingerprint is one more statement over every table (~0.1 s with 220k messages)
        # before the first paint: the listing that follows every open reads it anyway
        # a file by its real name (its bytes, even when they are not UTF-8: `display_path` shows it)
        return OpenedStore(path=local if local is not None else store.location.display, writable=store.writable,
                           data_version=store.fingerprint() if local is not None else None,
                           local_path=local, notices=tuple(store.notices), write_note=store.write_note)

    def _close_in_worker(self) -> None:
        if self._store is not None:
            try:
                self._store.close()
            finally:
                self._store = None

    def _run(self, task: Task) -> None:
        # No local names for the function or callbacks: they stay referenced by TASK only (see Task).
        def progress(done: int, total: int, payload: Any = None) -> None:
            if task.on_progress is not None and not task.cancel.is_set():
                self.delivered.emit(lambda: self._deliver_progress(task, done, total, payload))

        outcome: tuple[str, Any]
        if task.cancel.is_set() or task.fn is None:
            outcome = ("cancelled", None)
        else:
            stop = threading.Event()   # this task's own: a stop meant for it only
            try:
                # a read or write waiting for another process's lock sleeps in Python (studio.store.lock_wait): the
                # GUI thread runs meanwhile, hears how long it has waited and may stop the wait
                with reporting_lock_waits(self._lock_wait_reporter(stop), stop):
                    outcome = ("done", task.fn(progress, task.cancel))
            except BaseException as exc:  # the task boundary: every failure (a driver panic too) goes back to the GUI
                if not isinstance(exc, StudioError):  # a named error is a message for the user, not a bug
                    log.error("task failed", exc_info=exc)
                outcome = ("error", exc if isinstance(exc, Exception) else as_exception(exc))
        self.delivered.emit(lambda: self._finish(task, outcome))

    # -- GUI side --------------------------------------------------------------------------

    def _on_runner_delivered(self, closure: Callable[[], None]) -> None:
        closure()

    def _deliver_progress(self, task: Task, done: int, total: int, payload: Any) -> None:
        if self._closed or task.cancel.is_set() or task.done or task.on_progress is None:
            return
        task.on_progress(done, total, payload)

    def _finish(self, task: Task, outcome: tuple[str, Any]) -> None:
        on_done, on_error = task.on_done, task.on_error
        task.release()
        task.done = True
        if task in self._live:
            self._live.remove(task)
        if task.key is not None and self._keyed.get(task.key) is task:
            del self._keyed[task.key]
        try:
            kind, value = outcome
            if self._closed or task.cancel.is_set() or kind == "cancelled":
                return
            if kind == "done":
                if on_done is not None:
                    on_done(value)
                return
            self.error_delivered.emit(task.key or "", str(value) or value.__class__.__name__)
            self.failure_delivered.emit(task.key or "", value)
            if isinstance(value, StoreDamaged) and not self._damage_said:
                self._damage_said = True   # said once: every later read of the damaged part fails the same way
                self.store_damaged.emit(str(value))
            if on_error is not None:
                on_error(value)
            else:
                self.task_failed.emit(read_failure(value))   # a damaged file: a pointer to the banner
        finally:
            if not self._closed:
                self._set_pending(max(0, self._pending - 1))

    def _set_pending(self, value: int) -> None:
        if value != self._pending:
            self._pending = value
            self.pending_changed.emit(value)


@dataclass
class Failure:
    """An expected failure (a StudioError: refused, no key, HTTP 401, cancelled…) handed back as a value."""

    error: Exception


def submit_job(runner: TaskRunner, fn: Callable[[Any, threading.Event], Any], *, on_done: Callable[[Any], None],
               on_error: Callable[[Exception], None], on_progress: Callable[..., None] | None = None,
               key: str | None = None, on_worker: bool = False) -> Task:
    """Run FN(progress, cancel), an app-layer job that opens the database itself, on RUNNER; return the Task.

    ON_WORKER runs it on the database worker, between the studio's own reads (writes go there, so
    no read of ours overlaps a write); otherwise on the pool (network calls). A StudioError raised
    by FN reaches ON_ERROR as a value, so the runner does not log a user's missing key or a refused
    write as a crash; any other exception still goes through the runner.
    """
    def guarded(progress, cancel):
        try:
            return fn(progress, cancel)
        except StudioError as exc:
            return Failure(exc)

    def deliver(value):
        if isinstance(value, Failure):
            on_error(value.error)
        else:
            on_done(value)

    if on_worker:
        return runner.submit(lambda _store, progress, cancel: guarded(progress, cancel), on_done=deliver,
                             on_error=on_error, on_progress=on_progress, key=key, load=False)  # opens its own
    return runner.submit_pooled(guarded, on_done=deliver, on_error=on_error, on_progress=on_progress, key=key)


def run_in_pool(fn: Callable[[Any], Any], cancel_event: threading.Event, token) -> Any:
    """Run FN(TOKEN) (a studio.llm.CancelToken), firing TOKEN when the TaskRunner's CANCEL_EVENT is set."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if cancel_event.wait(0.05):
                token.cancel()
                return

    watcher = threading.Thread(target=watch, name="studio-reflect-cancel", daemon=True)
    watcher.start()
    try:
        return fn(token)
    finally:
        stop.set()

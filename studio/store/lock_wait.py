"""Wait for another process's lock on a SQLite file without holding the interpreter lock (no Qt).

SQLite's own busy handler (`PRAGMA busy_timeout`) sleeps inside the libSQL driver, which keeps
Python's GIL for the whole wait: while an agent holds a rollback-journal file's lock, every other
thread of the studio — the GUI thread included — stops (the window went black for the ~5 s of
the timeout). Read-only connections therefore fail at once when the file is locked
(`busy_timeout = 0`), and `patiently` tries the read again every BUSY_POLL_S, sleeping in Python
(the GIL is free meanwhile), for up to LOCK_WAIT_S in all — the wait SQLite's handler made.

A write waits the same way (`studio.store.write.backends.sqlite`: its BEGIN IMMEDIATE and its COMMIT,
on a connection whose busy timeout is 0), for up to the write's own bound (`bound_s`), and a stop
refuses it with nothing written (`stopped`).

A face hears about the wait and can stop it: inside `reporting_lock_waits(on_wait, cancel)`, a
read or write of that thread that waits calls ON_WAIT(seconds waited) about every LOCK_REPORT_S and
once with None when it is over, and gives up as soon as CANCEL is set. The hooks are per thread:
the studio's database worker sets them around each task.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from studio.errors import StoreError

__all__ = ["BUSY_POLL_S", "LOCK_REPORT_S", "LOCK_WAIT_S", "is_busy", "patiently", "reporting_lock_waits",
           "stopped_waiting"]

#: How long a read waits in all for another process's lock before it fails (s): SQLite's busy timeout of before.
LOCK_WAIT_S = 5.0
#: How often a waiting read tries again (s).
BUSY_POLL_S = 0.02
#: How often a waiting read tells its face how long it has waited (s).
LOCK_REPORT_S = 0.1

T = TypeVar("T")


class _Hooks(threading.local):
    on_wait: Callable[[float | None], None] | None = None
    cancel: threading.Event | None = None


_hooks = _Hooks()


def is_busy(exc: BaseException) -> bool:
    """True when EXC is SQLite's "database is locked" / "database is busy" (another process holds the lock)."""
    text = str(exc).lower()
    return isinstance(exc, Exception) and ("database is locked" in text or "busy" in text)


@contextmanager
def reporting_lock_waits(on_wait: Callable[[float | None], None] | None,
                         cancel: threading.Event | None) -> Iterator[None]:
    """Within the block, this thread's reads that wait for a lock call ON_WAIT and stop when CANCEL is set."""
    old = (_hooks.on_wait, _hooks.cancel)
    _hooks.on_wait, _hooks.cancel = on_wait, cancel
    try:
        yield
    finally:
        _hooks.on_wait, _hooks.cancel = old


def stopped_waiting(display: str) -> str:
    """The sentence of a wait the user stopped (Cancel): DISPLAY names the database."""
    return f"Stopped waiting for {display}: another process holds its lock (an agent writing to it)"


def patiently(run: Callable[[], T], display: str, *, bound_s: float | None = None,
              stopped: Callable[[str], Exception] | None = None) -> T:
    """Return RUN(), tried again while another process holds the lock of the database DISPLAY names.

    RUN's "database is locked" error is raised as is once BOUND_S seconds (default LOCK_WAIT_S) have
    passed since its first one; any other error at once. When the thread's cancel event
    (`reporting_lock_waits`) is set, raises STOPPED(sentence) (default: StoreError(sentence)).
    """
    bound = LOCK_WAIT_S if bound_s is None else bound_s
    started = reported = None
    try:
        while True:
            try:
                return run()
            except Exception as exc:
                if not is_busy(exc):
                    raise
                now = time.monotonic()
                started = now if started is None else started
                if now - started >= bound:
                    raise
                cancel = _hooks.cancel
                if cancel is not None and cancel.is_set():
                    raise (stopped or StoreError)(stopped_waiting(display)) from exc
                if _hooks.on_wait is not None and (reported is None or now - reported >= LOCK_REPORT_S):
                    reported = now
                    _hooks.on_wait(now - started)
                if cancel is not None:
                    cancel.wait(BUSY_POLL_S)
                else:
                    time.sleep(BUSY_POLL_S)
    finally:
        if reported is not None and _hooks.on_wait is not None:
            _hooks.on_wait(None)

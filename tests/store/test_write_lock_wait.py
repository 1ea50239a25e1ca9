"""Issue 21: a write waits for another process's lock in Python, so the rest of the studio runs meanwhile.

Before, a file write set SQLite's busy timeout (3 s per BEGIN IMMEDIATE attempt): SQLite's busy handler
slept inside the libSQL driver holding Python's interpreter lock, so every other thread of the studio
(the GUI thread included) stopped for the whole wait, and nobody could stop it. Now BEGIN IMMEDIATE and
COMMIT are tried again in Python (`studio.store.lock_wait.patiently`) for up to the write's bound:
the wait is reported (`reporting_lock_waits`' ON_WAIT), another thread takes its steps meanwhile,
and a stop refuses the write with nothing written.

Sequenced with events, never with timing: the holder process keeps its lock until `release`, the
write's bound is made longer than any test run, and the other thread's 1,000 steps are counted
while the write is known (by its ON_WAIT) to wait and known (by its `done` event) not to have ended.
"""

from __future__ import annotations

import threading

import pytest

from studio.errors import WriteRefused
from studio.store import open_store
from studio.store import schema as sc
from studio.store.lock_wait import reporting_lock_waits
from studio.store.target import parse_target
from studio.store.write.backends import sqlite as sqlite_writes
from studio.store.write.backends.sqlite import sqlite_write_transaction
from studio.store.write.row_backup import backup_root
from studio.store.write.threads import update_thread
from tests.lock_holder import copy_for, hold_lock, release

THREAD = "support-1"
#: Longer than any test run (ms): the wait ends when the test releases the lock or stops it, never by the clock.
NO_BOUND_MS = 10**9
#: A safety net only (s): a wait that never starts or never ends fails the test instead of hanging it.
NET_S = 120


def title_of(path) -> str:
    with open_store(str(path)) as store:
        return store.get_thread(THREAD).title


class WaitingWrite:
    """WRITE() on its own thread, inside `reporting_lock_waits`: WAITING is set once it reports a lock wait,
    DONE when it ended (OUTCOME: its result or exception); STOP stops its wait."""

    def __init__(self, write):
        self.waiting, self.done, self.stop = threading.Event(), threading.Event(), threading.Event()
        self.reports: list[float | None] = []
        self.outcome: object = None
        self.thread = threading.Thread(target=self._run, args=(write,), daemon=True)
        self.thread.start()

    def _on_wait(self, seconds: float | None) -> None:
        self.reports.append(seconds)
        if seconds is not None:
            self.waiting.set()

    def _run(self, write) -> None:
        try:
            with reporting_lock_waits(self._on_wait, self.stop):
                self.outcome = write()
        except Exception as exc:  # handed to the test
            self.outcome = exc
        finally:
            self.done.set()

    def finish(self) -> object:
        assert self.done.wait(NET_S)
        self.thread.join(NET_S)
        return self.outcome


def steps_taken_meanwhile(n: int = 1000) -> int:
    """Take N steps on another thread (each needs the interpreter lock) and return how many were taken."""
    taken = []

    def walk():
        for i in range(n):
            taken.append(i)

    walker = threading.Thread(target=walk, daemon=True)
    walker.start()
    walker.join(NET_S)
    return len(taken)


@pytest.mark.parametrize("kind", ["rollback-journal", "wal"])
@pytest.mark.parametrize("ending", ["released", "stopped"])
def test_a_write_waits_for_the_lock_in_python_and_is_written_or_refused(fixture_db, monkeypatch, kind, ending):
    monkeypatch.setattr(sqlite_writes, "LOCK_WAIT_MS", NO_BOUND_MS)
    path = copy_for(fixture_db, kind)
    before = title_of(path)
    holder = hold_lock(path, kind)
    try:
        write = WaitingWrite(lambda: update_thread(path, THREAD, title="Renamed while an agent wrote"))
        assert write.waiting.wait(NET_S), write.outcome   # its BEGIN IMMEDIATE waits, and says so
        assert steps_taken_meanwhile() == 1000            # another thread ran 1,000 steps during the wait …
        assert not write.done.is_set()                    # … which is not over: the holder still has the lock
        if ending == "stopped":
            write.stop.set()                              # the face's Cancel
            outcome = write.finish()
    finally:
        release(holder)
    if ending == "released":
        outcome = write.finish()
        assert isinstance(outcome, dict) and outcome["title"] == "Renamed while an agent wrote", outcome
        assert title_of(path) == "Renamed while an agent wrote"
    else:
        assert isinstance(outcome, WriteRefused) and outcome.reason == "busy", outcome
        assert str(outcome) == (f"Stopped waiting for {path}: another process holds its lock (an agent writing to "
                                "it). Try again when it has finished.")
        assert title_of(path) == before
        assert not backup_root().exists() or not any(backup_root().rglob("*.json"))   # no backup of a non-write
    assert write.reports[-1] is None                      # the wait was reported over


@pytest.mark.parametrize("ending", ["released", "stopped"])
def test_a_commit_waits_in_python_for_another_process_s_reader(fixture_db, monkeypatch, ending):
    """A rollback-journal file's COMMIT needs every reader gone: it waits like BEGIN (reported, stoppable)."""
    monkeypatch.setattr(sqlite_writes, "LOCK_WAIT_MS", NO_BOUND_MS)
    path = copy_for(fixture_db, "reader")
    before = title_of(path)
    inside, reading = threading.Event(), threading.Event()

    def write():
        with sqlite_write_transaction(parse_target(str(path)), label="test") as tx:
            tx.update(sc.THREADS, {"title": "Committed after the reader"}, "id = ?", (THREAD,))
            inside.set()
            assert reading.wait(NET_S)     # another process now reads: our COMMIT must wait for it
        return "committed"

    write_ = None
    holder = None
    try:
        write_ = WaitingWrite(write)
        assert inside.wait(NET_S), write_.outcome
        holder = hold_lock(path, "reader")
        reading.set()
        assert write_.waiting.wait(NET_S), write_.outcome
        assert steps_taken_meanwhile() == 1000
        assert not write_.done.is_set()
        if ending == "stopped":
            write_.stop.set()
            outcome = write_.finish()
    finally:
        reading.set()
        if holder is not None:
            release(holder)
    if ending == "released":
        assert write_.finish() == "committed"
        assert title_of(path) == "Committed after the reader"
    else:
        assert isinstance(outcome, WriteRefused) and outcome.reason == "busy", outcome
        assert title_of(path) == before                  # rolled back
        assert not backup_root().exists() or not any(backup_root().rglob("*.json"))   # its row backup deleted

"""Compute the OM status of every thread of a database, with progress and cancellation.

Used by the studio's thread list (bars filled in the background) and by benchmarks. Each status
is exactly `status.compute_status` (Mastra's getStatus); this module only batches the work.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterator

from studio.engine.status import ThreadStatus, compute_status
from studio.errors import StoreError
from studio.store.memory_store import MemoryStore
from studio.store.records import Thread

#: Threads whose OM records are read in one query (keeps a short, cancelled batch cheap).
RECORD_CHUNK = 50


def iter_statuses(store: MemoryStore, threads: list[Thread] | None = None, *,
                  progress: Callable[[int, int], None] | None = None,
                  cancel: threading.Event | None = None,
                  on_error: Callable[[Thread, Exception], None] | None = None) -> Iterator[ThreadStatus]:
    """Yield the status of each thread governed by an OM record (threads without one are skipped).

    THREADS defaults to every thread. PROGRESS(done, total) is called after each thread; setting
    CANCEL stops the iteration before the next thread. A thread whose status cannot be computed
    (stored values Mastra itself could not use) is skipped and reported to ON_ERROR(thread, exc).
    Raises StoreError on a failed read.
    """
    threads = store.list_threads() if threads is None else threads
    total = len(threads)
    done = 0
    for start in range(0, total, RECORD_CHUNK):
        chunk = threads[start:start + RECORD_CHUNK]
        current = store.om_current_many(
            key for t in chunk for key in (f"thread:{t.id}", f"resource:{t.resource_id}"))
        for thread in chunk:
            if cancel is not None and cancel.is_set():
                return
            record = current.get(f"thread:{thread.id}") or current.get(f"resource:{thread.resource_id}")
            if record is not None:
                try:
                    status = compute_status(store, thread, record)
                except StoreError:
                    raise  # the database itself failed: stop
                except Exception as exc:  # one odd record must not hide every other thread's bars
                    status = None
                    if on_error is not None:
                        on_error(thread, exc)
                if status is not None:
                    yield status
            done += 1
            if progress is not None:
                progress(done, total)

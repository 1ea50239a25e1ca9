"""Compute the OM status of every thread of a database, with progress and cancellation.

Used by the studio's thread list (bars filled in the background) and by benchmarks. Each status
is exactly `status.compute_status` (Mastra's getStatus); this module only batches the work: per
chunk of threads, one statement for their current OM records and one per kind of row they need
(`status.load_status_rows`), then `status.status_from_rows` for each.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterator

from studio.engine.status import ThreadStatus, load_status_rows, status_from_rows
from studio.errors import StoreError
from studio.store.memory_store import MemoryStore
from studio.store.records import Thread

#: Threads whose OM records and unobserved messages are read together (keeps a short, cancelled batch cheap).
RECORD_CHUNK = 50
#: The first chunk is this small and each next one twice as large up to RECORD_CHUNK: a batch cut
#: short by the studio's time budget has read few rows it did not use.
FIRST_CHUNK = 8


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
    all_threads = store.list_threads() if threads is None else None  # None: read once per chunk if needed
    threads = all_threads if threads is None else threads
    total = len(threads)
    done = 0
    start, size = 0, FIRST_CHUNK
    while start < total:
        chunk = threads[start:start + size]
        start, size = start + len(chunk), min(RECORD_CHUNK, size * 2)
        current = store.om_current_many(
            key for t in chunk for key in (f"thread:{t.id}", f"resource:{t.resource_id}"))
        if cancel is not None and cancel.is_set():
            return
        pairs = []
        for thread in chunk:
            record = current.get(f"thread:{thread.id}") or current.get(f"resource:{thread.resource_id}")
            pairs.append((thread, record))
        # the chunk's unobserved messages in one statement per kind (not one per thread)
        rows = load_status_rows(store, [(t, r) for t, r in pairs if r is not None], all_threads)
        for thread, record in pairs:
            if cancel is not None and cancel.is_set():
                return
            if record is not None:
                try:
                    status = status_from_rows(thread, record, rows)
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

"""OM statuses of many threads, read in batches (no Qt): the thread list's bars, the Overview, `inspect`.

Each status is the engine's (`studio.engine.status.status_from_rows`: Mastra's getStatus); this
module batches the reading only, once for every view that needs many:

* `iter_statuses(store, pairs)`: the statuses of (thread, its current record) pairs, with one
  statement per kind of row (`status.load_status_rows`), a thread-scope pair's unobserved
  messages decoded, counted and dropped one thread at a time (`inspect` of 5,000 threads holds one
  thread's messages, not 130,000);
* `iter_thread_statuses(store, threads)`: the same for threads, their current records read per
  chunk (RECORD_CHUNK threads: a short, cancelled batch stays cheap);
* `status_batch`: what one background task of the studio computes (STATUS_BATCH_SECONDS at most,
  so the database worker, or the helper process, is soon free for what the user clicks), and
  `StatusRound`: which threads a view still waits for, batch after batch (the thread list and the
  Overview window submit the batches: `runner.submit_call(status_batch, round.next_threads(helper),
  CANCEL, helper=helper, …)`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from studio.app.uncountable import UncountableMessage, uncountable_sentence
from studio.engine.status import StatusRows, ThreadStatus, load_status_rows, status_from_rows
from studio.engine.unobserved import storage_cursor
from studio.errors import StoreError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore
    from studio.store.records import Message, OMRecord, Thread

#: Threads whose OM records and unobserved messages are read together (keeps a short, cancelled batch cheap).
RECORD_CHUNK = 50
#: The first chunk is this small and each next one twice as large up to RECORD_CHUNK: a batch cut
#: short by the studio's time budget has read few rows it did not use.
FIRST_CHUNK = 8
#: Time one background status batch may take before it hands the database worker back (s).
STATUS_BATCH_SECONDS = 0.2
#: Threads sent to the helper process per status batch (the database worker takes them all, time-boxed).
HELPER_CHUNK = 250


def iter_statuses(store: MemoryStore, pairs: Iterable[tuple[Thread, OMRecord]], threads: list[Thread] | None = None,
                  *, now_ms: int | None = None, cancel: threading.Event | None = None,
                  on_error: Callable[[Thread, Exception], None] | None = None,
                  handled: Callable[[Thread], None] | None = None,
                  counted: dict[tuple, int] | None = None,
                  read_since: Callable[[dict[tuple[str, str | None], list]],
                                       Iterable[tuple[tuple[str, str | None], list[Message]]]] | None = None,
                  ) -> Iterator[ThreadStatus]:
    """Yield the status (`status_from_rows`) of each (thread, its current record) of PAIRS, in no set order.

    The same figures as `load_status_rows` + `status_from_rows` for each pair, read with as few
    statements (they do not grow with the number of pairs), but a thread-scope pair's unobserved
    messages are decoded, counted and dropped one thread at a time (the store's
    `iter_messages_since_many`). Resource-scope pairs, whose status needs other threads' messages
    too, are read together with `load_status_rows`; THREADS (every thread of the store, listThreads
    order) gives their resources' threads (None: the store lists them). Setting CANCEL stops before
    the next pair; HANDLED(thread) is called after each pair (its status yielded or failed). A pair
    whose status cannot be computed (stored values Mastra itself could not use) goes to
    ON_ERROR(thread, exc), or is raised without ON_ERROR. COUNTED: a dict that receives the counts of the
    messages the statuses counted (`status_from_rows`). READ_SINCE: what reads the thread-scope pairs'
    messages instead of the store's `iter_messages_since_many` (given {(thread id, since): pairs}, it yields
    ((thread id, since), the same messages) for each key): a caller that read those threads' rows already.
    Raises StoreError on a failed read.
    """
    by_key: dict[tuple[str, str | None], list[tuple[Thread, OMRecord]]] = {}
    together = []
    for thread, record in pairs:
        if record.scope == "resource" and thread.resource_id:
            together.append((thread, record))
        else:
            by_key.setdefault((thread.id, storage_cursor(record.last_observed_at)), []).append((thread, record))
    def batches() -> Iterator[tuple[list[tuple[Thread, OMRecord]], StatusRows]]:
        if by_key:
            for key, messages in (store.iter_messages_since_many if read_since is None else read_since)(by_key):
                yield by_key.get(key, []), StatusRows(thread_messages={key: messages})
        if together and not (cancel is not None and cancel.is_set()):
            yield together, load_status_rows(store, together, threads)

    for batch, rows in batches():
        for thread, record in batch:
            if cancel is not None and cancel.is_set():
                return
            try:
                status = status_from_rows(thread, record, rows, now_ms=now_ms, counted=counted)
            except StoreError:
                raise  # the database itself failed: stop
            except Exception as exc:  # one odd record must not hide every other thread's bars
                if on_error is None:
                    raise
                on_error(thread, exc)
                status = None
            if status is not None:
                yield status
            if handled is not None:
                handled(thread)


def iter_thread_statuses(store: MemoryStore, threads: list[Thread] | None = None, *,
                         cancel: threading.Event | None = None,
                         on_error: Callable[[Thread, Exception], None] | None = None,
                         handled: Callable[[Thread], None] | None = None,
                         counted: dict[tuple, int] | None = None) -> Iterator[ThreadStatus]:
    """Yield the status of each of THREADS governed by an OM record (threads without one are skipped).

    THREADS defaults to every thread. Read chunk by chunk (FIRST_CHUNK threads, doubling up to
    RECORD_CHUNK): one statement for the chunk's current OM records, then `iter_statuses`.
    HANDLED(thread) is called after each thread (its status yielded or failed, or no record);
    setting CANCEL stops before the next thread; ON_ERROR and COUNTED as in `iter_statuses`. Raises
    StoreError on a failed read.
    """
    all_threads = store.list_threads() if threads is None else None  # None: read once per chunk if needed
    threads = all_threads if threads is None else threads
    start, size = 0, FIRST_CHUNK
    while start < len(threads):
        chunk = threads[start:start + size]
        start, size = start + len(chunk), min(RECORD_CHUNK, size * 2)
        current = store.om_current_many(
            key for t in chunk for key in (f"thread:{t.id}", f"resource:{t.resource_id}"))
        if cancel is not None and cancel.is_set():
            return
        pairs = []
        for thread in chunk:
            record = current.get(f"thread:{thread.id}") or current.get(f"resource:{thread.resource_id}")
            if record is not None:
                pairs.append((thread, record))
            elif handled is not None:
                handled(thread)
        yield from iter_statuses(store, pairs, all_threads, cancel=cancel, on_error=on_error, handled=handled,
                                 counted=counted)


@dataclass
class StatusBatch:
    """What one background batch computed: STATUSES, and the ids of the threads it HANDLED (statuses or none).

    UNCOUNTABLE: {thread id: sentence} of the threads without a status because their pending messages hold
    one Mastra cannot count (`UncountableMessage`; `studio.app.uncountable`)."""

    statuses: list[ThreadStatus] = field(default_factory=list)
    handled: list[str] = field(default_factory=list)
    uncountable: dict[str, str] = field(default_factory=dict)


def status_batch(store: MemoryStore | None, threads: list[Thread], cancel: threading.Event | None = None,
                 budget: float | None = None) -> StatusBatch:
    """Compute statuses of THREADS until BUDGET s (STATUS_BATCH_SECONDS) pass or CANCEL is set (a load).

    A thread whose status cannot be computed is handled without one (and named in `uncountable` when
    Mastra cannot count one of its messages). Raises StoreError without a database or on a failed read.
    """
    from studio.app.loads import require_store

    store = require_store(store)
    budget = STATUS_BATCH_SECONDS if budget is None else budget
    stop = threading.Event()
    batch = StatusBatch()
    started = time.monotonic()

    def done_with(thread: Thread) -> None:
        batch.handled.append(thread.id)
        if (cancel is not None and cancel.is_set()) or time.monotonic() - started >= budget:
            stop.set()

    def failed(thread: Thread, exc: Exception) -> None:
        if isinstance(exc, UncountableMessage):
            batch.uncountable[thread.id] = uncountable_sentence(exc)

    batch.statuses.extend(iter_thread_statuses(store, threads, cancel=stop, on_error=failed, handled=done_with))
    return batch


class StatusRound:
    """The threads whose statuses a view still waits for, batch after batch (no Qt: the view submits the batches).

    `next_threads(helper)` is what the next `status_batch` computes (every thread left on the
    database worker, time-boxed; HELPER_CHUNK at a time in the helper process); `take(batch)`
    records what it handled and returns True once every thread is done.
    """

    def __init__(self, threads: Iterable[Thread] = ()):
        self.threads = list(threads)
        self._left = list(self.threads)

    @property
    def total(self) -> int:
        """How many threads the round computes."""
        return len(self.threads)

    @property
    def done(self) -> int:
        """How many threads are handled so far."""
        return len(self.threads) - len(self._left)

    def next_threads(self, helper: bool) -> list[Thread]:
        """Return the threads the next batch computes (HELPER: a batch of the helper process)."""
        return self._left[:HELPER_CHUNK] if helper else list(self._left)

    def take(self, batch: StatusBatch) -> bool:
        """Record BATCH (its handled threads leave the round); return True when no thread is left.

        A batch that handled nothing (cancelled at once) still moves the round on by one thread, so
        a round always ends.
        """
        handled = set(batch.handled)
        if not handled and self._left:
            handled = {self._left[0].id}
        self._left = [t for t in self._left if t.id not in handled]
        return not self._left

"""The studio's per-thread results round (no Qt): every bar, message count and health badge of an open.

The thread list's statuses and the health scan's per-thread findings come from one computation,
`studio.app.thread_results.thread_results`, batch by batch, through the cross-session result cache
(`studio.app.result_cache`, under the user cache folder): a reopen of an unchanged store reuses
every entry without reading a message, and a live refresh's changed threads are computed again and
stored back. The loaders run on the database worker or in the helper process; the cache and the
round's thread list are kept here per process and store, so a batch sent to the helper process
carries only the round and its thread ids.

* `prepare_results(store)`: read the cache file now (the helper process, while the listing is read);
* `load_stamped_results(store, ids)`: the results of IDS the cache holds under the file's stamp, without
  a row read (an open's first call: a reopen of an unchanged file is this one call);
* `load_results_batch(store, round_, ids)`: the results of IDS (a `ResultsBatch`);
* `load_store_findings(store)`: the store-wide findings (schema, timestamp twins, resources,
  resource-scope and orphaned OM records), computed each time (a few statements) unless a file's cache
  holds them under its stamp;
* `save_results(store)`: write what the round's batches computed to the cache file (once a round).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field

from studio.app.loads import require_store
from studio.app.result_cache import PackedFindings
from studio.engine.status import ThreadStatus

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.app.result_cache import ResultCache
    from studio.store.memory_store import MemoryStore
    from studio.store.records import Thread

#: Threads per results batch (on the database worker and in the helper process alike).
RESULTS_CHUNK = 100
#: How much the next batch grows while every result comes from the cache (a reopen: few batches, few repaints).
REUSED_GROWTH = 8
#: Thread ids per statement when a partial round reads its threads.
THREAD_CHUNK = 400

_lock = threading.Lock()


class _Session:
    """This process's results state of one store (the newest only): its cache, and the current round's
    threads by id and lookup keys. Held through a weak reference to the store (a store's id may be
    another store's once it is gone)."""

    def __init__(self, store: MemoryStore):
        from studio.app.result_cache import ResultCache

        self.store = weakref.ref(store)
        self.cache = ResultCache.for_store(store)
        self.round: int | None = None
        self.threads: dict[str, Thread] = {}
        self.keys: list[dict] = []


_session: list[_Session] = []   # at most one


@dataclass
class ResultsBatch:
    """What one batch of a results round computed, for the threads it HANDLED (ids, in order).

    STATUSES: the threads' OM statuses (threads without one are left out); UNCOUNTABLE: {thread id:
    sentence} of those without a status because a pending message holds one Mastra cannot count;
    FINDINGS: the handled threads' health findings (`Finding.to_json()` dicts); MESSAGES: {thread id:
    stored messages}; REUSED: how many results came from the cache. PACKED: {thread id: `PackedFindings`} of
    the threads whose findings come packed from the cache (`load_stamped_results`; theirs are not in FINDINGS:
    a view decodes them when it reads them).
    """

    statuses: list[ThreadStatus] = field(default_factory=list)
    handled: list[str] = field(default_factory=list)
    uncountable: dict[str, str] = field(default_factory=dict)
    findings: list[dict] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)
    reused: int = 0
    packed: dict[str, PackedFindings] = field(default_factory=dict)

    def every_finding(self) -> list[dict]:
        """Return FINDINGS and the PACKED ones, decoded."""
        return [*self.findings, *(f for p in self.packed.values() for f in p.decode())]


def _session_of(store: MemoryStore) -> _Session:
    with _lock:
        if not _session or _session[0].store() is not store:
            _session[:] = [_Session(store)]
        return _session[0]


def cache_of(store: MemoryStore) -> ResultCache:
    """Return this process's result cache of STORE (`ResultCache.for_store`, made once per store)."""
    return _session_of(store).cache


def _round(store: MemoryStore, round_: int, thread_ids: list[str], every_thread: bool, reread: list[str] = (),
           ) -> tuple[dict[str, Thread], list[dict]]:
    """Return (threads by id, lookup keys) a batch of ROUND_ computes with, read once per round.

    EVERY_THREAD: the round covers the whole store, so every thread and lookup key is listed once; else (a
    live refresh's few threads) each batch reads its threads, their lookup keys (`thread:` and their
    resource's `resource:`) and, for a resource with a resource-scope record, that resource's threads (a
    resource-scope status and its checks need them). REREAD: ids
    whose threads are read again (a live refresh changed them during the round)."""
    session = _session_of(store)
    if session.round != round_:
        session.round, session.threads = round_, {}
        # a live refresh's round reads the lookup keys of its threads only (8,012 keys a commit before)
        session.keys = store.om_lookup_keys() if every_thread else []
        if every_thread:
            session.threads = {t.id: t for t in store.list_threads()}
    wanted = [t for t in thread_ids if t not in session.threads or t in set(reread)]
    if wanted:
        threads = {t.id: t for t in _threads_where(store, "id", wanted)}
        for tid in wanted:
            session.threads.pop(tid, None)   # deleted meanwhile: no result
        if not every_thread:
            known = {k["lookupKey"] for k in session.keys}
            more = [key for t in threads.values() for key in (f"thread:{t.id}", f"resource:{t.resource_id}")
                    if key not in known]
            session.keys = sorted([*session.keys, *store.om_lookup_keys(more)], key=lambda k: k["lookupKey"])
        scoped = {k.get("resourceId") for k in session.keys if str(k.get("lookupKey", "")).startswith("resource:")}
        resources = sorted({t.resource_id for t in threads.values() if t.resource_id in scoped})
        threads.update({t.id: t for t in _threads_where(store, '"resourceId"', resources)})
        session.threads.update(threads)
    return session.threads, session.keys


def _threads_where(store: MemoryStore, column: str, values: list[str]) -> list[Thread]:
    """Return the threads whose COLUMN ("id" or '"resourceId"') is one of VALUES (THREAD_CHUNK per statement;
    a MongoDB store, which has no SQL, by getThreadById / listThreads of the resource)."""
    if store.dialect == "mongodb":
        if column == "id":
            return [t for t in map(store.get_thread, values) if t is not None]
        return [t for r in values for t in store.list_threads(r)]
    out: list[Thread] = []
    for i in range(0, len(values), THREAD_CHUNK):
        part = values[i:i + THREAD_CHUNK]
        out += store.select_threads(f"WHERE {column} IN ({', '.join('?' * len(part))})", part)
    return out


def _add(batch: ResultsBatch, thread_id: str, status: ThreadStatus | None, uncountable: str | None,
         findings: list[dict] | PackedFindings, messages: int) -> None:
    """Put one thread's result in BATCH (a status only when it has one; packed findings in `packed`)."""
    if status is not None:
        batch.statuses.append(status)
    if uncountable is not None:
        batch.uncountable[thread_id] = uncountable
    if isinstance(findings, PackedFindings):
        batch.packed[thread_id] = findings
    else:
        batch.findings.extend(findings)
    batch.messages[thread_id] = messages


def prepare_results(store: MemoryStore | None) -> int:
    """Read STORE's result cache file now; return its entries. The studio calls it in the helper process while
    the listing is read, so the round's first call finds the cache parsed. Raises StoreError without a database."""
    return cache_of(require_store(store)).load()


def load_stamped_results(store: MemoryStore | None, thread_ids: list[str]) -> ResultsBatch:
    """Return the results of THREAD_IDS the cache holds under the store file's current stamp, without a row read.

    Their findings come packed (`ResultsBatch.packed`). HANDLED names those threads only (none on a server
    store, which has no stamp, nor on a file that changed since: `load_results_batch` computes or
    digest-checks the others). A stamp equal to an entry's means the file is the one the entry was
    computed from or checked against, so its thread exists and its result holds
    (`studio.app.result_cache`). Raises StoreError without a database.
    """
    cache = cache_of(require_store(store))
    batch = ResultsBatch()
    stamp = cache.stamp_now()
    if stamp is None:
        return batch
    for tid in thread_ids:
        hit = cache.valid(tid, stamp=stamp, packed=True)
        if hit is not None:
            batch.handled.append(tid)
            _add(batch, tid, hit["status"], hit["uncountable"], hit["findings"], hit["messages"])
    batch.reused = len(batch.handled)
    return batch


def load_results_batch(store: MemoryStore | None, round_: int, thread_ids: list[str],
                       every_thread: bool = True, reread: list[str] = ()) -> ResultsBatch:
    """Return the results of THREAD_IDS (a batch of results round ROUND_), reusing the cache's entries.

    Statuses as the thread list's status batches compute them (Mastra's getStatus), findings as the
    memory doctor's batches find them (`thread_results`); the entries computed here are kept in the
    cache until `save_results`. EVERY_THREAD: the round covers every thread of the store (an open);
    False: a live refresh's threads (known to have changed: computed without a look at the cache,
    and stored). REREAD: ids of THREAD_IDS a live refresh changed during the round (their thread rows
    are read again). Ids of threads that no longer exist are handled without a result.
    Raises StoreError without a database or on a failed read.
    """
    from studio.app.thread_results import thread_results

    store = require_store(store)
    cache = cache_of(store)
    batch = ResultsBatch(handled=list(thread_ids))
    with store.snapshot():
        threads, keys = _round(store, round_, thread_ids, every_thread, reread)
        before = cache.computed
        results = thread_results(store, thread_ids, cache, threads=list(threads.values()), keys=keys, save=False,
                                 reuse=every_thread)
    batch.reused = len(results) - (cache.computed - before)
    for tid in thread_ids:
        r = results.get(tid)
        if r is not None:
            _add(batch, tid, r.status, r.uncountable, r.findings, r.messages)
    return batch


def save_results(store: MemoryStore | None) -> None:
    """Write the results a round computed to STORE's cache file (a write that fails is ignored).

    Raises StoreError without a database."""
    cache_of(require_store(store)).save()


def load_store_findings(store: MemoryStore | None) -> list[dict]:
    """Return the store-wide findings of a health scan (`thread_results.store_findings`): schema,
    timestamp twins, resources, resource-scope and orphaned OM records.

    On a file they are kept in the result cache under the file's stamp and reused while the stamp is the
    same, when they cannot depend on the clock: no OM row has a busy flag that may be set
    (`any_flag_may_be_set`; a set flag's staleness is the only clock a store-wide check reads) and no commit
    came between the stamp and the end of the computation. The same file and no flag: the same findings.
    Raises StoreError without a database or on a failed read."""
    from studio.app.thread_results import store_findings
    from studio.store.flags import any_flag_may_be_set

    store = require_store(store)
    cache = cache_of(store)
    stamp = cache.stamp_now()
    found = cache.store_findings(stamp)
    if found is not None:
        return list(found)
    found = store_findings(store)
    if stamp is not None and not any_flag_may_be_set(store) and cache.stamp_now() == stamp:
        cache.put_store_findings(found, stamp)
        cache.save()
    return found


class ResultsRound:
    """The threads whose results a view still waits for, RESULTS_CHUNK at a time (no Qt: the view submits
    the batches). EVERY_THREAD: the round covers the whole store (an open); else a live refresh's threads.
    BY_STAMP: the round begins with one `load_stamped_results` of every thread (an open of a file): `by_stamp`
    stays True until `take` has its batch, which may handle any number of threads, none included.

    `next_ids()` is what the next `load_results_batch` computes (RESULTS_CHUNK threads, REUSED_GROWTH
    times more after a batch whose every result came from the cache: an unchanged store's reopen
    takes a few batches); `take(batch)` records what it handled and returns True once every thread
    is done; `add(ids)` puts threads (back) in the round: one the batch in flight (the last `next_ids`)
    computes stays in the round when that batch lands, since the batch may have read its rows before
    the change.
    """

    def __init__(self, thread_ids=(), *, every_thread: bool = True, by_stamp: bool = False):
        self.every_thread = every_thread
        self.by_stamp = by_stamp
        self._left = list(dict.fromkeys(thread_ids))
        self.total = len(self._left)
        self._reread: set[str] = set()
        self._chunk = RESULTS_CHUNK
        self._in_flight: set[str] = set()   # what `next_ids` last gave: the batch being computed
        self._again: set[str] = set()       # ids of that batch `add` put back meanwhile

    @property
    def done(self) -> int:
        """How many threads are handled so far."""
        return self.total - len(self._left)

    @property
    def left(self) -> list[str]:
        """The ids not handled yet, in the order they will be."""
        return list(self._left)

    def add(self, thread_ids) -> None:
        """Compute THREAD_IDS (again: a live refresh changed them) in this round, after the threads left;
        their thread rows are read again (`reread`)."""
        left = set(self._left)
        new = [t for t in dict.fromkeys(thread_ids) if t not in left]
        self._left += new
        self.total += len(new)
        self._reread |= set(thread_ids)
        self._again |= set(thread_ids) & self._in_flight

    def discard(self, thread_ids) -> None:
        """Leave THREAD_IDS out of what is left (a live refresh deleted them)."""
        gone = set(thread_ids)
        self._left = [t for t in self._left if t not in gone]

    def next_ids(self) -> list[str]:
        """Return the ids the next batch computes (every id left while `by_stamp`)."""
        ids = list(self._left) if self.by_stamp else self._left[:self._chunk]
        self._in_flight = set(ids)
        return ids

    def reread(self, thread_ids: list[str]) -> list[str]:
        """Return the ids of THREAD_IDS whose thread rows the batch reads again (see `add`)."""
        return [t for t in thread_ids if t in self._reread]

    def take(self, batch: ResultsBatch) -> bool:
        """Record BATCH (its handled threads leave the round); return True when no thread is left.

        The batch's threads that `add` put back while it was computed stay, to be computed again."""
        again, self._again, self._in_flight = self._again, set(), set()
        if self.by_stamp:
            self.by_stamp = False
            handled = set(batch.handled) - again
            self._left = [t for t in self._left if t not in handled]
            self._reread -= handled
            return not self._left
        handled = (set(batch.handled) or set(self._left[:1])) - again   # a round always ends
        self._left = [t for t in self._left if t not in handled]
        self._reread -= handled
        self._chunk = self._chunk * REUSED_GROWTH if batch.handled and batch.reused == len(batch.handled) \
            else RESULTS_CHUNK
        return not self._left

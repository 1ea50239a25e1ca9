"""Per-thread results of an open (no Qt): each thread's OM status, message count and health findings.

What the thread list's bars and the health badges show, computed for a set of threads and reused
across sessions from the result cache (`studio.app.result_cache`):

* `compute_thread_results(store, ids)`: the results of IDS, computed afresh: statuses as
  `studio.app.statuses.iter_thread_statuses` computes them, findings as the memory doctor's batches
  (`studio.engine.doctor.run_batch`) find them, without the store-wide checks;
* `thread_results(store, ids, cache)`: the same results, an entry of the cache reused when it is
  still the result of the thread's rows (see `studio.app.result_cache`), the others computed and
  stored;
* `store_findings(store)`: the store-wide findings a scan adds (schema, timestamp twins, resources,
  resource-scope and orphaned OM records): not per thread, computed each time (a few statements).

A live refresh that knows which threads changed calls `thread_results(store, changed)`; an open
calls it with every thread. The scan's findings are `store_findings` plus every thread's findings
(the doctor's document lists the same findings; tests/app/test_thread_results.py compares them).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from studio.engine.status import ThreadStatus
from studio.store.memory_store import MESSAGE_COLUMNS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.app.result_cache import ResultCache
    from studio.engine.doctor.messages import StoredMessage
    from studio.store.memory_store import MemoryStore
    from studio.store.records import OMRecord, Thread

#: Threads whose rows are read and checked together (the doctor's batch size).
CHUNK = 100
#: Message ids resolved to their thread per statement (a digest's foreign ids).
ID_CHUNK = 500
#: Message rows pickled together into a thread's digest.
ROWS_PACKED = 1000
#: The stores (dialects) whose statuses take their unobserved messages from the rows the checks read
#: (`_window_reader`): their `message_rows` hold the values `Message.stored` reads, as the statuses' own
#: reads fetch them. MongoDB's rows are raw documents: its statuses read their messages themselves.
SHARED_ROWS = ("sqlite", "postgresql")
#: Where a row read with cursors holds its window flag (`store.message_rows`: after the stored values).
WINDOW_FLAG = len(MESSAGE_COLUMNS)
#: Hex digits of a thread's digest kept (160 bits of its sha256, the size of the cache's entries before).
DIGEST_HEX = 40


@dataclass
class ThreadResult:
    """What the studio shows of one thread without opening it.

    `status`: its OM status (None when no OM record governs it, or the stored values are ones Mastra
    itself could not use); `messages`: its stored messages; `findings`: its health findings
    (`Finding.to_json()` dicts, in the doctor's order); `digest`: the hex digest of the rows these
    were computed from (`thread_digests`), or None when they also depend on rows of other threads
    (resource scope) or on the clock (a busy flag is set): such a result is never reused.
    `uncountable`: the sentence saying why there is no status when a pending message holds one
    Mastra cannot count (`studio.app.uncountable`; getStatus throws there), else None.
    """

    thread_id: str
    status: ThreadStatus | None
    messages: int
    findings: list[dict] = field(default_factory=list)
    digest: str | None = None
    uncountable: str | None = None

    @property
    def severities(self) -> dict[str, int]:
        """Return {severity: findings} (the health badge's counts)."""
        out: dict[str, int] = {}
        for f in self.findings:
            out[f["severity"]] = out.get(f["severity"], 0) + 1
        return out


def _threads_by_id(store: MemoryStore, threads: list[Thread] | None) -> dict[str, Thread]:
    return {t.id: t for t in (store.list_threads() if threads is None else threads)}


def _governing(histories: dict[str, list[OMRecord]], thread: Thread) -> OMRecord | None:
    """Return the current record governing THREAD (its thread key's, else its resource key's), as Mastra picks it."""
    for key in (f"thread:{thread.id}", f"resource:{thread.resource_id}"):
        if histories.get(key):
            return histories[key][0]
    return None


def _packed(value) -> bytes:
    """Return VALUE pickled without the memo: equal values give equal bytes however their objects are
    shared, and unequal values unequal bytes (pickle reads them back). Raises what pickle raises for a
    value it cannot write."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True   # no memo: a value shared twice is written twice (JSON values never refer to themselves)
    pickler.dump(value)
    return buffer.getvalue()


def _feed_rows(digest, rows: list[tuple]) -> None:
    """Add one thread's message ROWS (`store.message_rows`' tuples, storage order) to DIGEST: their stored
    values (MESSAGE_COLUMNS; a window or json_valid flag after them is left out) pickled (`_packed`) a column
    at a time, ROWS_PACKED rows together. One C call for a thousand rows, no dict keys among the values, the
    content as fetched (its stored bytes on SQLite: copied into the pickle, never encoded again), and no
    tuple made a row (the columns are the rows transposed)."""
    width = len(MESSAGE_COLUMNS)
    for start in range(0, len(rows), ROWS_PACKED):
        part = tuple(zip(*rows[start:start + ROWS_PACKED]))[:width]  # noqa: B905  (rows of one width)
        try:
            digest.update(_packed(part))
        except (pickle.PicklingError, TypeError):   # a value pickle cannot write (a memoryview): its repr
            digest.update(repr(part).encode("utf-8", "surrogatepass"))


def _feed(digest, values: Iterable) -> None:
    """Add VALUES to DIGEST, pickled together (`_packed`; a value pickle cannot write: their repr)."""
    values = tuple(values)
    try:
        digest.update(_packed(values))
    except (pickle.PicklingError, TypeError):
        digest.update(repr(values).encode("utf-8", "surrogatepass"))


def _chunk_histories(store: MemoryStore, chunk: list[str], by_id: dict[str, Thread]) -> dict[str, list[OMRecord]]:
    """Read CHUNK's OM histories: every generation of its threads' thread and resource keys, newest first."""
    keys = [k for t in chunk for k in (f"thread:{t}", f"resource:{by_id[t].resource_id}")]
    return store.om_histories(list(dict.fromkeys(keys)), chunk=ID_CHUNK)


def _chunk_rows(store: MemoryStore, chunk: list[str], by_id: dict[str, Thread],
                ) -> tuple[dict[str, list[OMRecord]], list[tuple]]:
    """Read CHUNK's OM histories (`_chunk_histories`) and message rows: what digests and checks share."""
    return _chunk_histories(store, chunk, by_id), store.message_rows(chunk)


def _current_records(store: MemoryStore, histories: dict[str, list[OMRecord]]) -> dict[str, OMRecord]:
    """Return `store.om_current_many` of HISTORIES' keys (those with a record), from HISTORIES where that is
    sure: a key whose generationCount values are all integers, its newest one greater than every other,
    has that generation as its current record (the one row whose generationCount is the MAX). The others
    (a NULL or text generationCount, a tie at the top: damaged rows) are read with `om_current_many`."""
    out: dict[str, OMRecord] = {}
    unsure = []
    for key, history in histories.items():
        if not history:
            continue
        counts = [r.columns.get("generationCount") for r in history]
        if all(c.__class__ is int for c in counts) and all(counts[0] > c for c in counts[1:]):
            out[key] = history[0]
        else:
            unsure.append(key)
    if unsure:
        out.update(store.om_current_many(unsure))
    return out


def _chunk_digests(store: MemoryStore, chunk: list[str], by_id: dict[str, Thread],
                   histories: dict[str, list[OMRecord]], rows: list[tuple],
                   owners: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """Return `thread_digests` of CHUNK (existing threads) from rows already read (`_chunk_rows`).

    OWNERS: message id -> its thread (None: no such message), ids already resolved; the ids
    resolved here are added to it (the doctor's `DoctorPlan.message_threads` is such a map).
    """
    from studio.engine.doctor.runner import referenced_ids

    hashes = {t: hashlib.sha256() for t in chunk}
    own: dict[str, set[str]] = {t: set() for t in chunk}
    mine: dict[str, list[tuple]] = {t: [] for t in chunk}
    for row in rows:
        thread_rows = mine.get(row[1])
        if thread_rows is not None:
            thread_rows.append(row)
    for tid, thread_rows in mine.items():
        _feed_rows(hashes[tid], thread_rows)
        own[tid].update(row[0] for row in thread_rows)
    out: dict[str, str | None] = {}
    outside: dict[str, list[str]] = {}
    inside: dict[str, set[str]] = {}
    for tid in chunk:
        thread = by_id[tid]
        digest = hashes[tid]
        _feed(digest, (x for f, value in thread.stored_state().items() if f not in ("message_count",
                                                                                  "newest_message_at")
                       for x in (f, value)))
        current = _governing(histories, thread)
        if current is not None and (current.scope == "resource" or any(s.set for s in _flags(current))):
            out[tid] = None
            continue
        for rec in histories.get(f"thread:{tid}", []):
            _feed(digest, (x for kv in sorted(rec.columns.items(), key=lambda kv: kv[0]) for x in kv))
        named = referenced_ids(current) if current is not None else set()
        outside[tid] = sorted(named - own[tid])
        inside[tid] = named & own[tid]
    owners = {} if owners is None else owners
    for tid, ids in inside.items():   # a message id is the primary key: its thread is the row's
        owners.update(dict.fromkeys(ids, tid))
    wanted = sorted({m for ids in outside.values() for m in ids} - owners.keys())
    found = store.message_threads(wanted, chunk=ID_CHUNK) if wanted else {}
    owners.update({m: found.get(m) for m in wanted})
    for tid, ids in outside.items():
        _feed(hashes[tid], (x for m in ids for x in (m, owners.get(m))))
        out[tid] = hashes[tid].hexdigest()[:DIGEST_HEX]
    return out


def thread_digests(store: MemoryStore, thread_ids: list[str], threads: dict[str, Thread] | None = None,
                   ) -> dict[str, str | None]:
    """Return {thread id: hex digest of the rows its results depend on, or None} for THREAD_IDS.

    The digest covers the thread's row, every stored column of its messages the status and the
    doctor read (content byte for byte: a message edited in place to a text of the same length
    changes it), every generation of its thread-scope OM record, and the thread each message id
    the current generation names belongs to when that message is not the thread's own. None:
    the results also depend on other threads (a resource-scope record governs the thread) or on
    the clock (a busy flag is set on the current generation); such results are not reusable.
    A thread id that does not exist gets None. THREADS: {id: Thread} of every thread (default:
    listed here). Raises StoreError on a failed read.
    """
    by_id = _threads_by_id(store, None if threads is None else list(threads.values()))
    out: dict[str, str | None] = {t: None for t in thread_ids if t not in by_id}
    ids = [t for t in dict.fromkeys(thread_ids) if t in by_id]
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        out.update(_chunk_digests(store, chunk, by_id, *_chunk_rows(store, chunk, by_id)))
    return out


def _flags(record: OMRecord):
    from studio.store.flags import flag_states

    return flag_states(record, 0)


def _window_reader(store: MemoryStore, loaded: dict[str, list[StoredMessage]], rows: list[tuple],
                   cursors: dict[str, str | None]):
    """Return `iter_statuses`' READ_SINCE taking the thread-scope pairs' messages from LOADED (`load_messages`
    of ROWS, read with CURSORS: each row ends with whether `list_messages(thread, since=its cursor)` returns
    it), as the status's Messages (`StoredMessage.message`: parsed once for the status and the checks). A
    pair whose since is not its thread's cursor in CURSORS is read from the store, as `iter_statuses` reads it."""
    flags: dict[str, list] = {}
    for row in rows:
        mine = flags.get(row[1])
        if mine is None:
            mine = flags[row[1]] = []
        mine.append(row[WINDOW_FLAG])

    def read(wanted: dict[tuple[str, str | None], list]) -> Iterator[tuple[tuple[str, str | None], list]]:
        again = []
        for pair in wanted:
            thread_id, since = pair
            if thread_id not in cursors or cursors[thread_id] != since:
                again.append(pair)
                continue
            yield pair, [m.message for m, flag in zip(loaded.get(thread_id, ()), flags.get(thread_id, ()))  # noqa: B905
                         if flag]   # (one flag a loaded message: both made from ROWS in order)
        if again:
            yield from store.iter_messages_since_many(again)
    return read


def compute_thread_results(store: MemoryStore, thread_ids: list[str], *, threads: list[Thread] | None = None,
                           now_ms: int | None = None, digests: dict[str, str | None] | None = None,
                           keys: list[dict] | None = None) -> dict[str, ThreadResult]:
    """Return {thread id: ThreadResult} for THREAD_IDS (ids of no thread are left out), computed afresh.

    Statuses: `iter_statuses` of each thread and its current record (`_current_records`), Mastra's
    getStatus (a status that cannot be computed is None); findings: the doctor's thread batches
    (`run_batch` without the store-wide checks) at NOW_MS (default: now), split by thread. Each batch
    of CHUNK threads reads its OM histories and message rows once: the digests, the checks and, on the
    SQL stores, the statuses' unobserved messages (`_window_reader`) come from them.
    THREADS: every thread of the store (default: listed here). DIGESTS: `thread_digests` of these
    threads when already computed (else computed here, in the same reads' snapshot). KEYS:
    `store.om_lookup_keys()` when already read. Message counts are counted from the rows the checks
    read (what `store.message_counts` counts). Raises StoreError on a failed read.
    """
    from studio.app.statuses import iter_statuses
    from studio.app.uncountable import UncountableMessage, uncountable_sentence
    from studio.engine.doctor.messages import load_messages
    from studio.engine.doctor.runner import DoctorPlan, run_batch
    from studio.engine.unobserved import storage_cursor

    by_id = _threads_by_id(store, threads)
    ids = [t for t in dict.fromkeys(thread_ids) if t in by_id]
    results = {t: ThreadResult(t, None, 0) for t in ids}

    def failed(thread: Thread, exc: Exception) -> None:
        if isinstance(exc, UncountableMessage):
            results[thread.id].uncountable = uncountable_sentence(exc)

    counted: dict[tuple, int] = {}   # the statuses' message counts: the window checks below reuse them
    keys = {k["lookupKey"]: k for k in (store.om_lookup_keys() if keys is None else keys)}
    batches = [ids[i:i + CHUNK] for i in range(0, len(ids), CHUNK)]
    plan = DoctorPlan(batches=batches, threads=by_id, keys=keys,
                      now_ms=int(time.time() * 1000) if now_ms is None else now_ms)
    for index, chunk in enumerate(batches):
        histories = _chunk_histories(store, chunk, by_id)
        current = _current_records(store, histories)
        pairs = [(by_id[t], record) for t in chunk
                 if (record := current.get(f"thread:{t}") or current.get(f"resource:{by_id[t].resource_id}"))]
        shared = store.dialect in SHARED_ROWS
        cursors = {t.id: storage_cursor(r.last_observed_at) for t, r in pairs
                   if not (r.scope == "resource" and t.resource_id)} if shared else None  # iter_statuses' by_key
        json_flags = store.dialect == "sqlite"   # json_valid's verdict in the same statement
        rows = store.message_rows(chunk, cursors, invalid_json=json_flags) if cursors is not None or json_flags \
            else store.message_rows(chunk)   # one read: digests, checks, statuses
        known = digests or {}
        mine = {t: known[t] for t in chunk if t in known} if all(t in known for t in chunk) \
            else _chunk_digests(store, chunk, by_id, histories, rows, plan.message_threads)
        for tid in chunk:
            results[tid].digest = mine.get(tid)
        for row in rows:
            if row[1] in results:
                results[row[1]].messages += 1
        loaded = load_messages(store, chunk, rows, {row[0] for row in rows if row[-1]} if json_flags else None)
        reader = _window_reader(store, loaded, rows, cursors) if cursors else None
        del rows
        for status in iter_statuses(store, pairs, on_error=failed, counted=counted, read_since=reader):
            results[status.thread_id].status = status
        findings, _counts = run_batch(store, plan, index, store_wide=False, histories=histories,
                                      messages=loaded, counted=counted)
        for f in findings:
            if f.thread_id in results:
                results[f.thread_id].findings.append(f.to_json())
    return results


def thread_results(store: MemoryStore, thread_ids: list[str], cache: ResultCache | None = None, *,
                   threads: list[Thread] | None = None, now_ms: int | None = None,
                   keys: list[dict] | None = None, save: bool = True, reuse: bool = True,
                   ) -> dict[str, ThreadResult]:
    """Return {thread id: ThreadResult} for THREAD_IDS (ids of no thread left out), reusing CACHE's entries.

    CACHE: `ResultCache.for_store(store)` (None: compute everything, store nothing). An entry is
    reused without reading a row while the file's stamp is the one it was stored or checked under;
    otherwise the thread's `thread_digests` is compared with the entry's. Only the threads with no
    reusable entry are computed (`compute_thread_results`), and stored back (a cache that cannot be
    written is left as it is, silently). Results whose digest is None (resource scope, a busy
    flag set) are computed every time. KEYS: `store.om_lookup_keys()` when already read. SAVE False:
    the new entries wait in CACHE for its `save()` (a round of batches writes the file once). REUSE
    False: every thread is computed and stored (a live refresh's threads, known to have changed). Call
    it inside `store.snapshot()` for one moment's results. Raises StoreError on a failed read.
    """
    if cache is None:
        return compute_thread_results(store, thread_ids, threads=threads, now_ms=now_ms, keys=keys)
    stamp = cache.stamp_now()
    by_id = _threads_by_id(store, threads)
    ids = [t for t in dict.fromkeys(thread_ids) if t in by_id]
    reused: dict[str, ThreadResult] = {}
    for tid in ids if reuse else ():
        hit = cache.valid(tid, stamp=stamp) if stamp is not None else None
        if hit is not None:
            reused[tid] = ThreadResult(tid, **hit)
    # no entry at all (or REUSE False): computed below without a digest of its own
    unsure = [t for t in ids if t not in reused and cache.has(t)] if reuse else []
    digests = thread_digests(store, unsure, by_id) if unsure else {}
    checked = []
    for tid in unsure:
        hit = cache.valid(tid, digest=digests[tid]) if digests.get(tid) else None
        if hit is not None:
            reused[tid] = ThreadResult(tid, **hit)
            checked.append(tid)
    todo = [t for t in ids if t not in reused]
    fresh = compute_thread_results(store, todo, threads=list(by_id.values()), now_ms=now_ms, digests=digests,
                                   keys=keys) if todo else {}
    if checked or fresh:
        still = stamp if stamp is not None and stamp == cache.stamp_now() else None   # a commit meanwhile: no stamp
        cache.put({t: {"status": r.status, "messages": r.messages, "findings": r.findings, "digest": r.digest,
                       "uncountable": r.uncountable} for t, r in fresh.items()}, still, checked)
        if save:
            cache.save()
    return {t: reused.get(t) or fresh[t] for t in ids}


def store_findings(store: MemoryStore, *, now_ms: int | None = None) -> list[dict]:
    """Return the store-wide findings of a scan (`Finding.to_json()` dicts): schema, timestamp twins,
    resource rows, resource-scope and orphaned OM records. Raises StoreError on a failed read."""
    from studio.engine.doctor.runner import plan_batches, run_batch

    plan = plan_batches(store, now_ms=now_ms)
    plan.batches = [[]]
    findings, _counts = run_batch(store, plan, 0)
    return [f.to_json() for f in findings]

"""A listing kept current by live refreshes that re-read only the threads another program changed (no Qt).

`load_live_listing(store)` is the full listing (`studio.app.listing.load_listing`) plus where its
reading ended (`studio.store.live_changes.Marks`). When the store's fingerprint moves,
`refresh_live_listing(store, live)` asks the store which rows were written since
(`rows_since`: work that grows with the writes, not with the store), re-reads the threads they
belong to — their rows, message counts, newest message, OM lookup key — and returns the new
listing with the `ChangeSet` of what changed: threads updated, created and deleted, OM records
written. A view refreshes from that ChangeSet only what it shows of those threads (statuses:
`studio.app.statuses.status_batch` of `changed_threads`; the open thread's tabs; health).

Exactness: after every refresh the listing equals a fresh `load_listing` of the same snapshot
(tests/app/test_live_exactness.py checks it after each of long random sequences of Mastra's
writes). On a WAL file the messages table is counted only when the re-read threads' digests (count
and rowid sum, kept from their last re-read) do not explain the change (see `studio.store.live_changes`).
Where the rows written do not explain the counts (a delete, a message moved to another
thread), the refresh reads wider — every thread's message counts, the OM lookup keys, the thread
order — never guessing; where even that cannot be told (a table appeared, PostgreSQL's transaction
ids wrapped), it reloads the whole listing and says so (`ChangeSet.everything`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from studio.app.changes import ChangeSet
from studio.app.listing import (
    Listing,
    ListingCounts,
    ThreadRow,
    last_activity,
    load_listing,
    load_listing_in_two_steps,
    lookup_key_of,
    orphaned_threads,
)
from studio.app.loads import require_store
from studio.store import schema as sc
from studio.store.live_changes import (
    Marks,
    Touched,
    count_rows,
    message_digests,
    read_marks,
    rows_since,
    uncounted_messages,
    wal_now,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore
    from studio.store.records import Thread

__all__ = ["LiveCounts", "LiveListing", "LiveRefresh", "live_listing", "load_live_listing",
           "load_live_listing_in_two_steps", "refresh_live_listing"]

#: Thread ids per `WHERE id IN (…)` statement.
ID_CHUNK = 400


@dataclass
class LiveListing:
    """A Listing with what its next live refresh starts from: the store's MARKS when it was read, the OM
    LOOKUP_KEYS it was built from (`store.om_lookup_keys()`), and STRAY, the number of messages whose
    thread_id names no thread row (they count in the store's total, not in any listed thread)."""

    listing: Listing
    marks: Marks
    lookup_keys: list[dict]
    stray: int = 0
    #: derived from LISTING's rows, computed once and handed on by a refresh that keeps the thread order:
    #: (position of each listed thread's row, position of each orphan row, the listed threads' message total)
    derived: tuple[dict[str, int], dict[str, int], int] | None = field(default=None, repr=False, compare=False)
    #: the lookup keys' `lookupKey` values, made once and handed on while the refresh keeps LOOKUP_KEYS
    key_set: frozenset[str] | None = field(default=None, repr=False, compare=False)
    #: {thread id: (its messages, their rowid sum)} as of MARKS, for the threads a refresh re-read on a WAL file
    #: (`studio.store.live_changes.message_digests`): the next refresh counts no messages while they explain it
    digests: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False, compare=False)

    def lookup_key_set(self) -> frozenset[str]:
        """Return the `lookupKey` of every OM lookup key the listing was built from (made the first time, then kept)."""
        if self.key_set is None:
            self.key_set = frozenset(k["lookupKey"] for k in self.lookup_keys)
        return self.key_set

    def positions(self) -> tuple[dict[str, int], dict[str, int], int]:
        """Return ({thread id: index in listing.rows} of the listed threads, the same of the orphan rows, the
        listed threads' message total); one pass over the rows the first time, then kept (do not change them)."""
        if self.derived is None:
            index, orphans, total = {}, {}, 0
            for i, r in enumerate(self.listing.rows):
                if r.orphan:
                    orphans[r.thread.id] = i
                else:
                    index[r.thread.id] = i
                    total += r.thread.message_count or 0
            self.derived = (index, orphans, total)
        return self.derived

    def listed_messages(self) -> int | None:
        """Return the messages of the listed threads (the sum of their counts, read off the marks: no pass over
        the rows), or None when the marks hold no message count (MongoDB)."""
        total = self.marks.counts.get(sc.MESSAGES)
        return None if total is None else total - self.stray


@dataclass
class LiveRefresh:
    """What a live refresh returns: the new LIVE listing, the CHANGES since the previous one (empty: nothing
    the listing shows changed), the rows the store returned (ROWS_READ), WIDER: the reads beyond the
    rows written that the counts asked for ("message counts", "lookup keys", "thread order", "resources"),
    or ["everything"] after a full reload, UNREAD: the tables not read at all (a WAL file's OM table
    whose pages no commit since wrote), and MESSAGES_COUNTED: False when the messages table was not counted
    (`count(*)`: a walk of its whole index) because the re-read threads' digests explained the change."""

    live: LiveListing
    changes: ChangeSet
    rows_read: int = 0
    wider: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    messages_counted: bool = True

    def changed_threads(self) -> list[Thread]:
        """The threads (listed, not deleted) whose statuses, counts and health must be computed again, in
        listing order (work proportional to the change: the listing's positions, not a pass over its rows)."""
        rows = self.live.listing.rows
        if self.changes.everything:
            return [r.thread for r in rows]
        index, orphans, _ = self.live.positions()
        wanted = self.changes.threads | self.changes.threads_created
        at = sorted(i for t in wanted if (i := index.get(t, orphans.get(t))) is not None)
        return [rows[i].thread for i in at]


def load_live_listing(store: MemoryStore | None) -> LiveListing:
    """Return the full listing of STORE with the marks its next refresh starts from (one load, one snapshot).

    The marks are read first: a commit racing the load is read again by the next refresh, never missed.
    Raises StoreError on a failed read.
    """
    store = require_store(store)
    return _load_live_listing(store, wal_now(store))


def _load_live_listing(store: MemoryStore, wal_before) -> LiveListing:
    """`load_live_listing` with where the WAL ended before the snapshot (WAL_BEFORE: `wal_now`)."""
    with store.snapshot():
        marks = read_marks(store, wal_before)
        keys = store.om_lookup_keys()   # read once: the listing's rows and the next refresh's start
        listing = load_listing(store, keys)
        listed = {r.thread.id: r.thread.message_count or 0 for r in listing.rows if not r.orphan}
        total = marks.counts.get(sc.MESSAGES, 0)
    return LiveListing(listing, marks, keys, stray=_stray(store, total, listed, None))


@dataclass
class LiveCounts:
    """The second step of `load_live_listing_in_two_steps`: the COUNTS, and the MARKS and LOOKUP_KEYS read with
    them; `live_listing(listing, marks, lookup_keys)` makes the LiveListing once the counts are applied."""

    counts: ListingCounts
    marks: Marks
    lookup_keys: list[dict]


def load_live_listing_in_two_steps(store: MemoryStore | None, first, cancel=None) -> LiveCounts | None:
    """`studio.app.listing.load_listing_in_two_steps` plus the marks and lookup keys of the same snapshot.

    FIRST(listing) gets the threads before their counts; returns None when CANCEL is set meanwhile.
    Raises StoreError on a failed read.
    """
    store = require_store(store)
    wal_before = wal_now(store)
    with store.snapshot():
        marks = read_marks(store, wal_before)
        keys = store.om_lookup_keys()
        counts = load_listing_in_two_steps(store, first, cancel, keys)
        if counts is None:
            return None
        return LiveCounts(counts, marks, keys)


def live_listing(listing: Listing, marks: Marks, lookup_keys: list[dict]) -> LiveListing:
    """Return the LiveListing of LISTING (its counts applied) read with MARKS and LOOKUP_KEYS (cheap: no read)."""
    listed = {r.thread.id: r.thread.message_count or 0 for r in listing.rows if not r.orphan}
    stray = marks.counts.get(sc.MESSAGES, 0) - sum(listed.values()) if marks.counts else 0
    return LiveListing(listing, marks, lookup_keys, stray=stray)


def _stray(store: MemoryStore, total: int, listed: dict[str, int], stats: dict | None) -> int:
    """Messages of the store not counted in any listed thread (TOTAL minus the listed counts)."""
    if store.dialect == "mongodb":   # no marks on MongoDB (every refresh reloads): nothing to reconcile
        return 0
    return total - sum(listed.values()) if stats is None else sum(
        n for tid, (n, _) in stats.items() if tid not in listed)


def refresh_live_listing(store: MemoryStore | None, live: LiveListing) -> LiveRefresh:
    """Return LIVE brought up to date with STORE, re-reading only the threads written since its marks.

    LIVE is not changed (the rows of unchanged threads are shared with the result, statuses
    included: a view keeps them). Raises StoreError on a failed read.
    """
    store = require_store(store)
    wal_before = wal_now(store, live.marks)   # before the snapshot: see studio.store.live_changes
    with store.snapshot():
        digested = uncounted_messages(store, wal_before)   # the messages counted only when the digests do not tell
        got = rows_since(store, live.marks, wal_before, count_messages=not digested)
        if got is None:
            return LiveRefresh(_load_live_listing(store, wal_before), ChangeSet.full_reload(), wider=["everything"])
        touched, marks = got
        return _Refresh(store, live, touched, marks, digested).run()


class _ListedRows(Mapping):
    """The listed (not orphan) rows of a listing by thread id, read through its positions (no pass over the rows)."""

    def __init__(self, rows: list[ThreadRow], index: dict[str, int]):
        self._rows, self._index = rows, index

    def __getitem__(self, thread_id: str) -> ThreadRow:
        return self._rows[self._index[thread_id]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, thread_id) -> bool:
        return thread_id in self._index

    def keys(self):
        return self._index.keys()


class _Refresh:
    """One refresh's reads and bookkeeping (see `refresh_live_listing`).

    Work proportional to the change: the listing's positions (`LiveListing.positions`) find the rows of
    the threads re-read; while the thread order and the OM lookup keys stay as they were, the new rows are
    the old list with those rows replaced, the orphan rows and the resources' thread counts are kept, and
    the listed message total is the old one plus the re-read threads' differences. DIGESTED: the messages
    table was left uncounted (`rows_since(count_messages=False)`): the re-read threads' digests decide
    whether it is counted (`_messages_now`).
    """

    def __init__(self, store: MemoryStore, live: LiveListing, touched: Touched, marks: Marks, digested: bool = False):
        self.store, self.live, self.touched, self.marks = store, live, touched, marks
        self.digested = digested
        self.messages_counted = not digested
        #: the digests handed on (`LiveListing.digests`), and those this refresh read
        self.digests: dict[str, tuple[int, int]] = {}
        self.read_digests: dict[str, tuple[int, int]] = {}
        self.index, self.orphan_index, self.listed_total = live.positions()
        self.rows = _ListedRows(live.listing.rows, self.index)
        # the listed rows first, the orphan rows after them (as every listing makes them): positions carry over
        self.orphans_last = all(i >= len(self.index) for i in self.orphan_index.values())
        self.rows_read = touched.rows_read
        self.wider: list[str] = []
        self.keys: list[dict] = live.lookup_keys

    def run(self) -> LiveRefresh:
        store, touched, old = self.store, self.touched, self.live.marks
        keys = self.live.lookup_keys
        known_keys = self.live.lookup_key_set()
        has_om = store.schema.has_table(sc.OBSERVATIONAL_MEMORY)
        if has_om and (touched.lookup_keys - known_keys or not touched.count_added_up(sc.OBSERVATIONAL_MEMORY, old)):
            keys = store.om_lookup_keys()
            self.rows_read += len(keys)
            self.wider.append("lookup keys")
        self.keys = keys
        key_set = known_keys if keys is self.live.lookup_keys else frozenset(k["lookupKey"] for k in keys)
        keys_changed = key_set != known_keys

        order = None
        if touched.threads - self.rows.keys() or not touched.count_added_up(sc.THREADS, old):
            order = self._thread_order()
        if order is not None:
            ids_now = set(order)
            created, deleted = ids_now - self.rows.keys(), self.rows.keys() - ids_now
        else:   # the same threads (a view of the positions: no copy of them)
            ids_now, created, deleted = self.index.keys(), set(), set()
        changed = (touched.threads | touched.message_threads) & ids_now
        changed |= self._governed(touched.lookup_keys | (key_set ^ known_keys), ids_now)

        fresh = self._read_threads(changed | created)
        if order is None and any(fresh[t].created_at != self.rows[t].thread.created_at for t in fresh
                                 if t in self.rows):
            order = self._thread_order()   # a createdAt moved: the listing's order may have
        stats = self.store.message_stats(fresh)
        self.rows_read += len(stats)
        # the listed threads' messages now: the old total, less the deleted and re-read threads' old counts,
        # plus the re-read threads' new ones (every re-read thread is listed now; a created one not read counts 0)
        listed = (self.listed_total - sum(self.rows[t].thread.message_count or 0 for t in deleted)
                  - sum(self.rows[t].thread.message_count or 0 for t in fresh if t in self.rows)
                  + sum(stats.get(t, (0, None))[0] for t in fresh))
        stray = self.live.stray
        total = touched.counts.get(sc.MESSAGES, 0)
        if self.digested:
            total = self._messages_now(fresh, stats, created | deleted, listed + stray)
            self.marks = self.marks.with_count(sc.MESSAGES, total)
        if listed + stray != total:
            listed = None   # the counts are read again below: the new listing sums its rows when asked
            # a message went, or moved to another thread, where no row written names it: count every thread (of the
            # threads' digests, only those read in this snapshot are known to hold)
            self.digests = self.read_digests
            every = store.message_stats()
            self.rows_read += len(every)
            self.wider.append("message counts")
            for tid in ids_now - fresh.keys():
                row = self.rows[tid]
                if every.get(tid, (0, None)) != (row.thread.message_count or 0, row.thread.newest_message_at):
                    changed.add(tid)
            fresh.update(self._read_threads(changed - fresh.keys()))
            stats = {tid: every[tid] for tid in fresh if tid in every}
            stray = _stray(store, 0, dict.fromkeys(ids_now, 0), every)

        kept = order is None and self.orphans_last   # the listed threads in the same places
        new_rows, orphan_rows = self._rows(order, fresh, stats, key_set, keys_changed, changed, kept)
        # a resource-scope record's status reads every thread of its resource: one changed thread moves them all
        shared = {f"resource:{self.rows[t].thread.resource_id}" for t in changed if t in self.rows}
        shared |= {f"resource:{t.resource_id}" for t in fresh.values()}
        shared |= {f"resource:{self.rows[t].thread.resource_id}" for t in deleted}
        shared &= key_set   # a row's lookup key is one of the store's keys (or None)
        if shared:
            changed |= {r.thread.id for r in new_rows if r.lookup_key in shared and not r.orphan}
        old_orphans = set(self.orphan_index)
        orphans = {r.thread.id for r in orphan_rows}
        om_keys = touched.lookup_keys | (key_set ^ known_keys)
        changed |= (orphans - old_orphans) | {o for o in orphans if f"thread:{o}" in om_keys}
        deleted |= old_orphans - orphans - ids_now
        listing = Listing(resources=self._resources(new_rows, fresh, created, deleted, keys_changed),
                          rows=new_rows, data_version=self.live.listing.data_version, counted=True)
        changes = ChangeSet.of(threads=changed - created, threads_created=created, threads_deleted=deleted,
                               om_records=om_keys)
        derived = None
        if kept and listed is not None:
            first = len(self.index)
            derived = (self.index, {r.thread.id: first + k for k, r in enumerate(orphan_rows)}, listed)
        return LiveRefresh(LiveListing(listing, self.marks, keys, stray, derived=derived, key_set=key_set,
                                       digests=self.digests), changes,
                           self.rows_read, self.wider, sorted(touched.unread), self.messages_counted)

    def _messages_now(self, fresh: dict[str, Thread], stats: dict, came_or_went: set[str], derived: int) -> int:
        """The messages table's count now, left uncounted by `rows_since`: DERIVED (the listed threads' total with
        the re-read threads' new counts, plus the stray messages) when every re-read thread's digest moved by
        exactly its new rows since the last, else `count(*)` (a thread not digested yet, a message deleted or moved
        in from another thread, threads that CAME_OR_WENT, a message naming no listed thread, the top row gone).
        Keeps the digests of this snapshot in `self.digests`."""
        touched = self.touched
        now = message_digests(self.store, fresh)
        self.rows_read += len(now)
        old = self.live.digests
        self.read_digests = {t: d for t, d in now.items() if d is not None}
        self.digests = dict(old)   # a copy in C: the old listing keeps its own
        for tid in came_or_went | now.keys():
            self.digests.pop(tid, None)
        self.digests.update(self.read_digests)
        explained = (not came_or_went and sc.MESSAGES not in touched.top_replaced
                     and touched.message_threads <= fresh.keys())
        for tid, digest in now.items():
            if not explained:
                break
            before, added = old.get(tid), touched.new_messages.get(tid, [])
            explained = (digest is not None and before is not None and tid in self.rows
                         and before[0] == (self.rows[tid].thread.message_count or 0)
                         and digest[0] == stats.get(tid, (0, None))[0]
                         and digest == (before[0] + len(added), before[1] + sum(added)))
        if explained:
            return derived
        self.rows_read += 1
        self.messages_counted = True
        return count_rows(self.store, sc.MESSAGES)

    def _thread_order(self) -> list[str]:
        order = self.store.sql.thread_order
        ids = [str(r[0]) for r in self.store.rows(f"SELECT id FROM mastra_threads ORDER BY {order}")]
        self.rows_read += len(ids)
        self.wider.append("thread order")
        return ids

    def _governed(self, lookup_keys: set[str], ids_now: set[str]) -> set[str]:
        """The listed threads an OM record of LOOKUP_KEYS may govern (its thread; every thread of its resource)."""
        out = set()
        resources = {k.split(":", 1)[1] for k in lookup_keys if k.startswith("resource:")}
        for key in lookup_keys:
            if key.startswith("thread:") and key[7:] in ids_now:
                out.add(key[7:])
        if resources:
            out |= {tid for tid, row in self.rows.items() if row.thread.resource_id in resources and tid in ids_now}
        return out

    def _read_threads(self, ids: set[str]) -> dict[str, Thread]:
        out: dict[str, Thread] = {}
        wanted = sorted(ids)
        for i in range(0, len(wanted), ID_CHUNK):
            part = wanted[i:i + ID_CHUNK]
            for t in self.store.select_threads(f"WHERE id IN ({', '.join('?' * len(part))})", part):
                out[t.id] = t
        self.rows_read += len(out)
        return out

    def _rows(self, order: list[str] | None, fresh: dict[str, Thread], stats: dict, key_set: set[str],
              keys_changed: bool, changed: set[str], kept: bool) -> tuple[list[ThreadRow], list[ThreadRow]]:
        """The new listing's rows and, of them, the orphan rows: the re-read threads made again, the others kept
        (their lookup key checked when the keys changed). KEPT: the thread order is the old one, the listed rows
        first (then only the re-read rows are made; the orphans are kept while the lookup keys are)."""
        if kept and not keys_changed:
            rows = self.live.listing.rows
            out = rows[:len(self.index)]
            for tid, thread in fresh.items():
                thread.message_count, thread.newest_message_at = stats.get(tid, (0, None))
                activity, stale = last_activity(thread)
                out[self.index[tid]] = ThreadRow(thread, lookup_key_of(thread, key_set), activity_ms=activity,
                                                 updated_at_stale=stale)
            if self.keys is self.live.lookup_keys:   # the same keys, the same threads: the same orphans
                orphan_rows = [rows[i] for i in sorted(self.orphan_index.values())]
            else:
                orphan_rows = self._orphan_rows(set(self.index))
            return out + orphan_rows, orphan_rows
        ids = order if order is not None else [r.thread.id for r in self.live.listing.rows if not r.orphan]
        out = []
        for tid in ids:
            thread = fresh.get(tid)
            if thread is None:
                row = self.rows[tid]
                if keys_changed and lookup_key_of(row.thread, key_set) != row.lookup_key:
                    row = ThreadRow(row.thread, lookup_key_of(row.thread, key_set), None, row.activity_ms,
                                    row.updated_at_stale)
                    changed.add(tid)
                out.append(row)
                continue
            thread.message_count, thread.newest_message_at = stats.get(tid, (0, None))
            activity, stale = last_activity(thread)
            out.append(ThreadRow(thread, lookup_key_of(thread, key_set), activity_ms=activity, updated_at_stale=stale))
        orphan_rows = self._orphan_rows(set(ids))
        return out + orphan_rows, orphan_rows

    def _orphan_rows(self, ids: set[str]) -> list[ThreadRow]:
        out = []
        for t in orphaned_threads(self.store, ids, self.keys):
            t.message_count, t.newest_message_at = 0, None
            out.append(ThreadRow(t, f"thread:{t.id}", orphan=True))
        return out

    def _resources(self, rows: list[ThreadRow], fresh: dict[str, Thread], created: set[str], deleted: set[str],
                   keys_changed: bool) -> list[tuple[str, int]]:
        moved = any(t in self.rows and self.rows[t].thread.resource_id != fresh[t].resource_id for t in fresh)
        resources_moved = self.store.schema.has_table(sc.RESOURCES) and not self.touched.count_added_up(
            sc.RESOURCES, self.live.marks)
        if not (created or deleted or moved or keys_changed or self.touched.resources or resources_moved):
            return list(self.live.listing.resources)   # the same resources, each with the same threads
        per_resource: dict[str, int] = {}
        for r in rows:
            if not r.orphan:
                per_resource[r.thread.resource_id] = per_resource.get(r.thread.resource_id, 0) + 1
        ids = self.store.resource_ids()
        self.rows_read += len(ids)
        self.wider.append("resources")
        return [(rid, per_resource.get(rid, 0)) for rid in ids]

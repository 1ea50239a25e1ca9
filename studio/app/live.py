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
writes). Where the rows written do not explain the counts (a delete, a message moved to another
thread), the refresh reads wider — every thread's message counts, the OM lookup keys, the thread
order — never guessing; where even that cannot be told (a table appeared, PostgreSQL's transaction
ids wrapped), it reloads the whole listing and says so (`ChangeSet.everything`).
"""

from __future__ import annotations

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
from studio.store.live_changes import Marks, Touched, read_marks, rows_since, wal_now

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
    or ["everything"] after a full reload, and UNREAD: the tables not read at all (a WAL file's OM table
    whose pages no commit since wrote)."""

    live: LiveListing
    changes: ChangeSet
    rows_read: int = 0
    wider: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)

    def changed_threads(self) -> list[Thread]:
        """The threads (listed, not deleted) whose statuses, counts and health must be computed again."""
        if self.changes.everything:
            return [r.thread for r in self.live.listing.rows]
        wanted = self.changes.threads | self.changes.threads_created
        return [r.thread for r in self.live.listing.rows if r.thread.id in wanted]


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
        listing = load_listing(store)
        keys = store.om_lookup_keys()
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
        counts = load_listing_in_two_steps(store, first, cancel)
        if counts is None:
            return None
        return LiveCounts(counts, marks, store.om_lookup_keys())


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
        got = rows_since(store, live.marks, wal_before)
        if got is None:
            return LiveRefresh(_load_live_listing(store, wal_before), ChangeSet.full_reload(), wider=["everything"])
        touched, marks = got
        return _Refresh(store, live, touched, marks).run()


class _Refresh:
    """One refresh's reads and bookkeeping (see `refresh_live_listing`)."""

    def __init__(self, store: MemoryStore, live: LiveListing, touched: Touched, marks: Marks):
        self.store, self.live, self.touched, self.marks = store, live, touched, marks
        self.rows = {r.thread.id: r for r in live.listing.rows if not r.orphan}
        self.rows_read = touched.rows_read
        self.wider: list[str] = []
        self.keys: list[dict] = live.lookup_keys

    def run(self) -> LiveRefresh:
        store, touched, old = self.store, self.touched, self.live.marks
        keys = self.live.lookup_keys
        known_keys = {k["lookupKey"] for k in keys}
        has_om = store.schema.has_table(sc.OBSERVATIONAL_MEMORY)
        if has_om and (touched.lookup_keys - known_keys or not touched.count_added_up(sc.OBSERVATIONAL_MEMORY, old)):
            keys = store.om_lookup_keys()
            self.rows_read += len(keys)
            self.wider.append("lookup keys")
        self.keys = keys
        key_set = {k["lookupKey"] for k in keys}
        keys_changed = key_set != known_keys

        order = None
        if touched.threads - self.rows.keys() or not touched.count_added_up(sc.THREADS, old):
            order = self._thread_order()
        ids_now = set(order) if order is not None else set(self.rows)
        created, deleted = ids_now - self.rows.keys(), self.rows.keys() - ids_now
        changed = (touched.threads | touched.message_threads) & ids_now
        changed |= self._governed(touched.lookup_keys | (key_set ^ known_keys), ids_now)

        fresh = self._read_threads(changed | created)
        if order is None and any(fresh[t].created_at != self.rows[t].thread.created_at for t in fresh
                                 if t in self.rows):
            order = self._thread_order()   # a createdAt moved: the listing's order may have
        stats = self.store.message_stats(fresh)
        self.rows_read += len(stats)
        counts = {tid: (stats.get(tid, (0, None))[0] if tid in fresh else (row.thread.message_count or 0))
                  for tid, row in self.rows.items() if tid in ids_now}
        counts.update({tid: stats.get(tid, (0, None))[0] for tid in created})
        stray = self.live.stray
        if sum(counts.values()) + stray != touched.counts.get(sc.MESSAGES, 0):
            # a message went, or moved to another thread, where no row written names it: count every thread
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

        new_rows = self._rows(order, fresh, stats, key_set, keys_changed, changed)
        # a resource-scope record's status reads every thread of its resource: one changed thread moves them all
        shared = {f"resource:{self.rows[t].thread.resource_id}" for t in changed if t in self.rows}
        shared |= {f"resource:{t.resource_id}" for t in fresh.values()}
        shared |= {f"resource:{self.rows[t].thread.resource_id}" for t in deleted}
        changed |= {r.thread.id for r in new_rows if r.lookup_key in shared and not r.orphan}
        old_orphans = {r.thread.id for r in self.live.listing.rows if r.orphan}
        orphans = {r.thread.id for r in new_rows if r.orphan}
        om_keys = touched.lookup_keys | (key_set ^ known_keys)
        changed |= (orphans - old_orphans) | {o for o in orphans if f"thread:{o}" in om_keys}
        deleted |= old_orphans - orphans - ids_now
        listing = Listing(resources=self._resources(new_rows, fresh, created, deleted, keys_changed),
                          rows=new_rows, data_version=self.live.listing.data_version, counted=True)
        changes = ChangeSet.of(threads=changed - created, threads_created=created, threads_deleted=deleted,
                               om_records=om_keys)
        return LiveRefresh(LiveListing(listing, self.marks, keys, stray), changes, self.rows_read, self.wider,
                           sorted(touched.unread))

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
              keys_changed: bool, changed: set[str]) -> list[ThreadRow]:
        """The new listing's rows: the re-read threads made again, the others kept (their lookup key checked)."""
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
        for t in orphaned_threads(self.store, set(ids), self.keys):
            t.message_count, t.newest_message_at = 0, None
            out.append(ThreadRow(t, f"thread:{t.id}", orphan=True))
        return out

    def _resources(self, rows: list[ThreadRow], fresh: dict[str, Thread], created: set[str], deleted: set[str],
                   keys_changed: bool) -> list[tuple[str, int]]:
        moved = any(t in self.rows and self.rows[t].thread.resource_id != fresh[t].resource_id for t in fresh)
        per_resource: dict[str, int] = {}
        for r in rows:
            if not r.orphan:
                per_resource[r.thread.resource_id] = per_resource.get(r.thread.resource_id, 0) + 1
        resources_moved = self.store.schema.has_table(sc.RESOURCES) and not self.touched.count_added_up(
            sc.RESOURCES, self.live.marks)
        if created or deleted or moved or keys_changed or self.touched.resources or resources_moved:
            ids = self.store.resource_ids()
            self.rows_read += len(ids)
            self.wider.append("resources")
        else:
            ids = [rid for rid, _ in self.live.listing.resources]
        return [(rid, per_resource.get(rid, 0)) for rid in ids]

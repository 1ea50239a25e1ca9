"""The thread list: every resource and thread of a store, with counts, last activity and OM lookup keys (no Qt).

Loads (`studio.app.loads`): module-level functions of the store returning plain (picklable) data,
run by the studio's TaskRunner on its database worker or, for big databases, in its helper
process (`studio.app.helper_process`). They raise StoreError on failed reads. The threads' OM
statuses come later, in batches (`studio.app.statuses`); the thread list's metadata filter is
`load_metadata_thread_ids`, the live refresh's check `check_changed`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from studio.app.changes import ChangeSet
from studio.app.loads import require_store
from studio.engine.status import ThreadStatus
from studio.store.history import list_threads
from studio.store.memory_store import MemoryStore
from studio.store.records import Thread, iso_to_ms

#: A thread whose newest message is this much later than its updatedAt is marked (Mastra #17932 leaves
#: updatedAt stale); real Mastra writes updatedAt a millisecond or two before the last message's createdAt.
STALE_UPDATED_AT_MS = 60_000


def last_activity(thread: Thread) -> tuple[int, bool]:
    """Return (last activity as epoch ms, whether updatedAt is stale) for THREAD.

    Last activity is the later of the thread's updatedAt and its newest message's createdAt
    (`Thread.newest_message_at`); updatedAt is stale when that message is over STALE_UPDATED_AT_MS later.
    0 when neither is known.
    """
    return _activity(thread.updated_at, thread.newest_message_at)


def _activity(updated_at: str | None, newest_message_at: str | None) -> tuple[int, bool]:
    updated = iso_to_ms(updated_at) or 0
    newest = iso_to_ms(newest_message_at) or 0
    return max(updated, newest), newest - updated > STALE_UPDATED_AT_MS


@dataclass
class ThreadRow:
    """A thread as the thread list shows it: the record, its OM lookup key and (once known) its status."""

    thread: Thread
    lookup_key: str | None
    status: ThreadStatus | None = None
    activity_ms: int = 0      # last activity as epoch ms (the default sort key), computed off the GUI thread
    updated_at_stale: bool = False   # the newest message is later than updatedAt (see `last_activity`)
    orphan: bool = False      # an OM record whose thread was deleted (Mastra #16621): `thread` stands in for it
    uncountable: str | None = None   # why Mastra cannot count a pending message (`studio.app.uncountable`), once known

    @property
    def has_om(self) -> bool:
        """Return True when an OM record governs the thread."""
        return self.lookup_key is not None


@dataclass
class Listing:
    """Every resource (with its thread count) and every thread of the database."""

    resources: list[tuple[str, int]]
    rows: list[ThreadRow]
    data_version: Any   # store.fingerprint() as of the listing (None in a first step that reads it later)
    counted: bool = True   # False: message counts and newest messages not read yet (`load_listing_in_two_steps`)

    @property
    def changes(self) -> ChangeSet:
        """What this load read afresh: everything (a listing replaces what was shown)."""
        return ChangeSet.full_reload()


@dataclass
class ListingCounts:
    """The second step of `load_listing_in_two_steps`: per-thread message counts (see `listing_counts`)."""

    counts: dict[str, tuple[int, str | None, int, bool]]
    data_version: Any = None   # the store's fingerprint as of the listing (see `_listing_without_counts`)

    def apply(self, rows: list[ThreadRow]) -> None:
        """Fill ROWS (the first step's rows) in: message count, newest message, last activity, updatedAt stale.

        Plain assignments (the values were computed by `listing_counts`): cheap enough for the GUI thread.
        """
        for row in rows:
            t = row.thread
            known = self.counts.get(t.id)
            if known is None:   # not among the threads counted: an orphan's stand-in (no messages left)
                t.message_count, t.newest_message_at = 0, None
                continue
            t.message_count, t.newest_message_at, row.activity_ms, row.updated_at_stale = known


def lookup_key_of(thread: Thread, keys: set[str]) -> str | None:
    """Return the OM lookup key of KEYS (the store's lookup keys) that governs THREAD (thread scope first), or None."""
    for key in (f"thread:{thread.id}", f"resource:{thread.resource_id}"):
        if key in keys:
            return key
    return None


def load_listing(store: MemoryStore | None, lookup_keys: list[dict] | None = None) -> Listing:
    """Return every resource and thread (with message counts, last activity and OM lookup keys), then a
    stand-in row (`orphan`) for each thread-scope OM record whose thread was deleted.

    LOOKUP_KEYS: `store.om_lookup_keys()` when the caller has read it already in this load (one statement less)."""
    store = require_store(store)
    listing = _listing_without_counts(store, lookup_keys)
    ListingCounts(listing_counts(store, [r for r in listing.rows if not r.orphan])).apply(listing.rows)
    listing.counted = True
    if listing.data_version is None:
        listing.data_version = store.fingerprint()
    return listing


def load_listing_in_two_steps(store: MemoryStore | None, first: Callable[[Listing], None],
                              cancel: threading.Event | None = None,
                              lookup_keys: list[dict] | None = None) -> ListingCounts | None:
    """Hand FIRST the listing without message counts as soon as it is read, then count; return the counts.

    FIRST(listing) gets what `load_listing` returns, except that every row's `message_count` and
    `newest_message_at` are None (`Listing.counted` False) and `activity_ms` is the thread's
    updatedAt alone: the threads query is cheap, the per-thread message aggregate (`message_stats`,
    one GROUP BY over every message) is not (~200 ms on PostgreSQL with 220k messages). The rows
    given to FIRST are only read afterwards, never changed (FIRST may hand them to another thread);
    the counts come back as a `ListingCounts` for the caller to apply (`ListingCounts.apply`). Both
    steps are one load: run inside one `store.snapshot()`, the counts describe the threads FIRST saw.
    Returns None without counting when CANCEL is set once FIRST returns (the window closed meanwhile).
    LOOKUP_KEYS: as `load_listing`'s.
    """
    store = require_store(store)
    listing = _listing_without_counts(store, lookup_keys)
    first(listing)
    if cancel is not None and cancel.is_set():
        return None
    counts = ListingCounts(listing_counts(store, [r for r in listing.rows if not r.orphan]))
    counts.data_version = listing.data_version if listing.data_version is not None else store.fingerprint()
    return counts


def listing_counts(store: MemoryStore, rows: list[ThreadRow]) -> dict[str, tuple[int, str | None, int, bool]]:
    """Return {thread id: (stored messages, newest message createdAt, last activity ms, updatedAt stale)}
    for ROWS (a first step's rows: `activity_ms` is still the thread's updatedAt), from one aggregate
    over every message (`store.message_stats()`).

    Last activity and staleness are `last_activity`'s (computed here, off the GUI thread). ROWS are only read.
    """
    stats = store.message_stats()
    out = {}
    for row in rows:
        count, newest = stats.get(row.thread.id, (0, None))
        updated = row.activity_ms
        newest_ms = iso_to_ms(newest) or 0 if newest is not None else 0
        out[row.thread.id] = (count, newest, max(updated, newest_ms), newest_ms - updated > STALE_UPDATED_AT_MS)
    return out


def _listing_without_counts(store: MemoryStore, lookup_keys: list[dict] | None = None) -> Listing:
    """Read resources, threads (no message counts) and OM lookup keys; last activity from updatedAt only.

    `data_version` is the store's fingerprint, read first (a commit racing this load then shows as a
    change, never as none), or None when the store's fingerprint inside this load's snapshot describes
    that snapshot (`fingerprint_in_snapshot`: a server store): the caller reads it after what it shows first.
    """
    late = store.in_snapshot and store.fingerprint_in_snapshot
    version = None if late else store.fingerprint()
    threads = store.list_threads()
    lookup_keys = store.om_lookup_keys() if lookup_keys is None else lookup_keys
    keys = {k["lookupKey"] for k in lookup_keys}
    per_resource: dict[str, int] = {}
    for t in threads:
        per_resource[t.resource_id] = per_resource.get(t.resource_id, 0) + 1
    resources = [(rid, per_resource.get(rid, 0)) for rid in store.resource_ids()]
    rows = [ThreadRow(t, lookup_key_of(t, keys), activity_ms=iso_to_ms(t.updated_at) or 0) for t in threads]
    rows += [ThreadRow(t, f"thread:{t.id}", orphan=True)
             for t in orphaned_threads(store, {t.id for t in threads}, lookup_keys)]
    return Listing(resources=resources, rows=rows, data_version=version, counted=False)


def orphaned_threads(store: MemoryStore, thread_ids: set[str], lookup_keys: list[dict] | None = None) -> list[Thread]:
    """Return a stand-in Thread for every thread-scope OM record whose thread is not in THREAD_IDS.

    LOOKUP_KEYS: `store.om_lookup_keys()` when the caller has read it already (one statement less).

    Mastra's storage-level deleteThread removes the thread and its messages but not its OM records
    (Mastra #16621); Mastra's getStatus still reports on such a thread id (pending 0 once its messages are
    gone, thresholds as configured). The stand-in has the record's thread id and resource id, no title.
    """
    out = []
    for key in store.om_lookup_keys() if lookup_keys is None else lookup_keys:
        thread_id = key.get("threadId")
        if key.get("scope") == "thread" and thread_id and thread_id not in thread_ids:
            out.append(Thread(id=thread_id, resource_id=key.get("resourceId") or "", message_count=0))
    return out


def check_changed(store: MemoryStore | None) -> Any:
    """Return the store's fingerprint (`MemoryStore.fingerprint`: it changes when another process commits)."""
    return require_store(store).fingerprint()


def load_metadata_thread_ids(store: MemoryStore | None, metadata: dict) -> set[str]:
    """Return the ids of every thread whose metadata matches METADATA (Memory.listThreads' filter, all pages)."""
    store = require_store(store)
    return set(list_threads(store, filter={"metadata": metadata}, per_page=False, ids_only=True).thread_ids)

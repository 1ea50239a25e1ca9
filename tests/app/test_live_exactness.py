"""A live refresh equals a fresh load after every write of long random sequences of Mastra's writes (a file).

`studio.app.live.refresh_live_listing` re-reads only the threads the rows written since the last
load name; here, after each write of Mastra's (tests/live_writes.py: saveMessages' insert and
upsert, a message moved to another thread, updateMessages, deleteMessages, thread create / update /
delete / clone, OM generations, in-place OM updates, clearObservationalMemory), the refreshed
listing — every thread row, message count, newest message, last activity, lookup key, orphan,
resource count — and the OM statuses recomputed for the ChangeSet's threads only must equal a
fresh full load of the same store. Fixed seeds. The same check runs on PostgreSQL and on a libSQL
server (tests/server/test_live_exactness_servers.py).
"""

from __future__ import annotations

import random
import shutil

import pytest

from studio.app.live import load_live_listing, refresh_live_listing
from studio.app.statuses import iter_thread_statuses
from studio.store import open_store
from tests.conftest import FIXTURES
from tests.live_writes import FileSql, MastraWrites


def listing_state(listing) -> tuple:
    """What a listing shows: every row (thread record with counts, lookup key, activity, orphan) and the resources."""
    return ([(r.thread, r.lookup_key, r.activity_ms, r.updated_at_stale, r.orphan) for r in listing.rows],
            listing.resources)


def statuses_of(store, rows) -> dict:
    """{thread id: its OM status} of ROWS governed by a record (`iter_thread_statuses`, as the studio computes them)."""
    threads = [r.thread for r in rows if r.has_om]
    return {s.thread_id: s for s in iter_thread_statuses(store, threads, on_error=lambda _t, _e: None)}


def check_sequence(store, writes: MastraWrites, steps: int, rng: random.Random) -> dict:
    """Make STEPS writes (sometimes two between refreshes); after each refresh compare with a fresh load.

    Returns {write name: times made, "wider": refreshes that read wider than the rows written}.
    """
    live = load_live_listing(store)
    statuses = statuses_of(store, live.listing.rows)
    made: dict[str, int] = {"wider": 0, "everything": 0}
    for step in range(steps):
        names = [writes.step() for _ in range(2 if rng.random() < 0.2 else 1)]
        for name in names:
            made[name] = made.get(name, 0) + 1
        refresh = refresh_live_listing(store, live)
        made["wider"] += bool(refresh.wider)
        made["everything"] += refresh.changes.everything
        live = refresh.live
        by_id = {r.thread.id: r for r in live.listing.rows}
        for tid in refresh.changes.threads_deleted:
            statuses.pop(tid, None)
        changed = refresh.changed_threads()
        for thread in changed:
            statuses.pop(thread.id, None)
        statuses.update(statuses_of(store, [by_id[t.id] for t in changed]))
        fresh = load_live_listing(store)
        assert listing_state(live.listing) == listing_state(fresh.listing), (step, names, refresh.changes)
        assert live.stray == fresh.stray, (step, names)
        assert statuses == statuses_of(store, fresh.listing.rows), (step, names, refresh.changes)
    return made


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_live_refresh_equals_a_fresh_load_on_a_file(tmp_path, seed):
    for ext in ("", "-wal", "-shm"):
        src = FIXTURES / f"support.db{ext}"
        if src.exists():
            shutil.copyfile(src, tmp_path / f"support.db{ext}")
    path = tmp_path / "support.db"
    rng = random.Random(seed)
    sql = FileSql(path)
    try:
        with open_store(str(path)) as store:
            made = check_sequence(store, MastraWrites(sql, rng), 120, rng)
    finally:
        sql.close()
    # the sequence made every kind of write, and most refreshes read only the rows written
    assert set(MastraWrites.WEIGHTS) <= set(made), made
    assert made["everything"] == 0
    assert made["wider"] < 60, made

"""A live refresh equals a fresh load after every write of long random sequences of Mastra's writes (a file).

`studio.app.live.refresh_live_listing` re-reads only the threads the rows written since the last
load name; here, after each write of Mastra's (tests/live_writes.py: saveMessages' insert and
upsert, a message moved to another thread, updateMessages, deleteMessages, thread create / update /
delete / clone, OM generations, in-place OM updates, clearObservationalMemory), the refreshed
listing — every thread row, message count, newest message, last activity, lookup key, orphan,
resource count — and the OM statuses recomputed for the ChangeSet's threads only must equal a
fresh full load of the same store. Fixed seeds. The same check runs on PostgreSQL and on a libSQL
server (tests/server/test_live_exactness_servers.py).

On a file the refresh skips the OM table while the WAL frames since its marks name none of its pages
(studio.store.wal_pages): the file's WAL is also checkpointed — passive, restart, truncate — before or
after a step's writes, each of those six cases at a fixed step and then at steps a seeded draw picks,
so a WAL generation that changed under the marks is met in every way.
"""

from __future__ import annotations

import random
import shutil
import sqlite3

import pytest

from studio.app.live import load_live_listing, refresh_live_listing
from studio.app.statuses import iter_thread_statuses
from studio.store import live_changes, open_store
from studio.store.live_changes import message_digests
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


def check_sequence(store, writes: MastraWrites, steps: int, rng: random.Random, around=None) -> dict:
    """Make STEPS writes (sometimes two between refreshes); after each refresh compare with a fresh load.

    AROUND(step, when), when given, runs before ("before") and after ("after") each step's writes; it returns
    a name counted in the result (or None) and whether the refresh must read the OM table (a WAL restarted).
    Returns {write name: times made, "wider": refreshes that read wider than the rows written, "om unread":
    refreshes that did not read the OM table, and AROUND's names}.
    """
    live = load_live_listing(store)
    statuses = statuses_of(store, live.listing.rows)
    made: dict[str, int] = {"wider": 0, "everything": 0, "om unread": 0, "positions carried": 0,
                            "messages uncounted": 0, "om pages kept": 0}
    for step in range(steps):
        extra = [around(step, "before")] if around is not None else []
        names = [writes.step() for _ in range(2 if rng.random() < 0.2 else 1)]
        extra += [around(step, "after")] if around is not None else []
        for name in names + [name for name, _ in extra if name is not None]:
            made[name] = made.get(name, 0) + 1
        before, refresh = live, refresh_live_listing(store, live)
        if any(must_read for _, must_read in extra):
            assert refresh.unread == [], (step, names, extra)
        made["om unread"] += bool(refresh.unread)
        made["wider"] += bool(refresh.wider)
        made["everything"] += refresh.changes.everything
        live = refresh.live
        made["positions carried"] += live.derived is not None   # handed on, not recomputed from the rows
        made["messages uncounted"] += not refresh.messages_counted
        pages = live.marks.om_pages
        if pages is not None:   # a WAL file: the OM pages handed on are the pages now (the next refresh trusts them)
            made["om pages kept"] += not refresh.unread and pages is before.marks.om_pages
            with store.snapshot():
                assert pages == {r[0] for r in store.rows("SELECT pageno FROM dbstat WHERE name = ?",
                                                          ("mastra_observational_memory",))}, (step, names)
        # the threads' message digests handed on are those of the store now (the next refresh trusts them)
        assert live.digests == message_digests(store, live.digests), (step, names)
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
        # the positions, orphans and message total a refresh handed on are those of its rows
        assert live.positions() == fresh.positions(), (step, names, refresh.changes)
        assert live.lookup_key_set() == {k["lookupKey"] for k in fresh.lookup_keys}, (step, names)
        assert statuses == statuses_of(store, fresh.listing.rows), (step, names, refresh.changes)
    return made


#: The WAL checkpoints a running app's SQLite makes (PASSIVE: automatic; RESTART / TRUNCATE: asked for), each
#: before and after a step's writes: the six cases, each made at a fixed step first, then where a seeded draw says.
CHECKPOINTS = [(mode, when) for mode in ("PASSIVE", "RESTART", "TRUNCATE") for when in ("before", "after")]
FIRST_CHECKPOINT_STEP = 3


class WalCheckpoints:
    """`check_sequence`'s AROUND for a file: checkpoints the WAL (through the writer's connection) at the fixed steps
    FIRST_CHECKPOINT_STEP + 2i (case i of CHECKPOINTS), then at steps after those with probability 1/8."""

    def __init__(self, sql: FileSql, rng: random.Random):
        self.sql, self.rng = sql, rng
        self.fixed = {(FIRST_CHECKPOINT_STEP + 2 * i, when): mode for i, (mode, when) in enumerate(CHECKPOINTS)}
        self.last_fixed = FIRST_CHECKPOINT_STEP + 2 * len(CHECKPOINTS)

    def __call__(self, step: int, when: str):
        mode = self.fixed.get((step, when))
        if mode is None and step > self.last_fixed and self.rng.random() < 1 / 8:
            mode = self.rng.choice(["PASSIVE", "RESTART", "TRUNCATE"])
        if mode is None:
            return None, False
        busy, _log, _done = self.sql.query(f"PRAGMA wal_checkpoint({mode})")[0]
        assert busy == 0, (step, mode)   # nobody else reads: every checkpoint completes
        # the refresh must read the OM table when the frames since its marks are gone from the WAL: TRUNCATE empties
        # it; after a RESTART the step's first write starts the WAL again (new salts). A RESTART after the writes
        # leaves the frames where they are until the next write (the refresh may rightly skip the table); a
        # PASSIVE one restarts the WAL at the next write only when no reader still needs its frames
        return f"checkpoint {mode} {when}", mode == "TRUNCATE" or (mode, when) == ("RESTART", "before")


def support_copy(tmp_path):
    """The support fixture (and its -wal, -shm) copied into TMP_PATH; its path."""
    for ext in ("", "-wal", "-shm"):
        src = FIXTURES / f"support.db{ext}"
        if src.exists():
            shutil.copyfile(src, tmp_path / f"support.db{ext}")
    return tmp_path / "support.db"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_live_refresh_equals_a_fresh_load_on_a_file(tmp_path, monkeypatch, seed):
    # the OM table's stamped rows looked for in pieces of 3 rows (the fixture's table fits in one piece of 1,000)
    monkeypatch.setattr(live_changes, "STAMPED_PIECE_ROWS", 3)
    path = support_copy(tmp_path)
    rng = random.Random(seed)
    sql = FileSql(path)
    try:
        with open_store(str(path)) as store:
            made = check_sequence(store, MastraWrites(sql, rng), 120, rng, around=WalCheckpoints(sql, rng))
    finally:
        sql.close()
    # the sequence made every kind of write and every checkpoint case, and most refreshes read only the rows
    # written, many of them without the OM table
    assert set(MastraWrites.WEIGHTS) <= set(made), made
    assert {f"checkpoint {mode} {when}" for mode, when in CHECKPOINTS} <= set(made), made
    assert made["everything"] == 0
    assert made["wider"] < 60, made
    assert made["om unread"] >= 20, made
    assert made["positions carried"] >= 40, made   # most refreshes replace a few rows in place
    assert made["messages uncounted"] >= 30, made   # the threads' digests explained the messages' count


def test_messages_are_counted_when_a_message_moves_into_a_digested_thread(tmp_path):
    """On a WAL file, an append to a thread whose digest is kept counts no messages; a message moved into that
    thread (its old thread not stamped, as Mastra's upsert leaves it) is seen although a delete in the same
    commit interval keeps the thread's count: the table is counted and the old thread read again."""
    path = support_copy(tmp_path)
    sql = FileSql(path)
    writes = MastraWrites(sql, random.Random(5))
    (old, _), (new, _) = sql.query("SELECT thread_id, count(*) FROM mastra_messages GROUP BY thread_id "
                                   "HAVING count(*) >= 2 ORDER BY thread_id")[:2]
    resource = dict(sql.query('SELECT id, "resourceId" FROM mastra_threads'))
    writes.a_thread = lambda: (new, resource[new])
    counted = []
    try:
        with open_store(str(path)) as store:
            live = load_live_listing(store)

            def refresh():
                nonlocal live
                got = refresh_live_listing(store, live)
                live = got.live
                counted.append(got.messages_counted)
                fresh = load_live_listing(store)
                assert listing_state(live.listing) == listing_state(fresh.listing), len(counted)
                assert live.stray == fresh.stray

            writes.save_message()
            refresh()   # the thread's first re-read: counted, its digest kept
            writes.save_message()
            refresh()   # an append its digest explains
            moved = sql.query("SELECT id FROM mastra_messages WHERE thread_id = ? ORDER BY rowid LIMIT 1", (old,))[0][0]
            gone = sql.query("SELECT id FROM mastra_messages WHERE thread_id = ? ORDER BY rowid LIMIT 1", (new,))[0][0]
            sql.run([writes.message_upsert(moved, (new, resource[new]), writes.text(), writes.now())])
            sql.run([writes.bump(new, writes.now())])   # only the new thread's updatedAt
            sql.run([("DELETE FROM mastra_messages WHERE id = ?", (gone,)), writes.bump(new, writes.now())])
            counts = dict(sql.query("SELECT thread_id, count(*) FROM mastra_messages WHERE thread_id IN (?, ?) "
                                    "GROUP BY thread_id", (old, new)))
            refresh()   # the new thread's count as it was, its digest not
            rows = {r.thread.id: r.thread.message_count for r in live.listing.rows}
    finally:
        sql.close()
    assert counted == [True, False, True]
    assert (rows[old], rows[new]) == (counts[old], counts[new])


def test_an_om_record_stamped_anywhere_in_the_table_is_seen_when_read_in_pieces(tmp_path, monkeypatch):
    """A WAL file's OM table is looked for stamped rows in rowid ranges (pieces of 3 rows here): an in-place update
    (Mastra's, updatedAt set) of its first row, a middle one and its last one each comes back in the refresh."""
    monkeypatch.setattr(live_changes, "STAMPED_PIECE_ROWS", 3)
    path = support_copy(tmp_path)
    sql = FileSql(path)
    writes = MastraWrites(sql, random.Random(9))
    rows = sql.query('SELECT rowid, "lookupKey" FROM mastra_observational_memory ORDER BY rowid')
    assert len(rows) > 2 * 3   # three pieces at least
    seen = []
    try:
        with open_store(str(path)) as store:
            writes.save_message()   # the WAL holds frames: the refresh reads in one WAL read transaction
            live = refresh_live_listing(store, load_live_listing(store)).live
            for rowid, key in (rows[0], rows[len(rows) // 2], rows[-1]):
                sql.run([('UPDATE mastra_observational_memory SET "pendingMessageTokens" = ?, "updatedAt" = ? '
                          "WHERE rowid = ?", (rowid * 7, writes.now(), rowid))])
                refresh = refresh_live_listing(store, live)
                live = refresh.live
                seen.append((key in refresh.changes.om_records, refresh.unread))
    finally:
        sql.close()
    assert seen == [(True, [])] * 3


def test_om_pages_are_kept_across_a_wal_restart_that_wrote_no_om_row(tmp_path):
    """A WAL restarted since the marks (its frames checkpointed into the file) makes the refresh read the OM table;
    when none of its rows was written its page list is kept (no dbstat walk), equal to the pages it has, and an OM
    record written after that is seen."""
    path = support_copy(tmp_path)
    sql = FileSql(path)
    writes = MastraWrites(sql, random.Random(11))
    key = sql.query('SELECT "lookupKey" FROM mastra_observational_memory ORDER BY rowid DESC LIMIT 1')[0][0]
    try:
        with open_store(str(path)) as store:
            writes.save_message()
            live = refresh_live_listing(store, load_live_listing(store)).live
            assert live.marks.om_pages is not None and live.marks.wal is not None
            assert sql.query("PRAGMA wal_checkpoint(RESTART)")[0][0] == 0
            writes.save_message()   # the first frames of the WAL's next generation
            restarted = refresh_live_listing(store, live)
            with store.snapshot():
                pages = {r[0] for r in store.rows("SELECT pageno FROM dbstat WHERE name = ?",
                                                  ("mastra_observational_memory",))}
            sql.run([('UPDATE mastra_observational_memory SET "isObserving" = 1, "updatedAt" = ? WHERE "lookupKey" = ?',
                      (writes.now(), key))])
            after = refresh_live_listing(store, restarted.live)
    finally:
        sql.close()
    assert restarted.unread == [] and restarted.live.marks.om_pages is live.marks.om_pages
    assert restarted.live.marks.om_pages == pages
    assert key in after.changes.om_records


def test_om_pages_of_a_wal_file_nobody_had_open_are_read_at_the_load(tmp_path):
    """A WAL file with no -wal is read immutable (its journal_mode then says "delete"): the load still reads the OM
    table's pages (the header says WAL), so the first refresh after a writer appears keeps them (no dbstat walk)."""
    path = support_copy(tmp_path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()   # the last connection: the WAL is checkpointed and deleted
    assert not (tmp_path / "support.db-wal").exists()
    with open_store(str(path)) as store:
        live = load_live_listing(store)
        sql = FileSql(path)
        try:
            MastraWrites(sql, random.Random(3)).save_message()
            refresh = refresh_live_listing(store, live)
        finally:
            sql.close()
    assert live.marks.wal is None and live.marks.om_pages
    assert refresh.unread == [] and refresh.live.marks.om_pages is live.marks.om_pages

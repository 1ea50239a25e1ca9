"""The WAL frames a live refresh looks at before reading the OM table (studio.store.wal_pages), on real files.

An OM row's observations are large: its later columns (flags, token counts, updatedAt) live on overflow
pages, so Mastra's in-place update of one of them with a value of the same size (a token count, a new
`updatedAt`) rewrites an overflow page and nothing else — no leaf page. The refresh must still see it.
"""

from __future__ import annotations

import random
import shutil
import sqlite3

from studio.app.live import load_live_listing, refresh_live_listing
from studio.store import open_store
from studio.store.wal_pages import WalPosition, pages_since, wal_position
from tests.app.test_live_exactness import listing_state, statuses_of
from tests.conftest import FIXTURES
from tests.live_writes import OM, FileSql, MastraWrites

#: Observations long enough to need overflow pages several times over (bytes; the page is 4,096).
LONG = 20_000


def copy_support(tmp_path):
    for ext in ("", "-wal", "-shm"):
        src = FIXTURES / f"support.db{ext}"
        if src.exists():
            shutil.copyfile(src, tmp_path / f"support.db{ext}")
    return tmp_path / "support.db"


def om_pages_by_type(path) -> dict[str, set[int]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: dict[str, set[int]] = {}
        for page, kind in conn.execute("SELECT pageno, pagetype FROM dbstat WHERE name = ?", (OM,)):
            out.setdefault(kind, set()).add(page)
        return out
    finally:
        conn.close()


def assert_exact(store, live) -> None:
    fresh = load_live_listing(store)
    assert listing_state(live.listing) == listing_state(fresh.listing)
    assert statuses_of(store, live.listing.rows) == statuses_of(store, fresh.listing.rows)


def test_a_same_size_rewrite_of_an_overflow_page_is_seen(tmp_path):
    path = copy_support(tmp_path)
    sql = FileSql(path)
    writes = MastraWrites(sql, random.Random(0))
    try:
        with open_store(str(path)) as store:
            live = load_live_listing(store)
            record, key = sql.query(f'SELECT id, "lookupKey" FROM {OM} ORDER BY "lookupKey", id LIMIT 1')[0]
            # 1. observations long enough for overflow pages (a reflection's size), as Mastra writes them in place
            text = "* 🔴 (09:00) " + "the user asked about the invoice again; " * (LONG // 40)
            sql.run([(f'UPDATE {OM} SET "activeObservations" = ?, "pendingMessageTokens" = 1000, '
                      f'"updatedAt" = ? WHERE id = ?', (text, "2027-01-01T00:00:00.000Z", record))])
            refresh = refresh_live_listing(store, live)
            live = refresh.live
            assert refresh.unread == [] and key in refresh.changes.om_records
            # 2. messages (no OM page): the refresh after the second skips the OM table (the first looks at the
            # OM write's transaction again: it may have been in flight when the previous snapshot began)
            for _ in range(2):
                writes.save_message()
                refresh = refresh_live_listing(store, live)
                live = refresh.live
                assert_exact(store, live)
            assert refresh.unread == [OM]
            # 3. the same row's token count and updatedAt, values of the same size: only an overflow page changes
            sql.run([(f'UPDATE {OM} SET "pendingMessageTokens" = 2000, "updatedAt" = ? WHERE id = ?',
                      ("2027-01-01T00:00:09.000Z", record))])
            pages = om_pages_by_type(path)
            written, _ = pages_since(path, live.marks.wal)
            om_written = written & set().union(*pages.values())
            assert om_written and om_written <= pages["overflow"], (om_written, pages)   # no leaf, no interior page
            refresh = refresh_live_listing(store, live)
            live = refresh.live
            assert refresh.unread == [] and key in refresh.changes.om_records
            assert_exact(store, live)
    finally:
        sql.close()


def test_frames_of_an_older_generation_are_not_counted(tmp_path):
    """After a RESTART checkpoint the next write starts the WAL again with new salts: frames of the old generation
    that lie past the new ones (not overwritten yet) are not frames of this WAL, and a position of the old
    generation cannot be read from (None: the caller reads everything)."""
    path = copy_support(tmp_path)
    sql = FileSql(path)
    writes = MastraWrites(sql, random.Random(0))
    try:
        for _ in range(6):
            writes.save_message()
        old = wal_position(path)
        assert old.salts is not None and old.frames >= 12
        assert sql.query("PRAGMA wal_checkpoint(RESTART)")[0][0] == 0
        assert wal_position(path) == old                # restarted only when the next writer comes
        pages, end = pages_since(path, old)
        assert pages == set() and (end.salts, end.frames) == (old.salts, old.frames)   # nothing new
        writes.update_thread()                          # one small transaction: the WAL starts again
        new = wal_position(path)
        assert new.salts != old.salts and 0 < new.frames < old.frames   # the old frames past it are not counted
        assert pages_since(path, old) is None
        assert pages_since(path, WalPosition(None, 0)) is None
        pages, end = pages_since(path, WalPosition(new.salts, 0, new.page_size))
        assert (end.salts, end.frames) == (new.salts, new.frames) and pages
    finally:
        sql.close()

"""Which rows another program wrote since a load: watermarks, and the rows at or past them (no Qt).

A live refresh must not re-read the whole store when an agent appends one message. At a load the
studio keeps `Marks` (read inside the load's snapshot); at the next change of the fingerprint
`rows_since(store, marks)` reads only the rows written since, and says which threads, OM lookup
keys and resources they belong to (`Touched`), with new marks. What each backend can see:

* **SQLite (a file or a libSQL server).** Mastra's libSQL store inserts with fresh rowids
  (saveMessages' upsert and the OM generations keep or take a rowid past the old maximum), and
  every in-place update it makes sets the row's own `updatedAt` (threads, OM records, resources)
  or, for a message, its thread's `updatedAt` (saveMessages, updateMessages and deleteMessages all
  end with `UPDATE mastra_threads SET updatedAt = now`). So: rows with `rowid >= ` the last maximum
  (the row at the old maximum is read again: a deleted maximum whose rowid was reused shows as a
  different id), rows with `updatedAt > ` the last newest, and `count(*)` of each table (a delete
  leaves no row behind). A second write in the very millisecond of the newest stamp keeps it
  unchanged: while that stamp is recent (within SAME_MILLISECOND_SLACK_MS of when the marks were
  read, room for the writer's clock running behind), the rows stamped with it are read again too
  (`>=`); an older newest stamp cannot be written again by a clock that has moved on. A
  message's in-place change that keeps its thread's row untouched is not seen on SQLite; every
  write of Mastra's touches it.
* **PostgreSQL.** Every inserted or updated row version carries the writing transaction's id
  (`xmin`); rows whose `xmin` is at or past the oldest transaction still running at the last
  load's snapshot (`txid_snapshot_xmin`) are exactly the rows that load could not see. Any
  change is seen, in place or not, whoever wrote it. Deletions show in `count(*)`.

**A file in WAL mode: the OM table only when its pages were written.** Its rows are large (the
observations), so the `updatedAt` filter above reads every page of it, overflow pages included:
most of a refresh's cost while an agent appends messages. The marks keep where the WAL ended
(`studio.store.wal_pages.WalPosition`) and the OM table's pages (`dbstat`: b-tree and overflow
pages); a refresh reads that table only when a WAL frame since names one of them (any change to
its rows writes one: a same-size rewrite of an overflow page names that page), or when that cannot
be told (the WAL was restarted or truncated since: its frames went into the main file). The WAL is
read before the load's snapshot (`wal_now`, handed in as WAL_BEFORE) and again after its first
read: a commit racing the snapshot is looked at both times, and the marks keep the position before
the last transaction of the first look (a transaction whose frames are in the file may not be in
the snapshot yet), so the next refresh looks at that transaction again. Never fewer reads than
needed; at worst one more read of the table. When the table is read (a frame named its pages, or the WAL was
restarted) the libSQL driver holds the GIL for each statement, and both reads walk the whole table: its
stamped rows are looked for in rowid ranges (`STAMPED_PIECE_ROWS` rows a statement), and its page list is
kept as it was when none of its rows was written since and nothing could move pages (`_page_layout`: the
same file and schema version — VACUUM bumps it — and no auto-vacuum) instead of walking dbstat again. A
file whose WAL is empty at a load gets its page list then, so the first refresh after the open keeps it too.

Counts are compared by the caller (`studio.app.live`), who knows how many rows it holds per thread:
a count that does not add up sends it to a wider read (never to a wrong answer).

**A WAL file: the messages table counted only when the re-read threads do not explain it.** `count(*)`
of the messages walks a whole index (222k entries, ~4–15 ms holding the GIL: the libSQL driver does
not release it) on every commit. Inside a WAL read transaction (`uncounted_messages`), `rows_since`
leaves it out (`Marks.counts` holds None for it); the caller re-reads the threads the rows written
name and compares each with its `message_digests` (count and rowid sum) kept from its last re-read:
a thread whose digest moved by exactly its new rows (`Touched.new_messages`) lost and gained nothing
else, so the total is the old one plus the re-read threads' differences. Anything else — a thread not
digested yet, a message moved in from another thread (Mastra's upsert stamps only the new thread), a
delete, a thread created or deleted, a message naming no listed thread, the old top row gone — and the
caller counts the table (`count_rows`) as before. Left unseen, as for an in-place change: a message
deleted or moved by a writer that stamps neither thread (every write of Mastra's stamps one).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

from studio.store import schema as sc
from studio.store.file_head import read_head
from studio.store.records import iso_to_ms
from studio.store.wal_pages import WalPosition, pages_since, wal_position

TYPE_CHECKING = False
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore

__all__ = ["Marks", "Touched", "count_rows", "message_digests", "read_marks", "rows_since", "uncounted_messages",
           "wal_now"]

#: The column of each table that names what a row belongs to (a message: its thread; an OM row: its lookup key).
OWNER_COLUMN = {sc.THREADS: "id", sc.MESSAGES: "thread_id", sc.OBSERVATIONAL_MEMORY: "lookupKey",
                sc.RESOURCES: "id"}
#: Tables whose in-place updates Mastra stamps with the row's own updatedAt.
STAMPED = (sc.THREADS, sc.OBSERVATIONAL_MEMORY, sc.RESOURCES)
#: How far behind the studio's clock the writer's may run (ms): a newest `updatedAt` this recent is re-read (`>=`).
SAME_MILLISECOND_SLACK_MS = 10 * 60 * 1000
#: 32-bit transaction ids of PostgreSQL's xmin column.
XID_SPAN = 1 << 32


@dataclass(frozen=True)
class Marks:
    """Where a load's reading ended, per table: COUNTS (rows), and on SQLite TOPS (the largest rowid and
    the id of its row, or None for an empty table) and NEWEST (the largest `updatedAt` string); on
    PostgreSQL XMIN, the 64-bit id of the oldest transaction still running at the load's snapshot;
    READ_AT_MS: the studio's clock when they were read (epoch ms). A file in WAL mode also has WAL (where
    the next refresh starts reading the WAL's frames; None while its WAL is empty), OM_PAGES (the OM table's
    page numbers) and OM_LAYOUT (`_page_layout` as they were read)."""

    counts: dict[str, int | None] = field(default_factory=dict)
    tops: dict[str, tuple[int, str] | None] = field(default_factory=dict)
    newest: dict[str, str | None] = field(default_factory=dict)
    xmin: int | None = None
    read_at_ms: int = 0
    wal: WalPosition | None = None
    om_pages: frozenset[int] | None = None
    #: what could move the OM table's pages without a row of it written, as OM_PAGES were read (`_page_layout`)
    om_layout: tuple | None = None

    def with_count(self, table: str, count: int) -> Marks:
        """Return these marks with TABLE's row count COUNT (a count `rows_since` left to its caller: None)."""
        return replace(self, counts={**self.counts, table: count})


@dataclass
class Touched:
    """Rows written since some Marks, by owner: THREADS (thread rows), MESSAGE_THREADS (threads of
    messages written), LOOKUP_KEYS (OM rows), RESOURCES (resource rows); COUNTS: each table's row
    count now; NEW_ROWS: how many rows of each table are new for sure (SQLite: past the old top rowid;
    PostgreSQL: unknown, None); TOP_REPLACED: tables whose old top row is gone (SQLite);
    ROWS_READ: rows the reads returned (the refresh's cost); UNREAD: tables not read at all (a WAL file whose
    frames since named none of their pages); NEW_MESSAGES: {thread id: rowids of its messages new for sure}
    (SQLite); COUNTS holds None for the messages table when it was left uncounted (`uncounted_messages`)."""

    threads: set[str] = field(default_factory=set)
    message_threads: set[str] = field(default_factory=set)
    lookup_keys: set[str] = field(default_factory=set)
    resources: set[str] = field(default_factory=set)
    counts: dict[str, int | None] = field(default_factory=dict)
    new_rows: dict[str, int | None] = field(default_factory=dict)
    top_replaced: set[str] = field(default_factory=set)
    rows_read: int = 0
    unread: set[str] = field(default_factory=set)
    new_messages: dict[str, list[int]] = field(default_factory=dict)

    def count_added_up(self, table: str, marks: Marks) -> bool:
        """True when TABLE's count now is its count at MARKS plus the rows known to be new (no row went).

        On PostgreSQL (new rows unknown) True only when the count did not move.
        """
        before = marks.counts.get(table)
        new = self.new_rows.get(table) or 0
        return before is not None and table not in self.top_replaced and self.counts.get(table) == before + new


def _tables(store: MemoryStore) -> list[str]:
    return [t for t in OWNER_COLUMN if store.schema.has_table(t)]


def _wal_file(store: MemoryStore):
    """The path of STORE's database file when it is a local SQLite file (its -wal is read), else None."""
    path = store.location.path
    return path if path is not None and store.dialect == "sqlite" else None


def wal_now(store: MemoryStore, since: Marks | None = None) -> WalPosition | None:
    """Where the WAL of STORE's file ends now (None: not a local file, or its -wal could not be read).

    Call it before the load's snapshot begins — before its first read: a WAL read transaction takes its
    snapshot at its first read, so inside an outer `snapshot()` block that has read nothing yet is fine —
    and hand the result to `read_marks` / `rows_since`. With SINCE, reads only the frames after its
    position while the WAL is the same generation.
    """
    path = _wal_file(store)
    if path is None:
        return None
    try:
        if since is not None and since.wal is not None:
            got = pages_since(path, since.wal)
            if got is not None:
                return got[1]
        return wal_position(path)
    except OSError:
        return None


def _page_layout(store: MemoryStore) -> tuple[int, int, int, int] | None:
    """What moves a table's pages when none of its rows was written: (the file's device, its inode — another file
    put in its place —, `PRAGMA schema_version` — VACUUM and every schema change bump it —, `PRAGMA auto_vacuum`:
    0 none, else pages move on any commit), None when the file cannot be stat'ed."""
    try:
        st = os.stat(_wal_file(store))
    except (OSError, TypeError):
        return None
    version = int(store.rows("PRAGMA schema_version")[0][0])
    return st.st_dev, st.st_ino, version, int(store.rows("PRAGMA auto_vacuum")[0][0])


def _wal_mode(store: MemoryStore) -> bool:
    """True when STORE's file is in WAL mode (its header's format versions, bytes 18–19, are 2). The header, not
    `PRAGMA journal_mode`: a WAL file nobody had open is read immutable, and then says "delete"."""
    try:
        return read_head(_wal_file(store), 20)[18:20] == b"\x02\x02"
    except (OSError, TypeError):
        return False


def _om_pages(store: MemoryStore) -> frozenset[int] | None:
    """The OM table's pages as the snapshot sees them (b-tree and overflow; SQLite's dbstat), None when unknown."""
    try:
        return frozenset(int(r[0]) for r in store.rows("SELECT pageno FROM dbstat WHERE name = ?",
                                                       (sc.OBSERVATIONAL_MEMORY,)))
    except Exception:   # a build without dbstat: every refresh reads the table, as before
        return None


def read_marks(store: MemoryStore, wal_before: WalPosition | None = None) -> Marks:
    """Return the Marks of the store as it is now (inside a load's `snapshot()`: as that load reads it).

    A few aggregate statements (count and top per table; on SQLite the newest updatedAt, which reads
    the stamped tables once). WAL_BEFORE (`wal_now` before the snapshot) lets the next refresh of a
    WAL file skip the OM table while no frame names its pages. Raises StoreError on a failed read.
    """
    read_at = _now_ms()
    if store.dialect == "mongodb":   # no SQL to find rows by: every refresh of a MongoDB store reloads (rows_since)
        return Marks(read_at_ms=read_at)
    if store.dialect == "postgresql":
        counts = {t: int(store.rows(f"SELECT count(*) FROM {t}")[0][0]) for t in _tables(store)}
        return Marks(counts=counts, xmin=_pg_xmin(store), read_at_ms=read_at)
    counts, tops, newest = {}, {}, {}
    for table in _tables(store):
        count, top = store.rows(f"SELECT count(*), max(rowid) FROM {table}")[0]
        counts[table] = int(count)
        tops[table] = _top(store, table, top)
        if table in STAMPED and store.schema.has_column(table, "updatedAt"):
            newest[table] = store.rows(f'SELECT max("updatedAt") FROM {table}')[0][0]
    wal, om_pages, layout = _wal_marks(store, wal_before)
    return Marks(counts=counts, tops=tops, newest=newest, read_at_ms=read_at, wal=wal, om_pages=om_pages,
                 om_layout=layout)


def _wal_marks(store: MemoryStore, wal_before: WalPosition | None, kept: Marks | None = None
               ) -> tuple[WalPosition | None, frozenset | None, tuple | None]:
    """The WAL position the next refresh starts from (WAL_BEFORE less its last transaction; None while the WAL is
    empty), the OM pages and their layout (`_page_layout`). KEPT: marks whose OM pages are taken as they are when
    no row of the OM table was written since them (the caller's word) and nothing moved pages: the same file and
    schema version, no auto-vacuum (dbstat walks every page of the table, overflow included: ~27 ms holding
    the GIL on the benchmark file)."""
    if wal_before is None or not store.schema.has_table(sc.OBSERVATIONAL_MEMORY):
        return None, None, None
    wal = wal_before.held_back() if wal_before.salts is not None else None
    if wal is None and not _wal_mode(store):
        return None, None, None
    layout = _page_layout(store)
    if (kept is not None and kept.om_pages is not None and layout is not None and layout == kept.om_layout
            and layout[3] == 0):
        return wal, kept.om_pages, layout
    return wal, _om_pages(store), layout


def _now_ms() -> int:
    return int(time.time() * 1000)


def _newer_than(since: str | None, read_at_ms: int) -> tuple[str, tuple]:
    """The condition on the rows stamped after SINCE (the newest `updatedAt` at marks read at READ_AT_MS)."""
    if since is None:
        return "1", ()
    stamped = iso_to_ms(since)
    recent = stamped is None or stamped >= read_at_ms - SAME_MILLISECOND_SLACK_MS
    return ('"updatedAt" >= ?' if recent else '"updatedAt" > ?'), (since,)


def _top(store: MemoryStore, table: str, rowid) -> tuple[int, str] | None:
    if rowid is None:
        return None
    rows = store.rows(f"SELECT id FROM {table} WHERE rowid = ?", (int(rowid),))
    return (int(rowid), str(rows[0][0])) if rows else None


def _pg_xmin(store: MemoryStore) -> int:
    return int(store.rows("SELECT txid_snapshot_xmin(txid_current_snapshot())")[0][0])


def uncounted_messages(store: MemoryStore, wal_before: WalPosition | None) -> bool:
    """True when a refresh of STORE may leave the messages table uncounted (see the module's docstring): a local
    file whose WAL held frames before the snapshot (WAL_BEFORE: `wal_now`), so the refresh's reads are one WAL
    read transaction and a thread's digest read in it describes the same moment as the rows written."""
    return _wal_file(store) is not None and wal_before is not None and wal_before.salts is not None


#: Rows of a local file's OM table per statement when its stamped rows are looked for in a WAL read transaction.
#: A row's `updatedAt` lies past its observations, in overflow pages, so the scan reads the whole table (~15 ms of
#: CPU on the benchmark file) and the libSQL driver holds the GIL for a statement: in pieces of this many rows
#: (~2 ms each there) the GUI thread runs between them.
STAMPED_PIECE_ROWS = 1000


def rows_since(store: MemoryStore, marks: Marks, wal_before: WalPosition | None = None, *,
               count_messages: bool = True) -> tuple[Touched, Marks] | None:
    """Return (what was written since MARKS, the marks now), or None when it cannot be told (a table
    appeared or went, PostgreSQL's transaction ids wrapped around): then reload everything.

    Reads the rows written since (their owner column only) and one count per table: work that
    grows with what was written, not with the store (the counts and, on SQLite, the `updatedAt`
    filters of the stamped tables are aggregates the database answers without sending rows). A fixed
    number of statements whatever the tables (each a round trip on a server): on SQLite the counts and top
    rows of the tables (a local file's OM table in a statement of its own, when read), and every table's rows
    written in one UNION ALL;
    on PostgreSQL the snapshot's xmin with the counts, and the owners of the rows past it.
    On a WAL file, with WAL_BEFORE (`wal_now(store, marks)` before the snapshot), the OM table is read
    only when a WAL frame since MARKS names one of its pages (see the module's docstring).
    COUNT_MESSAGES False (SQLite; `uncounted_messages`): the messages table's count is left out, None in the
    Touched and Marks returned: the caller counts it (`count_rows`) or derives it, and sets it (`Marks.with_count`).
    Run it inside a `snapshot()` so the rows and the new marks describe one moment. Raises StoreError.
    """
    if store.dialect == "mongodb":   # MongoDB: the fingerprint moved, the listing is read again whole
        return None
    read_at = _now_ms()
    tables = _tables(store)
    if sorted(tables) != sorted(marks.counts):
        return None
    if store.dialect == "postgresql":
        return _pg_rows_since(store, marks, tables)
    touched = Touched()
    tops, newest = {}, dict(marks.newest)
    # a local file's OM table last: the reads before it have fixed the snapshot when the WAL is looked at again
    # (a server's OM table is read with the others: one round trip less)
    later = [sc.OBSERVATIONAL_MEMORY] if sc.OBSERVATIONAL_MEMORY in tables and _wal_file(store) is not None else []
    first = [t for t in tables if t not in later]
    read = first + later
    uncounted = set() if count_messages else {sc.MESSAGES}
    aggregates = _sqlite_aggregates(store, first, uncounted) if first else {}
    if later:
        if _om_unwritten(store, marks, wal_before):
            table = sc.OBSERVATIONAL_MEMORY
            read.remove(table)
            touched.unread.add(table)
            touched.counts[table], touched.new_rows[table] = marks.counts[table], 0
            tops[table] = marks.tops.get(table)
        else:
            aggregates.update(_sqlite_aggregates(store, [sc.OBSERVATIONAL_MEMORY]))
    # a local file's OM table, in one WAL read transaction: its stamped rows looked for in pieces (STAMPED_PIECE_ROWS)
    one_read = uncounted_messages(store, wal_before)
    pieces = {t: aggregates[t] for t in later if t in read and t in marks.newest and one_read}
    written = _sqlite_written(store, marks, read, pieces)
    for table in read:
        count, top = aggregates[table]
        touched.counts[table] = count
        old = marks.tops.get(table)
        rows = written[table]
        touched.rows_read += len(rows) + 1
        new = 0
        for rowid, row_id, key in rows:
            if old is not None and int(rowid) == old[0] and str(row_id) == old[1]:
                continue   # the old top row, still there
            if old is not None and int(rowid) == old[0]:
                touched.top_replaced.add(table)
            else:
                new += 1
                if table == sc.MESSAGES:
                    touched.new_messages.setdefault(str(key), []).append(int(rowid))
            _owner_set(touched, table).add(str(key))
        if old is not None and not any(int(r[0]) == old[0] for r in rows):
            touched.top_replaced.add(table)
        touched.new_rows[table] = new
        tops[table] = top
        if table in marks.newest:
            stamped = written["stamped " + table]
            touched.rows_read += len(stamped)
            for key, updated in stamped:
                _owner_set(touched, table).add(str(key))
                if updated is not None and (newest[table] is None or str(updated) > newest[table]):
                    newest[table] = str(updated)
    om = sc.OBSERVATIONAL_MEMORY
    if om in touched.unread:
        wal, om_pages, layout = (wal_before.held_back(), marks.om_pages, marks.om_layout)
    else:   # the OM pages kept when the table was read and none of its rows was written (none new, gone or stamped)
        unwritten = (om in read and touched.new_rows.get(om) == 0 and touched.count_added_up(om, marks)
                     and not written.get("stamped " + om))
        wal, om_pages, layout = _wal_marks(store, wal_before, marks if unwritten else None)
    return touched, Marks(counts=dict(touched.counts), tops=tops, newest=newest, read_at_ms=read_at, wal=wal,
                          om_pages=om_pages, om_layout=layout)


def _sqlite_aggregates(store: MemoryStore, tables: list[str], uncounted: set[str] = frozenset()
                       ) -> dict[str, tuple[int | None, tuple[int, str] | None]]:
    """{table: (count, (top rowid, its id) or None)} of TABLES, in one statement (one round trip on a server);
    the tables in UNCOUNTED are not counted (count None: no walk of their index)."""
    parts = [f"{'NULL' if t in uncounted else f'(SELECT count(*) FROM {t})'}, "
             f"(SELECT rowid FROM {t} ORDER BY rowid DESC LIMIT 1), "
             f"(SELECT id FROM {t} ORDER BY rowid DESC LIMIT 1)" for t in tables]
    row = store.rows("SELECT " + ", ".join(parts))[0]
    out = {}
    for i, table in enumerate(tables):
        count, top, top_id = row[3 * i:3 * i + 3]
        out[table] = (int(count) if count is not None else None, (int(top), str(top_id)) if top is not None else None)
    return out


def count_rows(store: MemoryStore, table: str) -> int:
    """Return TABLE's row count now (`count(*)`: a walk of its smallest index). Raises StoreError."""
    return int(store.rows(f"SELECT count(*) FROM {table}")[0][0])


#: Thread ids per statement of `message_digests`.
DIGEST_CHUNK = 400
#: Rowid sums at or past this are not exact as SQLite's `total()` (a double) returns them: no digest then.
EXACT_SUM_LIMIT = 1 << 53


def message_digests(store: MemoryStore, thread_ids) -> dict[str, tuple[int, int] | None]:
    """Return {thread id: (its messages, the sum of their rowids)} of THREAD_IDS (SQLite), (0, 0) for a thread
    without messages, None where the sum is too large to be exact. Read through the thread_id index (work that
    grows with those threads' messages); a thread's digest moves with any message added, deleted or moved in
    or out, whatever the count does. Raises StoreError."""
    ids = sorted(set(thread_ids))
    out: dict[str, tuple[int, int] | None] = dict.fromkeys(ids, (0, 0))
    for i in range(0, len(ids), DIGEST_CHUNK):
        part = ids[i:i + DIGEST_CHUNK]
        for tid, count, total in store.rows(f"SELECT thread_id, count(*), total(rowid) FROM {sc.MESSAGES} "
                                            f"WHERE thread_id IN ({', '.join('?' * len(part))}) GROUP BY thread_id",
                                            part):
            out[str(tid)] = (int(count), int(total)) if abs(total) < EXACT_SUM_LIMIT else None
    return out


def _sqlite_written(store: MemoryStore, marks: Marks, tables: list[str],
                    pieces: dict[str, tuple[int | None, tuple[int, str] | None]] | None = None
                    ) -> dict[str, list[tuple]]:
    """The rows of TABLES at or past their top rowid at MARKS (rowid, id, owner) and, as "stamped TABLE", the
    (owner, updatedAt) of the stamped rows newer than MARKS' newest: one statement (one round trip on a server).
    PIECES: {table: (its count, its top row) now} of the tables whose stamped rows are read in rowid ranges of
    about STAMPED_PIECE_ROWS rows each, a statement each (inside one WAL read transaction: the same snapshot)."""
    pieces = pieces or {}
    selects, params = [], []
    for i, table in enumerate(tables):
        owner = sc.quote_ident(OWNER_COLUMN[table])
        old = marks.tops.get(table)
        selects.append(f"SELECT {2 * i}, rowid, id, {owner}, NULL FROM {table} WHERE rowid >= ?")
        params.append(old[0] if old is not None else -1)
        if table in marks.newest and table not in pieces:
            where, more = _newer_than(marks.newest[table], marks.read_at_ms)
            selects.append(f'SELECT {2 * i + 1}, NULL, NULL, {owner}, "updatedAt" FROM {table} WHERE {where}')
            params.extend(more)
    out: dict[str, list[tuple]] = {}
    for table in tables:
        out[table], out["stamped " + table] = [], []
    for tag, rowid, row_id, key, updated in store.rows(" UNION ALL ".join(selects), params):
        table = tables[int(tag) // 2]
        if int(tag) % 2:
            out["stamped " + table].append((key, updated))
        else:
            out[table].append((rowid, row_id, key))
    for table, (count, top) in pieces.items():
        out["stamped " + table] = _stamped_in_pieces(store, marks, table, count or 0, top)
    return out


def _stamped_in_pieces(store: MemoryStore, marks: Marks, table: str, count: int, top: tuple[int, str] | None
                       ) -> list[tuple]:
    """(owner, updatedAt) of TABLE's rows stamped after MARKS' newest, read in rowid ranges of about
    STAMPED_PIECE_ROWS rows (COUNT rows now, the largest rowid TOP's): the GIL is let go between statements."""
    if not count or top is None:
        return []
    low = int(store.rows(f"SELECT min(rowid) FROM {table}")[0][0])
    width = max(1, -(-(top[0] - low + 1) // -(-count // STAMPED_PIECE_ROWS)))   # ceil(span / ceil(count / piece))
    where, more = _newer_than(marks.newest[table], marks.read_at_ms)
    sql = (f'SELECT {sc.quote_ident(OWNER_COLUMN[table])}, "updatedAt" FROM {table} '
           f"WHERE rowid >= ? AND rowid < ? AND {where}")
    out: list[tuple] = []
    for start in range(low, top[0] + 1, width):
        out.extend(store.rows(sql, (start, start + width, *more)))
    return out


def _om_unwritten(store: MemoryStore, marks: Marks, wal_before: WalPosition | None) -> bool:
    """True when no WAL frame since MARKS names a page of the OM table, neither before the snapshot
    (WAL_BEFORE: the same WAL generation as the marks, not behind them) nor now (after its first read)."""
    path = _wal_file(store)
    if (path is None or wal_before is None or marks.wal is None or not marks.om_pages
            or wal_before.salts != marks.wal.salts or wal_before.frames < marks.wal.frames):
        return False
    try:
        got = pages_since(path, marks.wal)
    except OSError:
        return False
    return got is not None and got[1].salts == wal_before.salts and not (got[0] & marks.om_pages)


def _owner_set(touched: Touched, table: str) -> set[str]:
    return {sc.THREADS: touched.threads, sc.MESSAGES: touched.message_threads,
            sc.OBSERVATIONAL_MEMORY: touched.lookup_keys, sc.RESOURCES: touched.resources}[table]


def _pg_rows_since(store: MemoryStore, marks: Marks, tables: list[str]) -> tuple[Touched, Marks] | None:
    """PostgreSQL's `rows_since`: the snapshot's xmin and every table's count in one statement, then the owners
    of the rows whose `xmin` is at or past the marks' in another (two statements whatever the tables)."""
    read_at = _now_ms()
    counts = ", ".join(f"(SELECT count(*) FROM {t})" for t in tables)
    xmin, *numbers = store.rows(f"SELECT txid_snapshot_xmin(txid_current_snapshot()), {counts}")[0]
    xmin = int(xmin)
    if marks.xmin is None or xmin // XID_SPAN != marks.xmin // XID_SPAN:
        return None   # the 32-bit xmin column wrapped around since (an epoch boundary): reload
    low = marks.xmin % XID_SPAN
    touched = Touched()
    selects = [f"SELECT DISTINCT {i}, {sc.quote_ident(OWNER_COLUMN[t])}::text FROM {t} WHERE xmin::text::bigint >= ?"
               for i, t in enumerate(tables)]
    written = store.rows(" UNION ALL ".join(f"({q})" for q in selects), [low] * len(tables))
    touched.rows_read += len(written) + 1
    for table, count in zip(tables, numbers, strict=True):
        touched.counts[table] = int(count)
        touched.new_rows[table] = None
    for tag, owner in written:
        _owner_set(touched, tables[int(tag)]).add(str(owner))
    return touched, Marks(counts=dict(touched.counts), xmin=xmin, read_at_ms=read_at)

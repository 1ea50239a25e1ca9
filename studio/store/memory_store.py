"""Read a Mastra memory.db: resources, threads, messages and Observational Memory generations.

`MemoryStore` owns one libSQL connection (a connection belongs to the thread that made it: in
the studio, the TaskRunner's single database worker). It is read-only unless opened with
`writable=True`, which only an explicit user write does.

A *load* is what one CLI command or one studio task reads: `with store.snapshot():` around it
makes every read inside see the database as of one moment, and ends at once when the block
ends (see `snapshot`). `fingerprint()` is the cheap value the studio polls to notice writes by
other processes (live refresh).
"""

from __future__ import annotations

import os

import libsql

from studio.errors import SchemaError, StoreDamaged, StoreError
from studio.store import schema as sc
from studio.store.cells import (
    bulk_decode,
    decode_pairs,
    decode_rows,
    decode_text,
    is_driver_panic,
    sqlite_encoding_name,
    text_safe_pair,
)
from studio.store.connection import (
    Location,
    connect,
    describe_sqlite_error,
    file_identity,
    file_signature,
    foreign_wal_sentence,
    has_nonempty_wal,
    is_damage,
    immutable_uri as _immutable_uri,
    wal_page_size_mismatch,
    parse_location,
)
from studio.store.loads import Loads
from studio.store.message_reads import MESSAGE_COLUMNS, MessageReads, _damaged  # noqa: F401 (MESSAGE_COLUMNS re-exported)
from studio.store.om_reads import OMReads
from studio.store.loads import contained as _contained
from studio.store.records import (
    Resource,
    Thread,
    parse_json,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

THREAD_COLUMNS = ["id", "resourceId", "title", "metadata", "createdAt", "updatedAt"]
RESOURCE_COLUMNS = ["id", "workingMemory", "metadata", "createdAt", "updatedAt"]
JSONB_COLUMNS = {"metadata", "content", "config", "observedMessageIds", "bufferedObservationChunks",
                 "bufferedMessageIds"}


#: Reads of an immutable connection retried when the file changed under them; the last one is
#: made through a normal (locking) read-only connection.
IMMUTABLE_ATTEMPTS = 4


def _explain_schema_error(location: Location, exc: SchemaError) -> StoreError:
    """Return EXC, or a StoreError naming the -wal when the main file alone is a Mastra database.

    SQLite reads pages from the -wal before the main file, so the -wal of another database (a
    copy made at the wrong moment) makes a Mastra file look like that other database.
    """
    if not has_nonempty_wal(location.path):
        return SchemaError(f"{location.display}: {exc}")   # name the file (another app's database?)
    try:
        conn = libsql.connect(_immutable_uri(location.path))
        try:
            sc.discover(conn)
        finally:
            conn.close()
    except BaseException as probe_exc:
        if not _contained(probe_exc):
            raise
        return exc
    evidence = (wal_page_size_mismatch(location.path)
                or "the file alone is a Mastra memory database; read with that -wal it is not")
    error = StoreError(f"Cannot read {location.display}: " + foreign_wal_sentence(location.path, evidence))
    error.__cause__ = exc
    return error


def _open_verified(location: Location, writable: bool, allow_immutable: bool = True, cache_kib: int | None = None):
    """Connect and read the schema; return (conn, immutable, signature, schema, encoding).

    CACHE_KIB: the connection's SQLite page cache in KiB (None: SQLite's default, 2,000 KiB).

    An immutable connection reads without locks, so a writer that checkpoints meanwhile can make
    it read a torn file ("malformed"). The file's signature is taken before the connection is
    made and compared after the schema is read: if it changed, the open is redone, and the last
    attempt uses a normal read-only connection, which takes SQLite's locks.
    """
    for attempt in range(IMMUTABLE_ATTEMPTS):
        last = attempt == IMMUTABLE_ATTEMPTS - 1
        conn, immutable, signature = connect(location, writable=writable, allow_immutable=allow_immutable and not last)
        error: BaseException | None = None
        try:
            if cache_kib is not None:
                conn.execute(f"PRAGMA cache_size = {-int(cache_kib)}")  # negative: KiB, not pages
            schema = sc.discover(conn)
            encoding = sqlite_encoding_name(conn.execute("PRAGMA encoding").fetchall()[0][0])
        except SchemaError as exc:
            error = _explain_schema_error(location, exc)
        except BaseException as exc:
            if not _contained(exc):
                conn.close()
                raise
            error = StoreError(f"Cannot read {location.display}: {describe_sqlite_error(exc, location.path)}")
            error.__cause__ = exc
        if immutable and file_signature(location.path) != signature:
            conn.close()
            continue
        if error is not None:
            conn.close()
            raise error
        return conn, immutable, signature, schema, encoding
    raise AssertionError("unreachable: the last attempt is not immutable")


#: URL schemes of a libSQL server (studio.store.remote.REMOTE_SCHEMES; here so a file open imports no client).
REMOTE_LIBSQL_SCHEMES = ("libsql://", "https://", "http://", "wss://", "ws://")


class MemoryStore(MessageReads, Loads, OMReads):
    """A Mastra memory database opened for reading (default) or for one user-requested write.

    Raises StoreError (missing, not SQLite, locked, unreadable) or SchemaError (no Mastra
    tables) from `open`. Query methods raise StoreError when SQLite fails mid-read. No read lets
    a driver panic escape: text is fetched as bytes and decoded here (studio.store.cells).
    """

    def __init__(self, location: Location, conn, schema: sc.Schema, writable: bool, immutable: bool = False,
                 signature: tuple | None = None, encoding: str = "utf-8"):
        self.location = location
        self.conn = conn
        self.schema = schema
        self.writable = writable
        self.immutable = immutable
        self.encoding = encoding
        self._signature = signature if signature is not None else file_signature(location.path)
        self._identity = file_identity(location.path)
        self._reopens = 0
        self._widths: dict[str, int] = {}
        self._snapshot_depth = 0
        self._snapshot_conn = None   # the connection holding this load's read transaction, if any
        self._wal: bool | None = None

    #: The page cache asked for at `open` (KiB; None: SQLite's default), kept by every reopen.
    _cache_kib: int | None = None
    #: (table, wanted) -> `_select_list` result, made on first use (a subclass need not set it up).
    _select_lists: dict[tuple, tuple[list[str], str]] | None = None
    #: SQL dialect of the backend ("sqlite" for libSQL files; studio.store.pg's PgStore: "postgresql").
    dialect = "sqlite"
    #: Sentences the user should see about how the store was opened (status bar; the CLI prints StoreNotice warnings).
    notices: tuple[str, ...] = ()
    #: Messages in Mastra's storage order: createdAt, then insertion (the libSQL store has no tie-break).
    MESSAGE_ORDER = '"createdAt" ASC'

    @classmethod
    def open(cls, target: str | os.PathLike[str], *, writable: bool = False,
             cache_kib: int | None = None) -> "MemoryStore":
        """Open TARGET read-only unless WRITABLE: a path, a `file:` URL, a `postgresql://` URL or a libSQL
        server URL (`libsql://`, `https://`, `http://`).

        A PostgreSQL URL returns a `studio.store.pg.PgStore`, a libSQL server URL a
        `studio.store.remote.RemoteStore` (same read API; both read-only: their writes go through
        `studio.store.write.transaction.write_transaction`). CACHE_KIB (a file only): SQLite's page
        cache in KiB, default SQLite's 2,000 KiB. A command that reads each page once (`threads`)
        asks for a small one: filling the default cache takes fresh memory (page faults: ~2 ms of
        listing 5,000 threads) for pages it never reads again.
        """
        lowered = os.fspath(target).lower()
        if lowered.startswith(("postgresql://", "postgres://")):  # pg.is_pg_target (a file open imports no pg)
            from studio.store.pg import PgStore

            return PgStore.open(target, writable=writable)
        if lowered.startswith(REMOTE_LIBSQL_SCHEMES):  # remote.is_remote_libsql_target
            from studio.store.remote import RemoteStore

            return RemoteStore.open(target, writable=writable)
        location = parse_location(target)
        conn, immutable, signature, schema, encoding = _open_verified(location, writable, cache_kib=cache_kib)
        store = cls(location, conn, schema, writable, immutable, signature, encoding)
        store._cache_kib = cache_kib
        return store

    def _reopen(self, *, allow_immutable: bool = True) -> None:
        conn, immutable, signature, schema, encoding = _open_verified(self.location, self.writable, allow_immutable,
                                                                      self._cache_kib)
        old, self.conn = self.conn, conn
        if old is not None:
            old.close()
        self.schema, self.immutable, self._signature, self.encoding = schema, immutable, signature, encoding
        self._identity = file_identity(self.location.path)
        self._widths.clear()
        self._select_lists = None
        self._reopens += 1
        self._wal = None
        if self._snapshot_depth:   # a writer appeared mid-load: the rest of the load reads one state again
            self._begin_read()

    def reopen_if_changed(self) -> bool:
        """Reopen the connection if it was opened immutable and the file has changed since; return True if so.

        An immutable connection (a WAL file nobody had open) never sees later writes: when a
        writer appears (a -wal file) or the file changes, a fresh read-only connection replaces it.
        Any read-only store is also reopened when the path now names another file (replaced by
        a copy or a rename). Checked before every read (two stat calls: the file and its -wal, or one).
        """
        if self.conn is None or self.writable or self._snapshot_depth:
            return False   # inside a load the snapshot is kept (an immutable read is verified by _execute)
        if self.immutable:  # a replaced file has another inode: the signature (inode first) tells both
            changed = file_signature(self.location.path) != self._signature
        else:
            changed = file_identity(self.location.path) not in (None, self._identity)
        if not changed:
            return False
        self._reopen()
        return True

    def close(self) -> None:
        """Close the connection (read-only: the main file and -wal are left as they were)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- low level -------------------------------------------------------------------------

    def _fail(self, exc: BaseException) -> StoreError:
        """Return the StoreError for a failed read (StoreDamaged when the file is damaged where it read)."""
        kind = StoreDamaged if is_damage(exc) else StoreError
        error = kind(f"Reading {self.location.display} failed: {describe_sqlite_error(exc, self.location.path)}")
        error.__cause__ = exc
        return error

    def _execute(self, sql: str, params: tuple) -> list[tuple]:
        """Fetch every row of SQL; verify an immutable read against the file; contain driver panics.

        When the file changed while an immutable connection read it (a writer checkpointed),
        the rows (or the error) may come from a torn file: the store reopens and reads again
        (IMMUTABLE_ATTEMPTS, the last through a locking connection). Raises the driver's
        Exception as is (callers word it), a driver panic as StoreError.
        """
        for attempt in range(IMMUTABLE_ATTEMPTS):
            if attempt:
                self._reopen(allow_immutable=attempt < IMMUTABLE_ATTEMPTS - 1)
            error: BaseException | None = None
            rows: list[tuple] = []
            try:
                rows = self.conn.execute(sql, params).fetchall()
            except BaseException as exc:
                if not _contained(exc):
                    raise
                error = exc
            if self.immutable and file_signature(self.location.path) != self._signature:
                continue
            if error is not None:
                if is_driver_panic(error):
                    raise self._fail(error)
                raise error
            return rows
        raise AssertionError("unreachable: the last attempt is not immutable")

    def _width(self, sql: str, params: tuple) -> int:
        width = self._widths.get(sql)
        if width is None:
            width = len(self.conn.execute(f"SELECT * FROM ({sql}) LIMIT 0", params).description or ())
            self._widths[sql] = width
        return width

    def _rows(self, sql: str, params: Iterable[Any] = (), *, check: bool = True) -> list[tuple]:
        """Run a SELECT (or PRAGMA) and return its rows, text decoded here (never by the driver).

        A SELECT is wrapped so that every TEXT result travels as bytes with its type, and is
        decoded with `decode_text` (invalid UTF-8 -> DamagedText). Raises StoreError on failure.
        """
        if self.conn is None:
            raise StoreError("The database is closed")
        if check:
            self.reopen_if_changed()
        params = tuple(params)
        try:
            head = sql.lstrip()[:6].upper()
            if not head.startswith(("SELECT", "WITH")):
                return self._execute(sql, params)
            width = self._width(sql, params)
            names = ", ".join(f"c{i}" for i in range(width))
            pairs = ", ".join(text_safe_pair(f"c{i}") for i in range(width))
            rows = self._execute(f"WITH q({names}) AS ({sql}) SELECT {pairs} FROM q", params)
        except StoreError:
            raise
        except BaseException as exc:
            if not _contained(exc):
                raise
            raise self._fail(exc) from exc
        return decode_rows(rows, width, self.encoding)

    def _select_list(self, table: str, wanted: list[str]) -> tuple[list[str], str]:
        """Return (present columns, SELECT list): JSONB blobs decoded with json(), every text as bytes.

        Each result is NULL, a number or bytes (text, or a blob that is not JSONB) for `_decode`.
        """
        present = [c for c in (wanted or self.schema.columns(table)) if self.schema.has_column(table, c)]
        exprs = []
        for col in present:
            q = sc.quote_ident(col)
            if col in JSONB_COLUMNS:
                exprs.append(f"CASE WHEN typeof({q}) = 'blob' THEN CAST(json({q}) AS BLOB) "
                             f"WHEN typeof({q}) = 'text' THEN CAST({q} AS BLOB) ELSE {q} END")
            else:
                exprs.append(f"CASE WHEN typeof({q}) IN ('text', 'blob') THEN CAST({q} AS BLOB) ELSE {q} END")
        return present, ", ".join(exprs)

    def _decode_row(self, row: tuple) -> list:  # every bytes value as text; damaged text: `_decode`
        try:
            return [v.decode(self.encoding) if isinstance(v, (bytes, bytearray)) else v for v in row]
        except UnicodeDecodeError:
            return [self._decode(v) for v in row]

    def _decode(self, value: Any) -> Any:
        if isinstance(value, (bytes, bytearray)):
            return decode_text(value, self.encoding)
        return value

    def _select(self, table: str, wanted: list[str], tail: str = "", params: Iterable[Any] = ()) -> list[dict]:
        """SELECT WANTED columns (those present) from TABLE with a WHERE/ORDER TAIL; rows as dicts.

        Every text value is decoded here (invalid UTF-8 -> DamagedText, see studio.store.cells);
        a blob in a column Mastra fills with text or numbers is read as text. A JSONB blob SQLite
        cannot decode does not fail the read: the rows are re-read raw and that value is decoded
        one by one (undecodable -> left as bytes, reported as malformed).
        """
        present, rows, decode = self._select_undecoded(table, wanted, tail, params)
        with bulk_decode():
            return [dict(zip(present, decode(r))) for r in rows]

    def _select_undecoded(self, table: str, wanted: list[str], tail: str = "",
                          params: Iterable[Any] = ()) -> tuple[list[str], list[tuple], Callable[[tuple], list]]:
        """`_select`'s read without its decoding: (present columns, rows as fetched, DECODE).

        DECODE turns one fetched row into its values as `_select` gives them (zip with the columns
        for the dict), so a caller can decode a large result a slice at a time and drop each slice
        (studio.store.batch.iter_messages_since_many). The whole result is fetched (and checked
        against a torn immutable read) before this returns. Raises StoreError.
        """
        if self.conn is None:
            raise StoreError("The database is closed")
        self.reopen_if_changed()
        params = tuple(params)
        lists, key = self._select_lists if self._select_lists is not None else {}, (table, tuple(wanted))
        self._select_lists = lists
        present, select = lists.get(key) or lists.setdefault(key, self._select_list(table, wanted))
        sql = f"SELECT {select} FROM {sc.quote_ident(table)} {tail}"
        try:
            return present, self._execute(sql, params), self._decode_row
        except StoreError:
            raise
        except Exception as exc:
            if "json" not in str(exc).lower():
                raise self._fail(exc) from exc
            raw_select = ", ".join(text_safe_pair(sc.quote_ident(c)) for c in present)
            try:
                raw = self._execute(f"SELECT {raw_select} FROM {sc.quote_ident(table)} {tail}", params)
            except StoreError:
                raise
            except Exception as exc2:
                raise self._fail(exc2) from exc2
            rows = []
            for r in raw:
                values = decode_pairs(r, self.encoding)
                rows.append([self._decode_blob(v) if c in JSONB_COLUMNS else v for c, v in zip(present, values)])
        return present, rows, list

    def select_column(self, table: str, column: str, tail: str = "", params: Iterable[Any] = ()) -> list:
        """Return COLUMN of TABLE's rows (WHERE/ORDER TAIL, `?` PARAMS) as `_select` reads it, one value a row.

        `[row.get(COLUMN) for row in self._select(TABLE, [COLUMN], TAIL, PARAMS)]` without a dict a row
        (`threads --all` reads every thread id this way). Raises StoreError.
        """
        if self.dialect != "sqlite" or column in JSONB_COLUMNS or not self.schema.has_column(table, column):
            return [r.get(column) for r in self._select(table, [column], tail, params)]
        if self.conn is None:
            raise StoreError("The database is closed")
        self.reopen_if_changed()
        select = self._select_list(table, [column])[1]
        try:
            rows = self._execute(f"SELECT {select} FROM {sc.quote_ident(table)} {tail}", tuple(params))
        except StoreError:
            raise
        except Exception as exc:
            raise self._fail(exc) from exc
        encoding = self.encoding
        try:
            return [v.decode(encoding) if isinstance(v, (bytes, bytearray)) else v for v, in rows]
        except UnicodeDecodeError:
            return [self._decode(v) for v, in rows]

    def select_rows(self, table: str, tail: str = "", params: Iterable[Any] = (),
                    wanted: list[str] | None = None) -> list[dict]:
        """SELECT WANTED (default: all) present columns of TABLE with a WHERE/ORDER TAIL (`?` placeholders).

        Rows as dicts, values as Mastra reads them in the libSQL store's form (times as ISO strings,
        JSON as text): the same call as a write transaction's `select`, so the write protocol
        (studio.store.write.protocol) reads through either. Raises StoreError.
        """
        return self._select(table, list(wanted or []), tail, params)

    def _decode_blob(self, value: Any) -> Any:
        if not isinstance(value, (bytes, bytearray)):
            return value
        try:
            text = self._execute("SELECT CAST(json(?) AS BLOB)", (bytes(value),))[0][0]
        except Exception:
            return bytes(value)
        return self._decode(text)

    # -- resources and threads -------------------------------------------------------------

    def resource_ids(self) -> list[str]:
        """Return every resource id that owns a thread, has a resources row or an OM record, sorted."""
        ids = {r[0] for r in self._rows('SELECT DISTINCT "resourceId" FROM mastra_threads') if r[0] is not None}
        if self.schema.has_table(sc.RESOURCES):
            ids |= {r[0] for r in self._rows("SELECT id FROM mastra_resources") if r[0] is not None}
        if self.schema.has_column(sc.OBSERVATIONAL_MEMORY, "resourceId"):
            ids |= {r[0] for r in self._rows('SELECT DISTINCT "resourceId" FROM mastra_observational_memory')
                    if r[0] is not None}
        return sorted(ids)

    def get_resource(self, resource_id: str) -> Resource | None:
        """Return the `mastra_resources` row for RESOURCE_ID, or None."""
        if not self.schema.has_table(sc.RESOURCES):
            return None
        rows = self._select(sc.RESOURCES, RESOURCE_COLUMNS, "WHERE id = ?", (resource_id,))
        if not rows:
            return None
        row = rows[0]
        meta, err = parse_json(row.get("metadata"))
        return Resource(id=row["id"], working_memory=row.get("workingMemory"), metadata=meta,
                        created_at=row.get("createdAt"), updated_at=row.get("updatedAt"), metadata_error=err)

    def _thread(self, row: dict) -> Thread:
        meta, err = parse_json(row.get("metadata"))
        return Thread(id=row["id"], resource_id=row.get("resourceId"), title=row.get("title"), metadata=meta,
                      created_at=row.get("createdAt"), updated_at=row.get("updatedAt"), metadata_error=err,
                      damaged_text=_damaged(row))

    def list_threads(self, resource_id: str | None = None, *, with_counts: bool = False) -> list[Thread]:
        """Return threads (all, or RESOURCE_ID's), newest `createdAt` first like Mastra's listThreads."""
        self.reopen_if_changed()
        where, params = ("WHERE \"resourceId\" = ?", (resource_id,)) if resource_id is not None else ("", ())
        rows = self._select(sc.THREADS, THREAD_COLUMNS, f'{where} ORDER BY "createdAt" DESC, rowid DESC', params)
        threads = [self._thread(r) for r in rows]
        if with_counts:
            stats = self.message_stats()
            for t in threads:
                t.message_count, t.newest_message_at = stats.get(t.id, (0, None))
        return threads

    def get_thread(self, thread_id: str) -> Thread | None:
        """Return the thread THREAD_ID, or None if it does not exist."""
        rows = self._select(sc.THREADS, THREAD_COLUMNS, "WHERE id = ?", (thread_id,))
        return self._thread(rows[0]) if rows else None

    def message_counts(self) -> dict[str, int]:
        """Return {thread id: number of stored messages}."""
        return {r[0]: int(r[1]) for r in self._rows("SELECT thread_id, COUNT(*) FROM mastra_messages GROUP BY thread_id")}

    def message_stats(self) -> dict[str, tuple[int, str | None]]:
        """Return {thread id: (number of stored messages, createdAt of the newest)} in one pass.

        The newest createdAt is the largest stored string (Mastra writes ISO-8601 UTC, which sorts as
        time); the (thread_id, createdAt) index Mastra creates covers the query.
        """
        return {r[0]: (int(r[1]), r[2]) for r in self._rows(
            'SELECT thread_id, COUNT(*), MAX("createdAt") FROM mastra_messages GROUP BY thread_id')}

    def newest_message_at(self, thread_id: str) -> str | None:
        """Return the createdAt of THREAD_ID's newest message, or None when it has none."""
        rows = self._rows('SELECT MAX("createdAt") FROM mastra_messages WHERE thread_id = ?', (thread_id,))
        return rows[0][0] if rows else None

    def message_count(self, thread_id: str) -> int:
        """Return the number of stored messages of THREAD_ID (uses the thread_id index)."""
        return int(self._rows("SELECT COUNT(*) FROM mastra_messages WHERE thread_id = ?", (thread_id,))[0][0])

    def timestamp_twin_mismatches(self) -> list[dict]:
        """Return the rows whose `"<col>Z"` twin disagrees with its column: none in a libSQL file ([]).

        PostgreSQL stores have twins (studio.store.pg.PgStore overrides this).
        """
        return []

    def data_version(self) -> int:
        """Return a number that changes when another process commits to the database.

        SQLite's `PRAGMA data_version` (per connection), offset by how often the connection was
        reopened (see `reopen_if_changed`), so a reopen always reads as a change.
        """
        self.reopen_if_changed()
        return self._reopens * 1_000_000_000 + int(self._rows("PRAGMA data_version")[0][0])

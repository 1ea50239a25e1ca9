"""One write transaction on a user's memory.db: its own libSQL connection, BEGIN IMMEDIATE, retry.

The local-file backend of `studio.store.write.transaction.write_transaction`; its `SqliteWriteTx` is
also the SQL of a libSQL server's writes (`studio.store.write.backends.libsql_remote`). Every
write to a file:

* a fresh read-write libSQL connection is opened just for the write and closed afterwards (the
  studio's read-only connections are never made writable);
* the journal mode is never changed (no PRAGMA journal_mode);
* the transaction starts with `BEGIN IMMEDIATE`, so the write lock is held from the first read:
  preconditions checked inside the transaction stay true until COMMIT. Another process's lock is
  waited for in Python (`studio.store.lock_wait.patiently`: BEGIN IMMEDIATE, and COMMIT, which on a
  rollback-journal file waits for readers to let go, are tried again every BUSY_POLL_S), never by
  SQLite's busy handler, which sleeps inside the driver holding the interpreter lock (the studio's
  window froze for the whole wait). After LOCK_WAIT_MS in all the write is refused ("busy"); a face
  that stops the wait (Cancel: `reporting_lock_waits`) refuses it at once; nothing is written either way;
* on any error the transaction is rolled back before the exception leaves; the cache never
  spills uncommitted pages into the -wal, so a rolled-back write leaves the -wal's bytes alone.

Why a second, read-only "guard" connection: when the last connection to a WAL database closes,
SQLite checkpoints the WAL into the main file and deletes -wal/-shm. A refused or failed write
must leave the main file and -wal byte-identical, so while a -wal exists (another process may
have the file open, or left un-checkpointed frames in it) a read-only connection of ours holds a
shared lock until the write connection is closed: the write connection is then never the last
one, and a read-only connection cannot checkpoint. Successful writes therefore stay in the WAL,
exactly as a running Mastra app leaves its own. When no -wal exists, nothing is pending: the
write connection creates the -wal and, being the last connection, removes it again on close.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import libsql

from studio.errors import SchemaError, StoreError, WriteRefused
from studio.store import schema as sc
from studio.store.backends.sqlite_sql import JSONB_COLUMNS  # decoded with json() inside a write too
from studio.store.connection import (
    check_file,
    describe_sqlite_error,
    file_uri,
    long_path_refusal,
    read_only_folder_refusal,
    too_long_for_sqlite,
)
from studio.store.lock_wait import is_busy, patiently
from studio.store.target import Target
from studio.store.write.row_backup import row_backup_before_commit
from studio.store.write.tx import WRITE_LOCK_WAIT_MS, Jsonb, lock_wait_message

__all__ = ["LOCK_WAIT_MS", "ROWID", "SqliteWriteTx", "sqlite_write_transaction"]

#: How long a write to a file waits in all for another process's lock by default (ms): the one bound.
LOCK_WAIT_MS = WRITE_LOCK_WAIT_MS


#: The key of a row image's rowid (SQLite's alias that a column named `rowid` cannot shadow).
ROWID = "_rowid_"


def _image_value(value: Any) -> Any:
    """A stored value as JSON: bytes become {"blob": base64}; int, float, str and None stay as they are."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"blob": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def _stored_value(value: Any) -> Any:
    """The inverse of `_image_value` (a row image's value bound back as SQLite stored it)."""
    if isinstance(value, dict) and set(value) == {"blob"}:
        return base64.b64decode(value["blob"])
    return value


def _uri(path: Path, mode: str) -> str:
    return file_uri(path, mode)


class SqliteWriteTx:
    """The open write transaction on a memory.db (studio.store.write.tx.WriteTx): SQL helpers over one connection.

    The libSQL dialect; `studio.store.write.backends.pg.PgWriteTx` has the same methods for
    PostgreSQL, so the write functions never write dialect-specific SQL themselves.
    """

    dialect = "sqlite"
    #: Tie-break of rows with equal createdAt: insertion order.
    insertion_tie = "rowid"
    #: The time copyThread's message filter compares (MemoryLibSQL: the stored column).
    clone_message_time = '"createdAt"'
    #: copyThread's LIMIT subquery takes no alias on SQLite.
    subquery_alias = ""

    def __init__(self, conn, location: Target, schema: sc.Schema):
        self.conn = conn
        self.location = location
        self.schema = schema
        #: {(table, key): image before the first change, or None (inserted by this transaction)}
        self.before: dict[tuple[str, str], dict | None] = {}
        self._foreign_columns: dict[str, list[str]] = {}

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run SQL with bound PARAMS and return all rows (StoreError on an SQLite error)."""
        try:
            return self.conn.execute(sql, tuple(params)).fetchall()
        except Exception as exc:
            raise StoreError(f"Writing {self.location.display} failed: {describe_sqlite_error(exc)}") from exc

    def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one data-changing statement; return the number of rows it changed."""
        try:
            self.conn.execute(sql, tuple(params))
            return int(self.conn.execute("SELECT changes()").fetchall()[0][0])
        except Exception as exc:
            raise StoreError(f"Writing {self.location.display} failed: {describe_sqlite_error(exc)}") from exc

    def columns(self, table: str) -> list[str]:
        """Return TABLE's columns ([] when it does not exist)."""
        return self.schema.columns(table)

    def select(self, table: str, tail: str = "", params: Iterable[Any] = (), wanted: list[str] | None = None,
               *, lock: bool = False) -> list[dict]:
        """SELECT the WANTED (default: all) present columns of TABLE with a WHERE/ORDER TAIL, as dicts.

        JSONB blobs come back as JSON text (SQLite's json()); JSON text and NULL as stored. LOCK is
        for PostgreSQL's FOR UPDATE: BEGIN IMMEDIATE already holds the whole file's write lock.
        """
        present = [c for c in (wanted or self.columns(table)) if self.schema.has_column(table, c)]
        if not present:
            return []
        exprs = []
        for col in present:
            q = sc.quote_ident(col)
            exprs.append(f"CASE WHEN typeof({q}) = 'blob' THEN json({q}) ELSE {q} END" if col in JSONB_COLUMNS else q)
        rows = self.rows(f"SELECT {', '.join(exprs)} FROM {sc.quote_ident(table)} {tail}", params)
        return [dict(zip(present, r)) for r in rows]  # noqa: B905  (per row: strict= slows zip)

    def select_rows(self, table: str, tail: str = "", params: Iterable[Any] = (),
                    wanted: list[str] | None = None) -> list[dict]:
        """The read-store spelling of `select` (studio.store.write.protocol reads through either)."""
        return self.select(table, tail, params, wanted)

    # -- the journal (the row backup saved before COMMIT) ------------------------------------------

    def _row_columns(self, table: str) -> list[str]:
        """TABLE's columns: Mastra's from the schema; another table's (a vector index) from PRAGMA table_info."""
        if self.schema.has_table(table):
            return self.schema.columns(table)
        if table not in self._foreign_columns:
            self._foreign_columns[table] = [r[1] for r in self.rows(f"PRAGMA table_info({sc.quote_ident(table)})")]
        return self._foreign_columns[table]

    def key_column(self, table: str) -> str | None:
        """The column a row of TABLE is journaled by: `id` for Mastra's tables, `vector_id` for a LibSQLVector
        index (its `id SERIAL` is no rowid alias: NULL in every row); None: the table is not journaled."""
        if self.schema.has_table(table):
            return "id" if self.schema.has_column(table, "id") else None
        return "vector_id" if "vector_id" in self._row_columns(table) else None

    def canonical_rows(self, table: str, where: str, params: Iterable[Any], *, lock: bool = True) -> list[dict]:
        """Return TABLE's rows matching WHERE as exact images ({column: value, "_rowid_": n}; blobs as base64).

        LOCK: nothing to add (BEGIN IMMEDIATE holds the database's write lock already).
        """
        cols = self._row_columns(table)
        exprs = ", ".join([ROWID] + [sc.quote_ident(c) for c in cols])
        rows = self.rows(f"SELECT {exprs} FROM {sc.quote_ident(table)} WHERE {where}", params)
        return [{ROWID: r[0], **{c: _image_value(v)
                                 for c, v in zip(cols, r[1:])}}  # noqa: B905  (per row: strict= slows zip)
                for r in rows]

    def _journal_existing(self, table: str, where: str, params: Iterable[Any]) -> None:
        key = self.key_column(table)
        if key is None:
            return
        for row in self.canonical_rows(table, where, params):
            self.before.setdefault((table, row[key]), row)

    def journal(self) -> list[dict]:
        """Return [{table, id, before, after}] for every row this transaction changed (after: None = deleted).

        A row journaled by another column than `id` (a vector index's `vector_id`) names it as "key".
        """
        out = []
        for (table, row_id), before in self.before.items():
            key = self.key_column(table) or "id"
            after = self.canonical_rows(table, f"{sc.quote_ident(key)} = ?", (row_id,))
            entry = {"table": table, "id": row_id, "before": before, "after": after[0] if after else None}
            if key != "id":
                entry["key"] = key
            out.append(entry)
        return out

    # -- writes, each journaled -----------------------------------------------------------------------

    def delete(self, table: str, where: str, params: Iterable[Any]) -> int:
        """DELETE FROM TABLE WHERE ...; journaled; return rows deleted."""
        params = tuple(params)
        self._journal_existing(table, where, params)
        return self.execute(f"DELETE FROM {sc.quote_ident(table)} WHERE {where}", params)

    def copy_message(self, source_id: str, new_id: str, thread_id: str, resource_id: str) -> int:
        """Copy message SOURCE_ID as NEW_ID into THREAD_ID / RESOURCE_ID as MemoryLibSQL.copyThread does; journaled."""
        changed = self.execute(
            'INSERT INTO "mastra_messages" (id, thread_id, content, role, type, "createdAt", "resourceId") '
            'SELECT ?, ?, content, role, type, "createdAt", ? FROM "mastra_messages" WHERE id = ?',
            (new_id, thread_id, resource_id, source_id))
        if changed:
            self.before.setdefault((sc.MESSAGES, new_id), None)
        return changed

    def touch_threads(self, thread_ids: list[str], now: str) -> None:
        """Set the threads' updatedAt to NOW (ISO) as MemoryLibSQL.deleteMessages does."""
        for tid in thread_ids:
            self.update(sc.THREADS, {"updatedAt": now}, "id = ?", (tid,))

    def insert(self, table: str, values: dict[str, Any], *, raw: bool = False) -> None:
        """INSERT one row of VALUES into TABLE, leaving out columns the table does not have; journaled.

        A `Jsonb` value is stored with `jsonb(?)`; other values are bound as they are. RAW: VALUES is
        a row image being restored (an undo: values as SQLite stored them, the rowid kept).
        """
        if raw:
            known = self._row_columns(table)
            cols = [c for c in values if c == ROWID or c in known]
            names = ", ".join(c if c == ROWID else sc.quote_ident(c) for c in cols)
            self.execute(f"INSERT INTO {sc.quote_ident(table)} ({names}) VALUES ({', '.join('?' for _ in cols)})",
                         [_stored_value(values[c]) for c in cols])
        else:
            cols = [c for c in values if self.schema.has_column(table, c)]
            marks = ["jsonb(?)" if isinstance(values[c], Jsonb) else "?" for c in cols]
            params = [values[c].text if isinstance(values[c], Jsonb) else values[c] for c in cols]
            self.execute(f"INSERT INTO {sc.quote_ident(table)} ({', '.join(sc.quote_ident(c) for c in cols)}) "
                         f"VALUES ({', '.join(marks)})", params)
        if values.get("id") is not None:
            self.before.setdefault((table, values["id"]), None)

    def update(self, table: str, values: dict[str, Any], where: str, params: Iterable[Any], *,
               raw: bool = False) -> int:
        """UPDATE TABLE SET VALUES (present columns only; `Jsonb` via jsonb(?)) WHERE ...; journaled; return rows
        changed. RAW: VALUES is a row image being restored (values as stored; the rowid is kept)."""
        params = tuple(params)
        self._journal_existing(table, where, params)
        if raw:
            known = self._row_columns(table)
            cols = [c for c in values if c != ROWID and c in known]
            sets = ", ".join(f"{sc.quote_ident(c)} = ?" for c in cols)
            return self.execute(f"UPDATE {sc.quote_ident(table)} SET {sets} WHERE {where}",
                                [*(_stored_value(values[c]) for c in cols), *params])
        cols = [c for c in values if self.schema.has_column(table, c)]
        if not cols:
            return 0
        sets = [f"{sc.quote_ident(c)} = {'jsonb(?)' if isinstance(values[c], Jsonb) else '?'}" for c in cols]
        bound = [values[c].text if isinstance(values[c], Jsonb) else values[c] for c in cols]
        return self.execute(f"UPDATE {sc.quote_ident(table)} SET {', '.join(sets)} WHERE {where}", [*bound, *params])


def _waiting(conn, statement: str, location: Target, wait_s: float, bound_ms: int) -> float:
    """Run STATEMENT (BEGIN IMMEDIATE or COMMIT), waiting in Python for another process's lock up to WAIT_S (s).

    Returns the seconds it waited. Raises WriteRefused("busy") when the lock was still held after
    WAIT_S (its sentence states BOUND_MS, the write's whole bound) or the face stopped the wait
    (nothing is written: the caller rolls back), StoreError on any other SQLite error.
    """
    started = time.monotonic()

    def refused(sentence: str) -> WriteRefused:   # a face puts "Nothing was written" before it (outcome_heading)
        return WriteRefused("busy", f"{sentence}. Try again when it has finished.")

    try:
        patiently(lambda: conn.execute(statement), location.display, bound_s=wait_s, stopped=refused)
    except WriteRefused:
        raise
    except Exception as exc:
        if is_busy(exc):
            raise WriteRefused("busy", lock_wait_message(location.display, bound_ms)) from exc
        if statement == "COMMIT":
            raise StoreError(f"Committing to {location.display} failed: {describe_sqlite_error(exc)}") from exc
        raise StoreError(f"Cannot write {location.display}: {describe_sqlite_error(exc)}") from exc
    return time.monotonic() - started


@contextmanager
def sqlite_write_transaction(location: Target, *, busy_timeout_ms: int | None = None,
                             label: str = "write") -> Iterator[SqliteWriteTx]:
    """Open the file LOCATION read-write for one BEGIN IMMEDIATE transaction; yield a SqliteWriteTx.

    Commits when the block ends normally, after saving the row backup of every row it changed
    (`row_backup.row_backup_before_commit`, named with LABEL, routed by the context's BackupSink: the
    same JSON backup a server write saves, so `undo` works on files); rolls back when it raises (the
    exception propagates) or when the backup cannot be saved, and always closes the connection.
    BUSY_TIMEOUT_MS (ms): how long the write waits in all for another process's lock, its BEGIN
    IMMEDIATE and its COMMIT together (default LOCK_WAIT_MS), in Python (see the module's docstring).
    Raises StoreError (missing / not SQLite / unreadable file, SQLite errors), SchemaError (not a
    Mastra database) and WriteRefused("busy") when the write lock cannot be had or the wait was stopped.
    """
    bound_ms = int(LOCK_WAIT_MS if busy_timeout_ms is None else busy_timeout_ms)
    check_file(location)
    if too_long_for_sqlite(location.path):
        raise StoreError(long_path_refusal(location.path))
    path = location.path
    # SQLite creates its journal beside the file (a -wal already there is written in place)
    if not os.access(path.parent, os.W_OK | os.X_OK) and not Path(str(path) + "-wal").exists():
        raise StoreError(read_only_folder_refusal(path, path.parent))
    guard = conn = None
    try:
        try:
            if Path(str(path) + "-wal").exists():
                guard = libsql.connect(_uri(path, "ro"), timeout=0)
                guard.execute("PRAGMA busy_timeout = 0")
                patiently(lambda: guard.execute("SELECT count(*) FROM sqlite_master").fetchall(), location.display,
                          bound_s=bound_ms / 1000)
            # busy timeout 0: SQLite's own wait would hold the interpreter lock; `_waiting` waits in Python
            conn = libsql.connect(_uri(path, "rw"), isolation_level=None, timeout=0)
            conn.execute("PRAGMA busy_timeout = 0")
            # never write uncommitted pages into the -wal early: a rolled-back write must not change its bytes
            conn.execute("PRAGMA cache_spill = false")
        except Exception as exc:
            raise StoreError(f"Cannot open {location.display} for writing: {describe_sqlite_error(exc)}") from exc
        waited = _waiting(conn, "BEGIN IMMEDIATE", location, bound_ms / 1000, bound_ms)
        try:
            try:
                schema = sc.discover(conn)
            except SchemaError:
                raise  # not a Mastra database: said as it is
            except Exception as exc:
                raise StoreError(f"Cannot read {location.display}: {describe_sqlite_error(exc)}") from exc
            tx = SqliteWriteTx(conn, location, schema)
            yield tx
            with row_backup_before_commit(location, tx.journal(), schema, label=label):
                # a rollback-journal file's COMMIT waits for other processes' readers; what is left of the bound
                _waiting(conn, "COMMIT", location, max(0.0, bound_ms / 1000 - waited), bound_ms)
        except BaseException:
            # SQLite may have rolled back already (e.g. the COMMIT itself failed with the transaction gone)
            with suppress(Exception):
                conn.execute("ROLLBACK")
            raise
    finally:
        if conn is not None:
            conn.close()
        if guard is not None:
            guard.close()

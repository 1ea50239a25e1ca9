"""One write transaction on a PostgreSQL store (`@mastra/pg`), with the rows it touches saved locally first.

The PostgreSQL backend of `studio.store.write.transaction.write_transaction` (which dispatches here
for `postgresql://` URLs). The write functions (reflection, observation, activation, threads, repair,
undo) call the same `WriteTx` methods (studio.store.write.tx) on every backend; what differs in SQL
lives here:

* its own connection, opened only for the write: the session stays `default_transaction_read_only`
  and the write starts an explicit `BEGIN READ WRITE` (READ COMMITTED); `lock_timeout` is the bound
  every write shares (`WRITE_LOCK_WAIT_MS`, 9 s): a lock held longer by another session refuses the
  write (`WriteRefused("busy")`, nothing written); a statement timeout bounds the rest;
* rows are read as Mastra reads them (`studio.store.backends.pg.read_expr`: the `"<col>Z"` twins, times as
  toISOString text, JSONB as text), and `select(..., lock=True)` adds `FOR UPDATE`;
* rows are written as `@mastra/pg` writes them: quoted camelCase columns, JSONB from JSON text, real
  booleans, and every timestamp with its TIMESTAMPTZ twin set to the same instant, except
  `lastBufferedAtTime`, whose twin Mastra never writes (it keeps the column default `NOW()`);
  `touch_threads` sets `"updatedAt" = NOW(), "updatedAtZ" = NOW()` as MemoryPG.deleteMessages does;
* every row the transaction inserts, updates or deletes is journaled (its image before the first
  change, locked with FOR UPDATE, and after the last); before COMMIT the journal is saved as a
  JSON backup file (`studio.store.write.row_backup`). When the file cannot be saved the
  transaction is rolled back: nothing is written without its backup.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from studio.errors import SchemaError, ServerUnreachable, StoreError, WriteRefused
from studio.store import schema as sc
from studio.store.backends.pg import connect_pg, describe_pg_error, discover_pg_schema, read_expr
from studio.store.target import Target
from studio.store.write.outcome import journal_outcome, resolve_commit
from studio.store.write.row_backup import row_backup_before_commit
from studio.store.write.tx import WRITE_LOCK_WAIT_MS, Jsonb, lock_wait_message

__all__ = ["DEADLINE_SLACK_MS", "TWIN_NOT_WRITTEN", "WRITE_STATEMENT_TIMEOUT_MS", "PgWriteTx", "pg_write_transaction"]

#: Bound of one statement of a write (ms); lock waits are bounded separately by WRITE_LOCK_WAIT_MS.
WRITE_STATEMENT_TIMEOUT_MS = 30_000
#: lock_timeout is lowered to what is left of the write's deadline when it would overshoot it by this much (ms).
DEADLINE_SLACK_MS = 200
#: Timestamp columns whose "<col>Z" twin @mastra/pg never writes (the twin keeps its default NOW()).
TWIN_NOT_WRITTEN = {(sc.OBSERVATIONAL_MEMORY, "lastBufferedAtTime")}


def _canonical(schema: sc.Schema, table: str, column: str) -> str:
    """SQL for COLUMN's exact value as text (TIMESTAMPTZ in UTC), for backups and change checks."""
    q = sc.quote_ident(column)
    if schema.types.get(table, {}).get(column) == "TIMESTAMP WITH TIME ZONE":
        return f"(({q} AT TIME ZONE 'UTC')::text || '+00')"
    return f"{q}::text"


class PgWriteTx:
    """The open PostgreSQL write transaction handed to a write function (studio.store.write.tx.WriteTx)."""

    dialect = "postgresql"
    #: Tie-break of rows with equal createdAt (no rowid on PostgreSQL: MemoryPG breaks ties by id).
    insertion_tie = "id"
    #: The time copyThread's message filter compares (MemoryPG: the twin first).
    clone_message_time = 'COALESCE("createdAtZ", "createdAt")'
    #: copyThread's LIMIT subquery needs an alias on PostgreSQL.
    subquery_alias = " AS limited"

    def __init__(self, conn, location: Target, schema: sc.Schema, *, deadline: float | None = None,
                 lock_timeout_ms: int | None = None):
        self.conn = conn
        self.location = location
        self.schema = schema
        #: {(table, id): canonical row before the first change, or None (inserted by this transaction)}
        self.before: dict[tuple[str, str], dict | None] = {}
        #: time.monotonic() by which every lock of the write must be had (None: no deadline)
        self.deadline = deadline
        #: the session's lock_timeout now (ms): lowered to what is left of the deadline before a statement
        self._lock_timeout_ms = lock_timeout_ms

    def _keep_deadline(self, cur) -> None:
        """Lower lock_timeout to what is left of the write's deadline (one deadline for every lock of the write).

        PostgreSQL's lock_timeout bounds each lock wait on its own: three locks released one after the
        other would each be waited for in full. Before a statement the transaction's lock_timeout is set
        to the time left (when that is DEADLINE_SLACK_MS below the current value), so the sum of every
        wait stays within the write's bound; once it is spent, any wait refuses the write at once.
        """
        if self.deadline is None:
            return
        left = max(1, int((self.deadline - time.monotonic()) * 1000))
        if self._lock_timeout_ms is not None and self._lock_timeout_ms - left < DEADLINE_SLACK_MS:
            return
        cur.execute("SELECT set_config('lock_timeout', %s, true)", (f"{left}ms",))
        self._lock_timeout_ms = left

    # -- reads ----------------------------------------------------------------------------------

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run a query written with `?` placeholders; return its rows (StoreError / WriteRefused("busy"))."""
        try:
            with self.conn.cursor() as cur:
                self._keep_deadline(cur)
                cur.execute(sql.replace("%", "%%").replace("?", "%s"), tuple(params))
                return cur.fetchall() if cur.description is not None else []
        except StoreError:
            raise
        except Exception as exc:
            raise _write_error(exc, self.location) from exc

    def _count(self, sql: str, params: Iterable[Any]) -> int:
        try:
            with self.conn.cursor() as cur:
                self._keep_deadline(cur)
                cur.execute(sql.replace("%", "%%").replace("?", "%s"), tuple(params))
                return max(0, cur.rowcount)
        except StoreError:
            raise
        except Exception as exc:
            raise _write_error(exc, self.location) from exc

    def columns(self, table: str) -> list[str]:
        """Return TABLE's columns ([] when it does not exist)."""
        return self.schema.columns(table)

    def key_column(self, table: str) -> str | None:
        """The column a row of TABLE is journaled by: `id` for Mastra's tables; None for any other table (a
        pgvector index is not journaled: pgvector is not available to test here)."""
        return "id" if self.schema.has_column(table, "id") else None

    def select(self, table: str, tail: str = "", params: Iterable[Any] = (), wanted: list[str] | None = None,
               *, lock: bool = False) -> list[dict]:
        """SELECT the WANTED (default: all but twins) columns of TABLE as Mastra reads them; dicts.

        LOCK: `FOR UPDATE` (the rows stay locked until the transaction ends).
        """
        columns = wanted or [c for c in self.schema.columns(table)
                             if not (c.endswith("Z") and self.schema.has_column(table, c[:-1]))]
        present = [c for c in columns if self.schema.has_column(table, c)]
        if not present:
            return []
        exprs = ", ".join(read_expr(self.schema, table, c) for c in present)
        rows = self.rows(f"SELECT {exprs} FROM {sc.quote_ident(table)} {tail}{' FOR UPDATE' if lock else ''}", params)
        return [dict(zip(present, r)) for r in rows]  # noqa: B905  (per row: strict= slows zip)

    select_rows = select

    def canonical_rows(self, table: str, where: str, params: Iterable[Any], *, lock: bool = True) -> list[dict]:
        """Return TABLE's rows matching WHERE with every column (twins too) as exact text; FOR UPDATE when LOCK."""
        cols = self.schema.columns(table)
        exprs = ", ".join(_canonical(self.schema, table, c) for c in cols)
        rows = self.rows(f"SELECT {exprs} FROM {sc.quote_ident(table)} WHERE {where}{' FOR UPDATE' if lock else ''}",
                         params)
        return [dict(zip(cols, r)) for r in rows]  # noqa: B905  (per row: strict= slows zip)

    # -- the journal ----------------------------------------------------------------------------

    def _journal_existing(self, table: str, where: str, params: Iterable[Any]) -> list[str]:
        """Lock the rows WHERE matches and record their images before this transaction's first change."""
        ids = []
        if self.key_column(table) is None:
            return ids
        for row in self.canonical_rows(table, where, params):
            key = (table, row["id"])
            if key not in self.before:
                self.before[key] = row
            ids.append(row["id"])
        return ids

    def journal(self) -> list[dict]:
        """Return [{table, id, before, after}] for every row this transaction changed (after: None = deleted)."""
        out = []
        for (table, row_id), before in self.before.items():
            after = self.canonical_rows(table, "id = ?", (row_id,), lock=False)
            out.append({"table": table, "id": row_id, "before": before, "after": after[0] if after else None})
        return out

    # -- writes ---------------------------------------------------------------------------------

    def _bind(self, table: str, values: dict[str, Any], *, raw: bool) -> tuple[list[str], list[Any]]:
        """Return (columns, parameters) for VALUES as @mastra/pg binds them (twins added, booleans real)."""
        cols, params = [], []
        types = self.schema.types.get(table, {})
        for col, value in values.items():
            if not self.schema.has_column(table, col):
                continue
            if isinstance(value, Jsonb):
                value = value.text
            kind = types.get(col, "")
            if not raw and kind == "BOOLEAN" and value is not None:
                value = bool(value)
            cols.append(col)
            params.append(value)
            twin = col + "Z"
            if (not raw and kind == "TIMESTAMP WITHOUT TIME ZONE" and self.schema.has_column(table, twin)
                    and twin not in values and (table, col) not in TWIN_NOT_WRITTEN):
                cols.append(twin)
                params.append(value)
        return cols, params

    def insert(self, table: str, values: dict[str, Any], *, raw: bool = False) -> None:
        """INSERT one row of VALUES into TABLE (present columns only) as @mastra/pg writes it; journaled.

        RAW: VALUES are exact text images (a backup being restored): bound as they are, no twins added.
        """
        cols, params = self._bind(table, values, raw=raw)
        row_id = values.get("id")
        self._count(f"INSERT INTO {sc.quote_ident(table)} ({', '.join(sc.quote_ident(c) for c in cols)}) "
                    f"VALUES ({', '.join('?' for _ in cols)})", params)
        if row_id is not None:
            self.before.setdefault((table, row_id), None)

    def update(self, table: str, values: dict[str, Any], where: str, params: Iterable[Any], *,
               raw: bool = False) -> int:
        """UPDATE TABLE SET VALUES (present columns, twins added) WHERE ...; journaled; return rows changed."""
        params = tuple(params)
        cols, bound = self._bind(table, values, raw=raw)
        if not cols:
            return 0
        self._journal_existing(table, where, params)
        sets = ", ".join(f"{sc.quote_ident(c)} = ?" for c in cols)
        return self._count(f"UPDATE {sc.quote_ident(table)} SET {sets} WHERE {where}", [*bound, *params])

    def delete(self, table: str, where: str, params: Iterable[Any]) -> int:
        """DELETE FROM TABLE WHERE ...; journaled; return rows deleted."""
        params = tuple(params)
        self._journal_existing(table, where, params)
        return self._count(f"DELETE FROM {sc.quote_ident(table)} WHERE {where}", params)

    def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Refused: every change goes through insert / update / delete so that it is backed up."""
        raise StoreError("internal: a PostgreSQL write must go through insert/update/delete (journaled)")

    def copy_message(self, source_id: str, new_id: str, thread_id: str, resource_id: str) -> int:
        """Copy message SOURCE_ID as NEW_ID into THREAD_ID / RESOURCE_ID as MemoryPG.copyThread does (both times)."""
        changed = self._count(
            'INSERT INTO mastra_messages (id, thread_id, content, "createdAt", "createdAtZ", role, type, "resourceId") '
            'SELECT ?, ?, content, "createdAt", "createdAtZ", role, type, ? FROM mastra_messages WHERE id = ?',
            (new_id, thread_id, resource_id, source_id))
        if changed:
            self.before.setdefault((sc.MESSAGES, new_id), None)
        return changed

    def touch_threads(self, thread_ids: list[str], now: str) -> None:
        """Set the threads' updatedAt as MemoryPG.deleteMessages does: `NOW()` into the column and its twin.

        (NOW: unused here; the transaction's start time is what Mastra writes.)
        """
        if not thread_ids:
            return
        marks = ", ".join("?" for _ in thread_ids)
        self._journal_existing(sc.THREADS, f"id IN ({marks})", thread_ids)
        twin = ', "updatedAtZ" = NOW()' if self.schema.has_column(sc.THREADS, "updatedAtZ") else ""
        self._count(f'UPDATE mastra_threads SET "updatedAt" = NOW(){twin} WHERE id IN ({marks})', thread_ids)


def _connection_lost(exc: BaseException) -> bool:
    """True when EXC says the connection to the server is gone (closed, reset, server shut down)."""
    import psycopg

    sqlstate = getattr(exc, "sqlstate", None) or ""
    return (isinstance(exc, psycopg.OperationalError) and not sqlstate) or sqlstate.startswith(("08", "57P"))


def _write_error(exc: BaseException, location: Target) -> StoreError:
    """Turn a psycopg error inside a write into WriteRefused("busy") (lock wait ran out), ServerUnreachable
    (the connection died before COMMIT: nothing was written) or StoreError."""
    if isinstance(exc, StoreError):
        return exc
    if _connection_lost(exc):
        return ServerUnreachable(f"The connection to {location.display} died during the write "
                                 f"({describe_pg_error(exc, location)}): the server rolled it back and nothing "
                                 "was written.")
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate in ("55P03", "40P01"):  # lock_not_available (lock_timeout), deadlock_detected
        return WriteRefused("busy", lock_wait_message(location.display, WRITE_LOCK_WAIT_MS))
    if sqlstate == "57014":
        return StoreError(f"Writing {location.display} took longer than {WRITE_STATEMENT_TIMEOUT_MS / 1000:g} s "
                          "and was cancelled; nothing was written.")
    if sqlstate == "25006":
        return StoreError(f"{location.display} accepts no writes (read-only transaction or hot standby); "
                          "nothing was written.")
    return StoreError(f"Writing {location.display} failed: {describe_pg_error(exc)}")


@contextmanager
def pg_write_transaction(location: Target, *, label: str = "write",
                         lock_wait_ms: int | None = None) -> Iterator[PgWriteTx]:
    """Open the PostgreSQL target LOCATION for one READ WRITE transaction; yield a PgWriteTx.

    Commits when the block ends normally, after saving the JSON backup of every row it changed
    (`studio.store.write.row_backup.row_backup_before_commit`, named with LABEL, e.g. "reflect");
    rolls back when it raises, or when the backup cannot be saved. LOCK_WAIT_MS: one deadline for
    every lock wait of the write together (default WRITE_LOCK_WAIT_MS; `PgWriteTx._keep_deadline`).
    Raises StoreError (refused login, SQL errors), ServerUnreachable (the server cannot be reached
    or the connection died before COMMIT: nothing written), SchemaError (no Mastra tables in the
    schema), WriteRefused("busy") when the locks were not had within the deadline; nothing is
    written then. When the connection dies after COMMIT was sent, the outcome is found by asking
    the server again (`studio.store.write.outcome.resolve_commit`: `txid_status` of the write's
    transaction): OutcomeFoundAfterReconnect (written: backup kept; or not written), or
    ServerUnreachable(outcome="unknown") with the backup kept when the server never answers again.
    """
    wait = WRITE_LOCK_WAIT_MS if lock_wait_ms is None else int(lock_wait_ms)
    deadline = time.monotonic() + wait / 1000
    options = (f"-c default_transaction_read_only=on -c statement_timeout={WRITE_STATEMENT_TIMEOUT_MS} "
               f"-c lock_timeout={wait} -c idle_in_transaction_session_timeout={WRITE_STATEMENT_TIMEOUT_MS * 2} "
               f"-c search_path={location.schema} -c datestyle=ISO,YMD -c extra_float_digits=3")
    # the same password order as the read session: a password typed in Connect… or kept in the keyring writes too
    conn = _connect(location, options, "for writing")
    try:
        try:
            schema = discover_pg_schema(conn, location)
        except SchemaError:
            raise
        except StoreError as exc:
            if _connection_lost(exc.__cause__):
                raise _write_error(exc.__cause__, location) from exc
            raise
        try:
            conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE")
            xid = conn.execute("SELECT txid_current()").fetchone()[0]
        except Exception as exc:
            raise _write_error(exc, location) from exc
        tx = PgWriteTx(conn, location, schema, deadline=deadline, lock_timeout_ms=wait)
        try:
            yield tx
            journal = tx.journal()
            with row_backup_before_commit(location, journal, schema, label=label) as backup:
                try:
                    conn.execute("COMMIT")
                except Exception as exc:
                    if not _connection_lost(exc):
                        raise _write_error(exc, location) from exc
                    # COMMIT may have reached the server: ask it again what became of the transaction
                    found = resolve_commit(location.display, lambda: _probe_commit(location, options, schema, xid,
                                                                                    journal),
                                           backup=str(backup) if backup else None)
                    raise found from exc
        except BaseException:
            with suppress(Exception):  # the connection is gone: the server rolled back
                conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()


def _connect(location: Target, options: str, purpose: str, *, writing: bool = True):
    """`connect_pg` for a write (WRITING) or its check; a server that cannot be reached (the connect's StoreError of
    kind "unreachable": refused, timed out, reset, not a refused login) raises ServerUnreachable."""
    try:
        return connect_pg(location, options=options, application_name="memory-studio write", purpose=purpose)
    except ServerUnreachable:
        raise
    except StoreError as exc:
        if exc.kind == "unreachable" and exc.__cause__ is not None:
            raise ServerUnreachable(f"{exc}; nothing was written." if writing else str(exc)) from exc.__cause__
        raise


def _probe_commit(location: Target, options: str, schema: sc.Schema, xid: int, journal: list[dict]) -> str | None:
    """Reconnect and ask what became of transaction XID: "written", "not-written" or None (still running).

    `txid_status` is exact (committed / aborted / in progress); when the server no longer knows the
    transaction (NULL), the rows of JOURNAL are read again (`outcome.journal_outcome`). Raises
    StoreError when the server cannot be reached.
    """
    conn = _connect(location, options, "to check the write", writing=False)
    try:
        status = conn.execute("SELECT txid_status(%s)", (xid,)).fetchone()[0]
        if status == "committed":
            return "written"
        if status == "aborted":
            return "not-written"
        if status == "in progress":
            return None
        reader = PgWriteTx(conn, location, schema)

        def current(table: str, row_id: str) -> dict | None:
            found = reader.canonical_rows(table, "id = ?", (row_id,), lock=False)
            return found[0] if found else None
        return journal_outcome(journal, current)
    except StoreError:
        raise
    except Exception as exc:
        raise _write_error(exc, location) from exc
    finally:
        conn.close()

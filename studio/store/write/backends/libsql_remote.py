"""One write transaction on a libSQL server (`sqld`, Turso), with the rows it touches saved locally first.

The libSQL-server backend of `studio.store.write.transaction.write_transaction` (which dispatches here
for `libsql://`, `https://`, `http://`, `ws(s)://` URLs). A libSQL server holds a SQLite database, so the
write functions run exactly the SQL they run on a local `memory.db` (`LibsqlRemoteWriteTx` is a
`studio.store.write.backends.sqlite.SqliteWriteTx`: same dialect, JSONB through `jsonb(?)` / `json()`,
rowid tie-breaks); what differs is the transport and the backup:

* one Hrana stream opened only for the write (`studio.store.hrana.HranaWriteStream`; every read of
  the studio stays on read-only connections): `BEGIN IMMEDIATE`, the write's reads and changes,
  then `COMMIT`, each statement one round trip on the stream; rolled back on any failure;
* the write lock: sqld queues `BEGIN IMMEDIATE` behind another writer's transaction and, after its
  5 s transaction timeout, gives the lock to the waiter (the holder's transaction is rolled back
  by the server, as it does for any client). The studio waits at most the bound every write shares
  (`WRITE_LOCK_WAIT_MS`, 9 s) and then refuses (`WriteRefused("busy")`, nothing written); a server
  answering SQLITE_BUSY, or taking the lock back from our transaction for another writer
  (TRANSACTION_TIMEOUT), refuses the same way;
* no copy of the database is made (a server database is not a file to copy): every row the
  transaction inserts, updates or deletes is journaled (its exact image before the first change,
  read inside the transaction, and after the last) and saved before COMMIT as a JSON row backup
  (`studio.store.write.row_backup`), which `memory-studio undo URL` restores. Images hold each
  column as SQLite stores it (integer, real, text, NULL; a blob as `{"blob": base64}`) plus the
  row's `_rowid_`, so an undo puts back even the insertion order ties are broken by. When the
  backup cannot be saved, the transaction is rolled back: nothing is written without its backup.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from studio.errors import SchemaError, ServerUnreachable, StoreError, WriteRefused
from studio.store import schema as sc
from studio.store.credentials import libsql_token, warn_secret_in_url
from studio.store.target import Target
from studio.store.write.backends.sqlite import SqliteWriteTx
from studio.store.write.outcome import journal_outcome, resolve_commit
from studio.store.write.row_backup import row_backup_before_commit
from studio.store.write.tx import WRITE_LOCK_WAIT_MS, lock_wait_message

__all__ = ["LibsqlRemoteWriteTx", "libsql_remote_write_transaction"]

class LibsqlRemoteWriteTx(SqliteWriteTx):
    """The open write transaction on a libSQL server: `SqliteWriteTx`'s SQL and journal over a Hrana stream."""

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run SQL with bound PARAMS on the transaction's stream; return all rows (StoreError / WriteRefused)."""
        try:
            return self.conn.execute(sql, tuple(params)).fetchall()
        except Exception as exc:
            _raise_write_error(exc, self.location.display)

    def execute(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one data-changing statement; return the rows it changed (the server's affected_row_count)."""
        try:
            return self.conn.execute(sql, tuple(params)).rowcount
        except Exception as exc:
            _raise_write_error(exc, self.location.display)


def _raise_write_error(exc: BaseException, display: str):
    """Raise `_write_error(EXC)` from EXC (EXC itself, unchained, when it is already a StoreError).

    Never `raise exc from exc`: an error made its own cause turns every walk of its causes into a
    loop without end (issue 22: a write spinning at 100 % CPU when the server died).
    """
    error = _write_error(exc, display)
    if error is exc:
        raise error
    raise error from exc


def _write_error(exc: BaseException, display: str) -> StoreError:
    """Turn a failure inside a remote write into WriteRefused("busy") (the lock went elsewhere),
    ServerUnreachable (the server cannot be reached or dropped the connection: nothing written) or StoreError."""
    from studio.store.hrana import HranaStatementError, StreamExpired

    if isinstance(exc, ServerUnreachable):
        return ServerUnreachable(f"{exc}; the write was not committed and nothing was written.")
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, HranaStatementError):
        if exc.code == "TRANSACTION_TIMEOUT":
            return WriteRefused("busy", f"{display} gave the write lock to another writer while the studio's write was "
                                        "still running (sqld's 5 s transaction timeout); the server rolled the "
                                        "write back and nothing was written. Try again.")
        if exc.code in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in str(exc).lower():
            return WriteRefused("busy", lock_wait_message(display, WRITE_LOCK_WAIT_MS))
        if exc.code == "SQLITE_READONLY" or "readonly" in str(exc).lower().replace("-", ""):
            return StoreError(f"{display} accepts no writes (a read-only replica or token); nothing was written.")
        return StoreError(f"Writing {display} failed: {exc}")
    if isinstance(exc, StreamExpired):
        return StoreError(f"{display} dropped the write's stream (idle too long or restarted): the server rolled it "
                          "back and nothing was written. Try again.")
    return StoreError(f"Writing {display} failed: {exc}")


@contextmanager
def libsql_remote_write_transaction(location: Target, *, label: str = "write",
                                    lock_wait_ms: int | None = None) -> Iterator[LibsqlRemoteWriteTx]:
    """Open the libSQL server LOCATION for one `BEGIN IMMEDIATE` transaction; yield a LibsqlRemoteWriteTx.

    Commits when the block ends normally, after saving the JSON backup of every row it changed
    (`row_backup.row_backup_before_commit`, named with LABEL, routed by the context's BackupSink like
    a PostgreSQL write's); rolls back when it raises, or when the backup cannot be saved.
    LOCK_WAIT_MS: the longest wait for the server's write lock (default WRITE_LOCK_WAIT_MS).
    Raises StoreError (unreachable server, refused token, failed statements), SchemaError (no
    Mastra tables), WriteRefused("busy") when the lock cannot be had; nothing is written then.
    """
    from studio.store.hrana import CommitUnanswered, HranaStatementError, HranaWriteStream, LockWaitTimeout

    wait = WRITE_LOCK_WAIT_MS if lock_wait_ms is None else int(lock_wait_ms)
    token, source = libsql_token(location)
    warn_secret_in_url(location)   # once per process (a read of the same command has said it already)
    conn = HranaWriteStream(location.base_url, token, location.display, token_source=source or "the URL")
    try:
        try:
            conn.begin_immediate(wait)
        except LockWaitTimeout as exc:
            raise WriteRefused("busy", lock_wait_message(location.display, wait)) from exc
        except (HranaStatementError, StoreError) as exc:
            _raise_write_error(exc, location.display)
        try:
            try:
                schema = sc.discover(conn)
            except SchemaError as exc:
                raise SchemaError(f"{location.display}: {str(exc).replace('SQLite file', 'libSQL database')}") from exc
            except (HranaStatementError, StoreError) as exc:
                _raise_write_error(exc, location.display)
            tx = LibsqlRemoteWriteTx(conn, location, schema)
            yield tx
            journal = tx.journal()
            with row_backup_before_commit(location, journal, schema, label=label) as backup:
                try:
                    conn.commit()
                except CommitUnanswered as exc:
                    # COMMIT may have reached the server: ask it again (the write lock first: the
                    # transaction has ended, one way or the other, when another stream gets it)
                    found = resolve_commit(location.display, lambda: _probe_commit(location, schema, journal, wait),
                                           backup=str(backup) if backup else None)
                    raise found from exc
                except Exception as exc:
                    _raise_write_error(exc, location.display)
        except BaseException:
            conn.rollback()
            raise
    finally:
        conn.close()


def _probe_commit(location: Target, schema: sc.Schema, journal: list[dict], wait_ms: int) -> str | None:
    """Reconnect to the libSQL server LOCATION and read the rows of JOURNAL again: "written", "not-written" or None.

    Read inside `BEGIN IMMEDIATE` on a new stream: sqld hands the write lock over only once the lost
    write's transaction has ended (committed, or rolled back when its stream died), so the rows read
    are final. Raises StoreError when the server cannot be reached (or the lock not had in WAIT_MS).
    """
    from studio.store.hrana import HranaWriteStream, LockWaitTimeout

    token, source = libsql_token(location)
    conn = HranaWriteStream(location.base_url, token, location.display, token_source=source or "the URL")
    try:
        try:
            conn.begin_immediate(wait_ms)
        except LockWaitTimeout as exc:
            raise StoreError(str(exc)) from exc
        reader = LibsqlRemoteWriteTx(conn, location, schema)

        def current(table: str, row_id: str) -> dict | None:
            found = reader.canonical_rows(table, f'"{reader.key_column(table) or "id"}" = ?', (row_id,))
            return found[0] if found else None
        return journal_outcome(journal, current)
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(f"Reading {location.display} again failed: {exc}") from exc
    finally:
        conn.close()

"""The backend of a local memory.db: one libSQL connection, read-only unless opened for one write.

A connection belongs to the thread that made it (in the studio, the TaskRunner's single database
worker). A WAL file nobody had open is read *immutable* (no locks, no -wal/-shm created); such a
read is verified against the file's signature (taken when the connection was opened) and redone
through a fresh connection when the file changed since, the last attempt through a normal (locking)
read-only connection. When the path comes to name another file (replaced by a copy or a rename), the
connection is replaced before the next read (`reopen_if_changed`); an immutable one when its read
finds the file changed, or before a load. File checks, the connect and the sentences of
SQLite errors: `studio.store.connection`; the SQL of the reads: `studio.store.backends.sqlite_sql`.

A load (`begin_read` … `end_read`) on a WAL file is one read transaction on this connection; a file
in rollback-journal mode is read statement by statement (a read transaction there would hold a
SHARED lock the agent's commit waits for). `fingerprint()` is `data_version()`.
"""

from __future__ import annotations

import functools

import libsql

from studio.errors import SchemaError, StoreDamaged, StoreError
from studio.store import schema as sc
from studio.store.backends import read_each, sqlite_sql
from studio.store.cells import contained, is_driver_panic, sqlite_encoding_name
from studio.store.connection import (
    connect,
    describe_sqlite_error,
    file_identity,
    file_signature,
    foreign_wal_sentence,
    has_nonempty_wal,
    immutable_uri,
    is_damage,
    wal_page_size_mismatch,
)
from studio.store.lock_wait import patiently

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from studio.store.target import Target

__all__ = ["IMMUTABLE_ATTEMPTS", "FileBackend"]

#: Reads of an immutable connection retried when the file changed under them; the last one is
#: made through a normal (locking) read-only connection.
IMMUTABLE_ATTEMPTS = 4


def _explain_schema_error(location: Target, exc: SchemaError) -> StoreError:
    """Return EXC, or a StoreError naming the -wal when the main file alone is a Mastra database.

    SQLite reads pages from the -wal before the main file, so the -wal of another database (a
    copy made at the wrong moment) makes a Mastra file look like that other database.
    """
    if not has_nonempty_wal(location.path):
        return SchemaError(f"{location.display}: {exc}")   # name the file (another app's database?)
    try:
        conn = libsql.connect(immutable_uri(location.path))
        try:
            sc.discover(conn)
        finally:
            conn.close()
    except BaseException as probe_exc:
        if not contained(probe_exc):
            raise
        return exc
    evidence = (wal_page_size_mismatch(location.path)
                or "the file alone is a Mastra memory database; read with that -wal it is not")
    error = StoreError(f"Cannot read {location.display}: " + foreign_wal_sentence(location.path, evidence))
    error.__cause__ = exc
    return error


def _schema_and_encoding(conn) -> tuple[sc.Schema, str]:
    return sc.discover(conn), sqlite_encoding_name(conn.execute("PRAGMA encoding").fetchall()[0][0])


def _open_verified(location: Target, writable: bool, allow_immutable: bool = True, cache_kib: int | None = None):
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
            schema, encoding = patiently(functools.partial(_schema_and_encoding, conn), location.display)
        except SchemaError as exc:
            error = _explain_schema_error(location, exc)
        except BaseException as exc:
            if not contained(exc):
                conn.close()
                raise
            error = StoreError(f"Cannot read {location.display}: {describe_sqlite_error(exc, location.path)}")
            error.__cause__ = exc
        if immutable and file_signature(location.path) != signature:
            conn.close()
            if last:   # only a path too long for SQLite is read immutable on the last attempt (a snapshot)
                raise StoreError(f"Cannot read {location.display}: the file kept changing while it was read; "
                                 "try again when the agent has finished writing")
            continue
        if error is not None:
            conn.close()
            raise error
        return conn, immutable, signature, schema, encoding
    raise AssertionError("unreachable: the last attempt is not immutable")


class FileBackend:
    """A Mastra memory.db opened through libSQL (studio.store.backends.Backend).

    `open` raises StoreError (missing, not SQLite, locked, unreadable) or SchemaError (no Mastra
    tables). Reads raise StoreError when SQLite fails mid-read (StoreDamaged where the file is
    damaged). No read lets a driver panic escape: text is fetched as bytes and decoded here.
    """

    sql = sqlite_sql.SQLITE
    #: A file's `data_version` also counts commits a load's snapshot does not see: a load reads it first.
    fingerprint_in_snapshot = False
    notices: tuple[str, ...] = ()

    def __init__(self, location: Target, conn, schema: sc.Schema, writable: bool, immutable: bool = False,
                 signature: tuple | None = None, encoding: str = "utf-8", cache_kib: int | None = None):
        self.location = location
        self.conn = conn
        self.schema = schema
        self.writable = writable
        self.immutable = immutable
        self.encoding = encoding
        #: Result widths and SELECT lists of the reads (studio.store.backends.sqlite_sql), emptied on reopen.
        self.widths: dict[str, int] = {}
        self.select_lists: dict[tuple, tuple[list[str], str]] = {}
        self._signature = signature if signature is not None else file_signature(location.path)
        self._identity = file_identity(location.path)
        self._cache_kib = cache_kib
        self._reopens = 0
        self._loading = False          # between begin_read and end_read
        self._snapshot_conn = None     # the connection holding this load's read transaction, if any
        self._wal: bool | None = None

    @classmethod
    def open(cls, location: Target, *, writable: bool = False, cache_kib: int | None = None) -> FileBackend:
        """Open the file LOCATION read-only unless WRITABLE; CACHE_KIB: SQLite's page cache (KiB, None: 2,000).

        A command that reads each page once (`threads`) asks for a small cache: filling the default
        one takes fresh memory (page faults: ~2 ms of listing 5,000 threads) for pages it never reads again.
        """
        conn, immutable, signature, schema, encoding = _open_verified(location, writable, cache_kib=cache_kib)
        return cls(location, conn, schema, writable, immutable, signature, encoding, cache_kib)

    # -- connection ------------------------------------------------------------------------

    def _reopen(self, *, allow_immutable: bool = True) -> None:
        conn, immutable, signature, schema, encoding = _open_verified(self.location, self.writable, allow_immutable,
                                                                      self._cache_kib)
        old, self.conn = self.conn, conn
        if old is not None:
            old.close()
        self.schema, self.immutable, self._signature, self.encoding = schema, immutable, signature, encoding
        self._identity = file_identity(self.location.path)
        self.widths.clear()
        self.select_lists = {}
        self._reopens += 1
        self._wal = None
        if self._loading:   # a writer appeared mid-load: the rest of the load reads one state again
            self._begin_transaction()

    def reopen_if_changed(self) -> bool:
        """Reopen the connection if it was opened immutable and the file has changed since; return True if so.

        An immutable connection (a WAL file nobody had open) never sees later writes: when a
        writer appears (a -wal file) or the file changes, a fresh read-only connection replaces it.
        Any read-only store is also reopened when the path now names another file (replaced by
        a copy or a rename). Checked before every read of a connection that is not immutable (one stat call),
        and before a load or a fingerprint (an immutable one: two, the file and its -wal).
        """
        if self.conn is None or self.writable or self._loading:
            return False   # inside a load the snapshot is kept (an immutable read is verified by `execute`)
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

    # -- running a query -------------------------------------------------------------------

    def fail(self, exc: BaseException) -> StoreError:
        """Return the StoreError for a failed read (StoreDamaged when the file is damaged where it read)."""
        kind = StoreDamaged if is_damage(exc) else StoreError
        error = kind(f"Reading {self.location.display} failed: {describe_sqlite_error(exc, self.location.path)}")
        error.__cause__ = exc
        return error

    def execute(self, sql: str, params: tuple, *, pages=None) -> list[tuple]:
        """Fetch every row of SQL as the driver gives it; verify an immutable read against the file.

        PAGES (a server's keyset pages, studio.store.hrana.Pages) is ignored: a file is read whole.

        When the file changed while an immutable connection read it (a writer checkpointed),
        the rows (or the error) may come from a torn file: the connection is reopened and the read
        redone (IMMUTABLE_ATTEMPTS, the last through a locking connection). Raises the driver's
        Exception as is (callers word it), a driver panic as StoreError.
        """
        return self.execute_many([(sql, params)])[0]

    def execute_many(self, statements: list[tuple[str, tuple]]) -> list[list[tuple]]:
        """Fetch the rows of each of STATEMENTS ([(sql, params)]) one after another, as `execute` fetches one.

        An immutable read is verified once, after the last statement: the file's signature is still the one
        taken when the connection was opened, so every statement read that same unchanged file (one state).
        Otherwise all of them are read again (`execute`'s attempts). Raises what `execute` raises.
        """
        for attempt in range(IMMUTABLE_ATTEMPTS):
            if attempt:
                self._reopen(allow_immutable=attempt < IMMUTABLE_ATTEMPTS - 1)
            error: BaseException | None = None
            results: list[list[tuple]] = []
            try:
                for sql, params in statements:
                    results.append(patiently(lambda sql=sql, params=params: self.conn.execute(sql, params).fetchall(),
                                             self.location.display))
            except BaseException as exc:
                if not contained(exc):
                    raise
                error = exc
            if self.immutable and file_signature(self.location.path) != self._signature:
                continue
            if error is not None:
                if is_driver_panic(error):
                    raise self.fail(error)
                raise error
            return results
        raise AssertionError("unreachable: the last attempt is not immutable")

    def read_many(self, reads: list) -> list:
        """`Backend.read_many`: READS (`RowsRead` / `SelectRead`) read in one state of the file where this connection
        proves one, else one after another (`read_each`, each read then checked as `rows` / `select` check it).

        One state: an immutable connection (`execute_many` verifies the file once for all of them) or a load's
        read transaction; the file is then checked for a change once before them (`ready`), not before each, and
        LIMIT_TO_COUNT is bound as no limit (the count's rows). A connection outside a snapshot reads one
        statement at a time (a writer may commit between two): LIMIT_TO_COUNT is bound to the count read.
        """
        self.ready()
        if self.immutable or (self._snapshot_conn is not None and self._snapshot_conn is self.conn):
            return sqlite_sql.read_together(self, reads)
        return read_each(self, reads)

    def ready(self) -> None:
        """Raise StoreError when closed; reopen first when the path names another file (`reopen_if_changed`).

        An immutable connection is not checked here: its read is verified after it (`execute_many`) against
        the signature taken when it was opened, and a file changed at any time since (before the read too) is
        read again through a fresh connection; checking before would prove nothing that check does not.
        """
        if self.conn is None:
            raise StoreError("The database is closed")
        if not self.immutable:
            self.reopen_if_changed()

    #: The reads (studio.store.backends.sqlite_sql), the same on a libSQL server.
    rows = sqlite_sql.rows
    select = sqlite_sql.select
    select_column = sqlite_sql.select_column
    #: The driver cannot hand over text that is not UTF-8 (it panics): every text is fetched as bytes.
    plain_text = False

    # -- loads and change detection ----------------------------------------------------------

    def _is_wal(self) -> bool:
        if self._wal is None:
            rows = self.execute("PRAGMA journal_mode", ())
            self._wal = bool(rows) and str(rows[0][0]).lower() == "wal"
        return self._wal

    def begin_read(self) -> None:
        """Start a load: one read transaction when it isolates without delaying writers (a WAL file).

        The snapshot is taken by the load's first read and released at `end_read`. A WAL reader takes
        no lock that delays a writer, so a running agent commits as usual meanwhile; the studio just
        does not see it until the next load. A rollback-journal file is read statement by statement,
        and an immutable one needs no transaction (no writer: nothing to isolate from). Raises
        StoreError when the transaction cannot be started.
        """
        self.reopen_if_changed()
        self._loading = True
        self._begin_transaction()

    def _begin_transaction(self) -> None:
        self._snapshot_conn = None
        if self.conn is None or self.writable or self.immutable:
            return
        try:
            if not self._is_wal():
                return
            self.conn.execute("BEGIN")
        except BaseException as exc:
            if not contained(exc):
                raise
            raise self.fail(exc) from exc
        self._snapshot_conn = self.conn

    def end_read(self, failed: bool = False) -> None:
        """End the load's read transaction at once (nothing was written: COMMIT, or ROLLBACK when FAILED,
        only releases the snapshot)."""
        self._loading = False
        conn, self._snapshot_conn = self._snapshot_conn, None
        if conn is None or conn is not self.conn:
            return   # none was started, or its connection was replaced (closing it ended the transaction)
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK" if failed else "COMMIT")
        except BaseException as exc:
            if not contained(exc):
                raise
            raise self.fail(exc) from exc

    def data_version(self) -> int:
        """Return a number that changes when another process commits to the database.

        SQLite's `PRAGMA data_version` (per connection), offset by how often the connection was
        reopened (see `reopen_if_changed`), so a reopen always reads as a change.
        """
        self.reopen_if_changed()
        return self._reopens * 1_000_000_000 + int(self.rows("PRAGMA data_version")[0][0])

    def fingerprint(self) -> int:
        """`data_version()`: no table read, two stat calls."""
        return self.data_version()

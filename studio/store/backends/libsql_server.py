"""The backend of a libSQL server (`@mastra/libsql`'s LibSQLStore on `sqld` or Turso).

A libSQL server holds the same SQLite database a local `memory.db` is, so the reads are the file's
(studio.store.backends.sqlite_sql: same dialect, same SQL, text fetched as bytes, JSONB decoded by
the server's `json()`); only the transport differs: Hrana over HTTP (`studio.store.hrana`), no local
replica file. Targets (parsed by `studio.store.target`): `libsql://HOST` (= `https://HOST`, as
@libsql/client reads it), `https://HOST[:PORT]`, `http://HOST:PORT` (a local `sqld`), and `ws://` /
`wss://` (read as http / https: sqld serves both on one port).

Reads never get in the agent's way: only read statements are sent; a load (`begin_read` … `end_read`:
one CLI command, one studio load) reads one consistent snapshot (a deferred read transaction on
one stream, rolled back at the end); outside a load every statement is its own autocommit stream.
Requests time out. This backend never writes: the studio's writes on a server go through
`studio.store.write.backends.libsql_remote` (the same SQL as on a file, one Hrana write stream, a
JSON row backup before COMMIT).
"""

from __future__ import annotations

from studio.errors import SchemaError, StoreError
from studio.store import schema as sc
from studio.store.backends import content_fingerprint, sqlite_sql
from studio.store.cells import sqlite_encoding_name
from studio.store.credentials import libsql_token, warn_secret_in_url
from studio.store.target import libsql_server_refusal

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from studio.store.target import Target

__all__ = ["LibsqlServerBackend"]


class LibsqlServerBackend:
    """A Mastra memory on a libSQL server, opened read-only (studio.store.backends.Backend).

    Raises StoreError from `open` (server unreachable, no answer, auth refused, not a libSQL
    server) and SchemaError when the database holds no Mastra tables; reads raise StoreError when
    a request or statement fails. `traffic` counts round trips and statements.
    """

    sql = sqlite_sql.SQLITE
    #: A load is one read transaction on one stream: `fingerprint()` inside it describes what the load reads.
    fingerprint_in_snapshot = True
    writable = False

    def __init__(self, location: Target, conn, schema: sc.Schema, encoding: str = "utf-8",
                 notices: tuple[str, ...] = ()):
        self.location = location
        self.conn = conn
        self.schema = schema
        self.encoding = encoding
        self.notices = notices
        #: Result widths and SELECT lists of the reads (studio.store.backends.sqlite_sql).
        self.widths: dict[str, int] = {}
        self.select_lists: dict[tuple, tuple[list[str], str]] = {}
        self._traffic = conn.traffic
        self._snapshot_conn = None

    @classmethod
    def open(cls, location: Target, *, writable: bool = False) -> LibsqlServerBackend:
        """Connect to the libSQL server LOCATION read-only (token: `credentials.libsql_token`).

        A token written in the URL works but is announced once (`credentials.warn_secret_in_url`: URLs end up
        in `ps` and shell histories); the URL is shown redacted everywhere.
        WRITABLE is refused (StoreError): nothing is sent.
        """
        from studio.store.hrana import HranaConnection, HranaStatementError  # httpx: only for server stores

        if writable:
            raise StoreError(libsql_server_refusal(location.display))
        token, source = libsql_token(location)
        notice = warn_secret_in_url(location)   # once per process; the studio shows it in its status bar
        notices: tuple[str, ...] = (notice,) if notice else ()
        conn = HranaConnection(location.base_url, token, location.display, token_source=source or "the URL")
        try:
            schema = sc.discover(conn)
            encoding = sqlite_encoding_name(conn.execute("PRAGMA encoding").fetchall()[0][0])
        except SchemaError as exc:
            conn.close()
            raise SchemaError(f"{location.display}: {str(exc).replace('SQLite file', 'libSQL database')}") from exc
        except HranaStatementError as exc:
            conn.close()
            raise StoreError(f"Cannot read {location.display}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return cls(location, conn, schema, encoding, notices)

    @property
    def traffic(self):
        """Round trips and statements sent so far, also after `close` (studio.store.hrana.Traffic)."""
        return self._traffic

    def close(self) -> None:
        """End the snapshot and close the client (the server's data is left as it was: nothing was written)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # -- running a query -------------------------------------------------------------------

    def fail(self, exc: BaseException) -> StoreError:
        """Return the StoreError for a failed read (the server's own words)."""
        error = StoreError(f"Reading {self.location.display} failed: {exc}")
        error.__cause__ = exc
        return error

    def execute(self, sql: str, params: tuple, *, pages=None) -> list[tuple]:
        """Fetch every row of SQL as the server sends it (the text-safe SQL of sqlite_sql decodes it).

        PAGES (studio.store.hrana.Pages): the keyset pages of SQL, read when its answer is over the server's
        response limit (without them such an answer is read in OFFSET pages).
        """
        return self.conn.execute(sql, params, pages=pages).fetchall()

    def ready(self) -> None:
        """Raise StoreError when closed (a server's next statement sees every commit: nothing to reopen)."""
        if self.conn is None:
            raise StoreError("The database is closed")

    #: The reads (studio.store.backends.sqlite_sql), the same as on a local file.
    rows = sqlite_sql.rows
    select = sqlite_sql.select
    select_column = sqlite_sql.select_column
    #: Several reads in one request (the count and the page of a listThreads or listMessages call).
    read_many = sqlite_sql.read_many

    def execute_many(self, statements: list[tuple[str, tuple]]) -> list[list[tuple]]:
        """Fetch the rows of each of STATEMENTS ([(sql, params)]) in one round trip (one read transaction)."""
        return [cursor.fetchall() for cursor in self.conn.execute_many(statements)]

    @property
    def plain_text(self) -> bool:
        """True outside a load: a read first asks for text as text (`execute_text`), which spares the bytes' base64
        and a decode of every value; sqld fails a request holding text that is not UTF-8 (HTTP 500) and drops its
        stream, so inside a load (one stream) every text is fetched as bytes."""
        return self.conn is not None and not self.conn.in_snapshot

    def execute_text(self, statements: list[tuple[str, tuple]]) -> list[list[tuple]] | None:
        """Fetch the rows of STATEMENTS, text as text, in one round trip (one read transaction when several);
        None when the server could not send a text as it is stored (studio.store.hrana.TextNotSent): the caller
        reads again with text as bytes. Raises what `execute_many` raises."""
        from studio.store.hrana import TextNotSent

        try:
            if len(statements) == 1:
                return [self.conn.execute(*statements[0], plain=True).fetchall()]
            return [cursor.fetchall() for cursor in self.conn.execute_many(statements, plain=True)]
        except TextNotSent:
            return None

    # -- loads and change detection ----------------------------------------------------------

    def begin_read(self) -> None:
        """Start this load's snapshot: one read transaction on one stream (`BEGIN` travels with the first statement)."""
        self._snapshot_conn = None
        if self.conn is not None and not self.conn.in_snapshot:
            self.conn.begin()
            self._snapshot_conn = self.conn

    def end_read(self, failed: bool = False) -> None:
        """End this load's snapshot at once: the read transaction is rolled back and its stream closed."""
        conn, self._snapshot_conn = self._snapshot_conn, None
        if conn is not None and conn is self.conn:
            conn.end()

    def fingerprint(self) -> str:
        """`content_fingerprint`: counts and newest `updatedAt` of Mastra's tables, one statement."""
        return content_fingerprint(self)

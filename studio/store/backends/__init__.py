"""The store's backends: one object per opened target, behind the one small protocol `Backend`.

`studio.store.memory_store.MemoryStore` is the read API (threads, messages, OM generations, loads);
it holds one backend and asks it for nothing but what `Backend` lists. Three implement it:

- `sqlite_file.FileBackend`        a local memory.db (libSQL; immutable reads of a quiet WAL file)
- `libsql_server.LibsqlServerBackend`  a libSQL server (`sqld`, Turso) over Hrana/HTTP: the same SQL
- `pg.PgBackend`                   `@mastra/pg`'s PostgresStore through psycopg

`studio.store.open_store` picks one by the parsed target (`studio.store.target`). A new backend
(MongoDB: docs/mongodb-backend.md) is a new class with these members, not a subclass of anything.
What each backend's load and fingerprint are: docs/store-layers.md.
"""

from __future__ import annotations

import itertools

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable
    from typing import Any, Protocol

    from studio.store.schema import Schema
    from studio.store.target import Target
else:
    Protocol = object

__all__ = ["LIMIT_TO_COUNT", "Backend", "BulkDecoder", "ReadSql", "RowsRead", "SelectRead", "decode_all",
           "decode_columns", "read_each"]


class ReadSql(Protocol):
    """The SQL a backend's dialect splices into the store's reads (Mastra's own orders and comparisons)."""

    #: "sqlite" (a libSQL file or server) or "postgresql": the dialect the reads branch on.
    name: str
    #: ORDER BY of a thread's messages in Mastra's storage order (libSQL: createdAt, then insertion; pg: then id).
    message_order: str
    #: ORDER BY of listThreads (newest createdAt first, with the store's tie-break).
    thread_order: str
    #: The placeholder a time is bound with where it is compared with `created` ("?" or "?::timestamptz").
    time_param: str

    def created(self, table: str) -> str:
        """SQL of TABLE's createdAt as Mastra compares it (libSQL: the stored string; pg: the twin first)."""

    def iso(self, expr: str) -> str:
        """SQL rendering the time EXPR as the text the libSQL store holds (JavaScript's toISOString())."""


class Backend(Protocol):
    """What `MemoryStore` needs of a backend: run a query, a load's snapshot, a fingerprint, its dialect's read
    expressions, close.

    A backend class connects in its `open(location, *, writable=False)` classmethod (`open_store` calls it)
    and reconnects by itself when it must (a local file replaced, or changed under an immutable read,
    before the next read). Every read method raises StoreError (the target named, secrets redacted)
    when the backend fails.
    """

    #: The parsed target (`location.display` is what the user sees; `location.path` is None for a server).
    location: Target
    #: The Mastra tables and columns present (may change when a file is reopened).
    schema: Schema
    #: The codec of the stored text ("utf-8", or a UTF-16 file's).
    encoding: str
    #: True only for a file opened for one user-requested write (server stores are always read-only).
    writable: bool
    #: Sentences the user should see about how the store was opened (status bar; the CLI warns).
    notices: tuple[str, ...]
    #: True when `fingerprint()` read inside a load describes that load's state (a server's snapshot).
    fingerprint_in_snapshot: bool
    #: The dialect's read expressions.
    sql: ReadSql

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run one statement written with `?` placeholders; return its rows, text decoded."""

    def select(self, table: str, wanted: list[str], tail: str = "", params: Iterable[Any] = (), *,
               lazy: str | None = None, extra: str | None = None,
               pages: Callable[[str], Any] | None = None) -> tuple[list[str], list, Callable[[Any], list]]:
        """Read WANTED columns of TABLE (empty: all) with a WHERE/ORDER TAIL, as Mastra reads them.

        Returns (present columns, rows as fetched, DECODE): DECODE turns one row into its values (in
        the libSQL store's form: times as ISO strings, JSON as text), leaving column LAZY as fetched
        (text or its bytes in `encoding`, decoded on first use). The whole result is fetched first.
        PAGES (SQLite SQL only): given the statement's SELECT list, the keyset pages (studio.store.hrana.Pages)
        a libSQL server reads the answer in when it is over its response limit; other backends ignore it.
        EXTRA (SQL stores: expressions, comma-separated, whose values are numbers or NULL, their `?` params first
        in PARAMS) is selected after the columns: each row then ends with their values, which `present` does
        not name.
        """

    def select_column(self, table: str, column: str, tail: str = "", params: Iterable[Any] = ()) -> list:
        """COLUMN of TABLE's rows (WHERE/ORDER TAIL), one value a row, as `select` reads it."""

    def read_many(self, reads: list[RowsRead | SelectRead]) -> list:
        """The results of READS, in order, each as `rows` / `select` returns it: together where that saves round
        trips (a libSQL server: one request, one read transaction), else one after another (`read_each`)."""

    def begin_read(self) -> None:
        """Start a load: every read until `end_read` sees one state (if the backend can isolate one cheaply)."""

    def end_read(self, failed: bool = False) -> None:
        """End the load at once (FAILED: the load raised; release, never commit anything)."""

    def fingerprint(self) -> Hashable:
        """A cheap value that changes when another process commits to the store; read-only."""

    def close(self) -> None:
        """Close the connection (the store's data is left as it was)."""


class BulkDecoder:
    """A `Backend.select` DECODE that also decodes a whole result at once (`rows`): its values are those of a
    call on each row, made without a Python call per row (see `decode_all`)."""

    __slots__ = ()

    def __call__(self, row: Any) -> Any:
        raise NotImplementedError

    def rows(self, fetched: list) -> list:
        """Return the values of every row of FETCHED, in order (each a tuple or list of values)."""
        return [self(r) for r in fetched]

    def columns(self, fetched: list) -> tuple[list, bool]:
        """Return (the values of FETCHED (at least one row) column by column: `rows` transposed, whether one of
        them may be damaged text: False only where none is a `studio.store.cells.DamagedText`)."""
        from studio.store.cells import DamagedText

        columns = list(zip(*self.rows(fetched)))  # noqa: B905  (rows of one width)
        return columns, DamagedText in set(map(type, itertools.chain.from_iterable(columns)))


def decode_columns(decode: Callable[[Any], Any], fetched: list) -> tuple[list, bool]:
    """Return (the values of FETCHED (at least one row) through `Backend.select`'s DECODE, column by column, whether
    one may be damaged text) as `BulkDecoder.columns` does (`decode_all` transposed; a BulkDecoder makes them
    without building the rows)."""
    if isinstance(decode, BulkDecoder):
        return decode.columns(fetched)
    from studio.store.cells import DamagedText

    columns = list(zip(*decode_all(decode, fetched)))  # noqa: B905  (rows of one width)
    return columns, DamagedText in set(map(type, itertools.chain.from_iterable(columns)))


def decode_all(decode: Callable[[Any], Any], fetched: list) -> list:
    """Return every row of FETCHED through `Backend.select`'s DECODE (as `[decode(r) for r in fetched]`):
    at once when DECODE is a BulkDecoder, the rows as fetched when it is `list` (psycopg decoded them)."""
    if decode is list:
        return fetched
    if isinstance(decode, BulkDecoder):
        return decode.rows(fetched)
    return [decode(r) for r in fetched]


class _LimitToCount:
    __slots__ = ()

    def __repr__(self) -> str:
        return "LIMIT_TO_COUNT"


#: A parameter of a `read_many` read, bound to a LIMIT: "as many rows as the first read counted" (its first
#: row's first value), as Mastra's listThreads / listMessages bind `total` for perPage false. A backend
#: that runs the reads in one transaction binds "no limit" instead (the same rows: both see one state);
#: one that runs them one after the other binds the count, as two calls would.
LIMIT_TO_COUNT = _LimitToCount()


class RowsRead:
    """One read of `Backend.read_many`: `rows(sql, params)`."""

    __slots__ = ("params", "sql")

    def __init__(self, sql: str, params: Iterable[Any] = ()):
        self.sql, self.params = sql, params


class SelectRead:
    """One read of `Backend.read_many`: `select(table, wanted, tail, params, lazy=lazy)`."""

    __slots__ = ("lazy", "params", "table", "tail", "wanted")

    def __init__(self, table: str, wanted: list[str], tail: str = "", params: Iterable[Any] = (),
                 lazy: str | None = None):
        self.table, self.wanted, self.tail, self.params, self.lazy = table, wanted, tail, params, lazy


def read_each(backend: Backend, reads: list[RowsRead | SelectRead]) -> list:
    """`Backend.read_many` one read after another: each result as BACKEND's `rows` / `select` returns it
    (LIMIT_TO_COUNT bound to the first read's count)."""
    out: list = []
    for r in reads:
        params = r.params
        if out and any(p is LIMIT_TO_COUNT for p in params):
            params = [int(out[0][0][0]) if p is LIMIT_TO_COUNT else p for p in params]
        out.append(backend.rows(r.sql, params) if r.__class__ is RowsRead
                   else backend.select(r.table, r.wanted, r.tail, params, lazy=r.lazy))
    return out


def content_fingerprint(backend: Backend) -> str:
    """Return a digest of row counts and newest `updatedAt` of Mastra's tables, in one SELECT (any SQL backend).

    Catches inserts and deletes (counts), a message saved with a later `createdAt`, and updates
    that stamp `updatedAt` (threads, OM rows, resources; Mastra stamps a thread whenever it saves
    its messages). For backends with no cheaper change counter: a libSQL server, and PostgreSQL
    under its write counters.
    """
    schema = backend.schema
    parts = ["(SELECT count(*) FROM mastra_threads)", '(SELECT max("updatedAt") FROM mastra_threads)',
             "(SELECT count(*) FROM mastra_messages)", '(SELECT max("createdAt") FROM mastra_messages)']
    if schema.has_observational_memory:
        parts += ["(SELECT count(*) FROM mastra_observational_memory)",
                  '(SELECT max("updatedAt") FROM mastra_observational_memory)']
    if schema.has_table("mastra_resources"):
        parts += ["(SELECT count(*) FROM mastra_resources)", '(SELECT max("updatedAt") FROM mastra_resources)']
    row = backend.rows("SELECT " + ", ".join(parts))[0]
    import hashlib  # here: only a change check needs it (hashlib loads OpenSSL, ~2 ms at startup)

    return hashlib.sha256(repr([str(v) for v in row]).encode()).hexdigest()[:16]

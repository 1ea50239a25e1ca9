"""Reads of a SQLite database (a local file, or a libSQL server: the same SQL), text fetched as bytes.

The SQLite half of `Backend.rows` / `select` / `select_column`, shared by
`studio.store.backends.sqlite_file.FileBackend` and `studio.store.backends.libsql_server.LibsqlServerBackend`,
and the SQLite dialect's read expressions (`SQLITE`). No read lets a driver panic escape: every TEXT
result travels as bytes with its type and is decoded here (studio.store.cells); a JSONB blob is
decoded by SQLite's `json()`.

`rows`, `select` and `select_column` are the two backends' methods of those names (assigned in their
class bodies), so they take the backend first, as it is at the call (a file's connection, schema and
encoding change when it is reopened): anything with `ready()` (raises when closed; a file reopens when
it changed), `conn` (`execute(sql, params)` with `.description` / `.fetchall()`), `schema`,
`encoding`, `execute(sql, params)` (rows as fetched; a file verifies them against a torn immutable
read), `fail(exc)` (the StoreError for a failed read), the caches `widths` and `select_lists`
(emptied on reopen), and `plain_text`: True when a read may first ask for text as text
(`execute_text(statements)`: a libSQL server outside a load, which sends text it cannot send as it is
as an error, never as other text); the text-safe read follows when that fails.
"""

from __future__ import annotations

import itertools
import re

from studio.errors import StoreError
from studio.store import schema as sc
from studio.store.backends import LIMIT_TO_COUNT, BulkDecoder, RowsRead, read_each
from studio.store.cells import (
    DamagedText,
    bulk_decode,
    contained,
    decode_pairs,
    decode_rows,
    decode_text,
    text_safe_pair,
)
from studio.store.lock_wait import patiently

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from studio.store.backends import SelectRead

__all__ = ["JSONB_COLUMNS", "SQLITE", "SqliteSql", "read_many", "read_together", "row_decoder", "rows", "select",
           "select_column", "text_affinity"]

#: Columns Mastra declares `jsonb` (read through SQLite's json()).
JSONB_COLUMNS = {"metadata", "content", "config", "observedMessageIds", "bufferedObservationChunks",
                 "bufferedMessageIds"}


class SqliteSql:
    """The read expressions of Mastra's libSQL store (studio.store.backends.ReadSql)."""

    name = "sqlite"
    #: Messages in Mastra's storage order: createdAt, then insertion (the libSQL store has no tie-break).
    message_order = '"createdAt" ASC'
    #: listThreads: newest first; ties in insertion order, newest first, as SQLite's index scan yields them.
    thread_order = '"createdAt" DESC, rowid DESC'
    #: Times compare as the stored strings (Mastra's libSQL store binds dateRange.start as given).
    time_param = "?"

    def created(self, table: str) -> str:
        """The stored createdAt string (ISO-8601 UTC sorts as time)."""
        return '"createdAt"'

    def iso(self, expr: str) -> str:
        """EXPR as it is: the libSQL store holds times as toISOString() text already."""
        return expr


SQLITE = SqliteSql()


#: `backend.widths`' entry for a statement whose rows are returned as fetched (a count, a PRAGMA).
_AS_IS = -1


def _width(backend, sql: str, params: tuple) -> int:
    """SQL's result width, or _AS_IS for a statement `rows` sends as it is; found once per SQL text (a SELECT's
    width by one probing statement) and remembered in `backend.widths`."""
    width = backend.widths.get(sql)
    if width is None:
        head = sql.lstrip()[:6].upper()
        if not head.startswith(("SELECT", "WITH")) or (_COUNT.fullmatch(sql) and not _COMPOUND.search(sql)):
            width = _AS_IS  # a count is a number: nothing to fetch as bytes
        else:
            width = len(patiently(lambda: backend.conn.execute(f"SELECT * FROM ({sql}) LIMIT 0", params).description,
                                  backend.location.display) or ())
        backend.widths[sql] = width
    return width


def rows(backend, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
    """Run a SELECT (or PRAGMA) on BACKEND and return its rows, text decoded here (never by the driver).

    A SELECT is wrapped so that every TEXT result travels as bytes with its type, and is decoded
    with `decode_text` (invalid UTF-8 -> DamagedText). Raises StoreError on failure.
    """
    backend.ready()
    params = tuple(params)
    if backend.plain_text and sql.lstrip()[:6].upper().startswith(("SELECT", "WITH")):
        fetched = _plainly(backend, [(sql, params)])
        if fetched is not None:
            return fetched[0]
    try:
        sql, finish = _rows_plan(backend, sql, params)
        fetched = backend.execute(sql, params)
    except StoreError:
        raise
    except BaseException as exc:
        if not contained(exc):
            raise
        raise backend.fail(exc) from exc
    return finish(fetched)


def _plainly(backend, statements: list[tuple[str, tuple]]) -> list[list[tuple]] | None:
    """The rows of STATEMENTS read with text as text (`backend.execute_text`, one round trip), or None when
    they must be read the text-safe way: a text the server could not send as it is, or a failed statement
    (the text-safe read then words the failure as it always does). Transport failures raise StoreError."""
    try:
        return backend.execute_text(statements)
    except StoreError:
        raise
    except Exception:
        return None


def _rows_plan(backend, sql: str, params: tuple) -> tuple[str, Callable[[list], list[tuple]]]:
    """The statement `rows` sends for SQL and the function turning its fetched rows into `rows`' result.

    A SELECT's width is probed once per SQL text (one statement, remembered in `backend.widths`).
    """
    width = _width(backend, sql, params)
    if width == _AS_IS:
        return sql, _as_fetched
    names = ", ".join(f"c{i}" for i in range(width))
    pairs = ", ".join(text_safe_pair(f"c{i}") for i in range(width))
    encoding = backend.encoding
    return (f"WITH q({names}) AS ({sql}) SELECT {pairs} FROM q",
            lambda fetched: decode_rows(fetched, width, encoding))


#: `SELECT COUNT(*) FROM table [WHERE …]`: one integer a row (a compound SELECT or a second statement aside).
_COUNT = re.compile(r'\s*SELECT\s+COUNT\(\*\)\s+FROM\s+"?\w+"?(\s+WHERE\s.*|\s*)', re.IGNORECASE | re.DOTALL)
_COMPOUND = re.compile(r"\b(UNION|INTERSECT|EXCEPT)\b|;", re.IGNORECASE)


def _as_fetched(fetched: list) -> list:
    return fetched


def text_affinity(declared: str) -> bool:
    """Return True when a column declared DECLARED (its type as written, e.g. "TEXT", "VARCHAR(40)") has TEXT affinity.

    SQLite's rules (Datatypes In SQLite, 3.1): a type containing "INT" is INTEGER; else one containing
    "CHAR", "CLOB" or "TEXT" is TEXT. Such a column holds only NULL, TEXT or BLOB: a number written to it
    is stored as its text (a default value added with ALTER TABLE too).
    """
    declared = declared.upper()
    return "INT" not in declared and ("CHAR" in declared or "CLOB" in declared or "TEXT" in declared)


def _select_list(schema: sc.Schema, table: str, wanted: list[str]) -> tuple[list[str], str]:
    """Return (present columns, SELECT list): JSONB blobs decoded with json(), every text as bytes.

    Each result is NULL, a number or bytes (text, or a blob that is not JSONB) for the row decoder. A column of
    TEXT affinity (`text_affinity` of its declared type in `schema.types`) holds no number, so it needs no
    `typeof` test for one: `CAST(… AS BLOB)` alone gives the same values (NULL stays NULL) for less work a row.
    """
    present = [c for c in (wanted or schema.columns(table)) if schema.has_column(table, c)]
    declared = schema.types.get(table, {})
    exprs = []
    for col in present:
        q = sc.quote_ident(col)
        text = text_affinity(declared.get(col, ""))
        if col in JSONB_COLUMNS:
            exprs.append(f"CASE WHEN typeof({q}) = 'blob' THEN CAST(json({q}) AS BLOB) ELSE CAST({q} AS BLOB) END"
                         if text else
                         f"CASE WHEN typeof({q}) = 'blob' THEN CAST(json({q}) AS BLOB) "
                         f"WHEN typeof({q}) = 'text' THEN CAST({q} AS BLOB) ELSE {q} END")
        else:
            exprs.append(f"CAST({q} AS BLOB)" if text else
                         f"CASE WHEN typeof({q}) IN ('text', 'blob') THEN CAST({q} AS BLOB) ELSE {q} END")
    return present, ", ".join(exprs)


def _plain_select_list(schema: sc.Schema, table: str, wanted: list[str]) -> tuple[list[str], str]:
    """`_select_list` for a server read with text as text: each result NULL, a number, text, or the bytes of
    a blob (what the text-safe list turns into bytes comes as text: the same values once decoded)."""
    present = [c for c in (wanted or schema.columns(table)) if schema.has_column(table, c)]
    exprs = []
    for col in present:
        q = sc.quote_ident(col)
        exprs.append(f"CASE WHEN typeof({q}) = 'blob' THEN json({q}) ELSE {q} END" if col in JSONB_COLUMNS else q)
    return present, ", ".join(exprs)


def _decode(value: Any, encoding: str) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return decode_text(value, encoding)
    return value


class RowDecoder(BulkDecoder):
    """DECODE of a SQLite read (`Backend.select`): every fetched text (its bytes) decoded in ENCODING, invalid
    bytes as DamagedText (studio.store.cells), except column KEEP (None: none), left as fetched.

    A call decodes one row; `rows` decodes a whole result a column at a time (`studio.store.backends.decode_all`).
    """

    __slots__ = ("encoding", "keep")

    def __init__(self, encoding: str, keep: int | None = None):
        self.encoding, self.keep = encoding, keep

    def __call__(self, row: tuple) -> list:
        encoding, keep = self.encoding, self.keep
        try:
            values = [v.decode(encoding) if v.__class__ in _BYTES and i != keep else v for i, v in enumerate(row)] \
                if keep is not None else [v.decode(encoding) if v.__class__ in _BYTES else v for v in row]
        except UnicodeDecodeError:
            values = [v if i == keep else _decode(v, encoding) for i, v in enumerate(row)]
        return values

    def rows(self, fetched: list[tuple]) -> list[tuple]:
        """Return every row of FETCHED decoded (as tuples), the same values as a call on each row (`columns`)."""
        if not fetched:
            return []
        return list(zip(*self.columns(fetched)[0]))  # noqa: B905  (columns of one length)

    def columns(self, fetched: list[tuple]) -> tuple[list[list], bool]:
        """Return (the values of FETCHED (at least one row) decoded column by column, as calls on each row give
        them; whether one may be DamagedText: only a column with undecodable bytes makes some).

        A column of bytes alone is decoded by one `map` in C, with no call per row (5,007 threads: 4.6 ->
        ~2 ms) and no look at its types first (a value of another type stops the `map` at once); any other
        column (NULLs, numbers, bytes that are not text) is decoded value by value.
        """
        encoding, keep, columns, damaged = self.encoding, self.keep, [], False
        utf8 = encoding == "utf-8"   # bytes.decode's default: no encoding argument to pass (and look up) a value
        for i, column in enumerate(zip(*fetched)):  # noqa: B905  (the rows' width: zip(*) cannot differ)
            if i != keep:
                try:
                    column = list(map(bytes.decode, column) if utf8 else
                                  map(bytes.decode, column, itertools.repeat(encoding)))
                except (TypeError, UnicodeDecodeError):   # not bytes alone, or not text: value by value
                    column = self._column(column)
                    damaged = damaged or DamagedText in set(map(type, column))
            columns.append(column)
        return columns, damaged

    def _column(self, column: tuple) -> list | tuple:
        encoding = self.encoding
        kinds = set(map(type, column))
        try:
            if kinds == _BYTES_OR_NULL:
                return [None if v is None else v.decode(encoding) for v in column]
            if kinds & _BYTES:
                return [_decode(v, encoding) for v in column]
        except UnicodeDecodeError:
            return [_decode(v, encoding) for v in column]
        return column


_BYTES = frozenset((bytes, bytearray))
_BYTES_OR_NULL = {bytes, type(None)}


def row_decoder(encoding: str) -> RowDecoder:
    """Return the decoder turning a fetched row (every text as bytes) into its values (damaged text: DamagedText)."""
    return RowDecoder(encoding)


def select(backend, table: str, wanted: list[str], tail: str = "", params: Iterable[Any] = (), *,
           lazy: str | None = None, extra: str | None = None,
           pages: Callable[[str], Any] | None = None) -> tuple[list[str], list[tuple], Callable[[tuple], list]]:
    """`Backend.select` on SQLite: (present columns, rows as fetched, DECODE).

    Every text value is decoded by DECODE (invalid UTF-8 -> DamagedText, see studio.store.cells),
    except column LAZY, left as fetched (its bytes); a blob in a column Mastra fills with text or
    numbers is read as text. A JSONB blob SQLite cannot decode does not fail the read: the rows are
    re-read raw and that value is decoded one by one (undecodable -> left as bytes, reported as
    malformed); those rows come back decoded whole (DECODE is `list`). PAGES, given the SELECT list, makes the
    keyset pages of the text-safe statement (`backend.execute`'s: a libSQL server reads an answer over its
    response limit in them; a file reads it whole). EXTRA (SQL expressions, comma-separated, their `?` params
    first in PARAMS) is selected after the columns, as PostgreSQL's `select` selects it: each row then ends
    with their values, which `present` does not name (numbers or NULL: fetched as they are, never text); not
    with PAGES. Raises StoreError.
    """
    backend.ready()
    return _select(backend, table, wanted, tail, tuple(params), lazy, pages, extra)


def _select(backend, table: str, wanted: list[str], tail: str, params: tuple, lazy: str | None,
            pages: Callable[[str], Any] | None = None,
            extra: str | None = None) -> tuple[list[str], list[tuple], Callable[[tuple], list]]:
    if backend.plain_text:
        sql, present, decode = _select_plan(backend, table, wanted, tail, lazy, plain=True, extra=extra)
        fetched = _plainly(backend, [(sql, params)])
        if fetched is not None:
            return present, fetched[0], _plain_decoder(fetched[0], decode)
    sql, present, decode = _select_plan(backend, table, wanted, tail, lazy, extra=extra)
    try:
        if pages is None:
            fetched = backend.execute(sql, params)
        else:
            selected = backend.select_lists[(table, tuple(wanted), False)][1]
            fetched = backend.execute(sql, params, pages=pages(selected))
    except StoreError:
        raise
    except Exception as exc:
        if "json" not in str(exc).lower():
            raise backend.fail(exc) from exc
        return present, _select_raw(backend, table, present, tail, params, extra), list
    return present, fetched, decode


def _select_plan(backend, table: str, wanted: list[str], tail: str, lazy: str | None,
                 plain: bool = False, extra: str | None = None) -> tuple[str, list[str], Callable[[tuple], list]]:
    """`select`'s statement, present columns and row decoder (column LAZY left as fetched); PLAIN: text as text;
    EXTRA selected after the columns."""
    lists, key = backend.select_lists, (table, tuple(wanted), plain)
    present, selected = lists.get(key) or lists.setdefault(
        key, (_plain_select_list if plain else _select_list)(backend.schema, table, wanted))
    decode = RowDecoder(backend.encoding, present.index(lazy) if lazy is not None and lazy in present else None)
    if extra:
        selected = f"{selected}, {extra}"
    return f"SELECT {selected} FROM {sc.quote_ident(table)} {tail}", present, decode


def read_many(backend, reads: list[RowsRead | SelectRead]) -> list:
    """`Backend.read_many` on a libSQL server: READS sent together (`backend.execute_many`, one round trip).

    Each result is what `rows` / `select` return for that read; they run in one read transaction
    (`HranaConnection.execute_many`), so LIMIT_TO_COUNT is bound as no limit. Outside a load they first ask
    for text as text (`plain_text`), then, if the server could not send it so, for text as bytes. When a
    statement fails, the reads
    are run again one by one (`read_each`), so that each failure is handled and worded exactly as
    that read alone would have it (a JSONB value SQLite cannot decode is read raw; anything else
    raises StoreError). Transport failures raise StoreError at once.
    """
    backend.ready()
    return read_together(backend, reads)


def read_together(backend, reads: list[RowsRead | SelectRead]) -> list:
    """`read_many` on a BACKEND already `ready()`, whose `execute_many` reads STATEMENTS in one state of the
    database (a server: one read transaction; a file: see `FileBackend.read_many`)."""
    if backend.plain_text:
        plain = [_plain_plan(backend, read, tuple(-1 if p is LIMIT_TO_COUNT else p for p in read.params))
                 for read in reads]
        fetched = _plainly(backend, [(sql, params) for sql, params, _ in plain])
        if fetched is not None:
            return [finish(f) for (_, _, finish), f in zip(plain, fetched, strict=True)]
    plans = []
    try:
        for read in reads:
            # one transaction: "as many as counted" is every row (SQLite's LIMIT -1)
            params = tuple(-1 if p is LIMIT_TO_COUNT else p for p in read.params)
            if read.__class__ is RowsRead:
                sql, finish = _rows_plan(backend, read.sql, params)
                plans.append((sql, params, finish))
            else:
                sql, present, decode = _select_plan(backend, read.table, read.wanted, read.tail, read.lazy)
                plans.append((sql, params, (lambda fetched, p=present, d=decode: (p, fetched, d))))
        fetched = backend.execute_many([(sql, params) for sql, params, _ in plans])
    except StoreError:
        raise
    except BaseException as exc:
        if not contained(exc):
            raise
        return read_each(backend, reads)
    return [finish(f) for (_, _, finish), f in zip(plans, fetched, strict=True)]


def _plain_plan(backend, read: RowsRead | SelectRead, params: tuple) -> tuple[str, tuple, Callable[[list], Any]]:
    """READ's statement with text as text, its params and the function making `rows` / `select`'s result."""
    if read.__class__ is RowsRead:
        return read.sql, params, _as_fetched
    sql, present, decode = _select_plan(backend, read.table, read.wanted, read.tail, read.lazy, plain=True)
    return sql, params, (lambda fetched: (present, fetched, _plain_decoder(fetched, decode)))


def _plain_decoder(fetched: list[tuple], decode: Callable[[tuple], list]) -> Callable[[tuple], list]:
    """DECODE for rows read with text as text, or `list` when no value of FETCHED is bytes (a blob): then
    every row decodes to its values as they are (one C-level look at the values instead of a call per row)."""
    return decode if bytes in set(map(type, itertools.chain.from_iterable(fetched))) else list


def _select_raw(backend, table: str, present: list[str], tail: str, params: tuple,
                extra: str | None = None) -> list[list]:
    """The rows of `select`, JSONB blobs left to `_decode_blob` one by one (SQLite failed on one of them);
    EXTRA's value ends each row."""
    raw_select = ", ".join([*(text_safe_pair(sc.quote_ident(c)) for c in present), *([extra] if extra else [])])
    try:
        raw = backend.execute(f"SELECT {raw_select} FROM {sc.quote_ident(table)} {tail}", params)
    except StoreError:
        raise
    except Exception as exc:
        raise backend.fail(exc) from exc
    out, width = [], 2 * len(present)
    for r in raw:
        values = decode_pairs(r[:width], backend.encoding)
        out.append([*(_decode_blob(backend, v) if c in JSONB_COLUMNS else v
                      for c, v in zip(present, values)),  # noqa: B905  (per row: strict= slows zip)
                    *r[width:]])
    return out


def _decode_blob(backend, value: Any) -> Any:
    if not isinstance(value, (bytes, bytearray)):
        return value
    try:
        text = backend.execute("SELECT CAST(json(?) AS BLOB)", (bytes(value),))[0][0]
    except Exception:
        return bytes(value)
    return _decode(text, backend.encoding)


def select_column(backend, table: str, column: str, tail: str = "", params: Iterable[Any] = ()) -> list:
    """`Backend.select_column` on SQLite: one value a row, no dict a row (`threads --all` reads every id so)."""
    backend.ready()
    params = tuple(params)
    if column in JSONB_COLUMNS or not backend.schema.has_column(table, column):
        present, fetched, decode = _select(backend, table, [column], tail, params, None)
        with bulk_decode():
            return [dict(zip(present, decode(r))).get(column)  # noqa: B905  (per row: strict= slows zip)
                    for r in fetched]
    selected = _select_list(backend.schema, table, [column])[1]
    try:
        fetched = backend.execute(f"SELECT {selected} FROM {sc.quote_ident(table)} {tail}", params)
    except StoreError:
        raise
    except Exception as exc:
        raise backend.fail(exc) from exc
    encoding = backend.encoding
    try:
        return [v.decode(encoding) if isinstance(v, (bytes, bytearray)) else v for v, in fetched]
    except UnicodeDecodeError:
        return [_decode(v, encoding) for v, in fetched]


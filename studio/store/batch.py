"""Reads of many threads at once: one statement per kind of row, whatever the number of threads.

Over a network every statement is a round trip, so the OM status of 5,000 threads must not cost
5,000 message queries. `messages_since_many` sends the list of (thread or resource id, cursor)
pairs as one parameter (a JSON array read with `json_each` on libSQL, two text arrays `unnest`ed on
PostgreSQL) and returns each pair's messages exactly as `MemoryStore.list_messages` /
`list_resource_messages` with the same `since` would: the same condition, the same order.
`om_histories` returns every lookup key's generations in one statement.

The functions take the pieces of `MemoryStore`'s query API they use (its `fetch_messages`,
`select_rows`, `sql`), so the store's methods (`messages_since_many`, `iter_messages_since_many`,
`om_histories()`) call them without this module knowing the store.
"""

from __future__ import annotations

import json

from studio.store import schema as sc
from studio.store.cells import bulk_decode
from studio.store.records import om_record_from_row

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    from studio.store.backends import ReadSql
    from studio.store.records import Message, OMRecord

    FetchMessages = Callable[[str, Iterable[Any], Callable[[str], Any] | None], tuple[list, Callable[[Any], Message]]]

#: Which messages column a batch key names.
KEY_COLUMNS = {"thread": "thread_id", "resource": "resourceId"}


def _rounds(wanted: Iterable[tuple[str, str | None]]) -> list[dict[str, str | None]]:
    """Split (id, since) pairs into rounds holding each id once (an id asked with two cursors: two rounds)."""
    rounds: list[dict[str, str | None]] = []
    for key, since in sorted(set(wanted), key=lambda p: (p[0], p[1] is not None, p[1] or "")):
        for r in rounds:
            if key not in r:
                r[key] = since
                break
        else:
            rounds.append({key: since})
    return rounds


def cursor_tail(sql: ReadSql, column: str, cursors: dict[str, str | None]) -> tuple[str, list]:
    """The WHERE … ORDER BY tail (in SQL's dialect) selecting the messages of CURSORS ({id: since}) of COLUMN
    in storage order; with its params."""
    col = sc.quote_ident(column)
    if sql.name == "postgresql":  # a nested loop over the pairs on Mastra's (thread_id, createdAt) index
        created = sql.created(sc.MESSAGES)
        return (f"JOIN unnest(?::text[], ?::text[]) AS c(k, s) ON {col} = c.k "
                f"AND (c.s IS NULL OR {created} >= c.s::timestamptz) ORDER BY {col}, {sql.message_order}",
                [list(cursors), list(cursors.values())])
    # Each message row is reached from Mastra's (thread_id, createdAt) index entry, so a row the index
    # lists and the table does not hold (a damaged page) fails the read as SQLite's "malformed";
    # `WHERE rowid IN (those rowids)` skipped such rows silently (a status of 0 pending tokens).
    # list_messages' index scan yields createdAt ties in insertion (rowid) order: said here explicitly
    return (_sqlite_cursor_join(col) + f" ORDER BY m.{col}, m.{sql.message_order}, m.rowid",
            [json.dumps([[k, s] for k, s in cursors.items()])])


def _sqlite_cursor_join(col: str) -> str:
    """The FROM tail (after the messages table) joining each message to its (id, since) pair of a JSON array
    (`?`): `c.k` the id, `c.s` the since, `c.i` the pair's index in the array."""
    return ("AS m JOIN (SELECT json_extract(value, '$[0]') AS k, json_extract(value, '$[1]') AS s, key AS i "
            f"FROM json_each(?)) AS c ON m.{col} = c.k AND (c.s IS NULL OR m.\"createdAt\" >= c.s)")


class CursorPages:
    """The keyset pages (studio.store.hrana.Pages) of `cursor_tail`'s read on SQLite, for a libSQL server whose
    response limit refuses it whole: linear in the rows, where OFFSET pages re-run the join and sort each time.

    The pairs go in windows of consecutive ids (sorted as SQLite's BINARY collation sorts them: the read's
    order): a page reads the messages of one window's pairs in the read's order, from the window's first id on
    or, when the last page ended inside that id, after its last message (`(id column, createdAt, rowid) > those
    of rowid ?`), so the server joins and sorts only that window's rows. Each row ends with `c.i` (its pair's
    index in the window) and `m.rowid`: a full page ends inside its window, and the next starts at its last
    row's id, after that row; a shorter page ends the window, and the next starts after it. A window holds
    FIRST_WINDOW ids, then as many as the messages per id read so far say fill FILL of a page (at least one).
    SELECTED is the read's SELECT list (`SELECT … FROM` the messages table, the columns as selected).
    """

    key_width = 2
    #: Ids in the first window.
    FIRST_WINDOW = 64
    #: The share of a page a window aims to fill: a window that overflows the page makes the server sort rows
    #: the page leaves out (read again by the next page); one that falls short costs only a shorter page.
    FILL = 0.8

    def __init__(self, column: str, cursors: dict[str, str | None], selected: str):
        col, table = sc.quote_ident(column), sc.quote_ident(sc.MESSAGES)
        self._pairs = sorted(cursors.items(), key=lambda p: str(p[0]).encode("utf-8", "surrogatepass"))
        key = f'{col}, "createdAt", rowid'   # `cursor_tail`'s order (SqliteSql.message_order, then rowid)
        order = ", ".join(f"m.{k.strip()}" for k in key.split(","))
        head = f"SELECT {selected}, c.i, m.rowid FROM {table} {_sqlite_cursor_join(col)}"
        self._first_sql = f"{head} ORDER BY {order} LIMIT ?"
        self._after_sql = (f"{head} AND ({order}) > (SELECT {key} FROM {table} WHERE rowid = ?) "
                           f"ORDER BY {order} LIMIT ?")
        self.restart()

    def restart(self) -> None:
        """Read again from the first pair's first message."""
        self._start, self._width, self._after = 0, self.FIRST_WINDOW, None
        self._rows, self._ids = 0, 0.0   # messages read, and the ids they came from (a partly read id: a share)

    def statement(self, size: int) -> tuple[str, tuple] | None:
        """The next page (at most SIZE messages of the next window), or None when every pair was read."""
        if self._start >= len(self._pairs):
            return None
        if self._rows:
            self._width = max(1, int(size * self.FILL * self._ids / self._rows))
        window = json.dumps([list(p) for p in self._pairs[self._start:self._start + self._width]])
        if self._after is None:
            return self._first_sql, (window, size)
        return self._after_sql, (window, self._after, size)

    def took(self, rows: list[tuple], size: int) -> None:
        """Move past ROWS, the page `statement(SIZE)` made (each ending with its pair's index and rowid)."""
        self._rows += len(rows)
        if len(rows) < size:
            self._ids += self._width
            self._start, self._after = self._start + self._width, None
            return
        index, rowid = rows[-1][-2:]
        self._ids += index + 0.5
        self._start, self._after = self._start + index, rowid


class TablePages:
    """The keyset pages (studio.store.hrana.Pages) of a read of a whole TABLE in ORDER ((column, descending), …,
    a total order: its last column unique, e.g. rowid), for a libSQL server whose response limit refuses it whole.

    A page reads the rows after the last row read (its key looked up by its rowid, which ends each row of a
    page), the first column bounded below (`>= its value`) so that SQLite scans its index from there: each page
    costs about a page, where an OFFSET page makes the server read and sort every row before it again.
    SELECTED is the read's SELECT list (the columns as selected).
    """

    key_width = 1

    def __init__(self, table: str, order: tuple[tuple[str, bool], ...], selected: str):
        name = sc.quote_ident(table)
        cols = [c if c == "rowid" else sc.quote_ident(c) for c, _ in order]
        by = ", ".join(f"t.{c}{' DESC' if desc else ''}" for c, (_, desc) in zip(cols, order, strict=True))
        after = ""   # (c0 > k0 OR (c0 = k0 AND (c1 < k1 OR …))) for columns ascending (>) or descending (<)
        for i in reversed(range(len(cols))):
            step = f"t.{cols[i]} {'<' if order[i][1] else '>'} k.k{i}"
            after = f"({step} OR (t.{cols[i]} = k.k{i} AND {after}))" if after else step
        keys = ", ".join(f"{c} AS k{i}" for i, c in enumerate(cols))
        head = f"SELECT {selected}, t.rowid FROM {name} AS t"
        self._first_sql = f"{head} ORDER BY {by} LIMIT ?"
        bound = f"t.{cols[0]} {'<=' if order[0][1] else '>='} k.k0 AND "
        self._after_sql = (f"WITH k AS (SELECT {keys} FROM {name} WHERE rowid = ?) {head}, k "
                           f"WHERE {bound}{after} ORDER BY {by} LIMIT ?")
        self.restart()

    def restart(self) -> None:
        """Read again from the first row."""
        self._after, self._done = None, False

    def statement(self, size: int) -> tuple[str, tuple] | None:
        """The next page (at most SIZE rows), or None after the last."""
        if self._done:
            return None
        if self._after is None:
            return self._first_sql, (size,)
        return self._after_sql, (self._after, size)

    def took(self, rows: list[tuple], size: int) -> None:
        """Move past ROWS (each ending with its rowid); a page shorter than SIZE was the last."""
        self._done = len(rows) < size
        if rows:
            self._after = rows[-1][-1]


def iter_messages_since_many(fetch_messages: FetchMessages, sql: ReadSql, wanted: Iterable[tuple[str, str | None]],
                             by: str = "thread") -> Iterator[tuple[tuple[str, str | None], list[Message]]]:
    """Yield ((id, since), messages) for each pair of WANTED, one pair at a time; BY is "thread" or "resource".

    FETCH_MESSAGES and SQL: the store's (`MemoryStore.fetch_messages`, `MemoryStore.sql`).

    Each list equals `list_messages(id, since=since)` (or `list_resource_messages`): messages with
    `createdAt >= since` as the backend compares it (None = every message), in storage order; an
    id without messages gets []. One statement per round (an id asked with k cursors makes k
    rounds), fetched whole before the first pair is yielded; each pair's rows are decoded into
    Messages only when it is yielded, so a caller that drops each list holds one pair's decoded
    messages at a time (inspect of 5,000 threads: one thread's, not 130,000). Raises StoreError if
    the database cannot be read.
    """
    column = KEY_COLUMNS[by]
    for cursors in _rounds(wanted):
        tail, params = cursor_tail(sql, column, cursors)
        pages = None
        if sql.name == "sqlite":   # a libSQL server pages it by key when its answer is over the response limit
            def pages(selected: str, cursors=cursors) -> CursorPages:
                return CursorPages(column, cursors, selected)
        rows, read = fetch_messages(tail, params, pages)
        attribute = "thread_id" if by == "thread" else "resource_id"
        done: set[str] = set()
        group: list = []
        current = None
        with bulk_decode():
            for i, raw in enumerate(rows):
                rows[i] = None  # the fetched bytes go as soon as they are read
                message = read(raw)
                key = getattr(message, attribute)
                if key not in cursors:
                    key = str(key)
                if key != current:
                    if group and current is not None:
                        done.add(current)
                        yield (current, cursors[current]), group
                    current, group = key, []
                if key in cursors:
                    group.append(message)
            if group and current is not None:
                done.add(current)
                yield (current, cursors[current]), group
        for key, since in cursors.items():
            if key not in done:
                yield (key, since), []


def messages_since_many(fetch_messages: FetchMessages, sql: ReadSql, wanted: Iterable[tuple[str, str | None]],
                        by: str = "thread") -> dict[tuple[str, str | None], list[Message]]:
    """Return {(id, since): messages} for each pair of WANTED (`iter_messages_since_many`, kept whole)."""
    out: dict[tuple[str, str | None], list] = {}
    for pair, messages in iter_messages_since_many(fetch_messages, sql, wanted, by):
        out.setdefault(pair, []).extend(messages)
    return out


def om_histories(select_rows: Callable[..., list[dict]], sql: ReadSql) -> dict[str, list[OMRecord]]:
    """Return {lookupKey: its generations, newest (highest generationCount) first}, in one statement.

    SELECT_ROWS and SQL: the store's (`MemoryStore.select_rows`, `MemoryStore.sql`); the store has an OM table.
    On SQLite generations of one key with the same generationCount (a damaged store) come in rowid order, as
    SQLite's scan of Mastra's lookupKey index yields them, said explicitly so that a libSQL server can read the
    answer in keyset pages (`TablePages`) when it is over its response limit.
    """
    out: dict[str, list] = {}
    if sql.name == "sqlite":
        order = (("lookupKey", False), ("generationCount", True), ("rowid", False))
        rows = select_rows(sc.OBSERVATIONAL_MEMORY, 'ORDER BY "lookupKey", "generationCount" DESC, rowid',
                           pages=lambda selected: TablePages(sc.OBSERVATIONAL_MEMORY, order, selected))
    else:
        rows = select_rows(sc.OBSERVATIONAL_MEMORY, 'ORDER BY "lookupKey", "generationCount" DESC')
    with bulk_decode():
        for row in rows:
            out.setdefault(row.get("lookupKey"), []).append(om_record_from_row(row))
    return out

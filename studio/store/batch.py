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

    FetchMessages = Callable[[str, Iterable[Any]], tuple[list, Callable[[Any], Message]]]

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
    return ("AS m JOIN (SELECT json_extract(value, '$[0]') AS k, json_extract(value, '$[1]') AS s "
            f"FROM json_each(?)) AS c ON m.{col} = c.k AND (c.s IS NULL OR m.\"createdAt\" >= c.s) "
            f"ORDER BY m.{col}, m.{sql.message_order}, m.rowid",
            [json.dumps([[k, s] for k, s in cursors.items()])])


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
        rows, read = fetch_messages(tail, params)
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


def om_histories(select_rows: Callable[..., list[dict]]) -> dict[str, list[OMRecord]]:
    """Return {lookupKey: its generations, newest (highest generationCount) first}, in one statement.

    SELECT_ROWS: the store's (`MemoryStore.select_rows`); the store has an OM table.
    """
    out: dict[str, list] = {}
    rows = select_rows(sc.OBSERVATIONAL_MEMORY, 'ORDER BY "lookupKey", "generationCount" DESC')
    with bulk_decode():
        for row in rows:
            out.setdefault(row.get("lookupKey"), []).append(om_record_from_row(row))
    return out

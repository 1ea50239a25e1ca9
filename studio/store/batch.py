"""Reads of many threads at once: one statement per kind of row, whatever the number of threads.

Over a network every statement is a round trip, so the OM status of 5,000 threads must not cost
5,000 message queries. `messages_since_many` sends the list of (thread or resource id, cursor)
pairs as one parameter (a JSON array read with `json_each` on libSQL, two text arrays `unnest`ed on
PostgreSQL) and returns each pair's messages exactly as `MemoryStore.list_messages` /
`list_resource_messages` with the same `since` would: the same condition, the same order.
`om_histories` returns every lookup key's generations in one statement.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable, Iterator

from studio.store import schema as sc
from studio.store.cells import bulk_decode

if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore
    from studio.store.records import Message, OMRecord

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


def _tail(store: "MemoryStore", column: str, cursors: dict[str, str | None]) -> tuple[str, list]:
    """The WHERE … ORDER BY tail selecting the messages of CURSORS ({id: since}) in storage order."""
    col = sc.quote_ident(column)
    if store.dialect == "postgresql":  # a nested loop over the pairs on Mastra's (thread_id, createdAt) index
        created = store._created(sc.MESSAGES)
        return (f"JOIN unnest(?::text[], ?::text[]) AS c(k, s) ON {col} = c.k "
                f"AND (c.s IS NULL OR {created} >= c.s::timestamptz) ORDER BY {col}, {store.MESSAGE_ORDER}",
                [list(cursors), list(cursors.values())])
    # Each message row is reached from Mastra's (thread_id, createdAt) index entry, so a row the index
    # lists and the table does not hold (a damaged page) fails the read as SQLite's "malformed";
    # `WHERE rowid IN (those rowids)` skipped such rows silently (a status of 0 pending tokens).
    # list_messages' index scan yields createdAt ties in insertion (rowid) order: said here explicitly
    return ("AS m JOIN (SELECT json_extract(value, '$[0]') AS k, json_extract(value, '$[1]') AS s "
            f"FROM json_each(?)) AS c ON m.{col} = c.k AND (c.s IS NULL OR m.\"createdAt\" >= c.s) "
            f"ORDER BY m.{col}, m.{store.MESSAGE_ORDER}, m.rowid",
            [json.dumps([[k, s] for k, s in cursors.items()])])


def iter_messages_since_many(store: "MemoryStore", wanted: Iterable[tuple[str, str | None]],
                             by: str = "thread") -> Iterator[tuple[tuple[str, str | None], list["Message"]]]:
    """Yield ((id, since), messages) for each pair of WANTED, one pair at a time; BY is "thread" or "resource".

    Each list equals `list_messages(id, since=since)` (or `list_resource_messages`): messages with
    `createdAt >= since` as the backend compares it (None = every message), in storage order; an
    id without messages gets []. One statement per round (an id asked with k cursors makes k
    rounds), fetched whole before the first pair is yielded; each pair's rows are decoded into
    Messages only when it is yielded, so a caller that drops each list holds one pair's decoded
    messages at a time (inspect of 5,000 threads: one thread's, not 130,000). Raises StoreError if
    the database cannot be read.
    """
    from studio.store.memory_store import MESSAGE_COLUMNS

    column = KEY_COLUMNS[by]
    for cursors in _rounds(wanted):
        tail, params = _tail(store, column, cursors)
        present, rows, decode = store._select_undecoded(sc.MESSAGES, MESSAGE_COLUMNS, tail, params)
        read = store._message_reader(present, decode)
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


def messages_since_many(store: "MemoryStore", wanted: Iterable[tuple[str, str | None]],
                        by: str = "thread") -> dict[tuple[str, str | None], list["Message"]]:
    """Return {(id, since): messages} for each pair of WANTED (`iter_messages_since_many`, kept whole)."""
    out: dict[tuple[str, str | None], list] = {}
    for pair, messages in iter_messages_since_many(store, wanted, by):
        out.setdefault(pair, []).extend(messages)
    return out


def om_histories(store: "MemoryStore") -> dict[str, list["OMRecord"]]:
    """Return {lookupKey: its generations, newest (highest generationCount) first}, in one statement."""
    if not store.schema.has_observational_memory:
        return {}
    out: dict[str, list] = {}
    rows = store._select(sc.OBSERVATIONAL_MEMORY, [], 'ORDER BY "lookupKey", "generationCount" DESC')
    with bulk_decode():
        for row in rows:
            out.setdefault(row.get("lookupKey"), []).append(store._om(row))
    return out

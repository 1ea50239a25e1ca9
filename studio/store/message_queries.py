"""Queries of the studio's Messages tab: a thread's messages by date range and metadata, in storage order.

The conditions are recall's (`studio.store.history.add_message_terms`), on either backend; storage
order is createdAt, then insertion (libSQL) or id (PostgreSQL, as MemoryPG orders). On MongoDB the
same conditions are a filter document (`MongoMemoryStore.message_query`), createdAt ascending with
ties as the server returns them (MongoDBStore.listMessages), metadata filtered after the read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from studio.common.metadata_filter import message_metadata_matches
from studio.store import schema as sc
from studio.store.history import add_message_terms
from studio.store.memory_store import MemoryStore
from studio.store.records import Message


def _thread_terms(store: MemoryStore, thread_id: str, start: str | None, end: str | None,
                  metadata: dict | None) -> tuple[str, list[Any], bool]:
    """(WHERE, params, filter metadata in Python) of THREAD_ID's messages within [START, END] and METADATA.

    Bounds compare as recall's do (libSQL: the stored ISO strings; PostgreSQL: the TIMESTAMPTZ twin
    first); METADATA (validated) is SQL on libSQL, Mastra's post-read filter on PostgreSQL.
    """
    terms, params = ["thread_id = ?"], [thread_id]
    post = add_message_terms(store, terms, params, start, end, metadata)
    return "WHERE " + " AND ".join(terms), params, post


def thread_message_ids(store: MemoryStore, thread_id: str, *, start: str | None = None, end: str | None = None,
                       metadata: dict | None = None) -> list[str]:
    """Return the ids of THREAD_ID's messages within [START, END] matching METADATA, in storage order."""
    if store.dialect == "mongodb":
        return [m.id for batch in iter_thread_messages(store, thread_id, start=start, end=end, metadata=metadata)
                for m in batch]
    where, params, post = _thread_terms(store, thread_id, start, end, metadata)
    if post:
        return [m.id for m in iter_thread_messages(store, thread_id, start=start, end=end, metadata=metadata)]
    return [r[0] for r in store.rows(f"SELECT id FROM {sc.MESSAGES} {where} ORDER BY {store.message_order}", params)]


def iter_thread_messages(store: MemoryStore, thread_id: str, *, start: str | None = None, end: str | None = None,
                         metadata: dict | None = None, batch: int = 2000) -> Iterator[list[Message]]:
    """Yield THREAD_ID's messages within [START, END] matching METADATA, BATCH rows a list, in storage order.

    A batch may hold fewer than BATCH messages when the metadata filter runs after the read (PostgreSQL).
    """
    if store.dialect == "mongodb":
        query, offset = store.message_query([thread_id], start=start, end=end), 0
        while True:
            messages = store.find_messages(query, [("createdAt", 1)], skip=offset, limit=batch)
            yield [m for m in messages if message_metadata_matches(m.content, metadata)] if metadata else messages
            if len(messages) < batch:
                return
            offset += batch
    where, params, post = _thread_terms(store, thread_id, start, end, metadata)
    offset = 0
    while True:
        messages = store.select_messages(f"{where} ORDER BY {store.message_order} LIMIT ? OFFSET ?",
                                         [*params, batch, offset])
        yield [m for m in messages if message_metadata_matches(m.content, metadata)] if post else messages
        if len(messages) < batch:
            return
        offset += batch


def messages_by_id(store: MemoryStore, ids: list[str], chunk: int = 500) -> dict[str, Message]:
    """Return {id: message} for those of IDS that exist (CHUNK ids a query)."""
    found: dict[str, Message] = {}
    for i in range(0, len(ids), chunk):
        part = ids[i:i + chunk]
        if store.dialect == "mongodb":
            found.update((m.id, m) for m in store.find_messages({"id": {"$in": part}}))
            continue
        for message in store.select_messages(f"WHERE id IN ({', '.join('?' * len(part))})", part):
            found[message.id] = message
    return found


def message_position(store: MemoryStore, thread_id: str, message_id: str) -> int:
    """Return MESSAGE_ID's row in THREAD_ID's storage order (`MemoryStore.message_order`), or -1."""
    if store.dialect == "mongodb":
        ids = thread_message_ids(store, thread_id)
        return ids.index(message_id) if message_id in ids else -1
    tie = "id" if store.dialect == "postgresql" else "rowid"
    rows = store.rows(f'SELECT "createdAt", {tie} FROM {sc.MESSAGES} WHERE id = ? AND thread_id = ?',
                      [message_id, thread_id])
    if not rows:
        return -1
    created, key = rows[0]
    before = store.rows(
        f'SELECT COUNT(*) FROM {sc.MESSAGES} WHERE thread_id = ? AND ("createdAt" < ? OR ("createdAt" = ? '
        f"AND {tie} < ?))", [thread_id, created, created, key])
    return int(before[0][0])

"""Clone a thread, delete messages, clear a thread: Mastra's Memory writes, each as one transaction.

- `clone_thread` mirrors `Memory.cloneThread` (@mastra/memory 1.31.0) over
  `MemoryLibSQL.copyThread` (@mastra/libsql 1.23.1): the same message selection SQL, new UUIDs,
  `metadata.clone`, the default title, the thread's current OM record copied with its ids remapped
  (thread scope always; resource scope only into another resource), and, when the caller says
  working memory is enabled, the working memory copied as Mastra copies it. Mastra writes these in
  several steps (and undoes them on failure); here they are one transaction.
- `delete_messages` mirrors `Memory.deleteMessages` → `MemoryLibSQL.deleteMessages`: the rows are
  deleted and the `updatedAt` of every thread that lost a message is set to now. OM records are
  not touched (Mastra leaves `observedMessageIds` as they are).
- `clear_thread` deletes all of a thread's messages the same way (the thread itself stays).
- `delete_thread` mirrors `Memory.deleteThread`: the thread's owned reminder thread first, then the thread — each
  one's messages and row (the store's deleteThread), its thread-scope OM records (`clearObservationalMemory`),
  and its vectors in the store's own vector indexes (LibSQLVector's `memory_messages*` / `memory_observations*`
  tables in the same file or server; on PostgreSQL the `memory_messages*` tables PostgresStore.deleteThread
  clears). Mastra writes these in several steps; here they are one transaction.
- `update_thread` mirrors `Memory.updateThread` over the store's updateThread: a new title (None keeps it; "" is a
  title), metadata merged key by key into the stored object (`{...stored, ...patch}`: a key is replaced or added,
  never removed), `updatedAt` now.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from studio.common.jscompat import node_utf8
from studio.errors import WriteRefused
from studio.store.records import parse_json
from studio.store.schema import MESSAGES, OBSERVATIONAL_MEMORY, RESOURCES, THREADS
from studio.store.write.common import (
    check_datetime,
    delete_rows,
    iso,
    js_date_round_trip,
    js_parse,
    json_value,
    latest_om_row,
    new_id,
    now_ms_or_clock,
    read_row,
    read_thread,
    stringify,
    thread_metadata,
    to_int,
    update_row,
)
from studio.store.write.own_writes import remember_write
from studio.store.write.transaction import write_transaction
from studio.store.write.tx import Jsonb, WriteTx
from studio.store.write.xxhash import h32_to_string

__all__ = ["DELETE_BATCH_SIZE", "check_thread_exists", "clear_thread", "clone_thread", "delete_messages",
           "delete_thread", "reminder_thread_id", "update_thread"]

#: Mastra deletes messages in batches of 100 ids (SQL parameter limits).
DELETE_BATCH_SIZE = 100
MESSAGE_COLUMNS = ["id", "thread_id", "content", "role", "type", "createdAt", "resourceId"]
WORKING_MEMORY_SCOPES = (None, "thread", "resource")


def _message_query(tx: WriteTx, source_thread_id: str, start: str | None, end: str | None, ids: list[str] | None,
                   limit: int | None) -> tuple[str, list[Any]]:
    """Return copyThread's message selection (SQL text and parameters), verbatim where order depends on it.

    The store's dialect gives the time the date filter compares and the subquery's alias.
    """
    sql = 'SELECT id, "createdAt"\n                          FROM "mastra_messages" WHERE thread_id = ?'
    params: list[Any] = [source_thread_id]
    if start:
        sql += f' AND {tx.clone_message_time} >= ?'
        params.append(start)
    if end:
        sql += f' AND {tx.clone_message_time} <= ?'
        params.append(end)
    if ids:
        sql += f" AND id IN ({', '.join('?' for _ in ids)})"
        params.extend(ids)
    sql += ' ORDER BY "createdAt" ASC'
    if limit:
        newest_first = sql.replace('ORDER BY "createdAt" ASC', 'ORDER BY "createdAt" DESC')
        sql = f'SELECT * FROM ({newest_first} LIMIT ?){tx.subquery_alias} ORDER BY "createdAt" ASC'
        params.append(limit)
    return sql, params


def _mongo_clone_messages(tx: WriteTx, source_thread_id: str, start: str | None, end: str | None,
                          ids: list[str] | None, limit: int | None) -> list[dict]:
    """The source messages MongoDBStore.cloneThread copies, as stored: `find({thread_id, createdAt: {$gte, $lte}
    (Dates), id: {$in}}).sort({createdAt: 1})`, or with a limit the newest LIMIT (`sort -1`, `limit`) reversed."""
    from studio.store.backends.mongodb import iso_to_bson_date

    query: dict[str, Any] = {"thread_id": source_thread_id}
    created = {}
    if start:
        created["$gte"] = iso_to_bson_date(start)
    if end:
        created["$lte"] = iso_to_bson_date(end)
    if created:
        query["createdAt"] = created
    if ids:
        query["id"] = {"$in": list(ids)}
    if limit:
        return list(reversed(tx.find(MESSAGES, query, [("createdAt", -1)], limit=limit)))
    return tx.find(MESSAGES, query, [("createdAt", 1)])


def _check_options(new_thread_id, title, resource_id, metadata, message_limit, message_ids, working_memory_scope):
    for name, value in (("new_thread_id", new_thread_id), ("title", title), ("resource_id", resource_id)):
        if value is not None and not isinstance(value, str):
            raise WriteRefused("invalid", f"{name} must be a string, not {type(value).__name__}")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise WriteRefused("invalid", f"metadata must be a dict, not {type(metadata).__name__}")
        try:
            json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise WriteRefused("invalid", f"metadata must hold JSON values only: {exc}") from exc
    if message_limit is not None and (isinstance(message_limit, bool) or not isinstance(message_limit, int)
                                      or message_limit < 0):
        raise WriteRefused("invalid", f"message_limit must be an int >= 0 (0 = all messages), not {message_limit!r}")
    if message_ids is not None and (isinstance(message_ids, (str, bytes))
                                    or not all(isinstance(i, str) and i for i in message_ids)):
        raise WriteRefused("invalid", "message_ids must be a list of non-empty strings")
    if working_memory_scope not in WORKING_MEMORY_SCOPES:
        raise WriteRefused("invalid",
                           f"working_memory_scope must be None, 'thread' or 'resource', not {working_memory_scope!r}")


def _remap_ids(value: Any, id_map: dict[str, str]) -> Any:
    return [id_map[i] for i in value if isinstance(i, str) and id_map.get(i)]


def _clone_om(tx: WriteTx, source: dict, new_thread: dict, id_map: dict[str, str], now: str) -> str | None:
    """Copy the source thread's current OM record to the clone as Memory.cloneObservationalMemory does."""
    if not tx.schema.has_observational_memory or not source.get("resourceId"):
        return None
    src_resource = source["resourceId"]
    record = latest_om_row(tx, f"thread:{source['id']}") or latest_om_row(tx, f"resource:{src_resource}")
    if record is None:
        return None
    resource_changed = new_thread["resourceId"] != src_resource
    if record.get("scope") == "resource" and not resource_changed:
        return None  # resource-scoped OM is shared by the resource's threads
    thread_id = new_thread["id"] if record.get("scope") == "thread" else None
    if tx.dialect == "mongodb":   # the stored document: arrays, embedded documents and Dates as they are
        record = tx.find_one(OBSERVATIONAL_MEMORY, {"id": record["id"]})
    observed = (js_parse(record.get("observedMessageIds"), "observedMessageIds")
                if record.get("observedMessageIds") else None)
    chunks = js_parse(record.get("bufferedObservationChunks"), "bufferedObservationChunks") \
        if record.get("bufferedObservationChunks") else None
    chunks = [{**c, "messageIds": _remap_ids(c.get("messageIds"), id_map) if isinstance(c.get("messageIds"), list)
               else []} for c in chunks if isinstance(c, dict)] if isinstance(chunks, list) else None
    active = record.get("activeObservations") or ""
    buffered_reflection = record.get("bufferedReflection") or None
    if resource_changed:
        src_tag, new_tag = h32_to_string(node_utf8(source["id"])), h32_to_string(node_utf8(new_thread["id"]))
        if src_tag != new_tag:
            old, new = f'<thread id="{src_tag}">', f'<thread id="{new_tag}">'
            active = active.replace(old, new)
            buffered_reflection = buffered_reflection.replace(old, new) if buffered_reflection else buffered_reflection
            if chunks:
                chunks = [{**c, "observations": c["observations"].replace(old, new)}
                          if isinstance(c.get("observations"), str) and c["observations"] else c for c in chunks]
    record_id = new_id()
    if tx.dialect == "mongodb":
        from studio.store.write.mongo_documents import cloned_om_document

        tx.insert(OBSERVATIONAL_MEMORY, cloned_om_document(
            record, record_id=record_id, thread_id=thread_id, resource_id=new_thread["resourceId"],
            observed_ids=_remap_ids(observed, id_map) if isinstance(observed, list) else None, chunks=chunks,
            active=active, buffered_reflection=buffered_reflection, now=now))
        return record_id
    config = record.get("config")
    metadata = record.get("metadata")
    tx.insert(OBSERVATIONAL_MEMORY, {
        "id": record_id,
        "lookupKey": f"thread:{thread_id}" if thread_id else f"resource:{new_thread['resourceId']}",
        "scope": record.get("scope"),
        "resourceId": new_thread["resourceId"],
        "threadId": thread_id,
        "activeObservations": active,
        "activeObservationsPendingUpdate": None,
        "originType": record.get("originType") or "initial",
        "config": stringify(js_parse(config, "OM record config") if config else {}),
        "generationCount": to_int(record.get("generationCount")),
        "lastObservedAt": js_date_round_trip(record.get("lastObservedAt")),
        "lastReflectionAt": None,
        "pendingMessageTokens": to_int(record.get("pendingMessageTokens")),
        "totalTokensObserved": to_int(record.get("totalTokensObserved")),
        "observationTokenCount": to_int(record.get("observationTokenCount")),
        "observedMessageIds": stringify(_remap_ids(observed, id_map)) if isinstance(observed, list) else None,
        "bufferedObservationChunks": stringify(chunks) if chunks is not None else None,
        "bufferedReflection": buffered_reflection,
        "bufferedReflectionTokens": to_int(record.get("bufferedReflectionTokens")) or None,
        "bufferedReflectionInputTokens": to_int(record.get("bufferedReflectionInputTokens")) or None,
        "reflectedObservationLineCount": to_int(record.get("reflectedObservationLineCount")) or None,
        "isObserving": 0,
        "isReflecting": 0,
        "isBufferingObservation": 0,
        "isBufferingReflection": 0,
        "lastBufferedAtTokens": to_int(record.get("lastBufferedAtTokens")),
        "lastBufferedAtTime": js_date_round_trip(record.get("lastBufferedAtTime")),
        "observedTimezone": record.get("observedTimezone") or None,
        "metadata": stringify(js_parse(metadata, "OM record metadata")) if metadata else None,
        "createdAt": now,
        "updatedAt": now,
    })
    return record_id


def _copy_working_memory(tx: WriteTx, scope: str, source: dict, new_thread: dict, now: str) -> None:
    """Copy working memory as Memory.copyThread does when working memory is enabled with SCOPE."""
    if scope == "thread":
        wm = thread_metadata(source).get("workingMemory")
        if wm:  # getWorkingMemory returns null for a missing / empty value
            meta = dict(new_thread["metadata"])
            meta["workingMemory"] = wm
            values = {"metadata": json_value(tx, meta), "updatedAt": now}
            if tx.dialect == "mongodb":   # patchThread backfills the title for updateThread
                values = {"title": new_thread["title"], **values}
            update_row(tx, THREADS, read_thread(tx, new_thread["id"]), values)
        return
    mongo = tx.dialect == "mongodb"   # MongoDB makes the collection on the first insert
    if new_thread["resourceId"] == source["resourceId"] or not (mongo or tx.schema.has_table(RESOURCES)):
        return  # the same resource shares its working memory naturally
    row = read_row(tx, RESOURCES, source["resourceId"])
    wm = row.get("workingMemory") if row else None
    if not wm:
        return
    target = read_row(tx, RESOURCES, new_thread["resourceId"])
    if target is not None:
        update_row(tx, RESOURCES, target, {"updatedAt": now, "workingMemory": wm} if mongo
                   else {"workingMemory": wm, "updatedAt": now})
    elif mongo:
        tx.upsert(RESOURCES, new_thread["resourceId"], {"id": new_thread["resourceId"], "workingMemory": wm,
                                                         "metadata": {}, "createdAt": now, "updatedAt": now})
    else:
        tx.insert(RESOURCES, {"id": new_thread["resourceId"], "workingMemory": wm, "metadata": Jsonb("{}"),
                              "createdAt": now, "updatedAt": now})


def _message_dict(row: dict) -> dict:
    content, _ = parse_json(row.get("content"))
    return {"id": row["id"], "threadId": row.get("thread_id"), "resourceId": row.get("resourceId"),
            "role": row.get("role"), "type": row.get("type"), "createdAt": row.get("createdAt"),
            "content": content if content is not None else row.get("content")}


def check_clone_ids(path: str | os.PathLike[str], source_thread_id: str, new_thread_id: str | None = None) -> None:
    """Refuse a clone of PATH that cannot succeed, on a read-only open: before its backup, so none is left behind.

    Raises WriteRefused("not-found") when SOURCE_THREAD_ID is no thread and WriteRefused("conflict") when
    NEW_THREAD_ID is taken, with clone_thread's sentences; clone_thread checks both again in its transaction.
    StoreError / SchemaError as open_store raises them.
    """
    from studio.store import open_store

    with open_store(path) as store, store.snapshot():
        if isinstance(source_thread_id, str) and source_thread_id and store.get_thread(source_thread_id) is None:
            raise WriteRefused("not-found", f"There is no thread {source_thread_id!r} to clone.")
        if isinstance(new_thread_id, str) and new_thread_id and store.get_thread(new_thread_id) is not None:
            raise WriteRefused("conflict", f"A thread with id {new_thread_id!r} already exists; choose another id.")


def clone_thread(path: str | os.PathLike[str], source_thread_id: str, *, new_thread_id: str | None = None,
                 title: str | None = None, resource_id: str | None = None, metadata: dict | None = None,
                 message_limit: int | None = None, start_date: Any = None, end_date: Any = None,
                 message_ids: Iterable[str] | None = None, now_ms: int | None = None,
                 working_memory_scope: str | None = None, busy_timeout_ms: int | None = None) -> dict:
    """Clone SOURCE_THREAD_ID into a new thread exactly as Mastra's Memory.cloneThread does; one transaction.

    NEW_THREAD_ID: default a random UUID. TITLE: default "Clone of <source title>" ("" when the
    source has none). RESOURCE_ID: default the source's. METADATA (dict): the app's metadata; Mastra
    adds `clone = {sourceThreadId, clonedAt, lastMessageId}`. Messages (new UUIDs, content / role /
    type / createdAt copied in SQL): those with createdAt >= START_DATE and <= END_DATE (ISO string
    compared as stored, or a datetime / epoch ms), whose id is in MESSAGE_IDS (when non-empty), the
    newest MESSAGE_LIMIT of them (0 or None: all), in createdAt order. The source's current OM
    record is copied with remapped message ids (thread scope; resource scope only into another
    resource). WORKING_MEMORY_SCOPE: None = working memory disabled (Mastra's default, nothing
    copied); "thread" / "resource" = copied as Mastra does with working memory enabled in that scope.

    Returns {"thread": {id, resourceId, title, metadata, createdAt, updatedAt}, "messages": [{id,
    threadId, resourceId, role, type, createdAt, content}] (createdAt order), "messageIdMap":
    {source id: new id}, "omRecordId": id of the copied OM record or None}. Raises WriteRefused
    ("invalid", "not-found": no source thread, "conflict": NEW_THREAD_ID exists, "busy") and
    StoreError; nothing is written then.
    """
    if not isinstance(source_thread_id, str) or not source_thread_id:
        raise WriteRefused("invalid", "source_thread_id must be a non-empty string")
    ids = list(message_ids) if message_ids is not None and not isinstance(message_ids, (str, bytes)) else message_ids
    _check_options(new_thread_id, title, resource_id, metadata, message_limit, ids, working_memory_scope)
    start, end = check_datetime(start_date, "start_date"), check_datetime(end_date, "end_date")
    now = iso(now_ms_or_clock(now_ms))
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="clone") as tx:
        source = read_thread(tx, source_thread_id)
        if source is None:
            raise WriteRefused("not-found", f"There is no thread {source_thread_id!r} to clone.")
        thread_id = new_thread_id or new_id()
        if read_thread(tx, thread_id) is not None:
            raise WriteRefused("conflict", f"A thread with id {thread_id!r} already exists; choose another id.")
        mongo = tx.dialect == "mongodb"
        if mongo:
            docs = _mongo_clone_messages(tx, source_thread_id, start, end, ids, message_limit)
            selected = [d["id"] for d in docs]
        else:
            sql, params = _message_query(tx, source_thread_id, start, end, ids, message_limit)
            selected = [r[0] for r in tx.rows(sql, params)]
        clone_meta: dict[str, Any] = {"sourceThreadId": source_thread_id, "clonedAt": now}
        if mongo:   # a Date inside the embedded document (MongoDBStore.cloneThread)
            from studio.store.backends.mongodb import iso_to_bson_date

            clone_meta["clonedAt"] = iso_to_bson_date(now)
        if selected:
            clone_meta["lastMessageId"] = selected[-1]
        thread_metadata_out = dict(metadata or {})
        thread_metadata_out["clone"] = clone_meta
        source_title = source.get("title")
        thread = {"id": thread_id, "resourceId": resource_id or source["resourceId"],
                  "title": title or (f"Clone of {source_title}" if source_title else ""),
                  "metadata": thread_metadata_out, "createdAt": now, "updatedAt": now}
        tx.insert(THREADS, {"id": thread_id, "resourceId": thread["resourceId"], "title": thread["title"],
                            "metadata": json_value(tx, thread_metadata_out), "createdAt": now, "updatedAt": now})
        id_map: dict[str, str] = {}
        if mongo:   # one insertMany of the copies (type defaulting to "v2", createdAt the source's Date)
            copies = []
            for doc in docs:
                id_map[doc["id"]] = copied = new_id()
                copies.append({"id": copied, "thread_id": thread_id, "content": doc.get("content"),
                               "role": doc.get("role"), "type": doc.get("type") or "v2",
                               "createdAt": doc.get("createdAt"), "resourceId": thread["resourceId"]})
            tx.insert_many(MESSAGES, copies)
        for source_id in [] if mongo else selected:
            copied = new_id()
            id_map[source_id] = copied
            changed = tx.copy_message(source_id, copied, thread_id, thread["resourceId"])
            if changed != 1:
                raise WriteRefused("conflict",
                                   f"Message {source_id} changed while it was being copied; nothing was written.")
        if working_memory_scope:
            _copy_working_memory(tx, working_memory_scope, source, thread, now)
        om_id = _clone_om(tx, source, thread, id_map, now)
        if mongo:
            from studio.store.backends.mongodb import to_mastra

            rows = tx.decoded(MESSAGES, {"thread_id": thread_id}, [("createdAt", 1)])
            thread["metadata"] = to_mastra(thread["metadata"])
        else:
            rows = tx.select(MESSAGES, 'WHERE thread_id = ? ORDER BY "createdAt" ASC', (thread_id,),
                             wanted=MESSAGE_COLUMNS)
    return {"thread": thread, "messages": [_message_dict(r) for r in rows], "messageIdMap": id_map, "omRecordId": om_id}


def _delete(tx: WriteTx, ids: list[str], now: str) -> int:
    if tx.dialect == "mongodb":   # MongoDBStore.deleteMessages: find the threads, deleteMany, updateMany threads
        docs = [d for i in range(0, len(ids), tx.bulk) for d in tx.find(MESSAGES, {"id": {"$in": ids[i:i + tx.bulk]}})]
        tx.delete_many(MESSAGES, docs)
        tx.touch_threads(list(dict.fromkeys(d.get("thread_id") for d in docs if d.get("thread_id"))), now)
        return len(docs)
    deleted, threads = 0, []
    for i in range(0, len(ids), DELETE_BATCH_SIZE):
        batch = ids[i:i + DELETE_BATCH_SIZE]
        marks = ",".join("?" for _ in batch)
        for (tid,) in tx.rows(f'SELECT DISTINCT thread_id FROM "mastra_messages" WHERE id IN ({marks})', batch):
            if tid and tid not in threads:
                threads.append(tid)
        deleted += tx.delete(MESSAGES, f"id IN ({marks})", batch)
    tx.touch_threads(threads, now)
    return deleted


def delete_messages(path: str | os.PathLike[str], ids: Iterable[str], *, now_ms: int | None = None,
                    busy_timeout_ms: int | None = None) -> int:
    """Delete the messages with IDS as Mastra's Memory.deleteMessages does; return how many rows went.

    IDS: message ids (non-empty strings; an empty list writes nothing and returns 0). Unknown ids
    are ignored, as in Mastra. Every thread that lost a message gets `updatedAt` = now. Raises
    WriteRefused("invalid") for bad ids, WriteRefused("busy") and StoreError; nothing is written then.
    """
    if isinstance(ids, (str, bytes)):
        raise WriteRefused("invalid", "ids must be a list of message ids, not a single string")
    ids = list(ids)
    if not all(isinstance(i, str) and i for i in ids):
        raise WriteRefused("invalid", "All message ids must be non-empty strings")
    if not ids:
        return 0
    stamp = now_ms_or_clock(now_ms)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="delete-messages") as tx:
        deleted = _delete(tx, list(dict.fromkeys(ids)), iso(stamp))
    remember_write(tx.location, stamp)  # the threads' updatedAt: the studio's, not the agent's
    return deleted


def clear_thread(path: str | os.PathLike[str], thread_id: str, *, now_ms: int | None = None,
                 busy_timeout_ms: int | None = None) -> int:
    """Delete every message of THREAD_ID (the thread stays) as deleteMessages would; return how many went.

    The thread's `updatedAt` is set to now when it had messages; OM records are not touched.
    Raises WriteRefused ("invalid", "not-found": no such thread, "busy") and StoreError.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise WriteRefused("invalid", "thread_id must be a non-empty string")
    stamp = now_ms_or_clock(now_ms)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="clear-thread") as tx:
        if read_thread(tx, thread_id, lock=True) is None:
            raise WriteRefused("not-found", f"There is no thread {thread_id!r}.")
        if tx.dialect == "mongodb":
            ids = [d["id"] for d in tx.find(MESSAGES, {"thread_id": thread_id}, [("createdAt", 1)])]
        else:
            ids = [r[0] for r in tx.rows('SELECT id FROM "mastra_messages" WHERE thread_id = ? ORDER BY "createdAt"',
                                         (thread_id,))]
        deleted = _delete(tx, ids, iso(stamp)) if ids else 0
    if deleted:
        remember_write(tx.location, stamp)  # the thread's updatedAt: the studio's, not the agent's
    return deleted


#: The prefixes of the vector indexes Memory.deleteThreadVectors clears (messages, observations).
VECTOR_INDEX_PREFIXES = ("memory_messages", "memory_observations")


def reminder_thread_id(thread_id: str) -> str:
    """The id of THREAD_ID's reminder thread (@mastra/memory's getRemindThreadId)."""
    return f"subconscious:{thread_id}:remind"


def _vector_tables(tx: WriteTx) -> list[str]:
    """The store's own vector indexes a thread delete clears, in name order.

    SQLite / libSQL: LibSQLVector.listIndexes (tables whose SQL holds F32_BLOB) with Memory's two prefixes.
    PostgreSQL: the `memory_messages` / `memory_messages_*` tables of the schema (PostgresStore.deleteThread).
    """
    if tx.dialect == "mongodb":   # MongoDBVector's indexes need Atlas Search: none here (docs/mongodb-backend.md)
        return []
    if tx.dialect == "postgresql":
        names = [r[0] for r in tx.rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                                       "AND (tablename = 'memory_messages' OR tablename LIKE 'memory_messages_%')")]
        return sorted(names)
    names = [r[0] for r in tx.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%F32_BLOB%'")]
    return sorted(n for n in names if n.startswith(VECTOR_INDEX_PREFIXES))


def _delete_stored_thread(tx: WriteTx, thread_id: str, resource_id: str | None, vector_tables: list[str]) -> dict:
    """Memory.deleteStoredThread of one thread; return {messages, threads, om_records, vectors} deleted."""
    done = {"messages": delete_rows(tx, MESSAGES, "thread_id", thread_id),
            "threads": delete_rows(tx, THREADS, "id", thread_id), "om_records": 0, "vectors": 0}
    if resource_id and tx.schema.has_observational_memory:
        done["om_records"] = delete_rows(tx, OBSERVATIONAL_MEMORY, "lookupKey", f"thread:{thread_id}")
    for table in vector_tables:
        where = ("metadata->>'thread_id' = ?" if tx.dialect == "postgresql"
                 else "json_extract(metadata, '$.thread_id') = ?")
        done["vectors"] += tx.delete(table, where, [thread_id])
    return done


def check_thread_exists(path: str | os.PathLike[str], thread_id: str) -> None:
    """Refuse a write to THREAD_ID of PATH that cannot succeed, on a read-only open: before a backup, so none is
    left behind. Raises WriteRefused("not-found") with delete_thread's sentence; StoreError as open_store raises."""
    from studio.store import open_store

    with open_store(path) as store, store.snapshot():
        if isinstance(thread_id, str) and thread_id and store.get_thread(thread_id) is None:
            raise WriteRefused("not-found", f"There is no thread {thread_id!r}.")


def delete_thread(path: str | os.PathLike[str], thread_id: str, *, now_ms: int | None = None,
                  busy_timeout_ms: int | None = None) -> dict:
    """Delete THREAD_ID as Mastra's Memory.deleteThread does, in one transaction; return what went.

    Returns {"thread_ids": [the reminder thread (when owned), THREAD_ID], "messages", "threads", "om_records",
    "vectors": rows deleted}. The reminder thread `subconscious:<id>:remind` goes too when it is owned (same
    resource, `metadata.subconsciousRemindParentThreadId` = THREAD_ID). OM records are cleared for thread
    scope only (`lookupKey` thread:<id>; a resource's shared record stays, as in Mastra). Raises
    WriteRefused ("invalid", "not-found": no such thread, "busy") and StoreError; nothing is written then.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise WriteRefused("invalid", "thread_id must be a non-empty string")
    stamp = now_ms_or_clock(now_ms)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="delete-thread") as tx:
        thread = read_thread(tx, thread_id, lock=True)
        if thread is None:
            raise WriteRefused("not-found", f"There is no thread {thread_id!r}.")
        resource_id = thread.get("resourceId")
        vector_tables = _vector_tables(tx)
        total = {"thread_ids": [], "messages": 0, "threads": 0, "om_records": 0, "vectors": 0}
        remind_id = reminder_thread_id(thread_id)
        remind = read_thread(tx, remind_id, lock=True) if resource_id else None
        owned = (remind is not None and remind.get("resourceId") == resource_id
                 and (thread_metadata(remind) or {}).get("subconsciousRemindParentThreadId") == thread_id)
        for tid, rid in ([(remind_id, remind.get("resourceId"))] if owned else []) + [(thread_id, resource_id)]:
            for key, n in _delete_stored_thread(tx, tid, rid, vector_tables).items():
                total[key] += n
            total["thread_ids"].append(tid)
    remember_write(tx.location, stamp)
    return total


def update_thread(path: str | os.PathLike[str], thread_id: str, *, title: str | None = None,
                  metadata: dict | None = None, now_ms: int | None = None, busy_timeout_ms: int | None = None) -> dict:
    """Update THREAD_ID's title and metadata as Mastra's Memory.updateThread does; return the thread as it is after.

    TITLE: the new title (None keeps the stored one; "" is stored as ""). METADATA: keys to set, merged into
    the stored metadata (`{...stored, ...metadata}`; None adds nothing); `updatedAt` is set to now either way.
    Returns {"id", "resourceId", "title", "metadata", "updatedAt"}. Raises WriteRefused ("invalid": a title
    that is not a string, metadata that is not an object, or a string `workingMemory` key — Mastra hands that
    to its working memory, which depends on the agent's code; "not-found"; "busy") and StoreError.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise WriteRefused("invalid", "thread_id must be a non-empty string")
    if title is not None and not isinstance(title, str):
        raise WriteRefused("invalid", "The title must be text.")
    if metadata is not None and not isinstance(metadata, dict):
        raise WriteRefused("invalid", "The metadata must be a JSON object ({\"key\": value, …}).")
    if isinstance((metadata or {}).get("workingMemory"), str):
        raise WriteRefused("invalid", "A text metadata.workingMemory is written by Mastra into the working memory "
                                      "(Memory.updateThread), which depends on the agent's configuration: edit the "
                                      "working memory itself instead.")
    stamp = now_ms_or_clock(now_ms)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="update-thread") as tx:
        row = read_thread(tx, thread_id, lock=True)
        if row is None:
            raise WriteRefused("not-found", f"There is no thread {thread_id!r}.")
        merged = {**thread_metadata(row), **(metadata or {})}
        values: dict[str, Any] = {"metadata": json_value(tx, merged), "updatedAt": iso(stamp)}
        if tx.dialect == "mongodb":   # patchThread backfills the title (`existing.title ?? ""`); $set title first
            values = {"title": title if title is not None else _stored_title(row), **values}
        elif title is not None:
            values["title"] = title
        update_row(tx, THREADS, row, values)
    remember_write(tx.location, stamp)   # the thread's updatedAt: the studio's, not the agent's
    if tx.dialect == "mongodb":
        from studio.store.backends.mongodb import to_mastra

        merged = to_mastra(merged)
    return {"id": thread_id, "resourceId": row.get("resourceId"),
            "title": title if title is not None else row.get("title"), "metadata": merged, "updatedAt": iso(stamp)}


def _stored_title(row: dict) -> str:
    """The title `patchThread` hands back to updateThread on a store without partial updates: `title ?? ""`."""
    return row.get("title") if row.get("title") is not None else ""

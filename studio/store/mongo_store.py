"""The read API (`MemoryStore`) over a MongoDB store written by @mastra/mongodb 1.19.0, without SQL.

`MongoMemoryStore` keeps `MemoryStore`'s methods and answers each with the queries @mastra/mongodb
itself sends (`src/storage/domains/memory/index.ts`), so ties and filters come out as Mastra's do:

- threads: `mastra_threads`, `find({resourceId?, "metadata.<key>": value…}).sort({createdAt|updatedAt: ±1})`
  with skip/limit and no tie-break (listThreads); `findOne({id})` (getThreadById);
- messages: `mastra_messages`, `find({thread_id | thread_id: {$in}, resourceId?, createdAt: {$gte…}})`
  `.sort({createdAt: ±1})` with skip/limit and no tie-break (listMessages, listMessagesByResourceId);
  the context of an `include` sorted `{createdAt: -1, id: -1}` before and `{createdAt: 1, id: 1}` after it;
  `content` is JSON text, parsed on first use as on the other stores;
- OM generations: `mastra_observational_memory`, `find({lookupKey}).sort({generationCount: -1})`
  (getObservationalMemory takes the first: the current generation);
- resources: `mastra_resources`, `findOne({id})` (getResourceById; `metadata` parsed when it is text).

Times go in as BSON Dates (`new Date(iso)`, as `formatDateForMongoDB` makes them) and come back as
`toISOString()` text (`backends.mongodb.to_mastra`). Batched reads (the OM status of every thread)
are one query per 500 ids, never one per thread. Every read runs in the load's snapshot session when
the server has one (`MongoBackend.begin_read`); nothing is written. Mastra-semantics reads that live
in modules (`studio.store.history`, `thread_list`, `message_queries`) branch on `dialect ==
"mongodb"` and call the `find_threads` / `count_threads` / `find_messages` / `count_messages` /
`message_query` methods here.
"""

from __future__ import annotations

from studio.store import schema as sc
from studio.store.backends.mongodb import iso_to_bson_date
from studio.store.memory_store import MESSAGE_COLUMNS, MemoryStore
from studio.store.records import (
    Message,
    OMRecord,
    Resource,
    Thread,
    iso_to_ms,
    om_record_from_row,
    parse_json,
    thread_from_row,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Iterator
    from typing import Any

    from studio.store.backends.mongodb import MongoBackend

__all__ = ["MongoMemoryStore"]

#: Ids per `$in` of a batched read.
CHUNK = 500
#: Storage order of messages (listMessages' default sort) and of threads (listThreads' default).
MESSAGE_SORT = [("createdAt", 1)]
THREAD_SORT = [("createdAt", -1)]
#: Which messages field a batch key names.
KEY_FIELDS = {"thread": "thread_id", "resource": "resourceId"}


def message_from_doc(doc: dict) -> Message:
    """Return the Message of a decoded `mastra_messages` document (content parsed on first use)."""
    return Message.stored(doc.get("id"), doc.get("thread_id"), doc.get("role") or "", doc.get("content"),
                          doc.get("createdAt"), doc.get("resourceId"), doc.get("type"))


def _chunks(items: list, size: int = CHUNK) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class MongoMemoryStore(MemoryStore):
    """`MemoryStore` over a `MongoBackend`: the same read API, answered with @mastra/mongodb's queries.

    Every read raises StoreError when the server fails; the SQL query API (`rows`, `select_rows`, …)
    raises StoreError (a MongoDB store has none).
    """

    backend: MongoBackend

    @property
    def write_note(self) -> str | None:
        """NOT_ATOMIC's sentence on a standalone server (no transactions), None on a replica set / mongos."""
        return self.backend.write_note

    # -- the query API of the Mastra-semantics modules -------------------------------------------

    def find_threads(self, query: dict, sort: list[tuple[str, int]] | None = None, *, skip: int = 0,
                     limit: int = 0) -> list[Thread]:
        """Threads of `find(QUERY).sort(SORT).skip(SKIP).limit(LIMIT)` on mastra_threads (LIMIT 0: all).

        A falsy `metadata` (missing, null) reads as {} as listThreads returns it (`thread.metadata || {}`).
        """
        docs = self.backend.find(sc.THREADS, query, sort, skip=skip, limit=limit)
        for d in docs:
            if d.get("metadata") in (None, "", 0, False):
                d["metadata"] = {}
        return [thread_from_row(d) for d in docs]

    def decoded(self, collection: str, filter: dict, sort: list[tuple[str, int]] | None = None, *,
                limit: int = 0) -> list[dict]:
        """Documents of `find(FILTER).sort(SORT).limit(LIMIT)` on COLLECTION, decoded as the studio reads them
        (`to_mastra`; the same reader a MongoDB write transaction has, so the write protocol reads either)."""
        return self.backend.find(collection, filter, sort, limit=limit)

    def count_threads(self, query: dict) -> int:
        """countDocuments(QUERY) on mastra_threads."""
        return self.backend.count(sc.THREADS, query)

    def find_messages(self, query: dict, sort: list[tuple[str, int]] | None = None, *, skip: int = 0,
                      limit: int = 0) -> list[Message]:
        """Messages of `find(QUERY).sort(SORT).skip(SKIP).limit(LIMIT)` on mastra_messages (LIMIT 0: all)."""
        return [message_from_doc(d) for d in self.backend.find(sc.MESSAGES, query, sort, skip=skip, limit=limit)]

    def count_messages(self, query: dict) -> int:
        """countDocuments(QUERY) on mastra_messages."""
        return self.backend.count(sc.MESSAGES, query)

    @staticmethod
    def message_query(thread_ids: list[str] | None = None, *, resource_id: str | None = None,
                      start: str | None = None, end: str | None = None, start_exclusive: bool = False,
                      end_exclusive: bool = False) -> dict:
        """The filter listMessages builds: thread_id (one, or `$in`), resourceId, a createdAt range of BSON
        Dates (`new Date(bound)`: ISO text in, compared as times). Raises StoreError for a bound that is no time."""
        query: dict[str, Any] = {}
        if thread_ids is not None:
            query["thread_id"] = thread_ids[0] if len(thread_ids) == 1 else {"$in": list(thread_ids)}
        if resource_id:
            query["resourceId"] = resource_id
        created: dict[str, Any] = {}
        if start:
            created["$gt" if start_exclusive else "$gte"] = iso_to_bson_date(start)
        if end:
            created["$lt" if end_exclusive else "$lte"] = iso_to_bson_date(end)
        if created:
            query["createdAt"] = created
        return query

    # -- loads and live refresh ---------------------------------------------------------------------

    def content_fingerprint(self) -> str:
        """Return a digest of document counts and newest times of Mastra's collections (`MongoBackend.fingerprint`)."""
        import hashlib

        return hashlib.sha256(repr(self.backend.fingerprint()).encode()).hexdigest()[:16]

    def fingerprint(self) -> Hashable:
        """Return the backend's counts and newest times: changes when another process writes (live refresh)."""
        return self.backend.fingerprint()

    # -- resources and threads ----------------------------------------------------------------------

    def resource_ids(self) -> list[str]:
        """Return every resource id that owns a thread, has a resources document or an OM record, sorted."""
        ids = {r for r in self.backend.distinct(sc.THREADS, "resourceId") if isinstance(r, str)}
        if self.schema.has_table(sc.RESOURCES):
            ids |= {r for r in self.backend.distinct(sc.RESOURCES, "id") if isinstance(r, str)}
        if self.schema.has_observational_memory:
            ids |= {r for r in self.backend.distinct(sc.OBSERVATIONAL_MEMORY, "resourceId") if isinstance(r, str)}
        return sorted(ids)

    def get_resource(self, resource_id: str) -> Resource | None:
        """Return the resource document RESOURCE_ID as getResourceById reads it (text metadata parsed), or None."""
        if not self.schema.has_table(sc.RESOURCES):
            return None
        docs = self.backend.find(sc.RESOURCES, {"id": resource_id}, limit=1)
        if not docs:
            return None
        row = docs[0]
        meta, err = parse_json(row.get("metadata"))
        return Resource(id=row["id"], working_memory=row.get("workingMemory"), metadata=meta,
                        created_at=row.get("createdAt"), updated_at=row.get("updatedAt"), metadata_error=err)

    def list_threads(self, resource_id: str | None = None, *, with_counts: bool = False) -> list[Thread]:
        """Return threads (all, or RESOURCE_ID's), newest `createdAt` first as listThreads sorts (no tie-break)."""
        threads = self.find_threads({"resourceId": resource_id} if resource_id is not None else {}, THREAD_SORT)
        if with_counts:
            stats = self.message_stats()
            for t in threads:
                t.message_count, t.newest_message_at = stats.get(t.id, (0, None))
        return threads

    def get_thread(self, thread_id: str) -> Thread | None:
        """Return the thread THREAD_ID (findOne({id}), as getThreadById), or None."""
        threads = self.find_threads({"id": thread_id}, limit=1)
        return threads[0] if threads else None

    def message_counts(self) -> dict[str, int]:
        """Return {thread id: number of stored messages}."""
        return {t: n for t, (n, _newest) in self.message_stats().items()}

    def message_stats(self) -> dict[str, tuple[int, str | None]]:
        """Return {thread id: (number of messages, createdAt of the newest)} in one aggregation
        (`$sort` on the `{thread_id, createdAt}` index Mastra creates, then `$group` with `$first`)."""
        rows = self.backend.aggregate(sc.MESSAGES, [
            {"$sort": {"thread_id": 1, "createdAt": -1}},
            {"$group": {"_id": "$thread_id", "n": {"$sum": 1}, "newest": {"$first": "$createdAt"}}}])
        return {r["_id"]: (int(r["n"]), r.get("newest")) for r in rows if r.get("_id") is not None}

    def newest_message_at(self, thread_id: str) -> str | None:
        """Return the createdAt (ISO) of THREAD_ID's newest message, or None when it has none."""
        docs = self.backend.find(sc.MESSAGES, {"thread_id": thread_id}, [("createdAt", -1)], limit=1)
        return docs[0].get("createdAt") if docs else None

    def message_count(self, thread_id: str) -> int:
        """Return the number of stored messages of THREAD_ID."""
        return self.count_messages({"thread_id": thread_id})

    # -- messages -------------------------------------------------------------------------------

    def list_messages(self, thread_id: str, *, since: str | None = None, limit: int | None = None,
                      offset: int = 0) -> list[Message]:
        """Return THREAD_ID's messages in Mastra's storage order (createdAt ascending, ties as the server
        returns them); SINCE (ISO) keeps `createdAt >= since` compared as Dates; LIMIT/OFFSET page them."""
        return self.find_messages(self.message_query([thread_id], start=since), MESSAGE_SORT, skip=offset,
                                  limit=limit or 0)

    def list_resource_messages(self, resource_id: str, *, since: str | None = None) -> list[Message]:
        """Return every message whose `resourceId` is RESOURCE_ID, createdAt ascending (listMessagesByResourceId)."""
        query = self.message_query(None, start=since)
        query["resourceId"] = resource_id
        return self.find_messages(query, MESSAGE_SORT)

    def messages_since_many(self, wanted: Iterable[tuple[str, str | None]], *, by: str = "thread") -> dict:
        """{(id, since): `list_messages(id, since=…)`} for WANTED (BY="resource": resource ids), CHUNK pairs a query."""
        return dict(self.iter_messages_since_many(wanted, by=by))

    def iter_messages_since_many(self, wanted: Iterable[tuple[str, str | None]], *,
                                 by: str = "thread") -> Iterator[tuple[tuple[str, str | None], list[Message]]]:
        """((id, since), its messages) for WANTED: one `$or` query per CHUNK pairs, sorted by key then createdAt
        (the `{thread_id|resourceId, createdAt}` index), each pair's messages as `list_messages` returns them."""
        field = KEY_FIELDS[by]
        pairs = sorted(set(wanted), key=lambda p: (p[0], p[1] is not None, p[1] or ""))
        for part in _chunks(pairs):
            terms = [{field: key, "createdAt": {"$gte": iso_to_bson_date(since)}} if since else {field: key}
                     for key, since in part]
            query = terms[0] if len(terms) == 1 else {"$or": terms}
            by_key: dict[str, list[Message]] = {}
            for message in self.find_messages(query, [(field, 1), ("createdAt", 1)]):
                by_key.setdefault(message.thread_id if by == "thread" else message.resource_id, []).append(message)
            for key, since in part:
                found = by_key.get(key, [])
                if since:
                    bound = iso_to_ms(since)
                    found = [m for m in found if (iso_to_ms(m.created_at) or 0) >= bound]
                yield (key, since), found

    def message_rows(self, thread_ids: list[str]) -> list[tuple]:
        """Return the raw documents of THREAD_IDS' messages as tuples of MESSAGE_COLUMNS' values (id, thread_id,
        content (JSON text), role, type, createdAt, resourceId; None for a missing field), by thread then
        createdAt: what the memory doctor reads (`MemoryStore.message_rows`)."""
        out = []
        for part in _chunks(list(thread_ids)):
            for doc in self.backend.find(sc.MESSAGES, {"thread_id": {"$in": part}},
                                         [("thread_id", 1), ("createdAt", 1)]):
                out.append(tuple(doc.get(c) for c in MESSAGE_COLUMNS))
        return out

    def invalid_json_message_ids(self, thread_ids: list[str]) -> set[str]:
        """Return the ids of THREAD_IDS' messages whose text content is not JSON (parseRow's JSON.parse fails)."""
        import json

        bad = set()
        for row in self.message_rows(thread_ids):
            content = row[MESSAGE_COLUMNS.index("content")]
            if isinstance(content, str):
                try:
                    json.loads(content)
                except ValueError:
                    bad.add(row[0])
        return bad

    def message_threads(self, message_ids: list[str], chunk: int = CHUNK) -> dict[str, str]:
        """Return {message id: thread id} for those of MESSAGE_IDS that exist (CHUNK ids per query)."""
        out: dict[str, str] = {}
        for part in _chunks(list(message_ids), chunk):
            out.update({d["id"]: d.get("thread_id") for d in self.backend.find(sc.MESSAGES, {"id": {"$in": part}})})
        return out

    # -- observational memory ---------------------------------------------------------------------

    def om_lookup_keys(self, only: list[str] | None = None) -> list[dict]:
        """Return one dict {lookupKey, scope, resourceId, threadId} per OM lookup key, sorted by key (ONLY: just
        these lookup keys, as `MemoryStore.om_lookup_keys`)."""
        if not self.schema.has_observational_memory:
            return []
        match = [] if only is None else [{"$match": {"lookupKey": {"$in": sorted(set(only))}}}]
        rows = self.backend.aggregate(sc.OBSERVATIONAL_MEMORY, [
            *match,
            {"$sort": {"lookupKey": 1, "generationCount": -1}},
            {"$group": {"_id": "$lookupKey", "scope": {"$first": "$scope"}, "resourceId": {"$first": "$resourceId"},
                        "threadId": {"$first": "$threadId"}}}])
        out = []
        for r in sorted((r for r in rows if isinstance(r.get("_id"), str)), key=lambda r: r["_id"].encode()):
            key = r["_id"]
            out.append({"lookupKey": key, "scope": r.get("scope") or ("resource" if key.startswith("resource:")
                                                                      else "thread"),
                        "resourceId": r.get("resourceId"), "threadId": r.get("threadId")})
        return out

    def _om(self, query: dict, sort: list[tuple[str, int]], limit: int = 0) -> list[OMRecord]:
        if not self.schema.has_observational_memory:
            return []
        return [om_record_from_row(d) for d in self.backend.find(sc.OBSERVATIONAL_MEMORY, query, sort, limit=limit)]

    def om_history(self, lookup_key: str, limit: int | None = None) -> list[OMRecord]:
        """Return LOOKUP_KEY's generations, `sort({generationCount: -1})` (getObservationalMemoryHistory)."""
        return self._om({"lookupKey": lookup_key}, [("generationCount", -1)], limit or 0)

    def om_histories(self, lookup_keys: Iterable[str] | None = None, chunk: int = CHUNK) -> dict[str, list[OMRecord]]:
        """Return {lookup key: its generations, newest first} for LOOKUP_KEYS (CHUNK keys a query; None: all)."""
        sort = [("lookupKey", 1), ("generationCount", -1)]
        if lookup_keys is None:
            out: dict[str, list[OMRecord]] = {}
            for record in self._om({}, sort):
                out.setdefault(record.lookup_key, []).append(record)
            return out
        keys = list(dict.fromkeys(lookup_keys))
        out = {k: [] for k in keys}
        for part in _chunks(keys, chunk):
            for record in self._om({"lookupKey": {"$in": part}}, sort):
                out.setdefault(record.lookup_key, []).append(record)
        return out

    def om_current(self, lookup_key: str) -> OMRecord | None:
        """Return LOOKUP_KEY's current record: `findOne({lookupKey}, {sort: {generationCount: -1}})`, or None."""
        rows = self.om_history(lookup_key, limit=1)
        return rows[0] if rows else None

    def om_record(self, record_id: str) -> OMRecord | None:
        """Return the OM generation with id RECORD_ID, or None."""
        rows = self._om({"id": record_id}, [], 1)
        return rows[0] if rows else None

    def _om_current(self, match: dict) -> dict[str, OMRecord]:
        """{lookupKey: its highest-generationCount document} of the records matching MATCH, in one aggregation
        (`$sort` on Mastra's `{lookupKey, generationCount}` index, `$group` keeping the first whole document)."""
        if not self.schema.has_observational_memory:
            return {}
        rows = self.backend.aggregate(sc.OBSERVATIONAL_MEMORY, [
            {"$match": match}, {"$sort": {"lookupKey": 1, "generationCount": -1}},
            {"$group": {"_id": "$lookupKey", "doc": {"$first": "$$ROOT"}}}])
        out = {}
        for row in sorted((r for r in rows if isinstance(r.get("_id"), str)), key=lambda r: r["_id"].encode()):
            doc = row["doc"]
            doc.pop("_id", None)
            out[row["_id"]] = om_record_from_row(doc)
        return out

    def om_current_all(self) -> dict[str, OMRecord]:
        """Return {lookupKey: current record} for every OM lookup key (one aggregation, no older generation read)."""
        return self._om_current({})

    def om_current_many(self, lookup_keys: Iterable[str], chunk: int = CHUNK) -> dict[str, OMRecord]:
        """Return {lookupKey: current record} for the LOOKUP_KEYS that have one (CHUNK keys per aggregation)."""
        out: dict[str, OMRecord] = {}
        for part in _chunks(list(dict.fromkeys(lookup_keys)), chunk):
            out.update(self._om_current({"lookupKey": {"$in": part}}))
        return out

    def lookup_key_for_thread(self, thread: Thread) -> str | None:
        """Return the OM lookup key that governs THREAD (thread scope first, then its resource), or None."""
        if not self.schema.has_observational_memory:
            return None
        candidates = [f"thread:{thread.id}", f"resource:{thread.resource_id}"]
        found = {r.lookup_key for r in self._om({"lookupKey": {"$in": candidates}}, [])}
        return next((key for key in candidates if key in found), None)

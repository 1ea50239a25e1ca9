"""The documents @mastra/mongodb 1.19.0 writes, built from the documents it read (field order and BSON types).

Mastra reads a document through its `parse…` functions (missing numbers → 0, `doc.config || {}`, Dates kept as
Dates) and hands the values back to `insertOne` / `$set`; a JavaScript `undefined` is stored as null (the
driver's default `ignoreUndefined: false`). The write transaction (`backends.mongodb.MongoWriteTx.bind`) stores
numbers as the JS driver does.
"""

from __future__ import annotations

from typing import Any

from studio.common.jscompat import UNDEFINED
from studio.store.backends.mongodb import iso_to_bson_date

__all__ = ["cloned_om_document", "reflection_document"]


def _number(value: Any) -> Any:
    """`Number(value || 0)` of a stored number."""
    if not value or isinstance(value, bool):
        return 0 if not value else int(value)
    return value


def reflection_document(current: dict, *, record_id: str, observations: str, observation_tokens: int, now: str,
                        metadata: Any = UNDEFINED, generation: int | None = None,
                        last_observed_at: Any = UNDEFINED) -> dict:
    """The generation `createReflectionGeneration` inserts after CURRENT (the stored document), in its field order.

    NOW: the write time (ISO) for createdAt / updatedAt / lastReflectionAt. METADATA: the new document's
    `metadata` (default: CURRENT's, `doc.metadata || null`). GENERATION (default CURRENT's + 1) and
    LAST_OBSERVED_AT (ISO text; default CURRENT's Date) are a repair's.
    """
    date = iso_to_bson_date(now)
    thread_id = current.get("threadId") or None
    resource_id = current.get("resourceId")
    observed = current.get("lastObservedAt") if last_observed_at is UNDEFINED else (
        iso_to_bson_date(last_observed_at) if last_observed_at else None)
    return {
        "id": record_id,
        "lookupKey": f"thread:{thread_id}" if thread_id else f"resource:{resource_id}",
        "scope": current.get("scope"),
        "resourceId": resource_id,
        "threadId": thread_id,
        "activeObservations": observations,
        "activeObservationsPendingUpdate": None,
        "originType": "reflection",
        "config": current.get("config") or {},
        "generationCount": _number(current.get("generationCount")) + 1 if generation is None else generation,
        "lastObservedAt": observed or None,
        "lastReflectionAt": date,
        "pendingMessageTokens": 0,
        "totalTokensObserved": _number(current.get("totalTokensObserved")),
        "observationTokenCount": observation_tokens,
        "isObserving": False,
        "isReflecting": False,
        "isBufferingObservation": False,
        "isBufferingReflection": False,
        "lastBufferedAtTokens": 0,
        "lastBufferedAtTime": None,
        "observedTimezone": current.get("observedTimezone") or None,
        "createdAt": date,
        "updatedAt": date,
        "metadata": (current.get("metadata") or None) if metadata is UNDEFINED else metadata,
    }


def _count_or_none(value: Any) -> Any:
    """`doc.x ? Number(doc.x) : undefined`, stored `?? null`."""
    return value if value else None


def cloned_om_document(source: dict, *, record_id: str, thread_id: str | None, resource_id: str,
                       observed_ids: list | None, chunks: list | None, active: str, buffered_reflection: Any,
                       now: str) -> dict:
    """The record `insertObservationalMemoryRecord` inserts for Memory.cloneObservationalMemory, in its field order.

    SOURCE: the source's current generation as stored; THREAD_ID (None in resource scope) / RESOURCE_ID: the
    clone's; OBSERVED_IDS / CHUNKS: remapped by the caller (None: not an array in SOURCE; chunks then `[]`);
    ACTIVE / BUFFERED_REFLECTION: with thread tags rewritten when the resource changed; NOW (ISO): both times.
    """
    date = iso_to_bson_date(now)
    return {
        "id": record_id,
        "lookupKey": f"thread:{thread_id}" if thread_id else f"resource:{resource_id}",
        "scope": source.get("scope"),
        "resourceId": resource_id,
        "threadId": thread_id or None,
        "activeObservations": active or "",
        "activeObservationsPendingUpdate": None,
        "originType": source.get("originType") or "initial",
        "config": source.get("config") or {},
        "generationCount": _number(source.get("generationCount")),
        "lastObservedAt": source.get("lastObservedAt") or None,
        "lastReflectionAt": None,
        "pendingMessageTokens": _number(source.get("pendingMessageTokens")),
        "totalTokensObserved": _number(source.get("totalTokensObserved")),
        "observationTokenCount": _number(source.get("observationTokenCount")),
        "observedMessageIds": observed_ids if observed_ids is not None else None,
        "bufferedObservationChunks": chunks if chunks is not None else [],
        "bufferedReflection": buffered_reflection or None,
        "bufferedReflectionTokens": _count_or_none(source.get("bufferedReflectionTokens")),
        "bufferedReflectionInputTokens": _count_or_none(source.get("bufferedReflectionInputTokens")),
        "reflectedObservationLineCount": _count_or_none(source.get("reflectedObservationLineCount")),
        "isObserving": False,
        "isReflecting": False,
        "isBufferingObservation": False,
        "isBufferingReflection": False,
        "lastBufferedAtTokens": _number(source.get("lastBufferedAtTokens")),
        "lastBufferedAtTime": source.get("lastBufferedAtTime") or None,
        "observedTimezone": source.get("observedTimezone") or None,
        "metadata": source.get("metadata") or None,
        "createdAt": date,
        "updatedAt": date,
    }

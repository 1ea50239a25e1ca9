"""Message history as Mastra's Memory reads it (no Qt): listThreads, recall, and a thread's speakers.

The documents of `memory-studio threads`, `recall` and `speakers` (each reads an open store, held
in one snapshot by the caller) and the studio's Speakers tab load (`load_speakers`). The history
writes (clone, delete) are `studio.app.thread_writes`'. Imported by `memory-studio threads`: it
imports no more than the command needs (no dataclasses, no typing).
"""

from __future__ import annotations

from studio.app.failures import BadInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    import threading
    from typing import Any

    from studio.engine.speakers import SpeakerReport
    from studio.store.memory_store import MemoryStore


def threads_document(store: MemoryStore, *, resource_id: str | None = None, metadata: dict | None = None,
                     order_by: str | None = None, direction: str | None = None, page: int | None = None,
                     per_page: int | bool | None = None) -> dict:
    """Return the `threads --json` document of STORE as Memory.listThreads pages it.

    {"thread_ids": [...], "total": N, "has_more": bool}. ORDER_BY "createdAt" / "updatedAt"
    (default createdAt), DIRECTION "ASC" / "DESC" (default DESC), PAGE from 0, PER_PAGE a count or
    False for every thread (Mastra's perPage: false). Raises ValidationError for bad arguments.
    """
    from studio.store.thread_list import list_threads  # not history: recall's module is the bigger import

    flt: dict[str, Any] = {}
    if resource_id is not None:
        flt["resource_id"] = resource_id
    if metadata is not None:
        flt["metadata"] = metadata
    order = None
    if order_by is not None or direction is not None:
        order = {"field": order_by or "createdAt", "direction": direction or "DESC"}
    result = list_threads(store, filter=flt or None, order_by=order, page=page or 0, per_page=per_page,
                          ids_only=True)
    return {"thread_ids": result.thread_ids, "total": result.total, "has_more": result.has_more}


def recall_document(store: MemoryStore, thread_id: str, *, page: int | None = None,
                    per_page: int | bool | None = None, start: str | None = None, end: str | None = None,
                    metadata: dict | None = None, include: list[dict] | None = None, apply_include: bool = False,
                    resource_id: str | None = None) -> dict:
    """Return the `recall --json` document (Memory.recall with Mastra's defaults: 10 per page, newest first).

    {"message_ids": [...], "total": N, "has_more": bool}. START/END are dates as `new Date(...)`
    reads them (ISO 8601), sent as toISOString; INCLUDE is ignored as Memory.recall ignores it
    unless APPLY_INCLUDE (then applied as the storage's listMessages does). Raises BadInput for
    an unknown thread, ValidationError for bad arguments.
    """
    from studio.store.history import get_thread_by_id, js_date_iso, recall

    flt: dict[str, Any] = {}
    if start is not None or end is not None:
        flt["date_range"] = {k: js_date_iso(v) for k, v in (("start", start), ("end", end)) if v is not None}
    if metadata is not None:
        flt["metadata"] = metadata
    if get_thread_by_id(store, thread_id) is None:
        raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
    result = recall(store, thread_id, resource_id=resource_id, page=page, per_page=per_page,
                    filter=flt or None, include=include, apply_include=apply_include)
    return {"message_ids": result.message_ids, "total": result.total, "has_more": result.has_more}


def speakers_document(store: MemoryStore, thread_id: str) -> dict:
    """Return the `speakers --json` document: participants from `<turn>` tags, messages and tokens each.

    {"speakers": [{"author_id", "author_name", "functional_role", "messages", "tokens"}],
    "untagged_messages": N} (tokens: Mastra's estimate). Raises BadInput for an unknown thread.
    """
    from studio.engine.speakers import speakers_json, thread_speakers

    if store.get_thread(thread_id) is None:
        raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
    return speakers_json(thread_speakers(store, thread_id))


def load_speakers(store: MemoryStore | None, thread_id: str, cancel: threading.Event | None = None) -> SpeakerReport:
    """Return THREAD_ID's participants (studio.engine.speakers) with Mastra's token estimates (a load of the
    studio's Speakers tab; raises StoreError without a database)."""
    from studio.app.loads import require_store
    from studio.engine.speakers import thread_speakers

    return thread_speakers(require_store(store), thread_id, cancel=cancel)

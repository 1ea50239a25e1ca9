"""Working memory written as Mastra's Memory.updateWorkingMemory writes it (@mastra/memory 1.31.0), one transaction.

Mastra's scope (`workingMemory.scope`, "resource" by default) is the agent's configuration, not data, so the
caller says which one to write:
- "resource": the store's updateResource — the resource row's `workingMemory` and `updatedAt` set; a resource
  without a row gets one (saveResource: `metadata` {} — on PostgreSQL the JSONB string "{}", as @mastra/pg
  double-encodes it —, both times now);
- "thread": the thread's `metadata.workingMemory` set, the rest of its metadata kept, `updatedAt` now (patchThread).
The text is stored as given: a markdown template's text, or the JSON text of schema mode.
"""

from __future__ import annotations

import os

from studio.errors import WriteRefused
from studio.store.schema import RESOURCES, THREADS
from studio.store.write.common import (
    iso,
    json_value,
    now_ms_or_clock,
    read_row,
    read_thread,
    stringify,
    thread_metadata,
    update_row,
)
from studio.store.write.own_writes import remember_write
from studio.store.write.transaction import write_transaction
from studio.store.write.tx import Jsonb

__all__ = ["WORKING_MEMORY_SCOPES", "update_working_memory"]

#: Mastra's two working-memory scopes.
WORKING_MEMORY_SCOPES = ("resource", "thread")


def update_working_memory(path: str | os.PathLike[str], *, thread_id: str, scope: str, text: str,
                          now_ms: int | None = None, busy_timeout_ms: int | None = None) -> dict:
    """Write TEXT as THREAD_ID's working memory in SCOPE ("resource" or "thread"), as updateWorkingMemory does.

    Returns {"scope", "thread_id", "resource_id", "created_resource": bool, "updatedAt"}. Raises WriteRefused
    ("invalid": a scope or text that is not one, or a store without a resources table for the resource scope;
    "not-found": no such thread; "busy") and StoreError; nothing is written then.
    """
    if scope not in WORKING_MEMORY_SCOPES:
        raise WriteRefused("invalid", f"The working memory scope is 'resource' or 'thread', not {scope!r}.")
    if not isinstance(text, str):
        raise WriteRefused("invalid", "The working memory must be text.")
    stamp = now_ms_or_clock(now_ms)
    now = iso(stamp)
    created = False
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="working-memory") as tx:
        thread = read_thread(tx, thread_id, lock=True)
        if thread is None:
            raise WriteRefused("not-found", f"There is no thread {thread_id!r}.")
        resource_id = thread.get("resourceId")
        if scope == "thread":
            meta = {**thread_metadata(thread), "workingMemory": text}
            values = {"metadata": json_value(tx, meta), "updatedAt": now}
            if tx.dialect == "mongodb":   # patchThread backfills the title for updateThread (`title ?? ""`)
                values = {"title": thread.get("title") if thread.get("title") is not None else "", **values}
            update_row(tx, THREADS, thread, values)
        else:
            if not resource_id:
                raise WriteRefused("invalid", "This thread has no resourceId: Mastra refuses resource-scope working "
                                              "memory without one.")
            if not tx.schema.has_table(RESOURCES) and tx.dialect != "mongodb":   # MongoDB makes it on insert
                raise WriteRefused("invalid", "This store has no mastra_resources table to hold resource-scope "
                                              "working memory.")
            resource = read_row(tx, RESOURCES, resource_id, lock=True)
            if resource is not None:   # updateResource: $set {updatedAt, workingMemory}
                update_row(tx, RESOURCES, resource, {"updatedAt": now, "workingMemory": text}
                           if tx.dialect == "mongodb" else {"workingMemory": text, "updatedAt": now})
            elif tx.dialect == "mongodb":
                # updateResource of a missing resource: saveResource's upsert `$set {...resource}`
                tx.upsert(RESOURCES, resource_id, {"id": resource_id, "workingMemory": text, "metadata": {},
                                                   "createdAt": now, "updatedAt": now})
                created = True
            else:
                # @mastra/pg's saveResource stores the metadata it serialised once more (toPgJson, then its
                # insert's own JSON): a JSONB string "{}", not an object; @mastra/libsql stores the object
                empty = Jsonb(stringify("{}")) if tx.dialect == "postgresql" else Jsonb("{}")
                tx.insert(RESOURCES, {"id": resource_id, "workingMemory": text, "metadata": empty,
                                      "createdAt": now, "updatedAt": now})
                created = True
    remember_write(tx.location, stamp)
    return {"scope": scope, "thread_id": thread_id, "resource_id": resource_id, "created_resource": created,
            "updatedAt": now}

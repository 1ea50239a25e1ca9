"""Working memory as the model got it at a turn, and whether the rows can say so exactly (read-only, no Qt).

With working memory on, Mastra (@mastra/memory 1.31.0, `Memory.getSystemMessage`) adds a
system message holding the template and the stored value between `<working_memory_data>` tags
(`getWorkingMemory`: the resource row's `workingMemory` in resource scope, Mastra's default,
`thread.metadata.workingMemory` in thread scope; the literal `null` when none). The value is
read at every call and the rows keep only the newest one, so:

* `exact`: the stored value is provably the one the model got — nothing was ever stored, or
  the resource row was last written (`updatedAt`) no later than the turn's user message;
* `latest`: the value was written after the turn started (or, for thread working memory,
  cannot be dated: message saves move the thread's `updatedAt` too), so the turn may have seen
  another value; the part shows the newest one and says so.

The scope is code (`workingMemory.scope`), not data: a resource value is taken when the
thread's resource has one, else the thread's own, as the Context view did before.
"""

from __future__ import annotations

EXACT = "exact"
LATEST = "latest"


def working_memory_part(store, thread, at_ms: int | None) -> dict:
    """Return the model view's working-memory part at a turn starting at AT_MS (epoch ms; None: now).

    {text (None when nothing is stored), tokens: {estimate, exact}, source: {kind:
    "resource-working-memory", resource_id, updated_at} | {kind: "thread-working-memory",
    thread_id} | None, exactness: "exact" | "latest"} (module docstring). STORE: an open
    MemoryStore; THREAD: its thread record (None gives an empty part). Raises StoreError.
    """
    from studio.engine.model_view import section
    from studio.engine.timeline import iso_to_ms

    if thread is None:
        return {**section(None, None), "exactness": EXACT}
    resource = store.get_resource(thread.resource_id) if thread.resource_id else None
    text = resource.working_memory if resource is not None and isinstance(resource.working_memory, str) else None
    if text:
        written = iso_to_ms(resource.updated_at) if resource.updated_at else None
        exact = at_ms is not None and written is not None and written <= at_ms
        source = {"kind": "resource-working-memory", "resource_id": resource.id, "updated_at": resource.updated_at}
        return {**section(text, source), "exactness": EXACT if exact else LATEST}
    text = thread.working_memory if isinstance(thread.working_memory, str) and thread.working_memory else None
    if text:
        return {**section(text, {"kind": "thread-working-memory", "thread_id": thread.id}), "exactness": LATEST}
    return {**section(None, None), "exactness": EXACT}

"""Clone lineage of a thread, as Mastra's clone utilities report it (no Qt).

Mastra's `Memory.cloneThread` stores `metadata.clone = {sourceThreadId, clonedAt, lastMessageId?}` on the
new thread. Its clone utilities read only that: `getCloneMetadata` / `isClone` (the object when
`metadata.clone` is truthy), `getSourceThread` (the thread named by `sourceThreadId`, None when it is
gone), `listClones(sourceId)` (the threads of the source's resource, in `listThreads`' default order —
createdAt DESC —, whose `clone.sourceThreadId` is the source) and `getCloneHistory` (from the oldest
ancestor still present to the thread, following `sourceThreadId`). Mastra's history loop never ends when
the chain comes back on itself (a thread whose metadata names a descendant); here the walk stops at the
first thread seen twice and says so (`cycle`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from studio.store.memory_store import MemoryStore
from studio.store.records import Thread
from studio.store.thread_list import list_threads


def clone_metadata(thread: Thread | None) -> dict | None:
    """Return THREAD's `metadata.clone` object as Mastra's getCloneMetadata does, or None.

    Mastra returns any truthy `metadata.clone`; a value that is not an object (a string, a number) cannot
    name a source, so it is returned only when it is a dict; other truthy values give an empty dict (a
    clone whose source is unknown).
    """
    if thread is None or not isinstance(thread.metadata, dict):
        return None
    value = thread.metadata.get("clone")
    if not value:
        return None
    return value if isinstance(value, dict) else {}


def _source_id(thread: Thread | None) -> str | None:
    meta = clone_metadata(thread)
    source = meta.get("sourceThreadId") if meta else None
    return str(source) if source not in (None, "") else None


@dataclass
class ThreadLink:
    """A thread named in the lineage: its id and title (None when it has none), and whether it exists."""

    id: str
    title: str | None = None
    exists: bool = True

    def as_json(self) -> dict:
        return {"id": self.id, "title": self.title, "exists": self.exists}


@dataclass
class Lineage:
    """THREAD's place among clones, as Mastra's clone utilities give it.

    `is_clone`: Mastra's isClone. `source`: getSourceThread (exists=False when `sourceThreadId` names a
    deleted thread; None when not a clone). `cloned_at`: the stored `clonedAt` (ISO string or None).
    `last_message_id`: the source's last message copied (None when absent); `last_message_position`: its
    1-based place in the source thread's message order (None when the message or the source is gone).
    `clones`: listClones(thread), Mastra's order. `history`: getCloneHistory, oldest first, the thread last.
    `cycle`: True when the chain of sources comes back to a thread already met (Mastra would loop forever).
    """

    thread: ThreadLink
    is_clone: bool = False
    source: ThreadLink | None = None
    cloned_at: str | None = None
    last_message_id: str | None = None
    last_message_position: int | None = None
    source_message_count: int | None = None
    clones: list[ThreadLink] = field(default_factory=list)
    history: list[ThreadLink] = field(default_factory=list)
    cycle: bool = False

    def as_json(self) -> dict[str, Any]:
        """The `lineage --json` document (keys as here, threads as {id, title, exists})."""
        return {"thread": self.thread.as_json(), "is_clone": self.is_clone,
                "source": self.source.as_json() if self.source else None, "cloned_at": self.cloned_at,
                "last_message_id": self.last_message_id, "last_message_position": self.last_message_position,
                "source_message_count": self.source_message_count,
                "clones": [c.as_json() for c in self.clones], "history": [h.as_json() for h in self.history],
                "cycle": self.cycle}


def _link(thread: Thread) -> ThreadLink:
    return ThreadLink(thread.id, thread.title)


def list_clones(store: MemoryStore, source_id: str, resource_id: str | None = None) -> list[Thread]:
    """Return the clones of SOURCE_ID as Mastra's `Memory.listClones(sourceThreadId, resourceId?)` does.

    Without RESOURCE_ID, the source's own resource ([] when the source thread is gone); the threads come in
    listThreads' default order (createdAt DESC, no tie-break on files, id on PostgreSQL).
    """
    if resource_id is None:
        source = store.get_thread(source_id)
        if source is None:
            return []
        resource_id = source.resource_id
    page = list_threads(store, filter={"resourceId": resource_id}, per_page=False)
    return [t for t in page.threads if _source_id(t) == source_id]


def clone_history(store: MemoryStore, thread_id: str) -> tuple[list[Thread], bool]:
    """Return (getCloneHistory(THREAD_ID), cycle): the chain oldest first, ending with the thread itself.

    The walk stops at a missing thread (as Mastra's) or at a thread met twice (`cycle` True, where Mastra's
    loop would never end). [] when THREAD_ID does not exist.
    """
    chain: list[Thread] = []
    seen: set[str] = set()
    current: str | None = thread_id
    while current:
        if current in seen:
            return chain, True
        seen.add(current)
        thread = store.get_thread(current)
        if thread is None:
            break
        chain.insert(0, thread)
        current = _source_id(thread)
    return chain, False


def load_lineage(store: MemoryStore, thread_id: str) -> Lineage | None:
    """Return THREAD_ID's Lineage (see the class), or None when the thread does not exist.

    Reads: the thread, each ancestor (one read each), the source's message ids (for the copied message's
    place) and the resource's threads (for listClones).
    """
    thread = store.get_thread(thread_id)
    if thread is None:
        return None
    meta = clone_metadata(thread)
    lineage = Lineage(_link(thread), is_clone=meta is not None)
    if meta is not None:
        source_id = _source_id(thread)
        cloned_at = meta.get("clonedAt")
        lineage.cloned_at = str(cloned_at) if cloned_at is not None else None
        last = meta.get("lastMessageId")
        lineage.last_message_id = str(last) if last not in (None, "") else None
        if source_id is not None:
            source = store.get_thread(source_id)
            lineage.source = _link(source) if source is not None else ThreadLink(source_id, None, exists=False)
            if source is not None:
                ids = [m.id for m in store.list_messages(source_id)]
                lineage.source_message_count = len(ids)
                if lineage.last_message_id in ids:
                    lineage.last_message_position = ids.index(lineage.last_message_id) + 1
    lineage.clones = [_link(t) for t in list_clones(store, thread.id, thread.resource_id)]
    chain, lineage.cycle = clone_history(store, thread.id)
    lineage.history = [_link(t) for t in chain]
    return lineage


def clone_roles(threads: list[Thread]) -> dict[str, str]:
    """Return {thread id: "clone" | "source" | "both"} for the threads that are clones or sources of one.

    A thread is a source when a clone of the same resource names it (listClones' rule); threads in neither
    role are left out. THREADS: a whole listing (with metadata).
    """
    by_id = {t.id: t for t in threads}
    clones = {t.id for t in threads if clone_metadata(t) is not None}
    sources = set()
    for t in threads:
        source = by_id.get(_source_id(t) or "") if t.id in clones else None
        if source is not None and source.resource_id == t.resource_id:
            sources.add(source.id)
    return {tid: "both" if tid in clones and tid in sources else "clone" if tid in clones else "source"
            for tid in clones | sources}

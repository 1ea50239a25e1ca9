"""What the thread view shows of one thread: its OM status, generations, parsed log and working memory (no Qt).

Loads (`studio.app.loads`): module-level functions of the store, run off the GUI thread (on the
database worker or in the helper process), returning plain (picklable) data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.app import text as fmt
from studio.app.changes import ChangeSet
from studio.app.loads import require_store
from studio.engine.diff import GenerationDiff, diff_logs
from studio.engine.observations import ObservationLog, parse_log
from studio.engine.status import ThreadStatus, compute_status
from studio.errors import StoreDamaged, StudioError
from studio.store.memory_store import MemoryStore
from studio.store.records import OMRecord, Resource, Thread


@dataclass
class ThreadDetail:
    """What the thread view shows: the thread, its OM status, generations and parsed active log."""

    thread: Thread
    lookup_key: str | None
    status: ThreadStatus | None
    status_error: str | None
    history: list[OMRecord] = field(default_factory=list)  # newest generation first
    log: ObservationLog | None = None
    message_count: int = 0
    orphan: bool = False   # the thread was deleted; its OM record remains (Mastra #16621)
    damage: str | None = None   # the StoreDamaged sentence when the status read met a damaged part of the file

    @property
    def record(self) -> OMRecord | None:
        """Return the current generation, or None when the thread has no OM record."""
        return self.history[0] if self.history else None

    @property
    def changes(self) -> ChangeSet:
        """What this load read afresh: the thread and its OM record (every generation of its lookup key)."""
        return ChangeSet.of(threads=[self.thread.id], om_records=[self.lookup_key])


def load_thread_detail(store: MemoryStore | None, thread_id: str) -> ThreadDetail | None:
    """Return THREAD_ID's detail; a deleted thread whose OM record remains gets a stand-in (`orphan`).

    None when neither the thread nor a thread-scope OM record of that id exists.
    """
    store = require_store(store)
    thread = store.get_thread(thread_id)
    orphan = False
    if thread is None:   # an OM record may outlive its thread (Mastra #16621): show the record
        history = store.om_history(f"thread:{thread_id}") if store.schema.has_observational_memory else []
        if not history:
            return None
        thread, orphan = Thread(id=thread_id, resource_id=history[0].resource_id or ""), True
    thread.message_count = store.message_count(thread.id)
    thread.newest_message_at = store.newest_message_at(thread.id)
    key = store.lookup_key_for_thread(thread)
    history = store.om_history(key) if key else []
    status, error, damage = None, None, None
    if history:
        try:
            status = compute_status(store, thread, history[0])
        except StudioError as exc:
            error = fmt.read_failure(exc)   # a damaged file: named once by the thread view's banner
            damage = str(exc) if isinstance(exc, StoreDamaged) else None
    log = parse_log(history[0].active_observations) if history else None
    return ThreadDetail(thread=thread, lookup_key=key, status=status, status_error=error, history=history,
                        log=log, message_count=thread.message_count, orphan=orphan, damage=damage)


def diff_generations(old: OMRecord | None, new: OMRecord) -> GenerationDiff:
    """Diff OLD's log (None: an empty log) against NEW's, with their stored token counts."""
    return diff_logs(old.active_observations if old else "", new.active_observations,
                     old.observation_token_count if old else 0, new.observation_token_count)


@dataclass
class WorkingMemoryInfo:
    """A thread's and its resource's working memory (markdown, shown as plain text) and which one applies."""

    thread_id: str
    resource_id: str | None
    thread_text: str | None
    resource_text: str | None
    resource_exists: bool
    applies: str          # "thread", "resource", "either" or "none"
    explanation: str
    extra: dict = field(default_factory=dict)


def working_memory_info(thread: Thread, resource: Resource | None) -> WorkingMemoryInfo:
    """Say which working memory Mastra's agent reads for THREAD (Memory.getWorkingMemory).

    Mastra reads `mastra_resources.workingMemory` with `workingMemory.scope: 'resource'` (its
    default) and the thread's `metadata.workingMemory` with scope 'thread'. The scope is the app's
    configuration, not stored in the file, so when both are stored the studio says so.
    """
    thread_text = thread.working_memory
    resource_text = resource.working_memory if resource is not None and isinstance(resource.working_memory, str) \
        else None
    if thread_text and resource_text:
        applies = "either"
        text = ("Both are stored. With Mastra's default scope (workingMemory.scope: 'resource') the agent reads the "
                "resource's working memory; with scope: 'thread' it reads the thread's.")
    elif thread_text:
        applies = "thread"
        text = ("Thread-scoped: this thread's metadata.workingMemory is what the agent reads "
                "(workingMemory.scope: 'thread'). The resource has none stored.")
    elif resource_text:
        applies = "resource"
        text = (f"Resource-scoped (Mastra's default): every thread of {thread.resource_id} shares the resource's "
                "working memory. This thread has none of its own.")
    else:
        applies = "none"
        text = "No working memory is stored for this thread or its resource."
    return WorkingMemoryInfo(thread.id, thread.resource_id, thread_text, resource_text, resource is not None,
                             applies, text)


def load_working_memory(store: MemoryStore | None, thread_id: str) -> WorkingMemoryInfo | None:
    """Return the working memory of THREAD_ID and its resource (None when the thread is gone)."""
    store = require_store(store)
    thread = store.get_thread(thread_id)
    if thread is None:
        return None
    return working_memory_info(thread, store.get_resource(thread.resource_id))

"""Database work of the history views (messages filters, participants, working memory, thread filter); no Qt.

Plain functions over a MemoryStore returning picklable data, run by the TaskRunner on its database
worker or, for big databases, in its helper process (which imports this module without Qt).
Filters mirror Mastra's recall filters: the date range compares ISO strings as the libSQL store
does and the metadata filter is the same SQL predicate (`studio.store.history`); speaker and text
filters read the message text (the `<turn>` speaker, the text without tags) in batches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from studio.common.metadata_filter import validate_metadata_filter
from studio.engine.speakers import SpeakerReport, attribute_message, thread_speakers
from studio.store.history import list_threads
from studio.store.message_queries import iter_thread_messages, messages_by_id, thread_message_ids
from studio.store.message_queries import message_position as store_message_position
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, Resource, Thread
from studio.app.listing import MessagePage, MessageRow, message_row, require_store

#: Speaker filter values besides a speaker key: user messages without a tag, and the agent's messages.
UNTAGGED = "\x00untagged"
AGENT = "\x00agent"
#: Messages read per query while scanning for the speaker or text filters.
SCAN_BATCH = 1000


@dataclass(frozen=True)
class MessageFilters:
    """What the Messages tab filters by; None/"" means no condition. All conditions are AND-ed.

    START/END: ISO strings as toISOString prints them (inclusive, as recall's dateRange); METADATA:
    a validated filter; SPEAKER: a speaker key, UNTAGGED or AGENT; TEXT: a case-insensitive
    substring of the text shown (tags removed), or of the raw text when RAW.
    """

    start: str | None = None
    end: str | None = None
    metadata: tuple | None = None      # ((key, value), ...) so the filters stay hashable
    speaker: str | None = None
    text: str = ""
    raw: bool = False

    @property
    def active(self) -> bool:
        """Return True when any condition is set."""
        return bool(self.start or self.end or self.metadata or self.speaker or self.text)

    @property
    def metadata_dict(self) -> dict | None:
        """Return the metadata filter as a dict (None: none)."""
        return dict(self.metadata) if self.metadata else None

    @staticmethod
    def metadata_items(metadata: dict | None) -> tuple | None:
        """Return METADATA (validated) as the hashable form MessageFilters holds."""
        checked = validate_metadata_filter(metadata)
        return tuple(checked.items()) if checked else None


@dataclass
class FilteredIds:
    """The ids (storage order) of THREAD_ID's messages that pass FILTERS, out of `scanned` messages."""

    thread_id: str
    filters: MessageFilters
    ids: list[str]
    scanned: int
    complete: bool = True


def _matches_scan(message: Message, filters: MessageFilters) -> bool:
    att = attribute_message(message)
    if filters.speaker is not None:
        if filters.speaker == AGENT:
            if message.role == "user":
                return False
        elif filters.speaker == UNTAGGED:
            if message.role != "user" or att.speaker is not None:
                return False
        elif att.speaker != filters.speaker:
            return False
    if filters.text:
        shown = message.text if filters.raw or not att.parse.turns else att.parse.display_text()
        if filters.text.casefold() not in shown.casefold():
            return False
    return True


def load_filtered_ids(store: MemoryStore | None, thread_id: str, filters: MessageFilters,
                      cancel: threading.Event | None = None) -> FilteredIds:
    """Return the ids of THREAD_ID's messages passing FILTERS, in storage order (createdAt ASC).

    Date and metadata conditions run in SQL (recall's predicates); speaker and text conditions scan
    the remaining messages SCAN_BATCH at a time. Stops early when CANCEL is set (complete=False).
    """
    store = require_store(store)
    metadata = filters.metadata_dict if filters.metadata else None
    if filters.speaker is None and not filters.text:
        ids = thread_message_ids(store, thread_id, start=filters.start, end=filters.end, metadata=metadata)
        return FilteredIds(thread_id, filters, ids, len(ids))
    ids, scanned = [], 0
    for batch in iter_thread_messages(store, thread_id, start=filters.start, end=filters.end, metadata=metadata,
                                      batch=SCAN_BATCH):
        if cancel is not None and cancel.is_set():
            return FilteredIds(thread_id, filters, ids, scanned, complete=False)
        for message in batch:
            scanned += 1
            if _matches_scan(message, filters):
                ids.append(message.id)
    return FilteredIds(thread_id, filters, ids, scanned)


def load_message_rows(store: MemoryStore | None, thread_id: str, ids: list[str], offset: int,
                      total: int, cancel: threading.Event | None = None) -> MessagePage:
    """Return the messages IDS (rows OFFSET.. of a filtered list of TOTAL) with their token counts, in IDS order."""
    found = messages_by_id(require_store(store), ids)
    out: list[MessageRow] = []
    for message_id in ids:
        if cancel is not None and cancel.is_set():
            break
        if message_id in found:
            out.append(message_row(found[message_id]))
    return MessagePage(thread_id=thread_id, offset=offset, rows=out, total=total)


def message_position(store: MemoryStore | None, thread_id: str, message_id: str) -> int:
    """Return MESSAGE_ID's row in THREAD_ID's storage order (createdAt, then insertion), or -1."""
    return store_message_position(require_store(store), thread_id, message_id)


def load_speakers(store: MemoryStore | None, thread_id: str, cancel: threading.Event | None = None) -> SpeakerReport:
    """Return THREAD_ID's participants (studio.engine.speakers) with Mastra's token estimates."""
    return thread_speakers(require_store(store), thread_id, cancel=cancel)


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


def load_metadata_thread_ids(store: MemoryStore | None, metadata: dict) -> set[str]:
    """Return the ids of every thread whose metadata matches METADATA (Memory.listThreads' filter, all pages)."""
    store = require_store(store)
    return set(list_threads(store, filter={"metadata": metadata}, per_page=False).thread_ids)


def describe_speaker_filter(value: Any, report: SpeakerReport | None) -> str:
    """Return how the speaker filter VALUE reads in a sentence ("Alice (editor)", "untagged user messages")."""
    if value == UNTAGGED:
        return "untagged user messages"
    if value == AGENT:
        return "the agent's messages"
    speaker = report.speaker(value) if report is not None else None
    return speaker.label if speaker is not None else str(value)

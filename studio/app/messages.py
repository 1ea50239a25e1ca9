"""A thread's messages as the Messages tab shows them: pages with token counts, filters, positions (no Qt).

Loads (`studio.app.loads`): module-level functions of the store returning plain (picklable)
data, run by the studio's TaskRunner on its database worker or, for big databases, in its helper
process. Filters mirror Mastra's recall filters: the date range compares ISO strings as the
libSQL store does and the metadata filter is the same SQL predicate (`studio.store.history`);
speaker and text filters read the message text (the `<turn>` speaker, the text without tags) in
batches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from studio.app.loads import require_store
from studio.app.uncountable import UncountableMessage, uncountable_sentence
from studio.common.metadata_filter import validate_metadata_filter
from studio.engine import tokens
from studio.engine.speakers import SpeakerReport, attribute_message
from studio.errors import StudioError
from studio.store.memory_store import MemoryStore
from studio.store.message_queries import iter_thread_messages, messages_by_id, thread_message_ids
from studio.store.message_queries import message_position as store_message_position
from studio.store.records import Message


@dataclass
class MessageRow:
    """One message with its token counts: Mastra's estimate and the exact o200k count (tokens).

    `uncountable`: when Mastra's own count throws on the message (UncountableMessage), the sentence saying why
    (`uncountable_sentence`), and `estimate` is None; else None.
    """

    message: Message
    estimate: int | None
    exact: int | None
    uncountable: str | None = None


@dataclass
class MessagePage:
    """Messages OFFSET.. of a thread, and the thread's message count."""

    thread_id: str
    offset: int
    rows: list[MessageRow]
    total: int


def message_row(message: Message) -> MessageRow:
    """Return MESSAGE with its Mastra estimate and exact o200k token counts (None if uncountable; a message Mastra's
    TokenCounter throws on carries the sentence why in `uncountable`)."""
    shaped = message.as_mastra()
    uncountable = None
    try:
        estimate = tokens.count_messages([shaped])
    except UncountableMessage as exc:
        estimate, uncountable = None, uncountable_sentence(exc.for_message(message.id))
    except StudioError:
        estimate = None
    try:
        exact = tokens.exact_message_tokens(shaped)
    except StudioError:
        exact = None
    return MessageRow(message, estimate, exact, uncountable)


def load_message_page(store: MemoryStore | None, thread_id: str, offset: int, limit: int,
                      cancel: threading.Event | None = None) -> MessagePage:
    """Return messages OFFSET..OFFSET+LIMIT of THREAD_ID (storage order) with their token counts."""
    store = require_store(store)
    total = store.message_count(thread_id)
    rows = []
    for message in store.list_messages(thread_id, limit=limit, offset=offset):
        if cancel is not None and cancel.is_set():
            break
        rows.append(message_row(message))
    return MessagePage(thread_id=thread_id, offset=offset, rows=rows, total=total)


@dataclass
class MessageRefresh:
    """THREAD_ID's first messages as stored now, told against the rows a view holds (`refresh_message_page`).

    IDS: the ids of messages 0..len(IDS)-1 in storage order; ROWS: {id: MessageRow} of those that are new
    or differ from the held message of that id (the others are the held rows, unchanged); TOTAL: the
    thread's message count.
    """

    thread_id: str
    ids: list[str]
    rows: dict[str, MessageRow]
    total: int


def refresh_message_page(store: MemoryStore | None, thread_id: str, held: list[Message], limit: int,
                         cancel: threading.Event | None = None) -> MessageRefresh | None:
    """Re-read THREAD_ID's first LIMIT messages; count the tokens of those that are new or changed only.

    HELD: the messages a view shows (rows 0..); a message equal to the held one of its id (every
    column: content, role, type, time, thread, resource) keeps its held row and counts; a new one, an
    upsert that changed it, or one whose place moved is what `load_message_page` would make of it.
    None when CANCEL is set meanwhile.
    """
    store = require_store(store)
    total = store.message_count(thread_id)
    by_id = {m.id: m for m in held}
    ids: list[str] = []
    rows: dict[str, MessageRow] = {}
    for message in store.list_messages(thread_id, limit=limit, offset=0):
        if cancel is not None and cancel.is_set():
            return None
        ids.append(message.id)
        if by_id.get(message.id) != message:
            rows[message.id] = message_row(message)
    return MessageRefresh(thread_id, ids, rows, total)


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
    #: each id's number in the whole thread (1-based, storage order), as the unfiltered list numbers it
    positions: list[int] = field(default_factory=list)


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
        return FilteredIds(thread_id, filters, ids, len(ids), positions=_positions(store, thread_id, ids))
    ids, scanned = [], 0
    for batch in iter_thread_messages(store, thread_id, start=filters.start, end=filters.end, metadata=metadata,
                                      batch=SCAN_BATCH):
        if cancel is not None and cancel.is_set():
            return FilteredIds(thread_id, filters, ids, scanned, complete=False)
        for message in batch:
            scanned += 1
            if _matches_scan(message, filters):
                ids.append(message.id)
    return FilteredIds(thread_id, filters, ids, scanned, positions=_positions(store, thread_id, ids))


def _positions(store: MemoryStore, thread_id: str, ids: list[str]) -> list[int]:
    """Return each of IDS' number in the whole thread (1-based, storage order: the unfiltered list's #)."""
    if not ids:
        return []
    number = {mid: n for n, mid in enumerate(thread_message_ids(store, thread_id), 1)}
    return [number.get(mid, 0) for mid in ids]


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


def describe_speaker_filter(value: Any, report: SpeakerReport | None) -> str:
    """Return how the speaker filter VALUE reads in a sentence ("Alice (editor)", "untagged user messages")."""
    if value == UNTAGGED:
        return "untagged user messages"
    if value == AGENT:
        return "the agent's messages"
    speaker = report.speaker(value) if report is not None else None
    return speaker.label if speaker is not None else str(value)

"""Compute a thread's Observational Memory status: the two progress bars and what surrounds them.

Mirrors `ObservationalMemory.getStatus` of @mastra/memory 1.31.0, the function Mastra's own studio
draws its "Messages before observation" and "Observations before reflection" bars from:

* pending tokens = Mastra's estimate of the thread's unobserved messages (see `unobserved`); in
  resource scope, the whole resource's unobserved messages plus the formatted unobserved context
  of the resource's other threads (`countString` of the `<other-conversation>` blocks);
* threshold = messageTokens, or with a shared token budget max(total - observationTokens, messageTokens);
* reflection threshold = observationTokens (shared budget: max(total - threshold, 1000));
* buffered chunks, unbuffered pending tokens, can-activate and projected removal on activation.

Unlike Mastra, a record is never created here: a thread with no OM record has no status.

Reading and computing are apart: `load_status_rows` has the store read, for any number of threads,
one batch per kind of row (their unobserved messages, their resources' messages and threads), and
`status_from_rows` is a pure function of those rows. `compute_status` does both for one thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from studio.common.om_settings import (
    OMSettings,
    ThresholdRange,
    chunk_tokens,
    dynamic_threshold,
    max_threshold,
    projected_message_removal,
    resolve_settings,
)
from studio.engine import tokens
from studio.engine.unobserved import is_working_memory_state_signal, storage_cursor, unobserved_messages
from studio.store.flags import FLAG_COLUMNS, STALE_FLAG_AFTER_MS, FlagState, flag_states  # noqa: F401 (re-exported)
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, OMRecord, Thread

#: Mastra's getOtherThreadsContext calls listThreads without perPage: the default page of 100 threads.
OTHER_THREADS_LIMIT = 100
#: Up to this many resources, `load_status_rows` lists each one's threads instead of every thread.
FEW_RESOURCES = 2


@dataclass
class ThreadStatus:
    """OM status of one thread, with Mastra's getStatus figures (all token figures in tokens)."""

    thread_id: str
    lookup_key: str
    scope: str
    record_id: str
    generation_count: int
    observation_token_count: int
    pending_tokens: int
    threshold: int
    reflection_threshold: int
    unbuffered_pending_tokens: int
    should_observe: bool
    should_reflect: bool
    buffered_chunk_count: int
    buffered_chunk_tokens: int
    can_activate: bool
    projected_removal_tokens: int
    async_observation_enabled: bool
    async_reflection_enabled: bool
    unobserved_message_count: int
    other_threads_tokens: int
    settings: OMSettings
    flags: list[FlagState] = field(default_factory=list)

    @property
    def message_ratio(self) -> float:
        """Return pending / threshold (1.0 = at the observation threshold)."""
        return self.pending_tokens / self.threshold if self.threshold else 0.0

    @property
    def observation_ratio(self) -> float:
        """Return observation tokens / reflection threshold (1.0 = at the reflection threshold)."""
        return self.observation_token_count / self.reflection_threshold if self.reflection_threshold else 0.0

    def to_json(self) -> dict:
        """Return the stable JSON shape of `memory-studio inspect` for this status."""
        return {
            "pending_tokens": self.pending_tokens,
            "threshold": self.threshold,
            "reflection_threshold": self.reflection_threshold,
            "unbuffered_pending_tokens": self.unbuffered_pending_tokens,
            "should_observe": self.should_observe,
            "should_reflect": self.should_reflect,
            "buffered_chunk_count": self.buffered_chunk_count,
            "buffered_chunk_tokens": self.buffered_chunk_tokens,
            "can_activate": self.can_activate,
            "projected_removal_tokens": self.projected_removal_tokens,
            "async_observation_enabled": self.async_observation_enabled,
            "async_reflection_enabled": self.async_reflection_enabled,
            "flags": {f.name: ("stale" if f.stale else "live") for f in self.flags if f.set},
        }


@dataclass
class StatusRows:
    """The stored rows `status_from_rows` needs, read by the store in one batch per kind of row.

    `thread_messages[(thread id, since)]` / `resource_messages[(resource id, since)]`: the messages
    (storage order) created at or after SINCE (a `storage_cursor`, None = all), as Mastra's
    listMessages / listMessagesByResourceId with dateRange.start return them;
    `resource_threads[resource id]`: the resource's threads in listThreads order (createdAt DESC).
    """

    thread_messages: dict[tuple[str, str | None], list[Message]] = field(default_factory=dict)
    resource_messages: dict[tuple[str, str | None], list[Message]] = field(default_factory=dict)
    resource_threads: dict[str, list[Thread]] = field(default_factory=dict)


def _other_cursor(other: Thread, record: OMRecord) -> str | None:
    cursor_at = other.om_metadata.get("lastObservedAt")
    if cursor_at is None:  # JavaScript's ??: only a missing value falls back to the record's cursor
        cursor_at = record.last_observed_at
    return storage_cursor(cursor_at)


def _other_threads(rows: StatusRows, resource_id: str) -> list[Thread]:
    """Mastra's getOtherThreadsContext reads listThreads without perPage: the first page of 100 threads."""
    return rows.resource_threads.get(resource_id, [])[:OTHER_THREADS_LIMIT]


def load_status_rows(store: MemoryStore, pairs: Iterable[tuple[Thread, OMRecord]],
                     threads: list[Thread] | None = None) -> StatusRows:
    """Read, in one batch per kind of row, what the statuses of PAIRS (thread, its current record) need.

    THREADS (every thread of the store, listThreads order) gives the resources' threads for the
    resource-scope context of other threads; when None, the store's thread list is read once (for up
    to FEW_RESOURCES resources, each one's threads). With THREADS given, the number of statements
    does not grow with the number of pairs (the store's `messages_since_many`). Raises StoreError
    if the database cannot be read.
    """
    pairs = list(pairs)
    rows = StatusRows()
    thread_wanted: set[tuple[str, str | None]] = set()
    resource_wanted: set[tuple[str, str | None]] = set()
    resource_pairs = [(t, r) for t, r in pairs if r.scope == "resource" and t.resource_id]
    if resource_pairs:
        needed = {t.resource_id for t, _ in resource_pairs}
        if threads is None and len(needed) <= FEW_RESOURCES:  # one thread's status: its resource's threads only
            rows.resource_threads = {r: store.list_threads(r) for r in needed}
        else:
            for t in store.list_threads() if threads is None else threads:
                if t.resource_id in needed:
                    rows.resource_threads.setdefault(t.resource_id, []).append(t)
    for thread, record in pairs:
        cursor = storage_cursor(record.last_observed_at)
        if record.scope == "resource" and thread.resource_id:
            resource_wanted.add((thread.resource_id, cursor))
            for other in _other_threads(rows, thread.resource_id):
                if other.id != thread.id:
                    thread_wanted.add((other.id, _other_cursor(other, record)))
        else:
            thread_wanted.add((thread.id, cursor))
    if thread_wanted:
        rows.thread_messages = store.messages_since_many(thread_wanted)
    if resource_wanted:
        rows.resource_messages = store.messages_since_many(resource_wanted, by="resource")
    return rows


def _other_threads_tokens(rows: StatusRows, record: OMRecord, resource_id: str, thread_id: str) -> int:
    """Return countString of the other threads' unobserved context (Mastra's getOtherThreadsContext)."""
    from studio.engine.observer_format import format_other_threads_context  # resource scope only: ~10 ms import

    by_thread: dict[str, list[dict]] = {}
    for other in _other_threads(rows, resource_id):
        if other.id == thread_id:
            continue
        msgs = [m.as_mastra() for m in rows.thread_messages.get((other.id, _other_cursor(other, record)), ())]
        msgs = [m for m in msgs if not is_working_memory_state_signal(m)]
        if msgs:
            by_thread[other.id] = msgs
    context = format_other_threads_context(by_thread, thread_id) if by_thread else None
    return tokens.count_string(context) if context else 0


def compute_status(store: MemoryStore, thread: Thread | str, record: OMRecord | None = None,
                   *, now_ms: int | None = None) -> ThreadStatus | None:
    """Return THREAD's OM status as Mastra's getStatus computes it, or None when no OM record governs it.

    RECORD defaults to the current generation of the thread's lookup key (thread scope first,
    then resource scope). Reads the rows with `load_status_rows`, then `status_from_rows`.
    Raises StoreError if the database cannot be read.
    """
    if isinstance(thread, str):
        found = store.get_thread(thread)
        if found is None:
            return None
        thread = found
    if record is None:
        key = store.lookup_key_for_thread(thread)
        record = store.om_current(key) if key else None
        if record is None:
            return None
    rows = load_status_rows(store, [(thread, record)])
    return status_from_rows(thread, record, rows, now_ms=now_ms)


def counted_key(thread_id: str | None, message_id: str, model: str) -> tuple[str | None, str, str]:
    """Return the key of a message's count under a counter model (MODEL: the repr of `counter_model`) in the
    COUNTED dict of `status_from_rows`: one row of one snapshot counted under one model."""
    return thread_id, message_id, model


def status_from_rows(thread: Thread, record: OMRecord, rows: StatusRows, *, now_ms: int | None = None,
                     counted: dict[str, int] | None = None) -> ThreadStatus:
    """Return THREAD's status under RECORD (its current OM generation) from ROWS (`load_status_rows`).

    A pure function of its arguments (and of NOW_MS for the busy flags' age): Mastra's getStatus.
    COUNTED: a dict that receives {`counted_key`: `tokens.count_message_for_status` of the message}
    for each message of the window counted (the memory doctor's window check reuses them instead of
    counting the same messages again). Raises what the token counter raises for
    stored values Mastra itself could not use.
    """
    settings = resolve_settings(record.config, record.scope)
    resource_scope = record.scope == "resource"
    cursor = storage_cursor(record.last_observed_at)
    if resource_scope and thread.resource_id:
        raw = rows.resource_messages.get((thread.resource_id, cursor), [])
    else:
        raw = rows.thread_messages.get((thread.id, cursor), [])
    loaded = [m.as_mastra() for m in raw]
    loaded = [m for m in loaded if m["role"] != "system" and not is_working_memory_state_signal(m)]
    window = unobserved_messages(loaded, record.last_observed_at, record.observed_message_ids)
    if counted is None:
        context_tokens = tokens.count_messages_for_status(window, model=settings.counter_model)
    else:   # count_messages_for_status's figure, each message's count kept: 24 + the messages' own
        context_tokens, model = 0, repr(settings.counter_model)
        for message in window:
            count = tokens.count_message_for_status(message, model=settings.counter_model)
            counted[counted_key(message["threadId"], message["id"], model)] = count
            context_tokens += count
        context_tokens += tokens.TOKENS_PER_CONVERSATION if window else 0
    other = (_other_threads_tokens(rows, record, thread.resource_id, thread.id)
             if resource_scope and thread.resource_id else 0)
    pending = max(0, context_tokens + other)

    observation_tokens = record.observation_token_count
    threshold = dynamic_threshold(settings.message_tokens, observation_tokens)
    chunks = record.buffered_chunks
    chunk_message_tokens = sum(chunk_tokens(c, "messageTokens") for c in chunks)
    reflect_threshold = max_threshold(settings.reflection_tokens)
    if isinstance(settings.message_tokens, ThresholdRange):
        effective_reflection = max(settings.message_tokens.max - threshold, 1000)
    else:
        effective_reflection = reflect_threshold
    return ThreadStatus(
        thread_id=thread.id,
        lookup_key=record.lookup_key,
        scope=record.scope,
        record_id=record.id,
        generation_count=record.generation_count,
        observation_token_count=observation_tokens,
        pending_tokens=pending,
        threshold=threshold,
        reflection_threshold=effective_reflection,
        unbuffered_pending_tokens=max(0, pending - chunk_message_tokens),
        should_observe=pending >= threshold,
        should_reflect=observation_tokens >= reflect_threshold,
        buffered_chunk_count=len(chunks),
        buffered_chunk_tokens=chunk_message_tokens,
        can_activate=len(chunks) > 0,
        projected_removal_tokens=projected_message_removal(
            chunks, settings.buffer_activation if settings.buffer_activation is not None else 1,
            max_threshold(settings.message_tokens), pending),
        async_observation_enabled=settings.async_observation_enabled,
        async_reflection_enabled=settings.async_reflection_enabled,
        unobserved_message_count=len(window),
        other_threads_tokens=other,
        settings=settings,
        flags=flag_states(record, now_ms),
    )

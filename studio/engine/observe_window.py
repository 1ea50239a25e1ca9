"""Which messages an observation would observe now, as Mastra's `observe()` selects them (read-only, no Qt).

The read half of the observation writes of `studio.store.write.observation` (thread scope) and
`studio.store.write.observation_resource` (resource scope): the engine reads the store, applies
Mastra's rules (the unobserved window of `studio.engine.unobserved`, the settings of the record's
`config`, tokenx counts of `studio.engine.tokens`) and hands the write a window that carries
those rules, so the write re-checks the window and counts the new log inside its transaction
without reaching back into the engine.

- `observation_window(path, thread_id)` -> `ObservationWindow` (thread scope);
- `resource_observation_window(path, thread_id)` -> `ResourceObservationWindow` (resource scope);
- `thread_and_record(store, thread_id)` -> (thread, lookup key, current OM record).

Both raise WriteRefused ("not-found": no thread or no OM record; "invalid": a record of the other
scope) and StoreError for an unreadable database. Mirrors @mastra/memory 1.31.0 `observe()`:
`loadMessagesFromStorage` + `getUnobservedMessages` (thread scope) and
`ResourceScopedObservationStrategy.prepare` (resource scope).
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from studio.common.jscompat import UNDEFINED
from studio.common.om_settings import dynamic_threshold, max_threshold, resolve_settings
from studio.engine import tokens
from studio.engine.unobserved import is_working_memory_state_signal, storage_cursor, unobserved_messages
from studio.errors import WriteRefused
from studio.store import open_store
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, OMRecord, iso_to_ms, ms_to_iso
from studio.store.write.common import to_int
from studio.store.write.observation import ObservationWindow
from studio.store.write.observation_resource import ResourceObservationWindow

__all__ = ["observation_window", "resource_observation_window", "thread_and_record"]


def _config(record_config: Any) -> dict:
    if isinstance(record_config, (str, bytes, bytearray)):
        try:
            record_config = json.loads(record_config)
        except ValueError:
            return {}
    return record_config if isinstance(record_config, dict) else {}


def _window(messages: list[Message], record: OMRecord) -> list[dict]:
    """Return the unobserved window of MESSAGES (stored order) for RECORD, as Mastra message dicts."""
    loaded = [m.as_mastra() for m in messages]
    loaded = [m for m in loaded if m["role"] != "system" and not is_working_memory_state_signal(m)]
    return unobserved_messages(loaded, record.last_observed_at, record.observed_message_ids)


def _om(metadata: Any) -> dict:
    mastra = metadata.get("mastra") if isinstance(metadata, dict) else None
    om = mastra.get("om") if isinstance(mastra, dict) else None
    return om if isinstance(om, dict) else {}


def thread_and_record(store: MemoryStore, thread_id: str):
    """Return (thread, lookup key, current OM record) of THREAD_ID in STORE.

    Raises WriteRefused("not-found") when the thread or its OM record does not exist.
    """
    thread = store.get_thread(thread_id)
    if thread is None:
        raise WriteRefused("not-found", f"There is no thread {thread_id!r}.")
    key = store.lookup_key_for_thread(thread)
    record = store.om_current(key) if key else None
    if record is None:
        raise WriteRefused("not-found", f"Thread {thread_id!r} has no Observational Memory record.")
    return thread, key, record


def observation_window(path: str | os.PathLike[str], thread_id: str) -> ObservationWindow:
    """Read THREAD_ID's unobserved window (read-only) as Mastra's observe() selects it.

    The messages are those Memory.getContext loads (the thread's stored messages from the
    record's `lastObservedAt` on), filtered by getUnobservedMessages (observedMessageIds, marker
    boundaries, cursor). TOKENS: `countMessagesAsync` of them. Raises WriteRefused("not-found")
    without the thread or an OM record, and ("invalid") for a resource-scope record (see
    `resource_observation_window`).
    """
    with open_store(path) as store, store.snapshot():
        thread, key, record = thread_and_record(store, thread_id)
        if record.scope == "resource" or key.startswith("resource:"):
            raise WriteRefused("invalid", f"{key} is a resource-scope record: its window is read by "
                                          "studio.engine.observe_window.resource_observation_window.")
        since = storage_cursor(record.last_observed_at)
        raw = store.list_messages(thread.id, since=since)
    window = _window(raw, record)
    config = _config(record.config)
    settings = resolve_settings(config, record.scope)
    obs = config.get("observation") if isinstance(config.get("observation"), dict) else {}
    ref = config.get("reflection") if isinstance(config.get("reflection"), dict) else {}
    counted = tokens.count_messages_for_status(copy.deepcopy(window), model=settings.counter_model)
    return ObservationWindow(thread_id=thread.id, lookup_key=key, scope=record.scope or "thread", record=record,
                             messages=window, tokens=counted,
                             pending_message_tokens=to_int(record.columns.get("pendingMessageTokens")),
                             threshold=dynamic_threshold(settings.message_tokens, record.observation_token_count),
                             message_tokens=obs.get("messageTokens", UNDEFINED),
                             observation_tokens=ref.get("observationTokens", UNDEFINED),
                             since=since, select=lambda messages: _window(messages, record),
                             count_observations=tokens.count_observations)


def resource_observation_window(path: str | os.PathLike[str], thread_id: str) -> ResourceObservationWindow:
    """Read (read-only) what observe() for THREAD_ID of a resource-scope record would observe.

    Every thread of the resource contributes its non-system messages after its own
    `metadata.mastra.om.lastObservedAt`; THREAD_ID's list is merged with the turn's window; threads
    are taken largest first until the running sum reaches messageTokens, then ordered by their
    oldest message (see `studio.store.write.observation_resource`). Raises WriteRefused("not-found")
    without the thread or record, ("invalid") for a thread-scope record.
    """
    with open_store(path) as store, store.snapshot():
        _thread, key, record = thread_and_record(store, thread_id)
        if not key.startswith("resource:"):
            raise WriteRefused("invalid", f"{key} is not a resource-scope record.")
        resource_id = record.resource_id
        since = storage_cursor(record.last_observed_at)
        window = _window(store.list_resource_messages(resource_id, since=since), record)
        by_thread: dict[str, list[dict]] = {}
        snapshot = {}
        for t in store.list_threads(resource_id):
            since_ms = iso_to_ms(_om(t.metadata).get("lastObservedAt"))
            since = ms_to_iso(since_ms + 1) if since_ms is not None else None
            msgs = [m.as_mastra() for m in store.list_messages(t.id, since=since)]
            msgs = [m for m in msgs if m["role"] != "system"]
            snapshot[t.id] = (t.updated_at, len(msgs), msgs[-1]["id"] if msgs else None)
            if msgs:
                by_thread[t.id] = msgs
    if window:
        merged = {m["id"]: m for m in by_thread.get(thread_id, [])}
        for m in window:
            merged[m["id"]] = m
        by_thread[thread_id] = list(merged.values())
    config = _config(record.config)
    settings = resolve_settings(config, "resource")
    counted = {tid: tokens.count_messages_for_status(copy.deepcopy(msgs), model=settings.counter_model)
               for tid, msgs in by_thread.items()}
    threshold = max_threshold(settings.message_tokens)
    picked, total = [], 0
    for tid in sorted(by_thread, key=lambda t: -counted[t]):  # stable, as Array#sort
        if total >= threshold:
            break
        picked.append(tid)
        total += counted[tid]

    def oldest(tid: str) -> int:
        return min((iso_to_ms(m.get("createdAt")) or 0) for m in by_thread[tid])
    order = sorted(picked, key=oldest)
    gate_tokens = tokens.count_messages_for_status(copy.deepcopy(window), model=settings.counter_model)
    return ResourceObservationWindow(
        thread_id=thread_id, lookup_key=key, record=record,
        threads=[(tid, by_thread[tid], counted[tid]) for tid in order], window_ids=[m["id"] for m in window],
        tokens=gate_tokens, pending_message_tokens=to_int(record.columns.get("pendingMessageTokens")),
        threshold=dynamic_threshold(settings.message_tokens, record.observation_token_count),
        marker_config={"messageTokens": threshold, "observationTokens": max_threshold(settings.reflection_tokens),
                       "scope": "resource"},
        snapshot=snapshot, count_observations=tokens.count_observations)

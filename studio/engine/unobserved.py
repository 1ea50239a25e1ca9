"""Decide which stored messages OM has not observed yet (the message window).

Mirrors Mastra's `ObservationalMemory.getUnobservedMessages` and `loadMessagesFromStorage`
(@mastra/memory 1.31.0): system messages and working-memory state signals never count; ids in
`observedMessageIds` are skipped; a message with a completed observation (`data-om-observation-end`
marker part) contributes only the parts after its last end marker; a message with an observation
in progress counts whole; other messages count when `createdAt` is after `lastObservedAt`.
"""

from __future__ import annotations

from typing import Any

from studio.store.records import iso_to_ms, ms_to_iso, storage_cursor  # noqa: F401 (re-exported)

WORKING_MEMORY_STATE_ID = "working-memory"
OBSERVATION_START = "data-om-observation-start"
OBSERVATION_END = "data-om-observation-end"
OBSERVATION_FAILED = "data-om-observation-failed"


def _parts(message: dict) -> list | None:
    content = message.get("content")
    if isinstance(content, dict) and isinstance(content.get("parts"), list):
        return content["parts"]
    return None


def _part_type(part: Any) -> str | None:
    return part.get("type") if isinstance(part, dict) else None


def is_working_memory_state_signal(message: dict) -> bool:
    """Return True for a persisted working-memory state signal (role `signal`, state id `working-memory`)."""
    if message.get("role") != "signal":
        return False
    content = message.get("content")
    metadata = content.get("metadata") if isinstance(content, dict) else None
    signal = metadata.get("signal") if isinstance(metadata, dict) else None
    if not isinstance(signal, dict):
        return False
    signal_type = signal.get("type", message.get("type"))
    if signal_type != "state":
        return False
    inner = signal.get("metadata")
    state = inner.get("state") if isinstance(inner, dict) else None
    return isinstance(state, dict) and state.get("id") == WORKING_MEMORY_STATE_ID


def last_completed_observation_boundary(message: dict) -> int:
    """Return the index of the last `data-om-observation-end` part, or -1."""
    parts = _parts(message)
    if not parts:
        return -1
    for i in range(len(parts) - 1, -1, -1):
        if _part_type(parts[i]) == OBSERVATION_END:
            return i
    return -1


def has_observation_in_progress(message: dict) -> bool:
    """Return True when the last observation-start part comes after every end/failed part."""
    parts = _parts(message)
    if not parts:
        return False
    last_start = last_end = -1
    for i in range(len(parts) - 1, -1, -1):
        kind = _part_type(parts[i])
        if kind == OBSERVATION_START and last_start == -1:
            last_start = i
        if kind in (OBSERVATION_END, OBSERVATION_FAILED) and last_end == -1:
            last_end = i
    return last_start != -1 and last_start > last_end


def unobserved_parts(message: dict) -> list:
    """Return the parts OM has not observed (Mastra's getUnobservedParts)."""
    parts = _parts(message)
    if not parts:
        return []
    end = last_completed_observation_boundary(message)
    if end == -1:
        return [p for p in parts if _part_type(p) != OBSERVATION_START]
    return [p for p in parts[end + 1:] if not str(_part_type(p) or "").startswith("data-om-observation-")]


def unobserved_messages(messages: list[dict], last_observed_at: str | None, observed_ids: list | None,
                        extra_excluded_ids: set[str] | None = None) -> list[dict]:
    """Return the messages (Mastra message dicts, storage order) that are still in the message window.

    A message whose completed observation covers only some parts is returned as a copy holding
    the unobserved parts. EXTRA_EXCLUDED_IDS adds ids to skip (buffered chunks, on buffering paths).
    """
    observed = {i for i in (observed_ids or []) if isinstance(i, str)}
    if extra_excluded_ids:
        observed |= extra_excluded_ids
    has_cursor = bool(last_observed_at)
    cursor = iso_to_ms(last_observed_at)
    result = []
    for msg in messages:
        if msg.get("role") == "system" or is_working_memory_state_signal(msg):
            continue
        if msg.get("id") in observed:
            continue
        if has_observation_in_progress(msg):
            result.append(msg)
        elif last_completed_observation_boundary(msg) != -1:
            parts = unobserved_parts(msg)
            if parts:
                result.append({**msg, "content": {**msg["content"], "parts": parts}})
        elif not msg.get("createdAt") or not has_cursor:
            result.append(msg)  # no timestamp, or nothing observed yet
        else:
            # Mastra compares Dates: an unparseable time is NaN, and NaN > cursor is false.
            created = iso_to_ms(msg.get("createdAt"))
            if created is not None and cursor is not None and created > cursor:
                result.append(msg)
    return result

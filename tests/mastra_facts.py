"""What Mastra itself wrote into a fixture, read from the raw rows with sqlite3 (not through the studio).

Expected figures of the timeline and what-if tests come from here and from the oracle, never from the
studio's own output:
* a turn is one user message: the turn of a moment is the number of the thread's user messages created
  at or before it;
* Mastra writes `data-om-observation-start` / `-end` parts (with `tokensToObserve`) onto the reply of
  each observation it runs in a turn;
* a reflection writes a new OM row (`originType` "reflection", its `createdAt` the moment it ran); a
  synchronous reflection is only checked right after an observation (ReflectorRunner.maybeReflect), so
  the turn of a reflection is also an observation turn, marker or not;
* Mastra's count of a set of messages is the sum of each message's count without the conversation
  overhead, plus that overhead once (countMessages; TOKENS_PER_CONVERSATION = 24): the oracle's
  `perMessage` figures each include it once.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

TOKENS_PER_CONVERSATION = 24  # Mastra's TokenCounter: once per counted conversation


def raw_messages(path: Path, thread_id: str) -> list[dict]:
    """Return THREAD_ID's messages as stored: [{id, role, createdAt, parts}], oldest first."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, role, createdAt, content FROM mastra_messages WHERE thread_id = ? "
                            "ORDER BY createdAt, rowid", (thread_id,)).fetchall()
    finally:
        conn.close()
    out = []
    for message_id, role, created_at, content in rows:
        parts = json.loads(content).get("parts") if content.startswith("{") else None
        out.append({"id": message_id, "role": role, "createdAt": created_at, "parts": parts or []})
    return out


def om_rows(path: Path, lookup_key: str) -> list[dict]:
    """Return the OM rows (generations) of LOOKUP_KEY as stored, oldest generation first."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute("SELECT * FROM mastra_observational_memory WHERE lookupKey = ? ORDER BY generationCount",
                            (lookup_key,)).fetchall()
    finally:
        conn.close()
    return [dict(r) for r in rows]


def turn_at(messages: list[dict], iso: str) -> int:
    """Return the turn of moment ISO: the user messages created at or before it (ISO-8601 UTC strings sort)."""
    return sum(1 for m in messages if m["role"] == "user" and m["createdAt"] <= iso)


def marker_messages(messages: list[dict], part_type: str) -> list[tuple[dict, dict]]:
    """Return (message, part) for each part of PART_TYPE (e.g. "data-om-observation-start"), oldest first."""
    return [(m, p) for m in messages for p in m["parts"] if isinstance(p, dict) and p.get("type") == part_type]


def sync_turns(path: Path, thread_id: str) -> tuple[list[int], list[int]]:
    """Return (observation turns, reflection turns) of a thread-scope, synchronous THREAD_ID, from Mastra's rows."""
    messages = raw_messages(path, thread_id)
    reflections = [turn_at(messages, r["createdAt"]) for r in om_rows(path, f"thread:{thread_id}")
                   if r["originType"] == "reflection"]
    marked = [turn_at(messages, m["createdAt"]) for m, _ in marker_messages(messages, "data-om-observation-end")]
    return sorted(set(marked) | set(reflections)), reflections


def window_tokens(per_message: dict[str, int], message_ids: list[str]) -> int:
    """Return Mastra's count of MESSAGE_IDS from the oracle's PER_MESSAGE counts (overhead once; 0 if none)."""
    if not message_ids:
        return 0
    return sum(per_message[i] - TOKENS_PER_CONVERSATION for i in message_ids) + TOKENS_PER_CONVERSATION

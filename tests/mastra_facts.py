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
import re
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


# -- the doctor's facts: what the rows themselves show ------------------------------------------------------

#: A 🔴 observation line as Mastra's Observer and Reflector write it: `* 🔴 (HH:MM) text`.
HIGH_PRIORITY_LINE = re.compile(r"^\s*[*-] 🔴 ")
#: The scripted Reflector's own summary line, written anew at each reflection (mastra-corpus README).
REFLECTOR_SUMMARY = re.compile(r"^\s*[*-] 🔴 \(\d\d:\d\d\) Ongoing topics: ")
#: The scripted Observer's 🔴 line for a user turn: `User asked about TOPIC: QUESTION` (mastra-corpus README).
ASKED = re.compile(r"^\s*[*-] 🔴 \(\d\d:\d\d\) User asked about (?P<topic>.+?): (?P<question>.+)$")


def lookup_keys(path: Path) -> list[str]:
    """Return every OM lookupKey of the database at PATH, sorted ([] without an OM table)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'mastra_observational_memory'").fetchall():
            return []
        return sorted(k for (k,) in conn.execute("SELECT DISTINCT lookupKey FROM mastra_observational_memory"))
    finally:
        conn.close()


def dropped_high_priority(path: Path, lookup_key: str) -> set[tuple[int, str]]:
    """Return {(generation, line stripped)}: the 🔴 lines no later generation of LOOKUP_KEY holds word for word.

    The scripted Reflector copies each line it keeps verbatim and never rewords one (mastra-corpus README),
    so every line returned was really dropped by a reflection; its own `Ongoing topics` summary, rewritten
    at each reflection, is left out.
    """
    rows = om_rows(path, lookup_key)
    out = set()
    for row in rows:
        later_rows = [r for r in rows if r["generationCount"] > row["generationCount"]]
        if not later_rows:   # the current generation: nothing after it to keep its lines
            continue
        later = {ln.strip() for r in later_rows for ln in (r["activeObservations"] or "").splitlines()}
        for ln in (row["activeObservations"] or "").splitlines():
            if HIGH_PRIORITY_LINE.match(ln) and not REFLECTOR_SUMMARY.match(ln) and ln.strip() not in later:
                out.add((row["generationCount"], ln.strip()))
    return out


def dropped_without_trace(path: Path, lookup_key: str) -> set[tuple[int, str]]:
    """Return the dropped 🔴 `User asked about TOPIC: QUESTION` lines of which no later generation keeps anything.

    A subset of `dropped_high_priority`: no later 🔴 line asks about the same topic, and none asks the
    same question. Nothing later says any part of such a fact, so any rule that tells loss from
    rewording must call it lost.
    """
    rows = om_rows(path, lookup_key)
    out = set()
    for generation, line in dropped_high_priority(path, lookup_key):
        asked = [ASKED.match(ln) for r in rows if r["generationCount"] > generation
                 for ln in (r["activeObservations"] or "").splitlines()]
        topics = {m["topic"] for m in asked if m}
        questions = {m["question"] for m in asked if m}
        m = ASKED.match(line)
        if m and m["topic"] not in topics and m["question"] not in questions:
            out.add((generation, line))
    return out


def timestamp_ties(path: Path) -> dict[str, list[str]]:
    """Return {thread: ids of its messages that share a createdAt with another of its messages}, ids sorted."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT thread_id, createdAt, id FROM mastra_messages").fetchall()
    finally:
        conn.close()
    groups: dict[tuple[str, str], list[str]] = {}
    for thread_id, created_at, message_id in rows:
        groups.setdefault((thread_id, created_at), []).append(message_id)
    tied: dict[str, list[str]] = {}
    for (thread_id, _created_at), ids in groups.items():
        if len(ids) > 1:
            tied.setdefault(thread_id, []).extend(ids)
    return {thread_id: sorted(ids) for thread_id, ids in sorted(tied.items())}


def oracle_thread(oracle: dict, thread_id: str) -> dict:
    """Return THREAD_ID as Mastra's listThreads gave it in ORACLE (title, metadata, ...); KeyError if absent."""
    for resource in oracle["resources"].values():
        for thread in resource["threads"]:
            if thread["id"] == thread_id:
                return thread
    raise KeyError(thread_id)

"""A small Mastra memory.db with a known fact history, built by hand for the trace and context tests.

Thread `trace-t` (resource `user-t`), messages one second apart from 2026-01-01T10:00:00Z:
  u1 user "My favourite colour is teal."          a1 assistant "Noted."
  u2 user "I live in Lisbon."                     a2 assistant, holding the markers of cycle `c1`
  u3 user "I also like jazz."                     a3 assistant "Good taste."
  u4 user "Did I say teal? Call me Ana."          (after the cursor: not observed)
Cycle `c1` (start marker at 10:00:03.100, on a2) observed u1, a1, u2 and wrote SEG0.
Generation 0 (initial): SEG0, a boundary at a3's time (10:00:05), SEG1 (no marker: the cursor bounds it).
Generation 1 (reflection, 11:00, model openai/gpt-4o-mini): the teal line reworded, the others kept.
Generation 2 (reflection, 12:00, model anthropic/claude-haiku-4-5): the teal line dropped.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

THREAD = "trace-t"
RESOURCE = "user-t"
TEAL_0 = "User's favourite colour is teal."
TEAL_1 = "User's favourite colour is teal (said twice)."
SEG0 = f"Date: Jan 1, 2026\n* 🔴 (10:00) {TEAL_0}\n* 🟡 (10:00) User lives in Lisbon."
SEG1 = "Date: Jan 1, 2026\n* 🟢 (10:00) User likes jazz."
GEN0 = SEG0 + "\n\n--- message boundary (2026-01-01T10:00:05.000Z) ---\n\n" + SEG1
GEN1 = f"* 🔴 (10:00) {TEAL_1}\n* 🟡 (10:00) User lives in Lisbon.\n* 🟢 (10:00) User likes jazz."
GEN2 = "* 🟡 (10:00) User lives in Lisbon.\n* 🟢 (10:00) User likes jazz."
TOKENS = {0: 40, 1: 30, 2: 20}
MODELS = {1: "openai/gpt-4o-mini", 2: "anthropic/claude-haiku-4-5"}
REFLECTED_AT = {1: "2026-01-01T11:00:00.000Z", 2: "2026-01-01T12:00:00.000Z"}


def _at(second: int, ms: int = 0) -> str:
    return f"2026-01-01T10:00:{second:02d}.{ms:03d}Z"


def _text(text: str) -> dict:
    return {"format": 2, "parts": [{"type": "text", "text": text}], "content": text}


MESSAGES = [  # id, role, content, createdAt
    ("u1", "user", _text("My favourite colour is teal."), _at(0)),
    ("a1", "assistant", _text("Noted."), _at(1)),
    ("u2", "user", _text("I live in Lisbon."), _at(2)),
    ("a2", "assistant", {"format": 2, "parts": [
        {"type": "data-om-observation-start", "data": {
            "cycleId": "c1", "operationType": "observation", "startedAt": _at(3, 100), "tokensToObserve": 60,
            "recordId": "om-0", "threadId": THREAD}},
        {"type": "data-om-observation-end", "data": {
            "cycleId": "c1", "operationType": "observation", "completedAt": _at(3, 200), "durationMs": 100,
            "tokensObserved": 60, "observationTokens": 25, "observations": SEG0,
            "currentTask": "Remember the user's preferences", "recordId": "om-0", "threadId": THREAD}},
        {"type": "text", "text": "Lisbon is lovely."}], "content": "Lisbon is lovely."}, _at(3)),
    ("u3", "user", _text("I also like jazz."), _at(4)),
    ("a3", "assistant", _text("Good taste."), _at(5)),
    ("u4", "user", _text("Did I say teal? Call me Ana."), _at(6)),
]


def build_trace_db(template: Path) -> Path:
    """Add thread `trace-t` with its messages and three OM generations to TEMPLATE (a private fixture copy)."""
    conn = sqlite3.connect(template)
    try:
        conn.execute('INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt") '
                     "VALUES (?, ?, ?, ?, ?, ?)", (THREAD, RESOURCE, "Trace test", json.dumps({}), _at(0), _at(6)))
        for mid, role, content, at in MESSAGES:
            conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                         "VALUES (?, ?, ?, ?, 'v2', ?, ?)", (mid, THREAD, json.dumps(content), role, at, RESOURCE))
        for gen, text in enumerate((GEN0, GEN1, GEN2)):
            config = {"scope": "thread", "observation": {"messageTokens": 30000},
                      "reflection": {"observationTokens": 40000, "model": MODELS.get(gen, "openai/gpt-4o-mini")}}
            created = REFLECTED_AT.get(gen, _at(3, 200))
            conn.execute(
                'INSERT INTO mastra_observational_memory (id, "lookupKey", scope, "resourceId", "threadId", '
                '"activeObservations", "originType", config, "generationCount", "lastObservedAt", '
                '"lastReflectionAt", "pendingMessageTokens", "totalTokensObserved", "observationTokenCount", '
                '"isObserving", "isReflecting", "observedMessageIds", "isBufferingObservation", '
                '"isBufferingReflection", "lastBufferedAtTokens", '
                '"createdAt", "updatedAt") '
                "VALUES (?, ?, 'thread', ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, 0, 0, '[]', 0, 0, 0, ?, ?)",
                (f"om-{gen}", f"thread:{THREAD}", RESOURCE, THREAD, text, "reflection" if gen else "initial",
                 json.dumps(config), gen, _at(5), REFLECTED_AT.get(gen), TOKENS[gen], created, created))
        conn.commit()
    finally:
        conn.close()
    return template

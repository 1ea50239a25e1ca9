"""Trace cases picked from what Mastra wrote into a fixture (raw rows, read with sqlite3, not the studio).

The trace tests pick their lines by query so that a regenerated corpus still has them, and fail
with a sentence when no such line exists.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from pathlib import Path

from studio.engine.observations import Priority, parse_log
from tests.mastra_facts import marker_messages, om_rows, raw_messages

BOUNDARY_RE = re.compile(r"\n\n--- message boundary \(([^)]*)\) ---\n\n")


def whole_number(number: str) -> re.Pattern:
    """Return a pattern for NUMBER as a whole number: not inside a longer number ("7.2" is not in "17.2", "7.21")."""
    return re.compile(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)")


def message_text(message: dict) -> str:
    """Return a raw message's text parts joined (what a message search reads)."""
    return "\n".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


def number_case(path: Path, thread: str) -> tuple[str, str, str, list[str]]:
    """Return (query "word N.N", N.N, line, ids of the messages whose end marker holds the line).

    The first observation line of THREAD's generation 0 that holds a decimal number after a word
    and that a marked cycle wrote. Raises AssertionError when there is none.
    """
    messages = raw_messages(path, thread)
    gen0 = om_rows(path, f"thread:{thread}")[0]["activeObservations"]
    for ln in parse_log(gen0).observations:
        for word, number in re.findall(r"([A-Za-z]+) (\d+\.\d+)(?![\d]|[.,]\d)", ln.text):
            hosts = [m["id"] for m, p in marker_messages(messages, "data-om-observation-end")
                     if ln.text.strip() in (p["data"].get("observations") or "")]
            if hosts:
                return f"{word} {number}", number, ln.text.strip(), hosts
    raise AssertionError(f"{thread}'s generation 0 has no decimal number in a line a marked cycle wrote")


def messages_saying(path: Path, thread: str, query: str) -> list[str]:
    """Return ids of THREAD's messages whose text holds the query's word and its number whole (first principles)."""
    word, number = query.split()
    return [m["id"] for m in raw_messages(path, thread) if whole_number(number).search(message_text(m))
            and re.search(rf"\b{re.escape(word)}\b", message_text(m), re.IGNORECASE)]


def add_message(path: Path, thread: str, message_id: str, text: str) -> None:
    """Store one more user message, the newest, in THREAD of the fixture copy at PATH, as Mastra stores one."""
    conn = sqlite3.connect(path)
    try:
        resource, last = conn.execute("SELECT resourceId, MAX(createdAt) FROM mastra_messages WHERE thread_id = ?",
                                      (thread,)).fetchone()
        content = json.dumps({"format": 2, "parts": [{"type": "text", "text": text}], "content": text})
        conn.execute("INSERT INTO mastra_messages (id, thread_id, content, role, type, createdAt, resourceId) "
                     "VALUES (?, ?, ?, 'user', 'v2', ?, ?)", (message_id, thread, content, last, resource))
        conn.commit()
    finally:
        conn.close()


def dropped_line(path: Path, thread: str) -> str:
    """Return a 🔴 line of THREAD's generation 0 that no later generation's log holds. Raises AssertionError if none."""
    rows = om_rows(path, f"thread:{thread}")
    for ln in parse_log(rows[0]["activeObservations"]).observations:
        text = ln.text.strip()
        if (ln.priority is Priority.HIGH and len(rows) > 1
                and all(text not in r["activeObservations"] for r in rows[1:])):
            return text
    raise AssertionError(f"{thread} has no high-priority line of generation 0 that a reflection dropped")


def reobserved_lines(path: Path, thread: str) -> list[tuple[dict, dict, str]]:
    """Return (older row, reflection row, line) for 🔴 lines a reflection left out and its generation wrote again.

    The line is absent from the reflection row's Reflector output (its text before the first
    message boundary) and present in one of its later observations: an output after a boundary
    the older row does not hold (with a buffered reflection Mastra also appends observations made
    while it was buffered, under their old boundaries).
    """
    rows = om_rows(path, f"thread:{thread}")
    out = []
    for old, new in itertools.pairwise(rows):
        if new["originType"] != "reflection":
            continue
        reflector, *outputs = BOUNDARY_RE.split(new["activeObservations"])
        later = "\n".join(text for at, text in zip(outputs[::2], outputs[1::2], strict=True)
                          if f"--- message boundary ({at}) ---" not in old["activeObservations"])
        for ln in parse_log(old["activeObservations"]).observations:
            text = ln.text.strip()
            if ln.priority is Priority.HIGH and text not in reflector and text in later:
                out.append((old, new, text))
    return out

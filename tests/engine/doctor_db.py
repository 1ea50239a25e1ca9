"""Helpers for the doctor tests: run the doctor on a private fixture copy, and edit that copy.

Edits use plain SQL on the copy, shaped the way Mastra (or the bug a check comes from) leaves
rows: the same columns, JSON text where Mastra writes text, JSONB where it writes JSONB.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import libsql

from studio.engine.doctor import run_doctor
from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.records import iso_to_ms, ms_to_iso


def run(path: Path, **kwargs) -> list[dict]:
    """Return the doctor's findings (JSON shape) for the database at PATH."""
    with open_store(path) as store:
        return run_doctor(store, **kwargs).to_json()["findings"]


def key(f: dict) -> tuple:
    """Return a hashable identity of finding F: check, place, messages and (lost 🔴) the lines."""
    return (f["check"], f["thread_id"], f["lookup_key"], f["generation"], tuple(f["message_ids"]),
            tuple(ln["line"] for ln in f["evidence"]["lines"]) if f["check"] == "lost-high-priority" else None,
            f["severity"])


def new_findings(path: Path, edit, *, stdlib: bool = False, **kwargs) -> list[dict]:
    """Run the doctor, apply EDIT(conn) to PATH, run again; return the findings that are new.

    STDLIB: edit through Python's own sqlite3 module instead of libsql (no JSONB functions then:
    write JSON as text, which Mastra reads too). libsql's native close crashed (SIGSEGV) now and
    then after edits; the stdlib module's close cannot.
    """
    before = {key(f) for f in run(path, **kwargs)}
    conn = sqlite3.connect(str(path)) if stdlib else libsql.connect(str(path))
    try:
        edit(conn)
        conn.commit()
    finally:
        conn.close()
    return [f for f in run(path, **kwargs) if key(f) not in before]


def thread_metadata(path: Path, thread_id: str) -> dict:
    """Return THREAD_ID's metadata as the studio reads it (JSON text or JSONB alike)."""
    with open_store(path) as store:
        return next(t.metadata for t in store.list_threads() if t.id == thread_id)


def om_rows(conn, lookup_key: str) -> list[dict]:
    """Return LOOKUP_KEY's OM rows as dicts, generationCount ascending."""
    cur = conn.execute('SELECT * FROM mastra_observational_memory WHERE "lookupKey" = ? ORDER BY "generationCount"',
                       (lookup_key,))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def insert_om(conn, row: dict) -> None:
    """Insert an OM row (all columns given)."""
    cols = list(row)
    conn.execute(f'INSERT INTO mastra_observational_memory ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
                 f'VALUES ({", ".join("?" * len(cols))})', [row[c] for c in cols])


def reflect_row(previous: dict, log: str, *, after_ms: int = 1000) -> dict:
    """Return the row Mastra inserts for a reflection of PREVIOUS whose Reflector wrote LOG."""
    created = ms_to_iso(iso_to_ms(previous["updatedAt"]) + after_ms)
    return {**previous, "id": str(uuid.uuid4()), "generationCount": previous["generationCount"] + 1,
            "originType": "reflection", "activeObservations": log, "observationTokenCount": count_observations(log),
            "pendingMessageTokens": 0, "isObserving": 0, "isReflecting": 0, "isBufferingObservation": 0,
            "isBufferingReflection": 0, "lastReflectionAt": created, "createdAt": created, "updatedAt": created}


def messages(conn, thread_id: str) -> list[dict]:
    """Return THREAD_ID's message rows (content parsed), createdAt ascending."""
    cur = conn.execute('SELECT id, role, content, "createdAt", "resourceId", type FROM mastra_messages '
                       'WHERE thread_id = ? ORDER BY "createdAt"', (thread_id,))
    return [{"id": r[0], "role": r[1], "content": json.loads(r[2]), "createdAt": r[3], "resourceId": r[4],
             "type": r[5]} for r in cur.fetchall()]


def insert_message(conn, thread_id: str, resource_id: str, role: str, content: dict | str, created_at: str,
                   message_id: str | None = None) -> str:
    """Insert a v2 message as Mastra's libSQL store saves it; return its id."""
    message_id = message_id or str(uuid.uuid4())
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                 "VALUES (?, ?, ?, ?, 'v2', ?, ?)", (message_id, thread_id, text, role, created_at, resource_id))
    # Mastra's saveMessages also moves the thread's updatedAt to the save time.
    conn.execute('UPDATE mastra_threads SET "updatedAt" = ? WHERE id = ? AND "updatedAt" < ?',
                 (created_at, thread_id, created_at))
    return message_id


def text_content(text: str) -> dict:
    """Return a v2 content object holding one text part."""
    return {"format": 2, "parts": [{"type": "text", "text": text}]}


def reflect_to_dates(path: Path, lookup_key: str) -> list[str]:
    """Append to LOOKUP_KEY a reflection generation that kept only the date headers of the current log.

    Every 🔴 observation of the current generation is then lost (no later line at all). Returns those
    lines, stripped, in log order; raises AssertionError when the current log has none.
    """
    conn = libsql.connect(str(path))
    try:
        current = om_rows(conn, lookup_key)[-1]
        lines = current["activeObservations"].splitlines()
        high = [ln.strip() for ln in lines if ln.lstrip().startswith(("* 🔴", "- 🔴"))]
        assert high, f"the current log of {lookup_key} has no 🔴 line to lose"
        dates = "\n".join(dict.fromkeys(ln for ln in lines if ln.startswith("Date:")))
        insert_om(conn, reflect_row(current, dates))
        conn.commit()
    finally:
        conn.close()
    return high

"""Edits that turn a private fixture copy into a case the fixtures lack, made the way Mastra leaves its rows.

Each helper writes through libsql (the driver Mastra's LibSQLStore uses) into a copy in tmp_path,
never into ../shared.
"""

from __future__ import annotations

import json
import uuid

import libsql

from studio.store.records import iso_to_ms, ms_to_iso


def append_message(path, thread_id: str, text: str, *, role: str = "user", after_ms: int = 1000) -> str:
    """Insert a format-2 text message AFTER_MS after THREAD_ID's newest one, as Memory.saveMessages stores it.

    Like Mastra's saveMessages through the storage adapter alone, the thread's updatedAt is left as it was.
    Returns the new message id.
    """
    conn = libsql.connect(str(path))
    row = conn.execute('SELECT "resourceId", "createdAt" FROM mastra_messages WHERE thread_id = ? '
                       'ORDER BY "createdAt" DESC LIMIT 1', (thread_id,)).fetchall()[0]
    content = {"format": 2, "parts": [{"type": "text", "text": text}], "content": text}
    msg_id = str(uuid.uuid4())
    created = ms_to_iso(iso_to_ms(row[1]) + after_ms)
    conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                 "VALUES (?, ?, ?, ?, 'v2', ?, ?)", (msg_id, thread_id, json.dumps(content), role, created, row[0]))
    conn.commit()
    conn.close()
    return msg_id


def set_flag(path, lookup_key: str, flag: str, *, updated_ms_ago: int | None = None) -> None:
    """Set busy FLAG (isReflecting, isObserving…) on LOOKUP_KEY's current record, as a process that died leaves it.

    UPDATED_MS_AGO moves the record's updatedAt that far before now (how old the flag looks).
    """
    import time

    conn = libsql.connect(str(path))
    row = conn.execute('SELECT id FROM mastra_observational_memory WHERE "lookupKey" = ? '
                       'ORDER BY "generationCount" DESC LIMIT 1', (lookup_key,)).fetchall()[0]
    conn.execute(f'UPDATE mastra_observational_memory SET "{flag}" = 1 WHERE id = ?', (row[0],))
    if updated_ms_ago is not None:
        stamp = ms_to_iso(int(time.time() * 1000) - updated_ms_ago)
        conn.execute('UPDATE mastra_observational_memory SET "updatedAt" = ? WHERE id = ?', (stamp, row[0]))
    conn.commit()
    conn.close()


def delete_thread_row(path, thread_id: str) -> None:
    """Delete THREAD_ID's thread row and its messages but keep its OM records (Mastra #16621's orphan)."""
    conn = libsql.connect(str(path))
    conn.execute("DELETE FROM mastra_messages WHERE thread_id = ?", (thread_id,))
    conn.execute("DELETE FROM mastra_threads WHERE id = ?", (thread_id,))
    conn.commit()
    conn.close()

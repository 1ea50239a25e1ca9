"""OM status on fixture copies altered in ways the oracle does not cover.

Each expected figure is what Mastra 1.31.0's own `ObservationalMemory.getStatus` reported for the
very file the builder below makes (an ObservationalMemory built from the record's stored config,
as ../shared/mastra-corpus/oracle.mjs builds it, its model the stored model string when there is one,
run with node on a private copy: tests/interop/scripts/studio-om-status.mjs). The interop test
tests/interop/test_expected_data_interop.py recomputes them; tests/interop/regenerate.py prints them anew.
"""

from __future__ import annotations

import json

import libsql

from studio.engine.status import compute_status
from studio.store.memory_store import MemoryStore


def build_string_observer_model(path) -> None:
    """tools.db: the Observer model stored as a string, and the image/PDF message repeated after the cursor."""
    conn = libsql.connect(str(path))
    rid, cfg = conn.execute('SELECT id, config FROM mastra_observational_memory WHERE "lookupKey" = '
                            "'thread:tools-1' ORDER BY \"generationCount\" DESC LIMIT 1").fetchall()[0]
    cfg = json.loads(cfg)
    cfg["observation"]["model"] = "google/gemini-2.5-flash"
    conn.execute("UPDATE mastra_observational_memory SET config = ? WHERE id = ?", (json.dumps(cfg), rid))
    row = conn.execute("""SELECT id, content, role, type, "resourceId" FROM mastra_messages
                          WHERE thread_id = 'tools-1' AND content LIKE '%"type":"file"%'
                          ORDER BY "createdAt" LIMIT 1""").fetchall()[0]
    conn.execute("""INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
                    VALUES (?, 'tools-1', ?, ?, ?, '2030-01-01T00:00:00.000Z', ?)""",
                 (row[0] + "-again", row[1], row[2], row[3], row[4]))
    conn.commit()
    conn.close()


def build_many_threads(path, extra: int = 120) -> None:
    """resource.db: EXTRA older threads of the same resource, each with copies of res-b's messages
    dated after the observation cursor (so every one of them has unobserved context)."""
    conn = libsql.connect(str(path))
    for i in range(extra):
        tid = f"old-{i:03d}"
        created = f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"
        conn.execute("""INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt")
                        VALUES (?, 'user-erin', ?, NULL, ?, ?)""", (tid, f"old {i}", created, created))
        conn.execute("""INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
                        SELECT id || '-' || ?, ?, content, role, type,
                               strftime('%Y-%m-%dT%H:%M:%fZ', "createdAt", '+5 years'), "resourceId"
                        FROM mastra_messages WHERE thread_id = 'res-b'""", (tid, tid))
    conn.commit()
    conn.close()


def build_unparseable_time(path) -> None:
    """support.db: the last message of support-1 gets a createdAt that is not a date."""
    conn = libsql.connect(str(path))
    conn.execute("""UPDATE mastra_messages SET "createdAt" = 'not a date' WHERE id = (
                    SELECT id FROM mastra_messages WHERE thread_id = 'support-1'
                    ORDER BY "createdAt" DESC LIMIT 1)""")
    conn.commit()
    conn.close()


def pending(path, thread_id: str) -> int:
    with MemoryStore.open(path) as store:
        return compute_status(store, thread_id).pending_tokens


def test_string_observer_model_prices_attachments_like_mastra(fixture_db):
    path = fixture_db("tools")
    build_string_observer_model(path)
    assert pending(path, "tools-1") == MASTRA["tools-1"]


def test_resource_scope_reads_at_most_one_page_of_other_threads(fixture_db):
    path = fixture_db("resource")
    build_many_threads(path)
    assert pending(path, "res-a") == MASTRA["res-a"]


def test_message_with_unparseable_time_is_not_in_the_window(fixture_db):
    path = fixture_db("support")
    build_unparseable_time(path)
    assert pending(path, "support-1") == MASTRA["support-1"]


#: pendingTokens from Mastra 1.31.0 getStatus on the files the builders make (node, oracle.mjs's set-up).
MASTRA = {"tools-1": 1749, "res-a": 406_569, "support-1": 2125}

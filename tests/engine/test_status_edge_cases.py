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
from studio.store import open_store
from tests.conftest import load_oracle

#: Mastra's listThreads page (getOtherThreadsContext passes no perPage): the resource case needs more threads.
MASTRA_DEFAULT_THREAD_PAGE = 100


def build_string_observer_model(path) -> str:
    """tools.db: the Observer model stored as a string, and the image/PDF message repeated after the cursor.

    Returns the thread altered (tools-1, the scenario's only thread); raises AssertionError when the thread
    has no message with a file part to repeat.
    """
    conn = libsql.connect(str(path))
    rid, cfg = conn.execute('SELECT id, config FROM mastra_observational_memory WHERE "lookupKey" = '
                            "'thread:tools-1' ORDER BY \"generationCount\" DESC LIMIT 1").fetchall()[0]
    cfg = json.loads(cfg)
    cfg["observation"]["model"] = "google/gemini-2.5-flash"
    conn.execute("UPDATE mastra_observational_memory SET config = ? WHERE id = ?", (json.dumps(cfg), rid))
    rows = conn.execute("""SELECT id, content, role, type, "resourceId" FROM mastra_messages
                           WHERE thread_id = 'tools-1' AND content LIKE '%"type":"file"%'
                           ORDER BY "createdAt" LIMIT 1""").fetchall()
    assert rows, "tools-1 has no message with a file part: the attachment-pricing case cannot be built"
    row = rows[0]
    conn.execute("""INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
                    VALUES (?, 'tools-1', ?, ?, ?, '2030-01-01T00:00:00.000Z', ?)""",
                 (row[0] + "-again", row[1], row[2], row[3], row[4]))
    conn.commit()
    conn.close()
    return "tools-1"


def build_many_threads(path, extra: int = 120) -> str:
    """resource.db: EXTRA older threads of the same resource, each with copies of res-b's messages
    dated after the observation cursor (so every one of them has unobserved context).

    Returns the thread whose status is asked (res-a); raises AssertionError unless the resource then has
    more threads than Mastra's one listThreads page, or res-b has no message to copy.
    """
    conn = libsql.connect(str(path))
    assert conn.execute("SELECT count(*) FROM mastra_messages WHERE thread_id = 'res-b'").fetchone()[0], \
        "res-b has no messages to copy into the extra threads"
    for i in range(extra):
        tid = f"old-{i:03d}"
        created = f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z"
        conn.execute("""INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt")
                        VALUES (?, 'user-erin', ?, NULL, ?, ?)""", (tid, f"old {i}", created, created))
        conn.execute("""INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
                        SELECT id || '-' || ?, ?, content, role, type,
                               strftime('%Y-%m-%dT%H:%M:%fZ', "createdAt", '+5 years'), "resourceId"
                        FROM mastra_messages WHERE thread_id = 'res-b'""", (tid, tid))
    count = conn.execute("""SELECT count(*) FROM mastra_threads WHERE "resourceId" = 'user-erin'""").fetchone()[0]
    conn.commit()
    conn.close()
    assert count > MASTRA_DEFAULT_THREAD_PAGE + 1, f"user-erin has {count} threads: not more than one page of others"
    return "res-a"


def build_unparseable_time(path) -> str:
    """support.db: a message that Mastra's window holds only by its date gets a createdAt that is not a date.

    The message is picked by a query of the raw rows: the newest message of the first thread (by id) whose
    current OM record has an observation cursor (`lastObservedAt`), when that message is newer than the
    cursor, not in `observedMessageIds` and carries no `data-om-observation-end` marker (a marked message is
    in the window by its parts after the marker, whatever its date). Returns that thread; raises
    AssertionError when no thread has such a message.
    """
    conn = libsql.connect(str(path))
    records = conn.execute("""SELECT "lookupKey", "lastObservedAt", "observedMessageIds"
                              FROM mastra_observational_memory r WHERE "lookupKey" LIKE 'thread:%'
                              AND "lastObservedAt" IS NOT NULL AND "generationCount" = (
                                  SELECT max("generationCount") FROM mastra_observational_memory
                                  WHERE "lookupKey" = r."lookupKey")
                              ORDER BY "lookupKey" """).fetchall()
    target = None
    for lookup_key, cursor, observed in records:
        thread_id = lookup_key.removeprefix("thread:")
        newest = conn.execute("""SELECT id, content, "createdAt" FROM mastra_messages WHERE thread_id = ?
                                 ORDER BY "createdAt" DESC LIMIT 1""", (thread_id,)).fetchall()
        if not newest:
            continue
        message_id, content, created_at = newest[0]
        parts = json.loads(content).get("parts") or [] if content.startswith("{") else []
        marked = any(isinstance(p, dict) and p.get("type") == "data-om-observation-end" for p in parts)
        if created_at > cursor and message_id not in json.loads(observed or "[]") and not marked:
            target = (thread_id, message_id)
            break
    assert target, "no thread of support.db has a newest message that is in the window by its date alone"
    conn.execute("""UPDATE mastra_messages SET "createdAt" = 'not a date' WHERE id = ?""", (target[1],))
    conn.commit()
    conn.close()
    return target[0]


def pending(path, thread_id: str) -> int:
    with open_store(path) as store:
        return compute_status(store, thread_id).pending_tokens


def oracle_pending(name: str, thread_id: str) -> int:
    """Return the pendingTokens Mastra's getStatus gave THREAD_ID on the unaltered fixture NAME (its oracle)."""
    for om in load_oracle(name)["om"].values():
        if thread_id in om["status"]:
            return om["status"][thread_id]["pendingTokens"]
    raise KeyError(thread_id)


def test_string_observer_model_prices_attachments_like_mastra(fixture_db):
    path = fixture_db("tools")
    thread_id = build_string_observer_model(path)
    # the case holds: in Mastra's own figures the repeated attachment message joined the window
    assert MASTRA["string-observer-model"] > oracle_pending("tools", thread_id)
    assert pending(path, thread_id) == MASTRA["string-observer-model"]


def test_resource_scope_reads_at_most_one_page_of_other_threads(fixture_db):
    path = fixture_db("resource")
    thread_id = build_many_threads(path)
    assert MASTRA["many-threads"] > oracle_pending("resource", thread_id)   # the extra threads count
    assert pending(path, thread_id) == MASTRA["many-threads"]


def test_message_with_unparseable_time_is_not_in_the_window(fixture_db):
    path = fixture_db("support")
    thread_id = build_unparseable_time(path)
    before = oracle_pending("support", thread_id)
    # the case holds: in Mastra's own figures the altered message left the window
    assert MASTRA["unparseable-time"] < before, (thread_id, MASTRA["unparseable-time"], before)
    assert pending(path, thread_id) == MASTRA["unparseable-time"]


#: Each case's (fixture, builder): the altered copies whose status Mastra computed for MASTRA.
CASES = {"string-observer-model": ("tools", build_string_observer_model),
         "many-threads": ("resource", build_many_threads),
         "unparseable-time": ("support", build_unparseable_time)}

#: pendingTokens from Mastra 1.31.0 getStatus on the files the builders make (node, oracle.mjs's set-up).
MASTRA = {"string-observer-model": 1471, "many-threads": 335_656, "unparseable-time": 1019}

"""Cases for the write tests, picked from what Mastra reported (the oracle) or built on a fixture copy.

No figure of one fixture generation is written into a test: a regenerated corpus moves thread sizes,
generation numbers and titles. What the tests need is found here instead:

* `current_generation(name, key)`: the newest generationCount Mastra listed for KEY
  (`om.<key>.history` of the oracle); a studio reflection writes that + 1;
* `busiest_thread(name)`: the thread of a synchronous, thread-scope record with the most unobserved
  tokens by Mastra's own status (`om.<key>.status.<thread>.pendingTokens`);
* `at_threshold(path, name, thread_id)`: a fixture copy whose record for THREAD_ID has its message
  threshold (`observation.messageTokens` of the stored config, every generation) set to that
  thread's unobserved tokens, so Mastra's observe() gate (pendingMessageTokens + window tokens >=
  threshold) holds: a realistic corpus stops right after each observation, below the threshold;
* `above_everything(path, name, lookup_key)`: the opposite, a threshold no window of the record
  can reach (the stored pendingMessageTokens plus every message token of the resource, plus one).
"""

from __future__ import annotations

import json
from pathlib import Path

import libsql

from tests.conftest import copy_fixture, load_oracle


def current_generation(name: str, lookup_key: str) -> int:
    """Return the generationCount of LOOKUP_KEY's current record, as fixture NAME's oracle lists its history."""
    history = load_oracle(name)["om"][lookup_key]["history"]
    return max(row["generationCount"] for row in history)


def oracle_status(name: str) -> dict[str, tuple[str, dict]]:
    """Return {thread id: (lookup key, Mastra's OM status of that thread)} of fixture NAME."""
    out = {}
    for key, om in load_oracle(name)["om"].items():
        for thread_id, status in (om.get("status") or {}).items():
            out[thread_id] = (key, status)
    return out


def busiest_thread(name: str) -> str:
    """Return the thread of a synchronous thread-scope record of NAME with the most unobserved tokens (Mastra's
    status; ties by id), failing with a sentence when the fixture has none with any."""
    candidates = [(status["pendingTokens"], thread_id) for thread_id, (key, status) in oracle_status(name).items()
                  if key.startswith("thread:") and not status.get("asyncObservationEnabled")
                  and status["pendingTokens"] > 0]
    assert candidates, f"fixture {name!r} has no synchronous thread-scope record with unobserved messages"
    return max(candidates, key=lambda c: (c[0], c[1]))[1]


def _set_threshold(path: Path, lookup_key: str, tokens: int) -> None:
    conn = libsql.connect(f"file:{path}")
    try:
        conn.execute("UPDATE mastra_observational_memory SET config = json_set(config, '$.observation.messageTokens', "
                     '?) WHERE "lookupKey" = ?', (tokens, lookup_key))
        conn.commit()
    finally:
        conn.close()


def at_threshold(path: Path, name: str, thread_id: str) -> int:
    """Set the message threshold of THREAD_ID's record in the copy PATH of fixture NAME to the thread's
    unobserved tokens (Mastra's status); return that threshold (tokens)."""
    key, status = oracle_status(name)[thread_id]
    assert status["pendingTokens"] > 0, f"{thread_id} of {name!r} has no unobserved messages"
    _set_threshold(path, key, status["pendingTokens"])
    return status["pendingTokens"]


def observable_copy(name: str, dest: Path) -> tuple[Path, str]:
    """Copy fixture NAME into DEST with its busiest thread's record at the threshold; return (path, thread id)."""
    path = copy_fixture(name, dest)
    thread_id = busiest_thread(name)
    at_threshold(path, name, thread_id)
    return path, thread_id


def above_everything(path: Path, name: str, lookup_key: str) -> int:
    """Set LOOKUP_KEY's message threshold in the copy PATH of fixture NAME above anything its gate can count:
    the stored pendingMessageTokens + every message of the resource (oracle counts) + 1; return it (tokens)."""
    oracle = load_oracle(name)
    resource = oracle["om"][lookup_key]["resourceId"]
    threads = [t for t, doc in oracle["threads"].items() if doc.get("resourceId") == resource]
    every = sum(sum(oracle["tokens"][t]["perMessage"].values()) for t in threads if t in oracle["tokens"])
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        rows = conn.execute('SELECT "pendingMessageTokens" FROM mastra_observational_memory WHERE "lookupKey" = ?',
                            (lookup_key,)).fetchall()
        stored = max(int(r[0] or 0) for r in rows)
    finally:
        conn.close()
    threshold = stored + every + 1
    _set_threshold(path, lookup_key, threshold)
    return threshold


def raw_thread_title(path: Path, thread_id: str) -> str | None:
    """Return THREAD_ID's title as stored (read-only, not through the studio)."""
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        row = conn.execute("SELECT title FROM mastra_threads WHERE id = ?", (thread_id,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def config_of(path: Path, lookup_key: str) -> dict:
    """Return the stored config of LOOKUP_KEY's newest record (read-only, parsed)."""
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        row = conn.execute('SELECT config FROM mastra_observational_memory WHERE "lookupKey" = ? '
                           'ORDER BY "generationCount" DESC LIMIT 1', (lookup_key,)).fetchone()
    finally:
        conn.close()
    return json.loads(row[0])


def raw_thread_om(path: Path, thread_id: str) -> dict:
    """Return THREAD_ID's `metadata.mastra.om` as stored (read-only; JSONB decoded by libSQL; {} when none)."""
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        row = conn.execute("SELECT json(metadata) FROM mastra_threads WHERE id = ?", (thread_id,)).fetchone()
    finally:
        conn.close()
    metadata = json.loads(row[0]) if row and row[0] else {}
    om = (metadata.get("mastra") or {}).get("om") if isinstance(metadata, dict) else None
    return om if isinstance(om, dict) else {}


def current_row(path: Path, lookup_key: str) -> dict:
    """Return LOOKUP_KEY's newest OM row as stored (read-only)."""
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        cursor = conn.execute('SELECT * FROM mastra_observational_memory WHERE "lookupKey" = ? '
                              'ORDER BY "generationCount" DESC LIMIT 1', (lookup_key,))
        names = [d[0] for d in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))
    finally:
        conn.close()


def resource_window_tokens(path: Path, name: str, lookup_key: str) -> int:
    """Return Mastra's count of what a resource-scope observe() gate counts for LOOKUP_KEY in the copy PATH of
    fixture NAME: the resource's non-system messages after the record's lastObservedAt and not among its
    observedMessageIds (README, "Observation and activation writes"), each at its oracle figure."""
    from tests.mastra_facts import window_tokens

    row = current_row(path, lookup_key)
    observed = set(json.loads(row["observedMessageIds"]) if row["observedMessageIds"] else [])
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        rows = conn.execute('SELECT id, role FROM mastra_messages WHERE "resourceId" = ? AND "createdAt" > ? '
                            'ORDER BY "createdAt"', (row["resourceId"], row["lastObservedAt"])).fetchall()
    finally:
        conn.close()
    per_message = {}
    for doc in load_oracle(name)["tokens"].values():
        per_message.update(doc["perMessage"])
    return window_tokens(per_message, [i for i, role in rows if i not in observed and role != "system"])

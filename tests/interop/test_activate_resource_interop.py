"""Resource-scope activation: our write equals real Mastra's `activate()`, column by column; Mastra continues.

Mastra 1.31.0 cannot buffer in resource scope (its ObservationalMemory constructor throws "Async
buffering is not yet supported with scope: 'resource'"), so no corpus run produces resource-scope
chunks; `activate()` itself has no scope check and swaps whatever chunks the row holds. The
chunks are therefore placed here by hand, in the shape Mastra's buffering stores them (the
`buffered` fixture's chunks: id, cycleId, observations, tokenCount, messageIds, messageTokens,
lastObservedAt, createdAt, suggestedContinuation, currentTask, threadTitle), on two copies of the
`resource` fixture; copy A gets `mastra-activate.mjs`, copy B `activate_buffered`.

Every cell Mastra changes must change equally on B (write times and the marker's activatedAt
aside), with one named exception: Mastra persists the marker with the record's null threadId as
"", and its store then inserts an empty thread row with id "" (title "", the resource's id). We
write no such row; that row is the only difference allowed.
"""

from __future__ import annotations

import json

import libsql
import pytest

from studio.engine.tokens import stamp_estimates
from studio.store.write.activation import activate_buffered
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, run_node
from tests.interop.test_observe_interop import _comparable

RECORD = "resource:user-erin"


def _add_chunks(path) -> list[dict]:
    """Put two buffered chunks covering res-c's unobserved messages on the resource record; return the chunks."""
    conn = libsql.connect(f"file:{path}")
    try:
        last = conn.execute('SELECT "lastObservedAt" FROM mastra_observational_memory WHERE "lookupKey" = ?',
                            (RECORD,)).fetchone()[0]
        ids = [r[0] for r in conn.execute('SELECT id FROM mastra_messages WHERE thread_id = ? AND "createdAt" > ? '
                                          'ORDER BY "createdAt"', ("res-c", last)).fetchall()]
        assert len(ids) >= 2, ids
        chunks = [
            {"id": "ombuf-studio-1", "cycleId": "buffer-obs-studio-1",
             "observations": ('<thread id="res-c">\nDate: Nov 29, 2026\n'
                              '* 🔴 (20:42) Chunk one: the user\'s "key" fact\n</thread>'),
             "tokenCount": 20, "messageIds": ids[:1], "messageTokens": 200,
             "lastObservedAt": "2026-11-29T20:42:34.100Z",
             "createdAt": "2026-11-29T20:42:34.200Z", "suggestedContinuation": "Chunk one hint",
             "currentTask": "- Primary: chunk one", "threadTitle": "Chunk title one"},
            {"id": "ombuf-studio-2", "cycleId": "buffer-obs-studio-2",
             "observations": '<thread id="res-c">\nDate: Nov 29, 2026\n* 🟡 (20:43) Chunk two fact\n</thread>',
             "tokenCount": 22, "messageIds": ids[1:], "messageTokens": 235,
             "lastObservedAt": "2026-11-29T20:42:34.123Z",
             "createdAt": "2026-11-29T20:42:34.300Z", "suggestedContinuation": "Chunk two hint",
             "currentTask": "- Primary: chunk two", "threadTitle": "Chunk title two"},
        ]
        conn.execute('UPDATE mastra_observational_memory SET "bufferedObservationChunks" = ? WHERE "lookupKey" = ?',
                     (json.dumps(chunks, ensure_ascii=False), RECORD))
        conn.commit()
        return chunks
    finally:
        conn.close()


def _changes(before: dict, after: dict) -> tuple[dict, dict]:
    """Return ({(table, id, column): new value} of changed cells, {(table, id): row} of added rows)."""
    changed, added = {}, {}
    for table, rows in after.items():
        assert set(before.get(table, {})) <= set(rows), f"rows removed from {table}"
        for key, row in rows.items():
            old = before[table].get(key)
            if old is None:
                added[(table, key)] = row
                continue
            changed.update({(table, key, col): val for col, val in row.items() if old.get(col) != val})
    return changed, added


@pytest.mark.parametrize("thread_id", ["res-a", "res-c"])
def test_resource_activation_matches_mastra_and_mastra_continues(mastra_corpus, tmp_path, thread_id):
    a, b = copy_fixture("resource", tmp_path / "a"), copy_fixture("resource", tmp_path / "b")
    chunks = _add_chunks(a)
    assert _add_chunks(b) == chunks
    before = dump_tables(a)
    assert dump_tables(b) == before
    mastra = run_node(mastra_corpus, "mastra-activate.mjs", a, thread_id)
    assert mastra["activated"] is True and mastra["scope"] == "resource"
    ours = activate_buffered(b, thread_id=thread_id, lookup_key=RECORD, stamp_estimates=stamp_estimates)
    assert ours["activated_cycle_ids"] == mastra["chunks"]["activatedCycleIds"]
    assert ours["activated_message_ids"] == mastra["chunks"]["activatedMessageIds"]
    assert ours["chunks_after"] == mastra["chunks"]["after"]

    changed_a, added_a = _changes(before, dump_tables(a))
    changed_b, added_b = _changes(before, dump_tables(b))
    # the one allowed difference: Mastra's empty thread row with id "" (see the module docstring)
    assert added_b == {}
    assert list(added_a) == [("mastra_threads", "")]
    junk = added_a[("mastra_threads", "")]
    assert junk["title"] == "" and junk["resourceId"] == "user-erin"
    assert set(changed_b) == set(changed_a)
    for cell in changed_a:
        assert _comparable(cell, changed_b[cell]) == _comparable(cell, changed_a[cell]), cell
    assert {c[2] for c in changed_b if c[0] == "mastra_observational_memory"} == set(mastra["changedColumns"])
    # the marker: on the resource's newest assistant message (res-c's, also when activating for res-a)
    marked = [c for c in changed_b if c[0] == "mastra_messages"]
    assert len(marked) == 1
    parts = json.loads(changed_b[marked[0]])["parts"]
    assert parts[-1]["type"] == "data-om-activation" and parts[-1]["data"]["threadId"] == ""
    # the thread the activation ran for took the last activated chunk's hints (how many chunks Mastra activates
    # follows from the record's pending tokens: the chunk-count rule, checked in tests/store)
    last = next(c for c in chunks if c["cycleId"] == mastra["chunks"]["activatedCycleIds"][-1])
    om = mastra["threadMetadata"]["mastra"]["om"]
    assert (om["currentTask"], om["suggestedResponse"]) == (last["currentTask"], last["suggestedContinuation"])

    report = run_node(mastra_corpus, "continue.mjs", b, thread_id, "1")
    assert report["ok"] is True, report

"""Clone lineage (`studio.app.lineage`) equals what real Mastra's clone utilities report.

Real Mastra makes the clones (clone.mjs: Memory.cloneThread) on a copy of the history fixture, whose
`hist-1-branch` is already a clone of `hist-1`: a clone of that clone (a chain of three), a second clone
of `hist-1` holding only its last 3 messages, and a clone into another resource (which listClones leaves
out: it looks in the source's resource). Then Mastra's isClone / getSourceThread / listClones /
getCloneHistory (tests/interop/scripts/studio-clone-lineage.mjs) are compared with ours on every thread,
before and after the chain's root is deleted.
"""

from __future__ import annotations

import json
import sqlite3

from studio.app.lineage import load_lineage
from studio.store import open_store
from tests.conftest import copy_fixture
from tests.interop.conftest import run_node

CLONES = [("hist-1-branch", "chain-2", {}),
          ("hist-1", "hist-1-last3", {"title": "Last three", "options": {"messageLimit": 3}}),
          ("hist-1", "other-resource", {"resourceId": "user-elsewhere"})]


def _ours(path, thread_ids):
    out = {}
    with open_store(path) as store:
        for tid in thread_ids:
            lineage = load_lineage(store, tid)
            out[tid] = None if lineage is None else {
                "isClone": lineage.is_clone,
                "source": lineage.source.id if lineage.source and lineage.source.exists else None,
                "clones": [c.id for c in lineage.clones],
                "history": [h.id for h in lineage.history]}
    return out


def _mastra(corpus, path, thread_ids):
    doc = run_node(corpus, "studio-clone-lineage.mjs", path, ",".join(thread_ids))
    return {tid: None if v["isClone"] is None else {k: v[k] for k in ("isClone", "source", "clones", "history")}
            for tid, v in doc.items()}


def test_lineage_equals_mastra_clone_utilities(tmp_path, mastra_corpus):
    path = copy_fixture("history", tmp_path)
    for source, new_id, options in CLONES:
        run_node(mastra_corpus, "clone.mjs", path, source, new_id, json.dumps(options))
    ids = ["hist-1", "hist-2", "hist-1-branch", "chain-2", "hist-1-last3", "other-resource"]
    mastra = _mastra(mastra_corpus, path, ids)
    # first principles: the chain Mastra made is what the test asked for, so the comparison is not vacuous
    assert mastra["chain-2"]["history"] == ["hist-1", "hist-1-branch", "chain-2"]
    assert "other-resource" not in mastra["hist-1"]["clones"] and len(mastra["hist-1"]["clones"]) == 2
    assert _ours(path, ids) == mastra

    with open_store(path) as store:
        lineage = load_lineage(store, "hist-1-last3")
        count = store.message_count("hist-1")
    # messageLimit 3 copies the source's last three messages: the last one copied is the source's last
    assert lineage.last_message_position == count == lineage.source_message_count
    assert lineage.cloned_at and lineage.cloned_at.endswith("Z")

    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM mastra_threads WHERE id = 'hist-1'")
    conn.close()
    after = _mastra(mastra_corpus, path, ids)
    assert after["hist-1"] is None and after["chain-2"]["history"] == ["hist-1-branch", "chain-2"]
    assert _ours(path, ids) == after
    with open_store(path) as store:
        gone = load_lineage(store, "hist-1-branch").source
    assert gone.id == "hist-1" and gone.exists is False

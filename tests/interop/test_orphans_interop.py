"""An OM record whose thread Mastra deleted (Mastra #16621): real Mastra deletes the thread through its
storage adapter, then Mastra's getStatus (the oracle script) says what the studio must report for it."""

from __future__ import annotations

import json
import subprocess

from studio.app.listing import load_listing
from studio.app.thread_detail import load_thread_detail
from studio.cli import main
from studio.store import open_store
from tests.conftest import copy_fixture
from tests.interop.conftest import NODE_TIMEOUT_S, run_node


def test_orphaned_record_status_matches_mastras_get_status(mastra_corpus, tmp_path, capsys):
    path = copy_fixture("support", tmp_path / "db")
    assert run_node(mastra_corpus, "studio-delete-thread.mjs", path, "support-3") == {"ok": True}
    oracle_file = tmp_path / "oracle.json"
    done = subprocess.run(["node", "oracle.mjs", str(path), str(oracle_file)], cwd=mastra_corpus,
                          capture_output=True, text=True, timeout=NODE_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    oracle = json.loads(oracle_file.read_text())
    assert "support-3" not in oracle["threads"]                       # Mastra deleted the thread…
    expected = oracle["om"]["thread:support-3"]["status"]["support-3"]  # …and still reports its status
    record = oracle["om"]["thread:support-3"]["history"][0]

    assert main(["inspect", str(path), "--json"]) == 0
    om = {r["lookup_key"]: r for r in json.loads(capsys.readouterr().out)["observational_memory"]}
    entry = om["thread:support-3"]
    assert entry["thread_missing"] is True
    got = entry["status"]["support-3"]
    assert (got["pending_tokens"], got["threshold"], got["reflection_threshold"]) == (
        expected["pendingTokens"], expected["threshold"], expected["effectiveObservationTokensThreshold"])
    assert (got["should_observe"], got["should_reflect"]) == (expected["shouldObserve"], expected["shouldReflect"])
    assert (entry["record_id"], entry["observation_token_count"]) == (record["id"], record["observationTokenCount"])

    # What the GUI loads: the record is listed (a stand-in row) and its detail has the same status.
    with open_store(path) as store:
        listing = load_listing(store)
        orphans = [r for r in listing.rows if r.orphan]
        assert [(r.thread.id, r.thread.resource_id) for r in orphans] == [("support-3", oracle["om"]["thread:support-3"]
                                                                          ["resourceId"])]
        detail = load_thread_detail(store, "support-3")
    assert detail is not None and detail.orphan
    assert (detail.status.pending_tokens, detail.status.threshold) == (expected["pendingTokens"], expected["threshold"])
    assert [h.id for h in detail.history] == [h["id"] for h in oracle["om"]["thread:support-3"]["history"]]

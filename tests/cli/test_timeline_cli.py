"""`memory-studio timeline` and `memory-studio whatif` (studio.cli.timeline), called through main()."""

from __future__ import annotations

import json
from pathlib import Path

from studio.cli import main
from tests.conftest import load_oracle
from tests.mastra_facts import marker_messages, om_rows, raw_messages, sync_turns, turn_at

POINT_KEYS = ["at", "turn", "message_tokens", "observation_tokens", "buffered_tokens", "threshold",
              "reflection_threshold", "reconstructed"]
EVENT_KEYS = ["type", "at", "turn", "cycle_id", "tokens", "generation"]


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def test_timeline_json(fixture_db, capsys):
    path = fixture_db("support")
    code, doc, _ = _run(capsys, "timeline", str(path), "--thread", "support-1", "--json")
    assert code == 0
    assert list(doc) == ["points", "events"]
    assert all(list(p) == POINT_KEYS for p in doc["points"]) and all(list(e) == EVENT_KEYS for e in doc["events"])
    # Expected kinds from Mastra's rows: an observation in each observation turn, and in a reflection
    # turn the reflection after it (a synchronous reflection follows an observation).
    observed, reflected = sync_turns(path, "support-1")
    assert reflected, "support-1 should have reflection rows"
    expected = [kind for turn in observed
                for kind in (["observation", "reflection"] if turn in reflected else ["observation"])]
    kinds = [e["type"] for e in doc["events"] if e["type"] != "thread-update"]
    assert kinds == expected
    # Mastra's own pendingTokens for support-1
    assert doc["points"][-1]["message_tokens"] == load_oracle("support")["om"]["thread:support-1"]["status"][
        "support-1"]["pendingTokens"]
    # The first event is the first cycle Mastra marked: its start, turn, cycle, tokens and generation.
    messages = raw_messages(path, "support-1")
    _host, start = marker_messages(messages, "data-om-observation-start")[0]
    end = next(p for _, p in marker_messages(messages, "data-om-observation-end")
               if p["data"]["cycleId"] == start["data"]["cycleId"])
    generation = next(r["generationCount"] for r in om_rows(path, "thread:support-1")
                      if r["id"] == start["data"]["recordId"])
    first = doc["events"][0]
    assert first == {"type": "observation", "at": start["data"]["startedAt"],
                     "turn": turn_at(messages, start["data"]["startedAt"]), "cycle_id": start["data"]["cycleId"],
                     "tokens": end["data"]["tokensObserved"], "generation": generation}


def test_whatif_json_with_stored_and_other_settings(fixture_db, capsys):
    path = str(fixture_db("collab"))
    code, stored, _ = _run(capsys, "whatif", path, "--thread", "doc_42", "--json")
    assert code == 0 and stored["uses_real_sizes"] and stored["estimate"]
    observed, reflected = sync_turns(Path(path), "doc_42")   # Mastra's markers and rows: [5, 11, 12], [11]
    assert [e["turn"] for e in stored["events"] if e["type"] == "observation"] == observed
    assert [e["turn"] for e in stored["events"] if e["type"] == "reflection"] == reflected
    code, tight, _ = _run(capsys, "whatif", path, "--thread", "doc_42", "--message-tokens", "1200",
                          "--observation-tokens", "300", "--json")
    assert code == 0 and not tight["uses_real_sizes"]
    assert tight["settings"]["messageTokens"] == 1200 and tight["observations"] > stored["observations"]
    assert tight["observer_calls"] == tight["observations"]
    assert {"turns", "points", "events", "peak_context_tokens", "ratios"} <= set(tight)


def test_whatif_buffering_switch(fixture_db, capsys):
    path = str(fixture_db("buffered"))
    code, off, _ = _run(capsys, "whatif", path, "--thread", "long-run", "--buffer-tokens", "off", "--json")
    assert code == 0 and off["bufferings"] == 0 and off["observations"] > 0
    code, on, _ = _run(capsys, "whatif", path, "--thread", "long-run", "--buffer-tokens", "0.25", "--json")
    assert code == 0 and on["bufferings"] > 0


def test_bad_input_exits_2(fixture_db, tmp_path, capsys):
    path = str(fixture_db("support"))
    assert _run(capsys, "timeline", path, "--thread", "nope", "--json")[0] == 2
    assert _run(capsys, "timeline", str(tmp_path / "missing.db"), "--thread", "x", "--json")[0] == 2
    code, _, err = _run(capsys, "whatif", path, "--thread", "support-1", "--buffer-tokens", "5000", "--json")
    assert code == 2 and "bufferTokens" in err
    assert _run(capsys, "whatif", path, "--thread", "support-1", "--message-tokens", "-5", "--json")[0] == 2
    history = str(fixture_db("history"))
    code, _, err = _run(capsys, "timeline", history, "--thread", "hist-1", "--json")
    assert code == 2 and "observational memory" in err

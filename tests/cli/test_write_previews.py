"""Every observation write previews alike: `activate --dry-run`, `observe --dry-run` below the threshold,
and a below-threshold refusal whose every number is named. On fixture copies; expected figures come
from the stored record (the chunk Mastra buffered, the window Mastra's observe() would read).
"""

from __future__ import annotations

import json

from studio.cli import main
from studio.engine.observe_window import observation_window, resource_observation_window
from studio.engine.tokens import stamp_estimates
from studio.store.memory_store import MemoryStore
from studio.store.write.activation import activate_buffered
from tests.interop.conftest import file_state


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def backups(path):
    return sorted(path.parent.glob("*backup*"))


def test_activate_dry_run_shows_what_would_move_and_writes_nothing(fixture_db, capsys):
    path = fixture_db("buffered")
    with MemoryStore.open(path) as store:
        before = store.om_current("thread:long-run")
    (chunk,) = before.buffered_chunks   # the one chunk Mastra buffered; the rule moves it (pending < threshold)
    state = file_state(path)
    code, out, err = run(capsys, ["activate", str(path), "--thread", "long-run", "--dry-run", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["activated"] is False and doc["dry_run"] is True and doc["backup"] is None
    assert doc["activated_cycle_ids"] == [chunk["cycleId"]] and doc["chunks_after"] == 0
    assert doc["activated_message_ids"] == chunk["messageIds"] and doc["observations"] == chunk["observations"]
    assert doc["observation_tokens"] == chunk["tokenCount"] and doc["message_tokens"] == chunk["messageTokens"]
    assert doc["observation_token_count"] == before.observation_token_count + chunk["tokenCount"]
    code, out, err = run(capsys, ["activate", str(path), "--thread", "long-run", "--dry-run"])
    assert code == 0 and out.startswith("Would activate 1 of 1 buffered chunk(s) of thread:long-run")
    assert chunk["observations"] in out and err.strip() == "memory-studio: Dry run: nothing was written."
    assert file_state(path) == state and backups(path) == []
    # the preview is what the write then does
    row = activate_buffered(path, thread_id="long-run", lookup_key="thread:long-run",
                            stamp_estimates=stamp_estimates)["row"]
    assert row["activeObservations"].endswith(doc["observations"])
    assert row["observationTokenCount"] == doc["observation_token_count"]


def test_observe_dry_run_previews_below_the_threshold_and_the_write_refuses_in_named_numbers(fixture_db, capsys):
    path = fixture_db("support")
    window = observation_window(path, "support-2")
    assert not window.meets and window.pending_message_tokens == 0  # 492 tokens of messages, nothing pending
    gate = f"{window.tokens:,} unobserved-message tokens, below the {window.threshold:,}-token threshold"
    assert gate == "492 unobserved-message tokens, below the 2,500-token threshold"
    state = file_state(path)
    argv = ["observe", str(path), "--thread", "support-2", "--strategy", "rule-based"]
    code, out, err = run(capsys, [*argv, "--dry-run", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["observed"] is False and doc["below_threshold"] is True and doc["window"]["meets"] is False
    assert len([ln for ln in doc["observations"].splitlines() if ln.startswith("* ")]) == len(window.message_ids)
    assert f"The window holds {gate}: Mastra would not observe yet; observe without --dry-run refuses unless " \
           "--below-threshold is given." in err
    code, out, err = run(capsys, [*argv, "--yes"])
    assert code == 2
    assert f"The window holds {gate}: Mastra would not observe yet; nothing was written" in err
    assert "pending" not in err
    assert file_state(path) == state and backups(path) == []


def test_a_stored_pending_count_is_named_in_the_refusal(fixture_db, capsys, tmp_path):
    path = fixture_db("resource")   # the record stores pendingMessageTokens 435; the window's messages: 642
    window = resource_observation_window(path, "res-a")
    assert (window.pending_message_tokens, window.tokens, window.threshold) == (435, 642, 2500)
    answer = tmp_path / "answer.txt"
    answer.write_text('<observations><thread id="res-a">\n* 🔴 (09:00) A fact\n</thread></observations>\n',
                      encoding="utf-8")
    state = file_state(path)
    code, out, err = run(capsys, ["observe", str(path), "--thread", "res-a", "--answer-file", str(answer), "--yes"])
    assert code == 2 and file_state(path) == state
    assert ("435 tokens the record still counts as pending (pendingMessageTokens) + 642 unobserved-message "
            "tokens = 1,077, below the 2,500-token threshold") in err

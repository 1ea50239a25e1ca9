"""Every observation write previews alike: `activate --dry-run`, `observe --dry-run` below the threshold,
and a below-threshold refusal whose every number is named. On fixture copies; expected figures come
from the stored record (the chunk Mastra buffered, the window Mastra's observe() would read).
"""

from __future__ import annotations

import json

from studio.cli import main
from studio.common.om_settings import activation_chunk_count
from studio.engine.observe_window import observation_window, resource_observation_window
from studio.engine.tokens import stamp_estimates
from studio.store import open_store
from studio.store.write.activation import activate_buffered
from studio.store.write.transaction import write_transaction
from tests.interop.conftest import file_state
from tests.observe_cases import above_everything, current_row, oracle_status, resource_window_tokens


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def backups(path):
    return sorted(path.parent.glob("*backup*"))


def test_activate_dry_run_shows_what_would_move_and_writes_nothing(fixture_db, capsys):
    path = fixture_db("buffered")
    with open_store(path) as store:
        before = store.om_current("thread:long-run")
    chunks = before.buffered_chunks   # the chunks Mastra buffered; how many move: the chunk-count rule
    assert chunks, "the buffered fixture is expected to end with pending chunks"
    cfg = before.config["observation"]
    pending = before.get_int("pendingMessageTokens") or sum(c["messageTokens"] for c in chunks)
    moved = chunks[:activation_chunk_count(chunks, pending, cfg["messageTokens"], cfg["bufferActivation"],
                                           pending >= cfg["blockAfter"])]
    state = file_state(path)
    code, out, err = run(capsys, ["activate", str(path), "--thread", "long-run", "--dry-run", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["activated"] is False and doc["dry_run"] is True and doc["backup"] is None
    assert doc["activated_cycle_ids"] == [c["cycleId"] for c in moved]
    assert doc["chunks_after"] == len(chunks) - len(moved)
    assert doc["activated_message_ids"] == [i for c in moved for i in c["messageIds"]]
    assert doc["observations"] == "\n\n".join(c["observations"] for c in moved)
    assert doc["observation_tokens"] == sum(c["tokenCount"] for c in moved)
    assert doc["message_tokens"] == sum(c["messageTokens"] for c in moved)
    assert doc["observation_token_count"] == before.observation_token_count + doc["observation_tokens"]
    code, out, err = run(capsys, ["activate", str(path), "--thread", "long-run", "--dry-run"])
    assert code == 0 and out.startswith(f"Would activate {len(moved)} of {len(chunks)} buffered chunk(s) of "
                                        "thread:long-run")
    assert doc["observations"] in out and err.strip() == "memory-studio: Dry run: nothing was written."
    assert file_state(path) == state and backups(path) == []
    # the preview is what the write then does
    row = activate_buffered(path, thread_id="long-run", lookup_key="thread:long-run",
                            stamp_estimates=stamp_estimates)["row"]
    assert row["activeObservations"].endswith(doc["observations"])
    assert row["observationTokenCount"] == doc["observation_token_count"]


def _quietest_thread(name: str) -> tuple[str, str, dict]:
    """The thread-scope thread of NAME with the fewest unobserved tokens (>0) by Mastra's status: (id, key, status)."""
    found = [(status["pendingTokens"], t, key, status) for t, (key, status) in oracle_status(name).items()
             if key.startswith("thread:") and status["pendingTokens"] > 0]
    assert found, f"fixture {name!r} has no thread-scope thread with unobserved messages"
    _, thread_id, key, status = min(found, key=lambda f: (f[0], f[1]))
    return thread_id, key, status


def test_observe_dry_run_previews_below_the_threshold_and_the_write_refuses_in_named_numbers(fixture_db, capsys):
    path = fixture_db("support")
    thread_id, key, status = _quietest_thread("support")
    assert status["pendingTokens"] < status["threshold"], f"{thread_id} is expected below Mastra's threshold"
    with write_transaction(path) as tx:   # nothing pending in the record: the gate is the window alone
        tx.update("mastra_observational_memory", {"pendingMessageTokens": 0}, "id = ?", (current_row(path, key)["id"],))
    window = observation_window(path, thread_id)
    assert not window.meets and window.pending_message_tokens == 0
    # the figures Mastra itself reports for the thread: its unobserved tokens and the threshold
    gate = (f"{status['pendingTokens']:,} unobserved-message tokens, below the {status['threshold']:,}-token "
            "threshold")
    state = file_state(path)
    argv = ["observe", str(path), "--thread", thread_id, "--strategy", "rule-based"]
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
    path = fixture_db("resource")
    key = "resource:user-erin"
    threshold = above_everything(path, "resource", key)   # below the gate whatever is pending
    stored = current_row(path, key)["pendingMessageTokens"]
    assert stored > 0, "the case needs a record that stores a pendingMessageTokens count"
    tokens = resource_window_tokens(path, "resource", key)   # Mastra's count of what the gate reads
    window = resource_observation_window(path, "res-a")
    assert (window.pending_message_tokens, window.tokens, window.threshold) == (stored, tokens, threshold)
    answer = tmp_path / "answer.txt"
    answer.write_text('<observations><thread id="res-a">\n* 🔴 (09:00) A fact\n</thread></observations>\n',
                      encoding="utf-8")
    state = file_state(path)
    code, _out, err = run(capsys, ["observe", str(path), "--thread", "res-a", "--answer-file", str(answer), "--yes"])
    assert code == 2 and file_state(path) == state
    assert (f"{stored:,} tokens the record still counts as pending (pendingMessageTokens) + {tokens:,} "
            f"unobserved-message tokens = {stored + tokens:,}, below the {threshold:,}-token threshold") in err


def activation_figures(path) -> tuple[int, int]:
    """(stored pendingMessageTokens activate() reads, Mastra's getStatus pendingTokens the bar shows) of long-run."""
    with open_store(path) as store:
        stored = store.om_current("thread:long-run").get_int("pendingMessageTokens")
    bar = oracle_status("buffered")["long-run"][1]["pendingTokens"]
    assert stored and bar != stored            # the fixture's two figures differ
    return stored, bar


def why_they_differ(stored: int, bar: int) -> str:
    return (f"The bar shows {bar:,} pending tokens and the rule {stored:,}: Mastra's activation reads the record's "
            "pendingMessageTokens, which the agent stored at the end of its last step")


def test_activate_dry_run_says_why_its_pending_figure_differs_from_the_bars(fixture_db, capsys):
    """Mastra's activate() reads the stored pendingMessageTokens (the agent's last step); the bar shows getStatus's
    pendingTokens (Mastra's own figure in the oracle). The dry run names both and says why they differ."""
    path = fixture_db("buffered")
    stored, bar = activation_figures(path)
    code, out, _err = run(capsys, ["activate", str(path), "--thread", "long-run", "--dry-run"])
    assert code == 0 and why_they_differ(stored, bar) in out
    code, out, _err = run(capsys, ["activate", str(path), "--thread", "long-run", "--dry-run", "--json"])
    doc = json.loads(out)
    assert (doc["pending_message_tokens"], doc["window_pending_tokens"]) == (stored, bar)

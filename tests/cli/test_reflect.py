"""`memory-studio reflect` / `revert` end to end against a local fake provider, on fixture copies.

Every refusal must leave the database byte-identical (main file and -wal hashed before/after).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import libsql
import pytest

from studio.cli import main
from studio.engine.reflector_parse import parse_reflector_output
from studio.engine.tokens import count_observations
from studio.store import open_store
from tests.fake_llm import Reply
from tests.oracle_facts import current_generation, status, threads

ORACLE = json.loads((Path(__file__).resolve().parents[1] / "engine" / "data" / "reflector_answers.oracle.json")
                    .read_text(encoding="utf-8"))
TAGGED = ORACLE["cases"]["tagged"]["answer"]
DEGENERATE = ORACLE["cases"]["degenerate-lines"]["answer"]
# support-1 as Mastra left it (its oracle): the current generation, its log's size and the reflection threshold
GEN = current_generation("support", "thread:support-1")
SIZE = status("support", "support-1")["observationTokenCount"]
THRESHOLD = status("support", "support-1")["effectiveObservationTokensThreshold"]
PRIOR = threads("support")["support-1"]["metadata"]["mastra"]["om"]   # its hints before any reflection
ISSUE_KEYS = ["reflected", "dry_run", "thread_id", "lookup_key", "from_generation", "record_id", "generation_count",
              "input_tokens", "observation_token_count", "reflection_threshold", "attempts", "diff", "observations"]


def digest(path: Path) -> dict:
    return {ext: hashlib.sha256(Path(f"{path}{ext}").read_bytes()).hexdigest()
            for ext in ("", "-wal") if Path(f"{path}{ext}").exists()}


def reflect(path, fake, *extra: str, model: str = "openai-compatible/reflector") -> list[str]:
    return ["reflect", str(path), "--thread", "support-1", "--model", model, "--base-url", fake.base_url, *extra]


def run(capsys, argv) -> tuple[int, dict | None, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else None), err


def history(path, key="thread:support-1"):
    with open_store(path) as store:
        return store.om_history(key), store.get_thread(key.split(":", 1)[1])


def test_reflect_yes_writes_the_generation_mastra_would(fixture_db, fake_llm, capsys):
    path = fixture_db("support")
    fake_llm.push(Reply(text=TAGGED))
    code, doc, err = run(capsys, reflect(path, fake_llm, "--yes", "--json"))
    assert code == 0, err
    assert list(doc)[:len(ISSUE_KEYS)] == ISSUE_KEYS
    assert doc["reflected"] is True and doc["dry_run"] is False
    assert (doc["thread_id"], doc["lookup_key"], doc["from_generation"], doc["generation_count"]) == \
        ("support-1", "thread:support-1", GEN, GEN + 1)
    assert doc["input_tokens"] == SIZE and doc["reflection_threshold"] == THRESHOLD
    assert doc["attempts"] == [{"level": 1, "tokens": doc["observation_token_count"], "degenerate": False,
                                "empty": False}]
    assert set(doc["diff"]) >= {"kept", "added", "removed"} and doc["backup"] and Path(doc["backup"]).exists()
    rows, thread = history(path)
    new = rows[0]
    assert new.id == doc["record_id"] and new.generation_count == GEN + 1 and new.origin_type == "reflection"
    # what real Mastra stored for the same answer (tests/engine/data/reflector_answers.oracle.json)
    mastra = ORACLE["cases"]["tagged"]
    assert new.active_observations == mastra["activeObservations"] == doc["observations"]
    assert new.observation_token_count == mastra["observationTokenCount"] == doc["observation_token_count"]
    om = thread.om_metadata
    assert (om["currentTask"], om["suggestedResponse"]) == (mastra["currentTask"], mastra["suggestedResponse"])
    assert om["threadTitle"] == PRIOR["threadTitle"]  # kept, as Mastra keeps it (see test_reflector_parse)
    assert thread.metadata["category"] == "billing"  # the app's own keys are kept
    assert not rows[1].flag("isReflecting")
    # the prompt: our system text, the log, the prior hints
    request = fake_llm.requests[0]
    assert rows[1].active_observations.strip() in request.prompt and "<observations>" in request.system


def test_dry_run_writes_nothing(fixture_db, fake_llm, capsys):
    path = fixture_db("support")
    before = digest(path)
    fake_llm.default = Reply(text=TAGGED)
    code, doc, _ = run(capsys, reflect(path, fake_llm, "--dry-run", "--json"))
    assert code == 0 and doc["reflected"] is False and doc["dry_run"] is True and doc["record_id"] is None
    assert doc["generation_count"] == GEN + 1 and doc["observations"] == parse_reflector_output(TAGGED).observations
    assert digest(path) == before
    code, doc, err = run(capsys, reflect(path, fake_llm, "--dry-run"))  # plain text
    assert digest(path) == before and code == 0
    assert "Dry run: nothing was written" in err   # the plain summary reads "Proposed generation 3 …" only


def _interrupt_when_asked(fake):
    """Answer after 30 s, but interrupt the CLI (as Ctrl+C would) as soon as the request arrives."""
    def responder(request):
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        return Reply(text=TAGGED, delay_s=30)
    fake.default = responder


@pytest.mark.parametrize("case", ["degenerate", "empty", "401", "429", "500", "timeout", "cancel", "bad-json"])
def test_refusals_leave_the_file_byte_identical(fixture_db, fake_llm, capsys, case):
    path = fixture_db("support")
    before = digest(path)
    extra = ["--yes", "--json"]
    expected_code, expected_err = 1, None
    if case == "degenerate":
        fake_llm.default = Reply(text=DEGENERATE)
        expected_err = "degenerate"
    elif case == "empty":
        fake_llm.default = Reply(text="<observations>\n</observations>")
        expected_err = "empty"
    elif case == "401":
        fake_llm.default = Reply(status=401, body={"error": {"message": "Invalid API key"}})
        expected_err = "rejected the API key"
    elif case in ("429", "500"):
        fake_llm.default = Reply(status=int(case), headers={"retry-after": "0"})
        expected_err = f"HTTP {case}) after 4 retries"
    elif case == "timeout":
        fake_llm.default = Reply(text=TAGGED, delay_s=30)
        extra += ["--timeout", "0.3"]
        expected_err = "did not answer within 0.3 s"
    elif case == "cancel":
        # Python raises KeyboardInterrupt only where SIGINT is not ignored (a background job's is): restore it
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _interrupt_when_asked(fake_llm)
        expected_code = 130
    elif case == "bad-json":
        fake_llm.default = Reply(status=200, body="<html>proxy error</html>")
        expected_err = "not JSON"
    code, doc, err = run(capsys, reflect(path, fake_llm, *extra))
    assert code == expected_code and doc is None
    if expected_err:
        assert expected_err in err
    assert digest(path) == before
    assert len(list(path.parent.glob("*.backup-*"))) == 0  # no backup either: nothing got near a write
    if case in ("degenerate", "empty"):
        assert len(fake_llm.requests) == 4  # levels 1-4, as Mastra escalates


def _set_reflecting(path: Path, minutes_ago: float) -> None:
    """Set isReflecting on support-1's current generation, as a process that started MINUTES_AGO left it."""
    stamp = (datetime.now(UTC) - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    conn = libsql.connect(str(path))
    conn.execute('UPDATE mastra_observational_memory SET "isReflecting" = 1, "updatedAt" = ? '
                 'WHERE "lookupKey" = ? AND "generationCount" = ?', (stamp, "thread:support-1", GEN))
    conn.commit()
    conn.close()


def test_live_reflecting_flag_refuses_before_calling_the_model(fixture_db, fake_llm, capsys):
    path = fixture_db("support")
    _set_reflecting(path, minutes_ago=0)
    before = digest(path)
    fake_llm.push(Reply(text=TAGGED))
    code, _, err = run(capsys, reflect(path, fake_llm, "--yes"))
    assert code == 3 and "reflecting" in err and fake_llm.requests == []  # 3: refused
    assert digest(path) == before


def test_stale_reflecting_flag_is_cleared_with_yes(fixture_db, fake_llm, capsys):
    path = fixture_db("support")
    _set_reflecting(path, minutes_ago=60)
    fake_llm.push(Reply(text=TAGGED))
    code, _doc, err = run(capsys, reflect(path, fake_llm, "--yes", "--json"))
    assert code == 0, err
    rows, _ = history(path)
    assert rows[0].generation_count == GEN + 1 and not rows[1].flag("isReflecting")


def test_generation_changed_while_the_model_was_thinking(fixture_db, fake_llm, capsys):
    from studio.store import writes

    path = fixture_db("support")
    state = {}

    def responder(request):  # another writer adds a generation while the model "thinks"
        rows, _ = history(path)
        writes.revert_to_generation(str(path), lookup_key="thread:support-1", generation_count=1,
                                    expected_record_id=rows[0].id, count_observations=count_observations)
        state["after"] = digest(path)
        return Reply(text=TAGGED)

    fake_llm.default = responder
    generations = [r.generation_count for r in history(path)[0]]
    code, _, err = run(capsys, reflect(path, fake_llm, "--yes"))
    assert code == 3 and "changed" in err  # 3: refused
    assert digest(path) == state["after"]
    rows, _ = history(path)
    # only the other write
    assert [r.generation_count for r in rows] == [GEN + 1, *generations] and rows[0].get("metadata")


@pytest.mark.parametrize("argv, message", [
    (["--thread", "nope", "--model", "ollama/x"], "No thread"),
    (["--thread", "support-1"], "No model"),
    (["--thread", "support-1", "--model", "nosuch/x"], "Unknown provider"),
    (["--thread", "support-1", "--model", "openai/gpt-4o"], "OPENAI_API_KEY"),
    (["--thread", "support-1", "--model", "ollama/x", "--base-url", "ftp://x"], "base URL"),
    (["--thread", "support-1", "--strategy", "rule-based", "--model", "ollama/x"], "llm only"),
    (["--thread", "support-4", "--model", "ollama/x"], "nothing to reflect"),
    (["--thread", "support-1", "--strategy", "rule-based"], "--yes"),  # not a terminal, no --yes
])
def test_bad_input_exits_2_and_changes_nothing(fixture_db, fake_llm, capsys, argv, message):
    path = fixture_db("support")
    before = digest(path)
    code, _, err = run(capsys, ["reflect", str(path), *argv])
    assert code == 2 and message in err
    assert digest(path) == before and fake_llm.requests == []


def test_missing_file_exits_2(tmp_path, capsys):
    code, _, _err = run(capsys, ["reflect", str(tmp_path / "none.db"), "--thread", "t", "--strategy", "rule-based"])
    assert code == 2


def test_rule_based_reflect_and_revert(fixture_db, capsys, monkeypatch):
    path = fixture_db("support")
    code, doc, err = run(capsys, ["reflect", str(path), "--thread", "support-1", "--strategy", "rule-based", "--yes",
                                  "--json"])
    assert code == 0, err
    assert doc["strategy"] == "rule-based" and doc["model"] is None and doc["attempts"][0]["level"] == 0
    rows, thread = history(path)
    assert rows[0].generation_count == GEN + 1 and rows[0].active_observations == doc["observations"]
    assert rows[0].observation_token_count == count_observations(doc["observations"]) < THRESHOLD
    assert thread.om_metadata["currentTask"] == PRIOR["currentTask"]  # untouched
    # undo: generation GEN + 2 holds generation GEN's log
    code, doc, err = run(capsys, ["revert", str(path), "--thread", "support-1", "--to-generation", str(GEN), "--yes",
                                  "--json"])
    assert code == 0, err
    assert (doc["reverted"], doc["from_generation"], doc["to_generation"], doc["generation_count"]) == \
        (True, GEN + 1, GEN, GEN + 2)
    rows, _ = history(path)
    assert rows[0].generation_count == GEN + 2 and rows[0].active_observations == rows[2].active_observations
    assert rows[0].observation_token_count == doc["observation_token_count"]
    assert rows[0].columns["metadata"]["studio"]["revertedFrom"] == GEN


def test_a_second_rule_based_reflect_has_nothing_to_condense_and_writes_nothing(fixture_db, capsys):
    """The rules applied to their own output change nothing: no generation GEN + 2 identical to GEN + 1, no second
    backup."""
    path = fixture_db("support")
    argv = ["reflect", str(path), "--thread", "support-1", "--strategy", "rule-based", "--watch", "0"]
    code, doc, err = run(capsys, [*argv, "--yes", "--json"])
    assert code == 0 and doc["generation_count"] == GEN + 1, err
    backups = sorted(path.parent.glob("*.backup-*"))
    before = digest(path)
    code, out, err = main([*argv, "--yes"]), *capsys.readouterr()
    assert code == 3  # a refusal, like the other writes that leave the database as it is
    assert err.strip() == "memory-studio: nothing to condense: the rules leave the log as it is; nothing was written."
    assert "Wrote" not in out
    code, doc, err = run(capsys, [*argv, "--yes", "--json"])
    assert code == 3 and doc["refused"] == "unchanged" and doc["reflected"] is False and doc["record_id"] is None
    code, doc, err = run(capsys, [*argv, "--dry-run", "--json"])
    assert code == 0 and doc["unchanged"] is True
    assert digest(path) == before and sorted(path.parent.glob("*.backup-*")) == backups
    assert [r.generation_count for r in history(path)[0]][:2] == [GEN + 1, GEN]


@pytest.mark.parametrize("argv, message", [(["--to-generation", str(GEN)], "already the current"),
                                           (["--to-generation", str(GEN + 7)], f"no generation {GEN + 7}"),
                                           (["--to-generation", "-1"], "0 or more"),
                                           (["--to-generation", str(GEN - 1)], "--yes")])
def test_revert_bad_input(fixture_db, capsys, argv, message):
    path = fixture_db("support")
    before = digest(path)
    code, _, err = run(capsys, ["revert", str(path), "--thread", "support-1", *argv])
    assert code == 2 and message in err and digest(path) == before


def test_asks_on_a_terminal(fixture_db, fake_llm, capsys, monkeypatch):
    import studio.cli.interaction

    path = fixture_db("support")
    before = digest(path)
    monkeypatch.setattr(studio.cli.interaction, "is_terminal", lambda: True)
    fake_llm.default = Reply(text=TAGGED)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, _, err = run(capsys, reflect(path, fake_llm))
    assert code == 3 and f"Write generation {GEN + 1}" in err and "Nothing was written" in err  # 3: refused
    assert digest(path) == before
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, _, err = run(capsys, reflect(path, fake_llm))
    assert code == 0
    assert history(path)[0][0].generation_count == GEN + 1


def test_resource_scope_thread_reflects_its_resource_record(fixture_db, fake_llm, capsys):
    path = fixture_db("resource")
    fake_llm.default = Reply(text=TAGGED)
    code, doc, err = run(capsys, ["reflect", str(path), "--thread", "res-a", "--model", "ollama/x", "--base-url",
                                  fake_llm.base_url, "--yes", "--json"])
    assert code == 0, err
    assert (doc["lookup_key"], doc["thread_id"], doc["reflection_threshold"]) == \
        ("resource:user-erin", "res-a", status("resource", "res-a")["effectiveObservationTokensThreshold"])
    rows, _ = history(path, "resource:user-erin")
    with open_store(path) as store:
        thread = store.get_thread("res-a")
    assert rows[0].generation_count == doc["generation_count"] and rows[0].thread_id is None
    assert thread.om_metadata["currentTask"] == parse_reflector_output(TAGGED).current_task   # the answer's

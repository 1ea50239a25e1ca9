"""`memory-studio trace` and `memory-studio context` (studio.cli.trace), called through main()."""

from __future__ import annotations

import hashlib
import json

from studio.cli import main
from tests.conftest import load_oracle
from tests.engine import trace_db as T
from tests.engine import trace_facts as F
from tests.mastra_facts import raw_messages


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_trace_json_follows_the_known_drop(fixture_db, capsys):
    db = T.build_trace_db(fixture_db("history"))
    before = _digest(db)
    code, out, _ = _run(capsys, "trace", str(db), "--thread", T.THREAD, "--text", "teal", "--json")
    assert code == 0
    doc = json.loads(out)
    life, = doc["lifelines"]
    assert (life["first_generation"], life["dropped_in"], life["cycle_id"]) == (0, 2, "c1")
    assert [s["kind"] for s in life["steps"]] == ["first", "reworded", "dropped"]
    assert life["steps"][-1]["model"] == T.MODELS[2]
    assert [m["id"] for m in life["source_messages"]] == ["u1", "a1", "u2"]
    assert [(m["id"], m["observed"]) for m in doc["messages"]] == [("u1", True), ("u4", False)]
    assert _digest(db) == before  # read-only


def test_trace_text_output_and_bad_input(fixture_db, capsys):
    path = fixture_db("support")
    db = str(path)
    # A 🔴 line of generation 0 no later generation holds (Mastra's rows): its reflection is named.
    code, out, _ = _run(capsys, "trace", db, "--thread", "support-1", "--text", F.dropped_line(path, "support-1"))
    assert code == 0 and "dropped by the reflection" in out
    # A line a reflection left out and a later observation of its generation wrote again.
    _old, new, text = F.reobserved_lines(path, "support-1")[0]
    code, out, _ = _run(capsys, "trace", db, "--thread", "support-1", "--text", text)
    assert code == 0
    assert f"gen {new['generationCount']}: left out by the reflection, observed again at" in out
    assert _run(capsys, "trace", db, "--thread", "nope", "--text", "x")[0] == 2
    assert _run(capsys, "trace", db, "--thread", "support-1", "--text", " ")[0] == 2


def test_context_json_last_turn_equals_getstatus(fixture_db, capsys):
    status = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]
    code, out, _ = _run(capsys, "context", str(fixture_db("support")), "--thread", "support-1", "--turn", "30",
                        "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["turn"], doc["turns"], doc["generation"]) == (30, 30, status["generationCount"])
    assert doc["window_after_turn_tokens"] == status["pendingTokens"]
    assert doc["tokens"]["observations"]["estimate"] == status["observationTokenCount"]
    assert doc["tokens"]["total"]["estimate"] == (doc["tokens"]["observations"]["estimate"]
                                                  + doc["tokens"]["window"]["estimate"]
                                                  + doc["tokens"]["working_memory"]["estimate"])


def test_context_bad_turns(fixture_db, capsys):
    db = str(fixture_db("support"))
    assert _run(capsys, "context", db, "--thread", "support-1", "--turn", "31")[0] == 2
    assert _run(capsys, "context", db, "--thread", "support-1", "--turn", "0")[0] == 2
    assert _run(capsys, "context", db, "--thread", "nope", "--turn", "1")[0] == 2
    code, out, _ = _run(capsys, "context", db, "--thread", "support-1", "--turn", "5")
    assert code == 0 and "Turn 5 of 30" in out


def test_trace_number_text_lists_no_false_messages_and_names_the_marker(fixture_db, capsys):
    # The report: "Obs 7.2" matched 19 messages holding "7" and "2" apart. The query and the
    # messages that say it come from Mastra's rows (tests/engine/trace_facts.py), plus one added message
    # holding the word and both digit groups apart; the line's cycle marker host is named.
    path = fixture_db("support")
    query, number, _line, hosts = F.number_case(path, "support-1")
    word, (major, minor) = query.split()[0], number.split(".")
    F.add_message(path, "support-1", "decoy-apart", f"The {word} {major} notes list {minor} items.")
    says = F.messages_saying(path, "support-1", query)
    code, out, _ = _run(capsys, "trace", str(path), "--thread", "support-1", "--text", query)
    assert code == 0
    assert f" and {len(says)} message(s) match {query!r}" in out.splitlines()[0]
    assert "decoy-apart" not in out
    assert any(f"marker is on message {host}" in out for host in hosts)


def test_context_text_names_both_window_figures_in_resource_scope(fixture_db, capsys):
    # res-b's last turn: Mastra's getStatus reports its pending tokens (oracle: the resource's unobserved
    # messages plus the other threads' context); the text names that figure as the window after the turn,
    # beside the turn-start window of the sections above. Before, the other threads' later turns counted
    # as unobserved here although their observations had taken them (3,535 for 2,473).
    path = fixture_db("resource")
    status = load_oracle("resource")["om"]["resource:user-erin"]["status"]["res-b"]
    turns = sum(1 for m in raw_messages(path, "res-b") if m["role"] == "user")
    assert turns >= 2, "res-b needs an earlier turn besides its last one"
    code, out, _ = _run(capsys, "context", str(path), "--thread", "res-b", "--turn", str(turns))
    assert code == 0
    assert f"After the turn (now): {status['pendingTokens']:,} tokens unobserved = Mastra's getStatus" in out
    assert "from other threads' context" in out and f"start of turn {turns}" in out
    code, out, _ = _run(capsys, "context", str(path), "--thread", "res-b", "--turn", str(turns - 1))
    assert code == 0 and "not reconstructed" in out

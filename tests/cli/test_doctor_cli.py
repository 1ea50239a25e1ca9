"""`memory-studio doctor`: the JSON document, the human output, exit codes, read-only."""

from __future__ import annotations

import hashlib
import json

from studio.cli import main
from tests.conftest import load_oracle

FINDING_KEYS = ["check", "severity", "thread_id", "resource_id", "record_id", "lookup_key", "generation",
                "message_ids", "summary", "evidence", "reference", "fix"]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_doctor_json_shape_and_exit_code(fixture_db, capsys):
    path = fixture_db("support")
    before = {p.name: digest(p) for p in path.parent.iterdir()}
    assert main(["doctor", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"findings", "checked"}
    assert doc["checked"]["threads"] == len(load_oracle("support")["threads"]) and doc["checked"]["checks"] == 22
    assert doc["findings"] and all(list(f) == FINDING_KEYS for f in doc["findings"])
    assert {f["severity"] for f in doc["findings"]} <= {"error", "warning", "info"}
    assert all(f["reference"] and f["fix"] for f in doc["findings"])
    assert {p.name: digest(p) for p in path.parent.iterdir()} == before   # read-only


def test_doctor_human_output_groups_by_severity(fixture_db, capsys):
    path = fixture_db("support")
    assert main(["doctor", str(path), "--json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert main(["doctor", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    # a heading per severity present, most severe first, each followed by exactly its findings' lines
    want = []
    for severity in ("error", "warning", "info"):
        group = [f for f in findings if f["severity"] == severity]
        if group:
            want.append(f"{severity.upper()} ({len(group)})")
            want += [f"  {f['check']}  {f['thread_id'] or f['lookup_key']}"
                     f"{'' if f['generation'] is None else ' gen ' + str(f['generation'])}: " for f in group]
    assert len({f["severity"] for f in findings}) > 1, "support.db's findings are all of one severity"
    assert any(f["generation"] is not None for f in findings), "no finding of support.db names a generation"
    assert len(out) == len(want) + 1
    assert all(line.startswith(prefix) for line, prefix in zip(out, want, strict=False)), (out, want)
    threads = load_oracle("support")["threads"]    # Mastra's own listing
    assert out[-1].startswith(f"Checked {len(threads)} threads")


def test_doctor_one_thread_and_bad_input(fixture_db, tmp_path, capsys):
    path = fixture_db("history")
    assert main(["doctor", str(path), "--thread", "hist-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checked"]["threads"] == 1
    assert main(["doctor", str(path), "--thread", "nope", "--json"]) == 2
    assert "No thread 'nope'" in capsys.readouterr().err
    assert main(["doctor", str(tmp_path / "missing.db")]) == 2


def test_doctor_counts_one_of_a_kind_in_the_singular(fixture_db, capsys):
    # buffered has one thread and one lookup key: the summary read "Checked 1 threads, … 1 lookup keys".
    assert main(["doctor", str(fixture_db("buffered"))]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("Checked 1 thread, ") and "1 lookup key," in last
    assert "messages" in last and "checks." in last

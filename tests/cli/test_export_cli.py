"""`export`: a thread as Mastra's own objects (JSON) or a Markdown transcript, checked against the oracle and the
raw rows of real Mastra fixtures; atomic `--output`, refusals, and plain text in the transcript."""

from __future__ import annotations

import html
import json
import re
import sqlite3

import pytest

from studio.app.export import fenced
from studio.cli import main
from tests.conftest import load_oracle
from tests.oracle_facts import threads


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _raw_rows(path, thread_id):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, role, content, createdAt FROM mastra_messages WHERE thread_id = ?",
                            (thread_id,)).fetchall()
    finally:
        conn.close()


def _all_ids(fixture, thread_id):
    recall = load_oracle(fixture)["threads"][thread_id]["recall"]
    return next(r["messageIds"] for r in recall if r["args"] == {"perPage": False})


@pytest.mark.parametrize(("fixture", "thread_id"), [("support", "support-1"), ("collab", "doc_42"),
                                                    ("tools", "tools-1")])
def test_json_is_mastras_objects(fixture_db, capsys, fixture, thread_id):
    path = fixture_db(fixture)
    code, out, err = run(capsys, ["export", str(path), "--thread", thread_id])
    assert code == 0, err
    doc = json.loads(out)
    # the messages in Mastra's recall({perPage: false}) order, each with the stored content parsed
    assert [m["id"] for m in doc["messages"]] == _all_ids(fixture, thread_id)
    raw = {row[0]: row for row in _raw_rows(path, thread_id)}
    for m in doc["messages"]:
        _id, role, content, created = raw[m["id"]]
        assert (m["role"], m["content"], m["createdAt"], m["threadId"]) == (role, json.loads(content), created,
                                                                             thread_id)
    want = threads(fixture)[thread_id]
    assert {k: doc["thread"][k] for k in ("id", "resourceId", "title", "metadata")} == {
        k: want[k] for k in ("id", "resourceId", "title", "metadata")}
    assert doc["export"]["messages"] == len(doc["messages"])


def test_markdown_names_speakers_from_turn_tags(fixture_db, capsys):
    path = fixture_db("collab")
    code, out, err = run(capsys, ["export", str(path), "--thread", "doc_42", "--format", "markdown"])
    assert code == 0, err
    # expected from the raw rows alone: each user message's author_name attributes, in order; else the role
    order = {mid: i for i, mid in enumerate(_all_ids("collab", "doc_42"))}
    rows = sorted(_raw_rows(path, "doc_42"), key=lambda r: order[r[0]])
    expected, marked = [], []
    for _id, role, content, _created in rows:
        text = "\n".join(p.get("text", "") for p in json.loads(content)["parts"] if p.get("type") == "text")
        names = re.findall(r'<turn [^>]*author_name="([^"]*)"', text) if role == "user" else []
        expected += [html.unescape(n).split()[0] for n in names] or [role]   # tags hold attributes escaped
        marked += [html.unescape(n) for n in names if "<" in html.unescape(n)]
    headings = re.findall(r"^## \d+\. (\S+)", out, flags=re.M)
    assert headings == expected and "Alice" in headings and len(set(headings)) > 2
    assert "<turn" not in out   # the tags are read, not copied
    assert marked   # the fixture has a speaker whose name holds markup characters: decoded, < > kept literal
    assert all(name.replace("<", "\\<").replace(">", "\\>") in out for name in marked)


def test_output_file_atomic_and_refusals(fixture_db, capsys, tmp_path):
    path = fixture_db("support")
    dest = tmp_path / "out.md"
    code, _out, err = run(capsys, ["export", str(path), "--thread", "support-1", "--format", "markdown",
                                   "-o", str(dest)])
    assert code == 0 and "exported thread support-1" in err
    assert dest.read_text(encoding="utf-8").startswith("# ")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    before = path.read_bytes()
    assert run(capsys, ["export", str(path), "--thread", "support-1", "-o", str(path)])[0] == 2
    assert path.read_bytes() == before
    code, _out, err = run(capsys, ["export", str(path), "--thread", "support-1", "-o", str(tmp_path / "no" / "x")])
    assert code == 2 and "No such file" in err
    code, _out, err = run(capsys, ["export", str(path), "--thread", "no-such-thread"])
    assert code == 2 and "No thread 'no-such-thread'" in err


def test_fence_outlasts_the_text():
    text = "before\n```\n# not a heading\n````\nafter"
    block = fenced(text)
    fence = block.split("\n", 1)[0].removesuffix("text")
    assert fence == "`" * 5 and block.endswith("\n" + fence)
    assert all(not line.startswith(fence) for line in text.splitlines())


def test_delete_thread_cli(fixture_db, capsys, tmp_path):
    """`delete-thread`: refused without --yes off a terminal (nothing written, no backup), an unknown thread
    refused before any backup, and with --yes the counts of the raw rows it removed."""
    path = fixture_db("support")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    n_messages = conn.execute("SELECT count(*) FROM mastra_messages WHERE thread_id = 'support-2'").fetchone()[0]
    n_om = conn.execute("SELECT count(*) FROM mastra_observational_memory "
                        "WHERE lookupKey = 'thread:support-2'").fetchone()[0]
    conn.close()
    listing = lambda: sorted(p.name for p in path.parent.iterdir())  # noqa: E731
    before = listing()
    assert run(capsys, ["delete-thread", str(path), "--thread", "support-2"])[0] != 0
    assert run(capsys, ["delete-thread", str(path), "--thread", "nope", "--yes"])[0] == 2
    assert listing() == before
    code, out, err = run(capsys, ["delete-thread", str(path), "--thread", "support-2", "--yes", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["thread_ids"], doc["messages"], doc["threads"], doc["om_records"], doc["vectors"]) == (
        ["support-2"], n_messages, 1, n_om, 0)
    assert doc["backup"] and doc["backup"] not in before


def test_doctor_markdown_holds_every_finding(fixture_db, capsys):
    """`doctor --markdown`: one list item per finding of `doctor --json` (same count, each check named), stored
    text escaped (no raw `<` or `*` of a summary reaches the Markdown)."""
    path = fixture_db("support")
    assert main(["doctor", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert main(["doctor", str(path), "--markdown"]) == 0
    out = capsys.readouterr().out
    items = [line for line in out.splitlines() if line.startswith("- **")]
    assert len(items) == len(report["findings"])
    assert sorted(re.findall(r"^- \*\*(.+?)\*\*", out, flags=re.M)) == sorted(
        f["check"].replace("_", "\\_") for f in report["findings"])
    for f in report["findings"]:
        assert "* 🟡" not in f["summary"] or "\\* 🟡" in out

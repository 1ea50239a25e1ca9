"""`threads`, `recall`, `speakers`, `clone`: stable JSON shapes, exit 2 on bad input, clone's confirmation and
backup."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from studio.cli import main
from studio.cli.history import parse_include
from studio.store import open_store
from studio.store.history import recall
from studio.store.write.row_backup import backup_root
from tests.conftest import load_oracle


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, argv) -> dict:
    code, out, err = run(capsys, argv)
    assert code == 0, err
    return json.loads(out)


def digest(path: Path) -> tuple:
    return tuple(hashlib.sha256(Path(str(path) + ext).read_bytes()).hexdigest() if Path(str(path) + ext).exists()
                 else None for ext in ("", "-wal"))


def test_json_shapes_and_read_only(fixture_db, capsys):
    path = fixture_db("support")
    before = digest(path)
    threads = run_json(capsys, ["threads", str(path), "--json"])
    assert list(threads) == ["thread_ids", "total", "has_more"]
    assert threads == {"thread_ids": ["support-meta", "support-5", "support-4", "support-3", "support-2", "support-1"],
                       "total": 6, "has_more": False}
    page = run_json(capsys, ["threads", str(path), "--per-page", "2", "--page", "1", "--order-by", "updatedAt",
                             "--direction", "ASC", "--json"])
    assert page["total"] == 6 and page["has_more"] is True and len(page["thread_ids"]) == 2

    messages = run_json(capsys, ["recall", str(path), "--thread", "support-1", "--json"])
    assert list(messages) == ["message_ids", "total", "has_more"]
    oracle = next(c for c in load_oracle("support")["threads"]["support-1"]["recall"]
                  if c["args"] == {"perPage": False})
    assert messages["message_ids"] == oracle["messageIds"][-10:]       # Mastra's default: the newest 10
    assert (messages["total"], messages["has_more"]) == (57, True)
    everything = run_json(capsys, ["recall", str(path), "--thread", "support-1", "--all", "--json"])
    assert everything["message_ids"] == oracle["messageIds"] and everything["has_more"] is False

    speakers = run_json(capsys, ["speakers", str(path), "--thread", "support-1", "--json"])
    users = [m for m in load_oracle("support")["threads"]["support-1"]["messages"] if m["role"] == "user"]
    assert speakers == {"speakers": [], "untagged_messages": len(users)} and len(users) == 30
    assert digest(path) == before


def test_recall_filters_on_the_command_line(fixture_db, capsys):
    path = fixture_db("support")
    doc = run_json(capsys, ["recall", str(path), "--thread", "support-meta", "--all", "--from", "2026-03-02T10:00:00Z",
                            "--to", "2026-03-05T10:00:00.000Z", "--metadata", '{"category": "billing"}', "--json"])
    with open_store(path) as store:
        expected = recall(store, "support-meta", per_page=False, filter={
            "date_range": {"start": "2026-03-02T10:00:00.000Z", "end": "2026-03-05T10:00:00.000Z"},
            "metadata": {"category": "billing"}})
    assert doc["message_ids"] == expected.message_ids == ["meta-msg-1", "meta-msg-3"]
    # A date alone is midnight UTC, as `new Date("2026-03-02")` reads it.
    doc = run_json(capsys, ["recall", str(path), "--thread", "support-meta", "--all", "--from", "2026-03-02",
                            "--json"])
    assert doc["message_ids"] == ["meta-msg-1", "meta-msg-2", "meta-msg-3", "meta-msg-4", "meta-msg-5"]


def test_include_is_mastra_s_no_op_unless_applied(fixture_db, capsys):
    path = fixture_db("support")
    code, out, err = run(capsys, ["recall", str(path), "--thread", "support-meta", "--per-page", "1",
                                  "--include", "meta-msg-2:1:1", "--json"])
    assert code == 0 and json.loads(out)["message_ids"] == ["meta-msg-5"] and "ignores include" in err
    doc = run_json(capsys, ["recall", str(path), "--thread", "support-meta", "--per-page", "1",
                            "--include", "meta-msg-2:1:1", "--apply-include", "--json"])
    assert doc == {"message_ids": ["meta-msg-1", "meta-msg-2", "meta-msg-3", "meta-msg-5"], "total": 6,
                   "has_more": True}


def test_parse_include():
    assert parse_include("abc") == {"id": "abc"}
    assert parse_include("abc:2") == {"id": "abc", "with_previous_messages": 2}
    assert parse_include("abc:2:1") == {"id": "abc", "with_previous_messages": 2, "with_next_messages": 1}
    assert parse_include("urn:msg:7:3") == {"id": "urn:msg", "with_previous_messages": 7, "with_next_messages": 3}
    assert parse_include("a:b") == {"id": "a:b"}


@pytest.mark.parametrize("argv,message", [
    (["threads", "{db}", "--metadata", "{not json", "--json"], "not valid JSON"),
    (["threads", "{db}", "--metadata", '{"a": {"b": 1}}', "--json"], "shallow scalars"),
    (["threads", "{db}", "--metadata", '["a"]', "--json"], "JSON object"),
    (["threads", "{db}", "--all", "--page", "1", "--json"], "page must be 0"),
    (["threads", "{db}", "--page", "-1", "--json"], "expected a number >= 0"),
    (["threads", "{db}", "--per-page", "2", "--all", "--json"], "not allowed with argument"),
    (["threads", "{db}", "--order-by", "title", "--json"], "invalid choice"),
    (["recall", "{db}", "--thread", "nope", "--json"], "No thread 'nope'"),
    (["recall", "{db}", "--json"], "--thread"),
    (["recall", "{db}", "--thread", "support-1", "--from", "yesterday", "--json"], "is not a date"),
    (["recall", "{db}", "--thread", "support-1", "--metadata", '{"constructor": 1}', "--json"], "reserved"),
    (["recall", "{db}", "--thread", "support-1", "--per-page", "x", "--json"], "expected a whole number"),
    (["recall", "{db}", "--thread", "support-1", "--include", ":1", "--json"], "needs a message id"),
    (["speakers", "{db}", "--thread", "nope", "--json"], "No thread 'nope'"),
    (["speakers", "/no/such/file.db", "--thread", "x", "--json"], "No such file"),
    (["clone", "{db}", "--thread", "support-1", "--json"], "--yes"),
    (["clone", "{db}", "--thread", "nope", "--yes", "--json"], "no thread 'nope'"),
    (["clone", "{db}", "--thread", "support-1", "--new-id", "support-2", "--yes", "--json"], "already exists"),
])
def test_bad_input_exits_2_and_changes_nothing(fixture_db, capsys, argv, message):
    path = fixture_db("support")
    before = digest(path)
    code, out, err = run(capsys, [a.replace("{db}", str(path)) for a in argv])
    assert code == 2
    assert out == ""
    assert message.lower() in err.lower()
    assert digest(path) == before
    assert not list(path.parent.glob("*backup*"))   # a refused clone (no thread, id taken) leaves no backup behind
    assert not backup_root().exists() or not list(backup_root().iterdir())


def _all_rows(path) -> dict:
    """Every row of every Mastra table of PATH, as SQLite stores it (rowid included), read with sqlite3."""
    import sqlite3

    out = {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'mastra%'"):
            out[table] = sorted(conn.execute(f'SELECT rowid, * FROM "{table}"').fetchall(), key=repr)
    return out


def test_clone_saves_its_rows_and_undo_restores_the_file_exactly(fixture_db, capsys):
    """Issue 21.5: a write on a file saves the rows it changes (no copy of the file); `undo PATH` puts back
    exactly the rows there were (every table, every column, the rowids), and a second undo finds nothing."""
    path = fixture_db("history")
    rows_before = _all_rows(path)
    doc = run_json(capsys, ["clone", str(path), "--thread", "hist-1", "--new-id", "hist-1-copy", "--title", "Copy",
                            "--message-limit", "3", "--yes", "--json"])
    assert list(doc) == ["thread", "message_ids", "source_message_ids", "om_record_id", "backup"]
    assert doc["thread"]["id"] == "hist-1-copy" and doc["thread"]["title"] == "Copy"
    assert doc["thread"]["metadata"]["clone"]["sourceThreadId"] == "hist-1"
    with open_store(path) as store:
        source = recall(store, "hist-1", per_page=False).message_ids
        clone = recall(store, "hist-1-copy", per_page=False).message_ids
    assert doc["source_message_ids"] == source[-3:] and doc["message_ids"] == clone and len(clone) == 3
    backup = Path(doc["backup"])
    assert backup.suffix == ".json" and backup.exists()
    assert [p.name for p in path.parent.iterdir() if "backup" in p.name] == []    # no copy of the file
    listed = run_json(capsys, ["threads", str(path), "--resource", "user-gus", "--all", "--json"])
    assert "hist-1-copy" in listed["thread_ids"] and listed["total"] == 4
    assert _all_rows(path) != rows_before
    undone = run_json(capsys, ["undo", str(path), "--yes", "--json"])
    assert undone["backup"] == str(backup) and undone["deleted"] == 3 + 1 + (1 if doc["om_record_id"] else 0)
    assert _all_rows(path) == rows_before
    code, _out, err = run(capsys, ["undo", str(path), "--yes", "--json"])
    assert code == 2 and "No backup of a studio write" in err


def test_clone_with_full_backup_also_copies_the_file(fixture_db, capsys):
    path = fixture_db("history")
    run_json(capsys, ["clone", str(path), "--thread", "hist-1", "--new-id", "c", "--yes", "--json", "--full-backup"])
    (copy,) = [p for p in path.parent.iterdir() if p.name.startswith("history.backup-")]
    with open_store(copy) as store:                 # the copy is the file as it was before the write
        assert store.get_thread("c") is None


@pytest.mark.parametrize(("answer", "code"), [("n\n", 3), ("y\n", 0)])
def test_clone_asks_on_a_terminal_like_the_other_writes(fixture_db, capsys, monkeypatch, answer, code):
    # reflect, revert, activate and observe ask "[y/N]" on a terminal; clone only said "add --yes".
    import io

    import studio.cli.interaction

    path = fixture_db("history")
    monkeypatch.setattr(studio.cli.interaction, "is_terminal", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    got, out, err = run(capsys, ["clone", str(path), "--thread", "hist-1", "--new-id", "asked", "--json"])
    assert got == code, err
    assert "Clone thread 'hist-1'" in err and "[y/N]" in err
    with open_store(path) as store:
        assert (store.get_thread("asked") is not None) == (code == 0)
    assert bool(list(backup_root().glob("file_history.db_*-clone.json"))) == (code == 0)   # its rows
    if code == 3:
        assert "Nothing was written" in err and out == ""


def test_without_json_inspect_threads_and_recall_print_text(fixture_db, capsys):
    """A person's first command prints lines to read (it printed the JSON document); --json keeps the document."""
    path = fixture_db("support")
    code, out, _err = run(capsys, ["threads", str(path)])
    assert code == 0 and not out.lstrip().startswith("{")
    lines = out.splitlines()
    assert lines[-1] == "6 threads." and lines[0].startswith("support-meta  “Tagged messages”  resource user-carol")
    code, out, _err = run(capsys, ["recall", str(path), "--thread", "support-1"])
    assert code == 0 and not out.lstrip().startswith("{")
    doc = run_json(capsys, ["recall", str(path), "--thread", "support-1", "--json"])
    body = out.splitlines()[1:-1]
    assert len(body) == len(doc["message_ids"]) == 10        # Mastra's default page: lastMessages 10
    assert [line.split()[3] for line in body] == doc["message_ids"]
    assert out.splitlines()[-1] == (f"10 messages shown of {doc['total']}: --page N for the next ones, --all for "
                                    "every one.")
    code, out, _err = run(capsys, ["inspect", str(path)])
    assert code == 0 and "Threads:" in out and "thread:support-1  generation" in out and not out.startswith("{")


def test_recall_help_names_its_default_page_of_10(capsys):
    from studio.cli import main

    assert main(["recall", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "messages per page (default 10, as Mastra's)" in text

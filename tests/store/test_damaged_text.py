"""Text cells whose bytes are not UTF-8 (a byte flip, a lone surrogate) are read, marked, and never panic.

The libsql driver panics (pyo3_runtime.PanicException, a BaseException) on such a TEXT value; the
store fetches text as bytes and decodes it itself. Expected text comes from first principles: each
maximal invalid subsequence becomes one U+FFFD (Unicode's recommended practice, which both Python's
"replace" and the WHATWG decoder Node uses follow).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from studio.store import open_store
from studio.store.cells import DamagedText
from tests.conftest import REPO

BAD_TITLE = b"Trip \xff plan"                  # 0xFF never occurs in UTF-8
LONE_SURROGATE = b"\xed\xa0\x80"              # U+D800 encoded as if it were a scalar value


def damage(path, *, thread_id: str | None = None) -> dict:
    """Write invalid UTF-8 into a thread title, a message's content and an OM record's log; return the targets."""
    with sqlite3.connect(path) as conn:
        thread_id = thread_id or conn.execute(
            "SELECT thread_id FROM mastra_messages GROUP BY thread_id ORDER BY COUNT(*) DESC LIMIT 1").fetchone()[0]
        message_id, content = conn.execute(
            "SELECT id, json(content) FROM mastra_messages WHERE thread_id = ? ORDER BY \"createdAt\" LIMIT 1",
            (thread_id,)).fetchone()
        conn.execute("UPDATE mastra_threads SET title = CAST(? AS TEXT) WHERE id = ?", (BAD_TITLE, thread_id))
        # the surrogate goes inside a JSON string of the stored content (text, as Mastra writes it)
        bad_content = content.replace('"parts":[', '"note":"x' + "\x00" + '","parts":[', 1).encode()
        bad_content = bad_content.replace(b"\x00", LONE_SURROGATE)
        conn.execute("UPDATE mastra_messages SET content = CAST(? AS TEXT) WHERE id = ?", (bad_content, message_id))
        om = conn.execute("SELECT id FROM mastra_observational_memory ORDER BY \"generationCount\" DESC LIMIT 1"
                          ).fetchone()
        if om:
            conn.execute("UPDATE mastra_observational_memory SET \"activeObservations\" = "
                         "CAST(CAST(\"activeObservations\" AS BLOB) || X'C3' AS TEXT) WHERE id = ?", (om[0],))
            # a resource id with a stray byte: read by the plain-SQL path (DISTINCT ids)
        conn.execute("INSERT INTO mastra_resources (id, \"workingMemory\", metadata, \"createdAt\", \"updatedAt\") "
                     "VALUES (CAST(X'72657380FF' AS TEXT), NULL, NULL, '2026-01-01T00:00:00.000Z', "
                     "'2026-01-01T00:00:00.000Z')")
    return {"thread": thread_id, "message": message_id, "om": om[0] if om else None}


@pytest.mark.parametrize("name", ["support", "history"])
def test_invalid_utf8_cells_are_read_with_replacement_and_marked(fixture_db, name):
    path = fixture_db(name)
    targets = damage(path)
    with open_store(path) as store:
        thread = store.get_thread(targets["thread"])
        assert thread.title == BAD_TITLE.decode("utf-8", "replace") == "Trip \ufffd plan"
        assert isinstance(thread.title, DamagedText) and thread.damaged_text == ("title",)
        listed = {t.id: t for t in store.list_threads()}
        assert listed[targets["thread"]].title == "Trip \ufffd plan"
        msgs = {m.id: m for m in store.list_messages(targets["thread"])}
        msg = msgs[targets["message"]]
        assert msg.damaged_text == ("content",)
        assert msg.content_error is None and msg.content["note"] == "x\ufffd\ufffd\ufffd"
        assert [m for m in msgs.values() if m.id != targets["message"] and m.damaged_text] == []
        assert "res\ufffd\ufffd" in store.resource_ids()
        if targets["om"]:
            record = store.om_record(targets["om"])
            assert record.active_observations.endswith("\ufffd")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_cli_reads_damaged_text_without_traceback_or_panic(fixture_db):
    path = fixture_db("support")
    targets = damage(path)
    for args in (["threads", str(path)], ["inspect", str(path)], ["recall", str(path), "--thread", targets["thread"]],
                 ["tokens", str(path), targets["thread"]]):
        done = run_cli(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr and "panicked" not in done.stderr, (args, done.stderr)
    listing = json.loads(run_cli("threads", str(path), "--json").stdout)
    assert targets["thread"] in listing["thread_ids"]

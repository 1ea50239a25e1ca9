"""One documented set of exit codes for every command, and the write protocol on the command line.

0 done, 1 unexpected, 2 bad input, 3 refused (busy / locked / changed / agent active / overtaken
and unrepaired / declined), 4 I/O (disk full, read-only). Before this, the same lock refusal exited
1 for `reflect` and 2 for `clone`, and disk full exited 2 (bad input).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime

import libsql
import pytest

from studio.app.failures import EXIT_BAD_INPUT, EXIT_IO, EXIT_REFUSED, exit_code_for
from studio.cli import main
from studio.errors import StoreError, WriteRefused
from studio.store import open_store
from studio.store.records import ms_to_iso
from studio.store.write.backends import sqlite as sqlite_writes
from studio.store.write.transaction import write_transaction
from tests.observe_cases import current_generation

KEY = "thread:support-1"
#: support-1's current generation as Mastra lists it (the oracle); the studio's next write is GEN + 1.
GEN = current_generation("support", KEY)


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else None), err


def reflect_argv(path, *extra):
    return ["reflect", str(path), "--thread", "support-1", "--strategy", "rule-based", "--yes", "--json", *extra]


def now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def history(path):
    with open_store(path) as store:
        return store.om_history(KEY)


def touch_newest_message(path, at_ms: int) -> None:
    """Make support-1's newest message look saved at AT_MS (as a running turn would have just saved it)."""
    conn = libsql.connect(str(path), isolation_level=None)
    try:
        conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = (SELECT id FROM mastra_messages '
                     'WHERE thread_id = ? ORDER BY "createdAt" DESC LIMIT 1)', (ms_to_iso(at_ms), "support-1"))
    finally:
        conn.close()


@pytest.mark.parametrize("argv", [
    lambda p: reflect_argv(p),
    lambda p: ["clone", str(p), "--thread", "support-1", "--yes", "--json"],
], ids=["reflect", "clone"])
def test_a_locked_file_exits_3_for_every_write_and_says_how_long_it_waited(fixture_db, capsys, monkeypatch, argv):
    path = fixture_db("support")
    monkeypatch.setattr(sqlite_writes, "LOCK_WAIT_MS", 300)
    holder = libsql.connect(str(path), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        code, _, err = run(capsys, argv(path))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == EXIT_REFUSED, err
    assert "waited 0.3 s (the longest any write waits)" in err


def test_disk_full_inside_a_write_exits_4(fixture_db):
    path = fixture_db("support")
    with pytest.raises(StoreError) as info, write_transaction(path) as tx:
        pages = tx.rows("PRAGMA page_count")[0][0]
        tx.rows(f"PRAGMA max_page_count = {pages}")  # SQLite: no page more may be added (SQLITE_FULL)
        tx.execute('UPDATE mastra_observational_memory SET "activeObservations" = ? WHERE "lookupKey" = ?',
                   ("x" * 2_000_000, KEY))
    assert "full" in str(info.value).lower()
    assert exit_code_for(info.value) == EXIT_IO


def test_a_read_only_database_exits_4_and_a_missing_one_2(fixture_db, tmp_path):
    path = fixture_db("support")
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        with pytest.raises(Exception) as raw:
            conn.execute("DELETE FROM mastra_threads")
    finally:
        conn.close()
    wrapped = StoreError("Writing failed")
    wrapped.__cause__ = raw.value  # as the write layer chains SQLite's error
    assert exit_code_for(wrapped) == EXIT_IO
    assert exit_code_for(WriteRefused("not-found", "no such thread")) == EXIT_BAD_INPUT
    assert exit_code_for(WriteRefused("generation-changed", "changed")) == EXIT_REFUSED
    assert main(["inspect", str(tmp_path / "missing.db"), "--json"]) == EXIT_BAD_INPUT


# -- the write protocol: quiet period, wait, force, watch and repair -----------------------------------

def test_reflect_refuses_while_the_agent_is_active_and_reports_it(fixture_db, capsys):
    path = fixture_db("support")
    touch_newest_message(path, now_ms() - 2000)
    before = [r.id for r in history(path)]
    code, doc, err = run(capsys, reflect_argv(path))
    assert code == EXIT_REFUSED
    assert "The agent is active: a message was written" in err and "--wait-idle" in err
    assert doc["reflected"] is False and doc["refused"] == "agent-active" and doc["activity"]["active"] is True
    assert [r.id for r in history(path)] == before


def test_wait_idle_waits_for_the_quiet_period_then_writes(fixture_db, capsys):
    path = fixture_db("support")
    touch_newest_message(path, now_ms() - 29_000)  # quiet in about 1 s
    code, doc, err = run(capsys, reflect_argv(path, "--wait-idle", "20", "--watch", "0"))
    assert code == 0, err
    assert doc["reflected"] is True and doc["activity"]["active"] is False
    assert "waiting up to 20 s" in err


def test_force_writes_although_the_agent_is_active(fixture_db, capsys):
    path = fixture_db("support")
    touch_newest_message(path, now_ms() - 2000)
    code, doc, err = run(capsys, reflect_argv(path, "--force", "--watch", "0"))
    assert code == 0, err
    assert doc["reflected"] is True and doc["activity"]["active"] is True


def test_the_studios_own_writes_in_a_row_are_not_taken_for_the_agent(fixture_db, capsys):
    """reflect, revert, reflect, revert within seconds (the studio's quiet period is 30 s): every write goes
    through; before, the third was refused as "the agent is active: its observational memory was written
    … s ago" (the first write's stamp on the row the second one replaced)."""
    path = fixture_db("support")
    revert = ["revert", str(path), "--thread", "support-1", "--yes", "--json", "--watch", "0"]
    for argv in (reflect_argv(path, "--watch", "0"), [*revert, "--to-generation", "1"],
                 reflect_argv(path, "--watch", "0"), [*revert, "--to-generation", "2"]):
        code, _doc, err = run(capsys, argv)
        assert code == 0, (argv[0], err)
    assert [r.generation_count for r in history(path)][:5] == [GEN + 4, GEN + 3, GEN + 2, GEN + 1, GEN]


def test_a_reflect_right_after_the_studios_activate_is_not_refused(fixture_db, capsys, tmp_path, monkeypatch):
    """activate (an in-place write of Mastra's row, no studio mark) then reflect, seconds apart."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = fixture_db("buffered")
    code, doc, err = run(capsys, ["activate", str(path), "--thread", "long-run", "--yes", "--json", "--watch", "0"])
    assert code == 0 and doc["activated"] is True, err
    code, doc, err = run(capsys, ["reflect", str(path), "--thread", "long-run", "--strategy", "rule-based", "--yes",
                                  "--json", "--watch", "0"])
    assert code == 0, err
    assert doc["reflected"] is True and doc["activity"]["active"] is False


def _overtake_after_commit(path, superseded_id: str, line: str) -> threading.Thread:
    """A stand-in for a running turn: once the studio's generation lands, append LINE to the row it superseded."""
    def turn():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and history(path)[0].id == superseded_id:
            time.sleep(0.02)
        conn = libsql.connect(str(path), isolation_level=None)
        try:
            conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = "activeObservations" || ? '
                         'WHERE id = ?', (f"\n\n--- message boundary (x) ---\n\n{line}", superseded_id))
        finally:
            conn.close()
    worker = threading.Thread(target=turn, daemon=True)
    worker.start()
    return worker


@pytest.mark.parametrize("choice, code", [("repair", 0), ("report", EXIT_REFUSED)])
def test_an_overtaking_write_during_the_watch_is_reported_and_repaired(fixture_db, capsys, choice, code):
    path = fixture_db("support")
    superseded = history(path)[0]
    line = "* 🟡 (10:00) Observed by the running turn after the studio's commit."
    worker = _overtake_after_commit(path, superseded.id, line)
    got, doc, err = run(capsys, reflect_argv(path, "--watch", "5", "--on-overtaken", choice))
    worker.join()
    assert got == code, err
    [found] = doc["overtaken"]
    assert (found["kind"], found["record_id"], found["added_lines"]) == (
        "superseded-row-written", superseded.id, [line])
    assert f"wrote 1 observation line(s) onto generation {GEN}" in err
    rows = history(path)
    if choice == "repair":
        assert doc["repairs"] == [rows[0].id] and rows[0].generation_count == GEN + 2
        assert rows[0].active_observations.endswith(line)
    else:
        assert doc["repairs"] == [] and rows[0].generation_count == GEN + 1

"""The OM write protocol on copies of the real fixtures: quiet period, the studio's mark, overtaking writes, repair.

An "overtaking write" is reproduced here with the SQL a running Mastra turn issues (an UPDATE of
the record id it read, appending `--- message boundary ---` + lines and moving lastObservedAt;
an INSERT of generationCount + 1 built from that record); tests/interop/test_overtaking.py makes
real Mastra do it.
"""

from __future__ import annotations

import json

import libsql
import pytest

from studio.engine.tokens import count_observations
from studio.errors import WriteRefused
from studio.store import open_store
from studio.store.records import iso_to_ms, ms_to_iso
from studio.store.write.backends import sqlite as sqlite_writes
from studio.store.write.protocol import (
    AgentActivity,
    find_overtaking_writes,
    studio_mark,
    turn_duration_ms,
    unrepaired,
    wait_for_quiet,
    watch_window_ms,
)
from studio.store.write.repair import repair_overtaken_writes
from studio.store.writes import commit_reflection, revert_to_generation
from tests.interop.conftest import dump_tables
from tests.observe_cases import current_generation

KEY = "thread:support-1"
#: support-1's current generation as Mastra lists it (the oracle); the studio's next write is GEN + 1.
GEN = current_generation("support", KEY)
NOW = 1_900_000_000_000
OBS = "* 🔴 (09:00) Studio: the user's key fact."
STRANDED = "* 🟡 (10:00) Mastra observed this after the studio's commit."
FORKED = "* 🔴 (11:00) Reflection 9: Mastra's own next generation."


def history(path):
    with open_store(path) as store:
        return store.om_history(KEY)


def studio_commit(path, now_ms=NOW, **kw):
    current = history(path)[0]
    text = kw.pop("observations", OBS)
    return commit_reflection(path, lookup_key=KEY, expected_record_id=current.id, observations=text,
                             studio_metadata={"kind": "reflection", "strategy": "test"}, now_ms=now_ms, **kw,
                             observation_tokens=count_observations(text))


def mastra_appends(path, record_id, text, cursor):
    """What a running turn does to the record it read: append observations, move the cursor (by id)."""
    conn = libsql.connect(str(path), isolation_level=None)
    try:
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = "activeObservations" || ?, '
                     '"lastObservedAt" = ?, "updatedAt" = ? WHERE id = ?',
                     (f"\n\n--- message boundary ({cursor}) ---\n\nDate: Dec 1, 2026\n{text}", cursor, cursor,
                      record_id))
    finally:
        conn.close()


def mastra_reflects(path, record_id, new_id, line):
    """What a running turn's reflection does: INSERT generationCount + 1 of its copy, metadata copied."""
    conn = libsql.connect(str(path), isolation_level=None)
    try:
        conn.execute("CREATE TEMP TABLE copy AS SELECT * FROM mastra_observational_memory WHERE id = ?", (record_id,))
        conn.execute('UPDATE copy SET id = ?, "generationCount" = "generationCount" + 1, '
                     '"activeObservations" = ? || char(10) || "activeObservations", "createdAt" = ?, "updatedAt" = ?',
                     (new_id, line, ms_to_iso(NOW + 5000), ms_to_iso(NOW + 5000)))
        conn.execute("INSERT INTO mastra_observational_memory SELECT * FROM copy")
    finally:
        conn.close()


# -- the studio's mark ------------------------------------------------------------------------------

def test_the_mark_names_its_own_row_so_a_copy_is_not_mistaken_for_a_studio_write(fixture_db):
    path = fixture_db("support")
    ours = revert_to_generation(path, lookup_key=KEY, generation_count=0, expected_record_id=history(path)[0].id,
                                now_ms=NOW, count_observations=count_observations)
    mastra_reflects(path, ours["id"], "mastra-next", "* 🔴 (12:00) Reflection: condensed.")
    rows = {r.id: r for r in history(path)}
    # Mastra's createReflectionGeneration copies metadata: the copy still says kind "revert" ...
    assert rows["mastra-next"].columns["metadata"]["studio"]["kind"] == "revert"
    # ... but names the studio's row, not its own: only the studio's row reads as a studio write
    assert studio_mark(rows["mastra-next"]) is None
    assert studio_mark(rows[ours["id"]])["kind"] == "revert"


def test_marks_written_before_the_protocol_are_not_trusted():
    row = {"id": "r1", "metadata": json.dumps({"studio": {"kind": "revert", "revertedFrom": 0}})}
    assert studio_mark(row) is None


# -- the quiet period -----------------------------------------------------------------------------

def test_a_message_saved_moments_ago_refuses_the_write_and_says_the_agent_is_active(fixture_db):
    path = fixture_db("support")
    conn = libsql.connect(str(path), isolation_level=None)
    conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = (SELECT id FROM mastra_messages '
                 'WHERE thread_id = ? ORDER BY "createdAt" DESC LIMIT 1)', (ms_to_iso(NOW - 4000), "support-1"))
    conn.close()
    with pytest.raises(WriteRefused) as info:
        studio_commit(path, idle_ms=30_000)
    assert info.value.reason == "busy"
    assert ("The agent is active: a message was written 4.0 s ago by another program, not the studio "
            "(quiet period 30 s)") in str(info.value)
    assert studio_commit(path, now_ms=NOW + 27_000, idle_ms=30_000)["generationCount"] == GEN + 1


def test_the_studios_own_last_write_does_not_count_as_activity(fixture_db):
    path = fixture_db("support")
    studio_commit(path, current_task="- Primary: go on")  # also writes the thread's updatedAt
    row = studio_commit(path, now_ms=NOW + 1000, idle_ms=30_000, observations=OBS + "\n" + STRANDED)
    assert row["generationCount"] == GEN + 2


def test_a_chain_of_studio_writes_within_the_quiet_period_does_not_count_as_activity(fixture_db):
    """reflect, revert, reflect, 1 s apart: each write stamps the row it replaces with its own commit time,
    so by the third write the record holds the times of two earlier studio commits, not only the last one."""
    path = fixture_db("support")
    studio_commit(path, current_task="- Primary: go on")          # GEN + 1 (GEN, the thread: NOW)
    revert_to_generation(path, lookup_key=KEY, generation_count=1, expected_record_id=history(path)[0].id,
                         now_ms=NOW + 1000, idle_ms=30_000, count_observations=count_observations)  # GEN + 2
    row = studio_commit(path, now_ms=NOW + 2000, idle_ms=30_000)
    assert row["generationCount"] == GEN + 3
    revert = revert_to_generation(path, lookup_key=KEY, generation_count=GEN + 1, expected_record_id=row["id"],
                                  now_ms=NOW + 3000, idle_ms=30_000, count_observations=count_observations)
    assert revert["generationCount"] == GEN + 4


def test_an_agent_write_after_a_chain_of_studio_writes_still_counts_and_is_named(fixture_db):
    path = fixture_db("support")
    first = studio_commit(path)
    second = revert_to_generation(path, lookup_key=KEY, generation_count=1, expected_record_id=history(path)[0].id,
                                  now_ms=NOW + 1000, count_observations=count_observations)
    # a running turn that read the studio's first generation before the revert writes onto it 2 s later
    assert first["generationCount"] == GEN + 1
    mastra_appends(path, first["id"], STRANDED, ms_to_iso(NOW + 3000))
    with pytest.raises(WriteRefused) as info:
        revert_to_generation(path, lookup_key=KEY, generation_count=0, expected_record_id=second["id"],
                             now_ms=NOW + 4000, idle_ms=30_000, count_observations=count_observations)
    assert info.value.reason == "busy"
    assert (f"The agent is active: generation {GEN + 1} of its observational memory was written 1.0 s ago by "
            "another program, not the studio") in str(info.value)


def test_wait_for_quiet_waits_out_the_quiet_period_and_gives_up_at_the_deadline():
    clock = {"now": 0}

    def probe():
        return AgentActivity(now_ms=clock["now"], last_write_ms=0, live_flags=(), quiet_ms=3000)

    def sleep(s):
        clock["now"] += int(s * 1000)

    assert wait_for_quiet(probe, 10, sleep=sleep).active is False and clock["now"] == 3000
    clock["now"] = 0
    assert wait_for_quiet(lambda: AgentActivity(0, 0, ("isObserving",), 3000), 0).active is True


def test_turn_timings_set_the_watch_window():
    # turns of 2 s and 7 s (user -> last reply before the next user message); 2 x 7 s + 5 s = 19 s
    msgs = [("user", ms_to_iso(0)), ("assistant", ms_to_iso(1000)), ("assistant", ms_to_iso(2000)),
            ("user", ms_to_iso(60_000)), ("assistant", ms_to_iso(67_000))]
    assert turn_duration_ms(msgs) == 7000
    assert watch_window_ms(7000) == 19_000
    assert watch_window_ms(None) == 10_000 and watch_window_ms(10_000_000) == 600_000


# -- overtaking writes and their repair ----------------------------------------------------------------

def test_observations_appended_to_the_superseded_row_are_found_and_carried_forward(fixture_db):
    path = fixture_db("support")
    read_at_turn_start = history(path)[0]
    ours = studio_commit(path)
    assert find_overtaking_writes(history(path)) == []
    cursor = ms_to_iso(NOW + 3000)
    mastra_appends(path, read_at_turn_start.id, STRANDED, cursor)
    found = find_overtaking_writes(history(path))
    assert [(f.kind, f.record_id, f.overtaken_record_id, f.added_lines, f.cursor) for f in found] == [
        ("superseded-row-written", read_at_turn_start.id, ours["id"], ["Date: Dec 1, 2026", STRANDED], cursor)]
    before = dump_tables(path)
    repair = repair_overtaken_writes(path, lookup_key=KEY, now_ms=NOW + 10_000, count_observations=count_observations)
    after = dump_tables(path)
    # a NEW generation: no row that existed was changed
    assert {k: v for k, v in after["mastra_observational_memory"].items() if k != repair["id"]} == \
        before["mastra_observational_memory"]
    assert repair["generationCount"] == GEN + 2 and repair["lastObservedAt"] == cursor
    assert repair["activeObservations"] == (
        f"{OBS}\n\n--- message boundary ({cursor}) ---\n\nDate: Dec 1, 2026\n{STRANDED}")
    assert unrepaired(find_overtaking_writes(history(path))) == []
    assert repair_overtaken_writes(path, lookup_key=KEY, now_ms=NOW + 11_000,
                                   count_observations=count_observations) is None  # nothing left
    # Mastra writes onto the old row once more: only the new line is unrepaired now
    mastra_appends(path, read_at_turn_start.id, "* 🟢 (10:30) Yet another late line.", ms_to_iso(NOW + 12_000))
    [late] = unrepaired(find_overtaking_writes(history(path)))
    assert late.added_lines == ["Date: Dec 1, 2026", "* 🟢 (10:30) Yet another late line."]


def test_a_fork_is_repaired_past_both_rows_keeping_the_studios_log_and_mastras_new_lines(fixture_db):
    path = fixture_db("support")
    read_at_turn_start = history(path)[0]
    ours = studio_commit(path)
    mastra_reflects(path, read_at_turn_start.id, "mastra-fork", FORKED)
    [fork] = find_overtaking_writes(history(path))
    assert (fork.kind, fork.generation, fork.overtaken_record_id, fork.added_lines) == (
        "fork", GEN + 1, ours["id"], [FORKED])
    repair = repair_overtaken_writes(path, lookup_key=KEY, now_ms=NOW + 10_000, count_observations=count_observations)
    assert repair["generationCount"] == GEN + 2  # past both rows holding GEN + 1: Mastra reads this one next
    assert repair["activeObservations"].startswith(OBS) and repair["activeObservations"].endswith(FORKED)
    assert studio_mark(repair)["kind"] == "repair" and studio_mark(repair)["repairs"][-1]["recordId"] == "mastra-fork"
    assert unrepaired(find_overtaking_writes(history(path))) == []


def test_the_user_may_prefer_the_agents_version(fixture_db):
    path = fixture_db("support")
    read_at_turn_start = history(path)[0]
    studio_commit(path)
    mastra_reflects(path, read_at_turn_start.id, "mastra-fork", FORKED)
    repair = repair_overtaken_writes(path, lookup_key=KEY, prefer="revert", now_ms=NOW + 10_000,
                                     count_observations=count_observations)
    fork_text = next(r for r in history(path) if r.id == "mastra-fork").active_observations
    assert repair["activeObservations"] == fork_text and OBS not in repair["activeObservations"]
    assert unrepaired(find_overtaking_writes(history(path))) == []


def test_a_repair_is_refused_while_the_agent_is_observing(fixture_db):
    path = fixture_db("support")
    read_at_turn_start = history(path)[0]
    ours = studio_commit(path)
    mastra_appends(path, read_at_turn_start.id, STRANDED, ms_to_iso(NOW + 3000))
    conn = libsql.connect(str(path), isolation_level=None)
    conn.execute('UPDATE mastra_observational_memory SET "isObserving" = 1, "updatedAt" = ? WHERE id = ?',
                 (ms_to_iso(NOW + 9000), ours["id"]))
    conn.close()
    with pytest.raises(WriteRefused) as info:
        repair_overtaken_writes(path, lookup_key=KEY, now_ms=NOW + 10_000, count_observations=count_observations)
    assert info.value.reason == "busy"


def test_duplicate_generations_without_a_studio_row_are_reported_for_doctor(fixture_db):
    path = fixture_db("support")
    mastra_reflects(path, history(path)[1].id, "dup", "* x")  # a second generation GEN (mastra #22188's shape)
    found = find_overtaking_writes(history(path))
    assert [(f.kind, f.generation, f.record_id) for f in found] == [("duplicate-generation", GEN, "dup")]
    assert unrepaired(found) == []  # nothing of the studio's to repair


# -- one bound on lock waits ----------------------------------------------------------------------

def test_a_locked_file_is_refused_after_the_one_bound_and_the_message_states_it(fixture_db, monkeypatch):
    path = fixture_db("support")
    monkeypatch.setattr(sqlite_writes, "BUSY_TIMEOUT_MS", 100)
    holder = libsql.connect(str(path), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(WriteRefused) as info:
            studio_commit(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert info.value.reason == "busy"
    assert "the studio waited 0.3 s (the longest any write waits) and wrote nothing" in str(info.value)
    assert iso_to_ms(history(path)[0].created_at) != NOW  # nothing was written


def test_a_long_quiet_time_reads_as_days_and_hours():
    # 298,489 s = 3 days (259,200 s) + 10 h (36,000 s) + 54 min 49 s: the two largest units are shown
    # (the doctor's durations and the write protocol's are one helper: studio.common.durations)
    from studio.common.durations import human_duration

    assert human_duration(298_489_000) == "3 days 10 h"
    assert human_duration(42_900) == "42 s"
    assert human_duration(303_000) == "5 min 3 s"
    assert human_duration(3_600_000 * 3 + 60_000 * 12) == "3 h 12 min"
    assert human_duration(86_400_000) == "1 day"


# -- the studio's unmarked writes (observe, activate, deleting messages) -----------------------------

def _reflect_buffered(path, now_ms):
    with open_store(path) as store:
        current = store.om_current("thread:long-run")
    return commit_reflection(path, lookup_key="thread:long-run", expected_record_id=current.id, observations=OBS,
                             observation_tokens=count_observations(OBS), idle_ms=30_000, now_ms=now_ms,
                             studio_metadata={"kind": "reflection"})


def test_a_reflection_right_after_the_studios_activation_is_not_refused(fixture_db, tmp_path, monkeypatch):
    """activate updates Mastra's row in place, unmarked: its time is kept in the studio's own-writes journal."""
    from studio.engine.tokens import stamp_estimates
    from studio.store.write.activation import activate_buffered

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = fixture_db("buffered")
    activate_buffered(path, thread_id="long-run", lookup_key="thread:long-run", stamp_estimates=stamp_estimates,
                      now_ms=NOW)
    assert _reflect_buffered(path, NOW + 1000)["generationCount"] >= 1


def test_without_the_journal_the_activation_reads_as_another_programs_write(fixture_db, tmp_path, monkeypatch):
    from studio.engine.tokens import stamp_estimates
    from studio.store.write.activation import activate_buffered

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = fixture_db("buffered")
    activate_buffered(path, thread_id="long-run", lookup_key="thread:long-run", stamp_estimates=stamp_estimates,
                      now_ms=NOW)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "another-machine"))  # what another program would leave
    with pytest.raises(WriteRefused) as info:
        _reflect_buffered(path, NOW + 1000)
    assert info.value.reason == "busy" and "by another program, not the studio" in str(info.value)


def test_an_agent_message_after_the_studios_delete_still_counts(fixture_db, tmp_path, monkeypatch):
    """Deleting messages stamps the thread; the next studio write goes through. A message the agent saves
    after it is the agent's and refuses the write, named as such."""
    from studio.store.writes import delete_messages

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = fixture_db("support")
    with open_store(path) as store:
        oldest = store.select_rows("mastra_messages", 'WHERE thread_id = ? ORDER BY "createdAt" LIMIT 1',
                                   ("support-1",), ["id"])[0]["id"]
    assert delete_messages(path, [oldest], now_ms=NOW) == 1
    assert studio_commit(path, now_ms=NOW + 1000, idle_ms=30_000)["generationCount"] == GEN + 1
    conn = libsql.connect(str(path), isolation_level=None)
    conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = (SELECT id FROM mastra_messages '
                 'WHERE thread_id = ? ORDER BY "createdAt" DESC LIMIT 1)', (ms_to_iso(NOW + 1500), "support-1"))
    conn.close()
    with pytest.raises(WriteRefused) as info:
        studio_commit(path, now_ms=NOW + 2000, idle_ms=30_000, observations=OBS + "\n" + STRANDED)
    assert "The agent is active: a message was written 0.5 s ago by another program" in str(info.value)


def test_the_own_writes_journal_is_bounded_and_a_damaged_one_is_ignored(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from studio.store.write import own_writes

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    db = SimpleNamespace(path=tmp_path / "memory.db")
    server = SimpleNamespace(path=None, display="postgresql://app:***@127.0.0.1:5432/db", schema="mastra")
    Path = type(tmp_path)
    Path(own_writes.journal_path()).parent.mkdir(parents=True)
    Path(own_writes.journal_path()).write_text("{not json", encoding="utf-8")
    assert own_writes.own_write_times(db) == set()                   # damaged: nothing known, nothing raised
    for i in range(own_writes.KEEP_PER_DATABASE + 5):
        own_writes.remember_write(db, NOW + i, now_ms=NOW)
    own_writes.remember_write(server, NOW, now_ms=NOW)
    times = own_writes.own_write_times(db)
    assert len(times) == own_writes.KEEP_PER_DATABASE and max(times) == NOW + own_writes.KEEP_PER_DATABASE + 4
    assert own_writes.own_write_times(server) == {NOW}
    assert "***" in Path(own_writes.journal_path()).read_text(encoding="utf-8")  # the URL as shown: no password

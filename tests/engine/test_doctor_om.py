"""Doctor checks on OM records: each fires on a fixture copy edited the way Mastra (or the bug) leaves it,
and nowhere else (every other finding of the file stays as it was)."""

from __future__ import annotations

import itertools
import json

from studio.engine.doctor.lost_priority import LOST_SIMILARITY, find_lost_high_priority, similarity
from studio.engine.doctor.om_checks import BARELY_SMALLER
from studio.engine.doctor.supersede import SUPERSEDE_TOLERANCE_MS
from studio.engine.observations import Priority, parse_log
from studio.engine.reflector_parse import detect_degenerate_repetition
from studio.engine.tokens import count_observations
from studio.store.records import iso_to_ms, ms_to_iso
from tests import mastra_facts as facts
from tests.conftest import FIXTURE_NAMES
from tests.doctor_cases import overtaking_write
from tests.engine.doctor_db import insert_om, new_findings, om_rows, reflect_row, run


def checks(found: list[dict]) -> list[str]:
    return sorted(f["check"] for f in found)


def every_line_once(rows: list[dict]) -> str:
    """Return every distinct line of ROWS' logs once, in order, message boundaries and blank lines left out.

    A log of all of a key's generations stays above its reflection threshold; each line once, since a block
    of lines repeated generation after generation is what degenerate-repetition rejects (another check).
    """
    lines = (ln for r in rows for ln in r["activeObservations"].splitlines()
             if ln.strip() and "message boundary" not in ln)
    return "\n".join(dict.fromkeys(lines))


def test_reflection_not_compressing_fires_on_three_reflections_that_stay_over_the_threshold(fixture_db):
    path = fixture_db("support")
    logs = {}

    def edit(conn):
        rows = om_rows(conn, "thread:support-1")
        # The #14110 loop: each reflection's output is still above reflection.observationTokens.
        big = every_line_once(rows)
        logs["tokens"] = count_observations(big)
        logs["threshold"] = json.loads(rows[-1]["config"])["reflection"]["observationTokens"]
        prev = rows[-1]
        logs["new"] = [prev["generationCount"] + i for i in (1, 2, 3)]
        for _ in range(3):
            prev = reflect_row(prev, big)
            insert_om(conn, prev)

    found = new_findings(path, edit)
    assert logs["tokens"] >= logs["threshold"], f"support-1's lines make {logs['tokens']} tokens: not over {logs}"
    assert checks(found) == ["reflection-not-compressing"]
    f = found[0]
    assert (f["thread_id"], f["generation"], f["severity"]) == ("support-1", logs["new"][-1], "warning")
    run_gens = [r["generation"] for r in f["evidence"]["run"]]
    assert run_gens[-3:] == logs["new"]
    assert all(r["above_threshold"] and r["reflected_tokens"] == logs["tokens"] for r in f["evidence"]["run"][-3:])


def test_reflection_not_compressing_is_silent_for_two_unproductive_reflections(fixture_db):
    path = fixture_db("support")
    kept = {}

    def edit(conn):
        rows = om_rows(conn, "thread:support-5")
        big = every_line_once(rows)
        kept["share"] = count_observations(big) / rows[-1]["observationTokenCount"]
        prev = rows[-1]
        for _ in range(2):      # each barely smaller than the one before: a run of 2, not 3
            prev = reflect_row(prev, big)
            insert_om(conn, prev)

    assert "reflection-not-compressing" not in checks(new_findings(path, edit))
    assert kept["share"] > BARELY_SMALLER, kept   # the first is unproductive too (the second keeps it all)


def test_empty_generation_fires_when_a_reflection_wiped_the_log(fixture_db):
    path = fixture_db("support")
    seen = {}

    def edit(conn):
        rows = om_rows(conn, "thread:support-5")
        seen["previous"] = rows[-1]["generationCount"]
        seen["high"] = [ln.raw.strip() for ln in parse_log(rows[-1]["activeObservations"]).lines
                        if ln.kind == "observation" and ln.priority is Priority.HIGH]
        insert_om(conn, reflect_row(rows[-1], ""))   # PR #22074: createReflectionGeneration({reflection: ''})

    found = new_findings(path, edit)
    assert seen["high"], "support-5's current log has no 🔴 line to lose"
    empty = [f for f in found if f["check"] == "empty-generation"]
    assert [(f["thread_id"], f["generation"], f["severity"]) for f in empty] == \
        [("support-5", seen["previous"] + 1, "error")]
    assert empty[0]["evidence"]["previous_generation"] == seen["previous"]
    # Every 🔴 line of the previous generation is now lost: nothing after it keeps anything.
    lost = sorted(ln["line"] for f in found if f["check"] == "lost-high-priority" for ln in f["evidence"]["lines"])
    assert lost == sorted(seen["high"]) and seen["high"]
    assert checks(found) == ["empty-generation", "lost-high-priority"]   # one finding for the thread's lost lines


def test_degenerate_repetition_uses_mastras_detector(fixture_db):
    path = fixture_db("support")
    block = "\n".join(f"* 🟡 (10:0{i}) Tool call retried with the same arguments, step {i}" for i in range(8))
    texts = {}

    def edit(conn):
        row = om_rows(conn, "thread:support-2")[-1]
        # PR #22072: an Observer output where one multi-line block repeats dozens of times, appended in place.
        text = row["activeObservations"] + "\n\n--- message boundary (2026-11-29T20:50:00.000Z) ---\n\n" + \
            "\n".join([block] * 30)
        texts["old"], texts["new"] = row["activeObservations"], text
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ? WHERE id = ?', (text, row["id"]))

    found = new_findings(path, edit)
    assert detect_degenerate_repetition(texts["new"]) and not detect_degenerate_repetition(texts["old"])
    assert [(f["check"], f["thread_id"], f["generation"]) for f in found] == [("degenerate-repetition", "support-2", 0)]


def test_stale_flag_fires_only_when_the_row_has_been_idle_for_ten_minutes(fixture_db):
    path = fixture_db("support")
    rows = {}

    def edit(conn):
        row = om_rows(conn, "thread:support-1")[-1]
        rows["updated"] = iso_to_ms(row["updatedAt"])
        conn.execute('UPDATE mastra_observational_memory SET "isReflecting" = 1 WHERE id = ?', (row["id"],))

    # Nine minutes after the row's last update the flag may belong to a live process: silent.
    quiet = new_findings(path, edit, now_ms=None)
    found = [f for f in quiet if f["check"] == "stale-flag"]
    assert [(f["thread_id"], f["evidence"]["flag"]) for f in found] == [("support-1", "isReflecting")]
    live = [f for f in run(path, now_ms=rows["updated"] + 9 * 60_000) if f["check"] == "stale-flag"]
    stale = [f for f in run(path, now_ms=rows["updated"] + 11 * 60_000) if f["check"] == "stale-flag"]
    assert live == [] and len(stale) == 1 and stale[0]["evidence"]["age_ms"] == 11 * 60_000


def test_duplicate_generation_fires_on_two_generation_zero_rows(fixture_db):
    path = fixture_db("support")

    def edit(conn):
        row = om_rows(conn, "thread:support-4")[0]
        # mastra #22188: two concurrent first accesses both initialise generation 0.
        insert_om(conn, {**row, "id": row["id"][:-4] + "dup0"})

    found = new_findings(path, edit)
    assert [(f["check"], f["thread_id"], f["generation"], f["severity"]) for f in found] == \
        [("duplicate-generation", "support-4", 0, "error")]
    assert len(found[0]["evidence"]["record_ids"]) == 2


def test_superseded_write_fires_when_an_agent_appended_to_the_old_generation(fixture_db):
    path = fixture_db("support")

    def edit(conn):
        # A running turn read generation 1 at its start and observed onto it after generation 2 existed.
        overtaking_write(conn, path)

    found = new_findings(path, edit)
    assert [(f["check"], f["thread_id"], f["generation"]) for f in found] == [("superseded-write", "support-1", 1)]
    ev = found[0]["evidence"]
    assert ev["reasons"] == ["updated-after", "cursor-ahead"] and ev["late_by_ms"] == 5000
    assert ev["successor_generation"] == 2


def test_superseded_write_carried_forward_by_a_studio_repair_is_info_until_written_again(fixture_db):
    """The write race the studio repairs: a running turn appends onto the generation the studio's commit
    replaced. Before the repair the doctor reports an error; after it the late lines are in the repair
    generation, so the same superseded row is info; a further late write makes it an error again."""
    from studio.store.write.repair import repair_overtaken_writes
    from tests.store.test_write_protocol import KEY, NOW, history, mastra_appends, studio_commit

    path = fixture_db("support")
    read_at_turn_start = history(path)[0]
    studio_commit(path)
    mastra_appends(path, read_at_turn_start.id, "* 🟡 (10:00) Late line.", ms_to_iso(NOW + 3000))

    def superseded():
        return [(f["generation"], f["severity"], f["evidence"]["repaired"]) for f in run(path)
                if f["check"] == "superseded-write" and f["thread_id"] == "support-1"]

    generation = read_at_turn_start.generation_count
    assert superseded() == [(generation, "error", False)]
    repair = repair_overtaken_writes(path, lookup_key=KEY, now_ms=NOW + 10_000, count_observations=count_observations)
    assert "Late line." in repair["activeObservations"]
    assert superseded() == [(generation, "info", True)]
    mastra_appends(path, read_at_turn_start.id, "* 🟢 (10:30) Yet another late line.", ms_to_iso(NOW + 12_000))
    assert superseded() == [(generation, "error", False)]


def test_superseded_write_ignores_mastras_own_touch_of_the_old_row(fixture_db):
    """Mastra clears the reflecting flag on the old row a few ms after inserting the reflection.

    The cases are found in the raw rows: every old generation of every fixture that Mastra updated
    after its successor's createdAt (none is a superseded write: gen.mjs runs one agent at a time).
    """
    touched = []
    for name in FIXTURE_NAMES:
        path = fixture_db(name)
        for key in facts.lookup_keys(path):
            rows = facts.om_rows(path, key)
            gaps = [iso_to_ms(a["updatedAt"]) - iso_to_ms(b["createdAt"]) for a, b in itertools.pairwise(rows)]
            touched += [(name, key, gap) for gap in gaps if gap > 0]
        assert [f for f in run(path) if f["check"] == "superseded-write"] == [], name
    assert touched, "no fixture has an old generation updated after its successor was created"
    assert all(gap < SUPERSEDE_TOLERANCE_MS for _name, _key, gap in touched), touched


def test_orphan_record_fires_when_the_thread_was_deleted_but_its_om_rows_stayed(fixture_db):
    path = fixture_db("support")

    def edit(conn):   # Memory.deleteThread before PR #16628: thread and messages go, OM rows stay
        conn.execute("DELETE FROM mastra_messages WHERE thread_id = 'support-3'")
        conn.execute("DELETE FROM mastra_threads WHERE id = 'support-3'")

    found = new_findings(path, edit)
    assert [(f["check"], f["thread_id"], f["lookup_key"]) for f in found] == \
        [("orphan-record", "support-3", "thread:support-3")]


def test_orphan_record_in_resource_scope(fixture_db):
    path = fixture_db("resource")

    def edit(conn):
        conn.execute("DELETE FROM mastra_messages WHERE \"resourceId\" = 'user-erin'")
        conn.execute("DELETE FROM mastra_threads WHERE \"resourceId\" = 'user-erin'")
        conn.execute("DELETE FROM mastra_resources WHERE id = 'user-erin'")

    found = new_findings(path, edit)
    assert [(f["check"], f["resource_id"], f["lookup_key"]) for f in found] == \
        [("orphan-record", "user-erin", "resource:user-erin")]


def test_duplicate_buffered_chunk_fires_on_one_cycle_stored_twice(fixture_db):
    path = fixture_db("buffered")
    seen = {}

    def edit(conn):
        row = om_rows(conn, "thread:long-run")[-1]
        chunks = json.loads(row["bufferedObservationChunks"])
        assert chunks, "the buffered fixture has a pending chunk"
        seen["index"] = len(chunks)
        chunks.append({**chunks[0], "id": chunks[0]["id"] + "-again"})   # PR #23019: one cycle, two chunks
        conn.execute('UPDATE mastra_observational_memory SET "bufferedObservationChunks" = ? WHERE id = ?',
                     (json.dumps(chunks), row["id"]))

    found = new_findings(path, edit)
    assert [(f["check"], f["thread_id"]) for f in found] == [("duplicate-buffered-chunk", "long-run")]
    assert found[0]["evidence"]["chunk_index"] == seen["index"] and found[0]["message_ids"]


def test_foreign_observed_ids_from_a_clone_that_kept_the_source_ids(fixture_db):
    path = fixture_db("support")
    source = {}

    def edit(conn):
        source["ids"] = [r[0] for r in conn.execute(
            "SELECT id FROM mastra_messages WHERE thread_id = 'support-1' ORDER BY \"createdAt\" LIMIT 3").fetchall()]
        row = om_rows(conn, "thread:support-2")[-1]
        ids = json.loads(row["observedMessageIds"] or "[]") + source["ids"] + ["msg-deleted-long-ago"]
        conn.execute('UPDATE mastra_observational_memory SET "observedMessageIds" = ? WHERE id = ?',
                     (json.dumps(ids), row["id"]))

    found = sorted(new_findings(path, edit), key=lambda f: f["severity"])
    assert [(f["check"], f["thread_id"], f["severity"]) for f in found] == \
        [("foreign-observed-ids", "support-2", "info"), ("foreign-observed-ids", "support-2", "warning")]
    assert found[0]["message_ids"] == ["msg-deleted-long-ago"] and found[1]["message_ids"] == source["ids"]
    assert found[1]["evidence"]["owner_threads"] == ["support-1"]


def test_lost_high_priority_tells_rewording_from_loss(fixture_db):
    path = fixture_db("support")
    picked = {}

    def edit(conn):
        rows = om_rows(conn, "thread:support-5")
        picked["generation"] = rows[-1]["generationCount"]
        lines = rows[-1]["activeObservations"].splitlines()
        # Add two 🔴 facts to generation 1, then reflect: one is reworded, the other dropped.
        kept = "* 🔴 (09:30) User's daughter Emma starts kindergarten on September 3 at Lindenhof school."
        dropped = "* 🔴 (09:31) User is allergic to penicillin; never suggest it."
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ? WHERE id = ?',
                     ("\n".join([*lines, kept, dropped]), rows[-1]["id"]))
        reworded = "* 🔴 (09:30) Emma (the user's daughter) begins kindergarten Sept 3, Lindenhof school."
        rows[-1]["activeObservations"] = "\n".join([*lines, kept, dropped])
        insert_om(conn, reflect_row(rows[-1], "\n".join([*lines, reworded])))
        picked.update(kept=kept, dropped=dropped, reworded=reworded)

    found = new_findings(path, edit)
    assert [(f["check"], f["thread_id"], f["generation"]) for f in found] == \
        [("lost-high-priority", "support-5", picked["generation"])]
    [ev] = found[0]["evidence"]["lines"]
    assert ev["line"] == picked["dropped"] and ev["similarity"] < LOST_SIMILARITY
    assert ev["closest_line"] is None          # nothing later is even 0.5 alike: no line is quoted
    assert similarity(picked["kept"], picked["reworded"]) >= LOST_SIMILARITY


def test_lost_high_priority_on_the_fixtures_reports_only_dropped_lines_and_every_untraced_one(fixture_db):
    """gen.mjs's scripted Reflector keeps a 🔴 line word for word or drops it, never rewords it. So a line
    reported lost must be absent word for word from every later generation (tests/mastra_facts.py reads
    that from the raw rows), and a dropped `User asked about TOPIC: QUESTION` line whose topic and question
    no later 🔴 line asks again must be reported (see test_doctor_fixtures for the lines in between)."""
    from studio.store import open_store

    checked = 0
    for name in ("support", "buffered", "collab", "resource", "tools", "live/support"):
        path = fixture_db(name)
        with open_store(path) as store:
            histories = {k["lookupKey"]: store.om_history(k["lookupKey"]) for k in store.om_lookup_keys()}
        for key, history in histories.items():
            got = {(lost.generation, lost.line) for lost in find_lost_high_priority(history)}
            dropped = facts.dropped_high_priority(path, key)
            untraced = facts.dropped_without_trace(path, key)
            assert got <= dropped, (name, key, got - dropped)
            assert untraced <= got, (name, key, untraced - got)
            checked += len(dropped)
    assert checked, "no reflection of the fixtures dropped a 🔴 line: nothing was checked"


def test_observation_lines_classify_as_parse_log_does(fixture_db):
    from studio.engine.doctor.lost_priority import observation_lines
    from studio.store import open_store

    seen = 0
    for name in ("support", "buffered", "collab", "resource", "tools"):
        with open_store(fixture_db(name)) as store:
            for k in store.om_lookup_keys():
                for rec in store.om_history(k["lookupKey"]):
                    want = [(ln.number, ln.raw, ln.text, ln.priority is Priority.HIGH)
                            for ln in parse_log(rec.active_observations).lines if ln.kind == "observation"]
                    got = [(ln.number, ln.raw, ln.text, ln.high) for ln in observation_lines(rec.active_observations)]
                    assert got == want
                    seen += len(got)
    assert seen > 300


def test_lost_high_priority_is_not_fooled_by_a_line_of_the_same_template(fixture_db):
    """Mastra's Observer writes many 🔴 lines in one shape ("User asked about TOPIC: QUESTION"). A reflection that
    drops one keeps a line 0.6+ similar to it about another topic: kept only if the later line carries the
    dropped line's names, numbers and most of its rarest words. Two lines dropped: one finding for the thread,
    the closest line quoted (it is over 0.5 alike) with what it lacks."""
    path = fixture_db("support")
    picked = {}

    def edit(conn):
        rows = om_rows(conn, "thread:support-5")
        lines = rows[-1]["activeObservations"].splitlines()
        dropped = ["* 🔴 (09:30) User asked about beekeeping hives: What are the risks I am not seeing?",
                   "* 🔴 (09:31) User asked about Fortran compilers: Which option would you pick and why?"]
        kept = ["* 🔴 (09:32) User asked about home network VLANs: What are the risks I am not seeing?",
                "* 🔴 (09:33) User asked about Postgres indexing: Which option would you pick and why?"]
        rows[-1]["activeObservations"] = "\n".join([*lines, *dropped, *kept])
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ? WHERE id = ?',
                     (rows[-1]["activeObservations"], rows[-1]["id"]))
        insert_om(conn, reflect_row(rows[-1], "\n".join([*lines, *kept])))
        picked.update(dropped=dropped, kept=kept, generation=rows[-1]["generationCount"])

    found = new_findings(path, edit, stdlib=True)
    assert [(f["check"], f["thread_id"], f["generation"]) for f in found] == \
        [("lost-high-priority", "support-5", picked["generation"])]
    lines = found[0]["evidence"]["lines"]
    assert [ln["line"] for ln in lines] == picked["dropped"]
    assert [ln["closest_line"] for ln in lines] == picked["kept"]
    assert all(ln["similarity"] >= LOST_SIMILARITY for ln in lines)    # similar, yet another fact
    assert [ln["missing"] for ln in lines] == [["beekeeping", "hives"], ["fortran"]]
    assert found[0]["summary"].startswith("User asked about beekeeping hives: What are the risks I am not seeing? "
                                          "— and 1 more high-priority observation")

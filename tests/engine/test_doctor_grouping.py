"""Doctor findings worth a user's time: repeats grouped into one finding, durations in words (issue 26 item 4)."""

from __future__ import annotations

from studio.common.durations import human_duration
from studio.engine.doctor.model import repeats, spans
from studio.engine.reflector_parse import detect_degenerate_repetition
from studio.store.records import iso_to_ms, ms_to_iso
from tests.engine.doctor_db import insert_message, insert_om, new_findings, om_rows, reflect_row, run, text_content


def test_human_duration_reads_like_people_write_it():
    minute, hour, day = 60_000, 3_600_000, 86_400_000
    got = [human_duration(ms) for ms in (0, 850, 999, 1_000, 42_999, 5 * minute + 3_000, 4 * hour + 28 * minute,
                                         day + 4 * hour, 2 * day, 181 * day + 5 * hour, 1_000 * day)]
    assert got == ["0 ms", "850 ms", "999 ms", "1 s", "42 s", "5 min 3 s", "4 h 28 min", "1 day 4 h", "2 days",
                   "181 days", "1,000 days"]


def test_repeats_name_how_often_and_where():
    assert spans([10, 1, 2, 3, 7, 9, 3]) == "1–3, 7, 9–10"
    assert repeats(list(range(1, 15))) == "14× generations 1–14"
    assert repeats([4]) == "generation 4"


def test_a_reflection_loop_of_degenerate_logs_is_one_finding_with_its_generations(fixture_db):
    path = fixture_db("support")
    block = "\n".join(f"* 🟡 (10:0{i}) Tool call retried with the same arguments, step {i}" for i in range(8))
    made = {}

    def edit(conn):   # the Reflector copies a degenerate log forward 14 times (generations 1–14)
        row = om_rows(conn, "thread:support-2")[-1]
        text = row["activeObservations"] + "\n" + "\n".join([block] * 30)
        made["text"] = text
        for _ in range(14):
            row = reflect_row(row, text)
            insert_om(conn, row)

    found = new_findings(path, edit, stdlib=True)
    assert detect_degenerate_repetition(made["text"])
    degenerate = [f for f in found if f["check"] == "degenerate-repetition"]
    assert [(f["thread_id"], f["generation"]) for f in degenerate] == [("support-2", 14)]
    assert degenerate[0]["summary"].startswith("14× generations 1–14: ")
    assert degenerate[0]["evidence"]["generations"] == list(range(1, 15))
    # the loop is also a reflection that does not compress (another check); nothing else is new
    assert sorted({f["check"] for f in found}) == ["degenerate-repetition", "reflection-not-compressing"]


def test_durations_in_findings_are_in_words(fixture_db):
    path = fixture_db("support")
    made = {}

    def edit(conn):
        row = om_rows(conn, "thread:support-1")[-1]
        made["updated"] = iso_to_ms(row["updatedAt"])
        conn.execute('UPDATE mastra_observational_memory SET "isReflecting" = 1 WHERE id = ?', (row["id"],))
        # a message saved 181 days after the thread's updatedAt, which was not bumped (#17932)
        updated = conn.execute("SELECT \"updatedAt\" FROM mastra_threads WHERE id = 'support-2'").fetchall()[0][0]
        insert_message(conn, "support-2", "user-alice", "user", text_content("Still there?"),
                       ms_to_iso(iso_to_ms(updated) + 181 * 86_400_000))
        conn.execute("UPDATE mastra_threads SET \"updatedAt\" = ? WHERE id = 'support-2'", (updated,))

    new_findings(path, edit, stdlib=True)
    now = made["updated"] + (4 * 60 + 28) * 60_000
    found = {f["check"]: f["summary"] for f in run(path, now_ms=now)}
    assert "with no activity for 4 h 28 min" in found["stale-flag"]
    assert found["stale-thread-updatedat"] == "Thread updatedAt is 181 days older than its newest message"

"""Parsing observation logs and diffing generations, on real fixture logs and small hand-made ones."""

from __future__ import annotations

from studio.engine.diff import diff_logs, side_by_side
from studio.engine.observations import Priority, parse_log
from studio.store.memory_store import MemoryStore

LOG = """Date: Nov 4, 2026
* 🔴 (09:15) User's name is Ada; allergic to peanuts.
* 🟡 (09:20) Asked about <b>bold</b> travel plans.
  * -> 🟢 (09:21) Prefers trains.
* ✅ (10:00) Booked the hotel.

--- message boundary (2026-11-04T10:05:00.000Z) ---

Date: Nov 5, 2026
* 🔴 (08:00) Flight moved to Friday.
free text line
"""


def test_parse_dates_priorities_sublines_and_boundaries():
    log = parse_log(LOG)
    assert [g.date for g in log.groups] == ["Nov 4, 2026", "Nov 5, 2026"]
    obs = log.observations
    assert [o.priority for o in obs] == [Priority.HIGH, Priority.MEDIUM, Priority.LOW, Priority.COMPLETED, Priority.HIGH]
    assert [o.time for o in obs] == ["09:15", "09:20", "09:21", "10:00", "08:00"]
    assert [o.depth for o in obs] == [0, 0, 1, 0, 0]
    assert obs[1].text == "Asked about <b>bold</b> travel plans."  # kept verbatim, never interpreted
    assert [b.boundary_at for b in log.boundaries] == ["2026-11-04T10:05:00.000Z"]
    assert log.lines[-1].kind == "text" and log.lines[-1].text == "free text line"
    assert log.count_by_priority() == {"high": 2, "medium": 1, "low": 1, "completed": 1}
    # Every character of the log is kept: the raw lines rebuild it.
    assert "\n".join(l.raw for l in log.lines) + "\n" == LOG


def test_parse_never_fails_on_odd_input():
    for text in (None, "", "\n\n", "Date:", "* ", "🔴", "--- message boundary () ---", "\x00\ufffd"):
        parse_log(text)


def test_parse_real_fixture_logs(fixture_db):
    with MemoryStore.open(fixture_db("buffered")) as store:
        for rec in store.om_history("thread:long-run"):
            log = parse_log(rec.active_observations)
            nonblank = [l for l in log.lines if l.kind != "blank"]
            assert nonblank, rec.generation_count
            assert all(l.kind in ("date", "observation", "boundary") for l in nonblank)
            # Each line's priority marker is what the raw line carries.
            for line in log.observations:
                assert line.priority is None or line.priority.value in line.raw


def test_diff_counts_and_high_priority_losses():
    old = "Date: Nov 4, 2026\n* 🔴 (09:15) Allergic to peanuts.\n* 🟢 (09:16) Likes tea.\n* 🔴 (09:17) Lives in Oslo.\n"
    new = "Date: Nov 4, 2026\n* 🔴 (09:17) Lives in Oslo.\n* 🟡 (09:30) Summary line.\n"
    d = diff_logs(old, new, old_tokens=30, new_tokens=15)
    assert (d.kept, d.added, d.removed) == (2, 1, 2)
    assert [r.text for r in d.high_priority_losses] == ["* 🔴 (09:15) Allergic to peanuts."]
    assert d.token_delta == -15 and d.compression_ratio == 2.0
    kept_old = [r.old_number for r in d.rows if r.op == "kept"]
    assert kept_old == [1, 4]
    pairs = side_by_side(d)
    assert all(l is not None or r is not None for l, r in pairs)
    assert sum(1 for l, _ in pairs if l is not None and l.op == "removed") == 2


def test_diff_identical_logs_is_all_kept():
    d = diff_logs(LOG, LOG, 10, 10)
    assert d.added == d.removed == 0 and d.kept == len([l for l in LOG.splitlines() if l.strip()])


def test_reworded_high_priority_line_is_a_loss_but_moved_one_is_not():
    old = "* 🔴 (09:00) A\n* 🔴 (09:01) B\n"
    new = "* 🔴 (09:01) B\n* 🔴 (09:00) A\n"
    d = diff_logs(old, new)
    assert d.high_priority_losses == []  # A moved, not lost


def test_diff_real_consecutive_generations(fixture_db):
    with MemoryStore.open(fixture_db("buffered")) as store:
        hist = store.om_history("thread:long-run")
    for newer, older in zip(hist, hist[1:]):
        d = diff_logs(older.active_observations, newer.active_observations,
                      older.observation_token_count, newer.observation_token_count)
        old_n = len([l for l in older.active_observations.splitlines() if l.strip()])
        new_n = len([l for l in newer.active_observations.splitlines() if l.strip()])
        assert d.kept + d.removed == old_n
        assert d.kept + d.added == new_n


def test_date_header_with_a_long_run_of_spaces():
    """A hostile line (a date, 50,000 spaces, a letter) parses to the right date (the old pattern
    backtracked quadratically on it)."""
    line = "Date: a" + " " * 50_000 + "b"
    log = parse_log(line + "\n* 🔴 (09:00) x\n")
    assert log.groups[0].date == "a" + " " * 50_000 + "b"
    assert parse_log("Date:   \n").lines[0].kind == "text"  # an empty date is not a header

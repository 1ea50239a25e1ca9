"""Parsing observation logs and diffing generations, on real fixture logs and small hand-made ones."""

from __future__ import annotations

import itertools

from studio.engine.diff import diff_logs, side_by_side
from studio.engine.observations import Priority, parse_log
from studio.store import open_store

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
    assert [o.priority for o in obs] == [Priority.HIGH, Priority.MEDIUM, Priority.LOW, Priority.COMPLETED,
                                         Priority.HIGH]
    assert [o.time for o in obs] == ["09:15", "09:20", "09:21", "10:00", "08:00"]
    assert [o.depth for o in obs] == [0, 0, 1, 0, 0]
    assert obs[1].text == "Asked about <b>bold</b> travel plans."  # kept verbatim, never interpreted
    assert [b.boundary_at for b in log.boundaries] == ["2026-11-04T10:05:00.000Z"]
    assert log.lines[-1].kind == "text" and log.lines[-1].text == "free text line"
    assert log.count_by_priority() == {"high": 2, "medium": 1, "low": 1, "completed": 1}
    # Every character of the log is kept: the raw lines rebuild it.
    assert "\n".join(line.raw for line in log.lines) + "\n" == LOG


def test_parse_keeps_odd_input_as_text_and_finds_no_observation():
    """None or empty: no lines. Otherwise every line is kept as it is (the raw lines rebuild the text), and
    none of these is an observation: an observation is `* ` + a priority emoji or time + text, a date
    header needs a date after `Date:`."""
    assert parse_log(None).lines == [] and parse_log("").lines == []
    for text in ("\n\n", "Date:", "* ", "🔴", "--- message boundary () ---", "\x00\ufffd"):
        log = parse_log(text)
        assert "\n".join(line.raw for line in log.lines) == text.removesuffix("\n"), repr(text)
        assert log.observations == [] and all(g.date is None for g in log.groups), repr(text)
        assert log.count_by_priority() == {}, repr(text)


def test_parse_real_fixture_logs(fixture_db):
    with open_store(fixture_db("buffered")) as store:
        for rec in store.om_history("thread:long-run"):
            log = parse_log(rec.active_observations)
            nonblank = [line for line in log.lines if line.kind != "blank"]
            assert nonblank, rec.generation_count
            assert all(line.kind in ("date", "observation", "boundary") for line in nonblank)
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
    assert all(left is not None or right is not None for left, right in pairs)
    assert sum(1 for left, _ in pairs if left is not None and left.op == "removed") == 2


def test_diff_identical_logs_is_all_kept():
    d = diff_logs(LOG, LOG, 10, 10)
    assert d.added == d.removed == 0 and d.kept == len([line for line in LOG.splitlines() if line.strip()])


def test_reworded_high_priority_line_is_a_loss():
    """The diff compares lines as written: a 🔴 line said another way is gone from the new log."""
    old = "* 🔴 (09:00) Allergic to peanuts.\n* 🔴 (09:01) Lives in Oslo.\n"
    new = "* 🔴 (09:00) Has a peanut allergy.\n* 🔴 (09:01) Lives in Oslo.\n"
    d = diff_logs(old, new)
    assert [r.text for r in d.high_priority_losses] == ["* 🔴 (09:00) Allergic to peanuts."]
    assert (d.kept, d.added, d.removed) == (1, 1, 1)


def test_moved_high_priority_line_is_not_a_loss():
    old = "* 🔴 (09:00) A\n* 🔴 (09:01) B\n"
    new = "* 🔴 (09:01) B\n* 🔴 (09:00) A\n"
    d = diff_logs(old, new)
    assert d.high_priority_losses == []  # A moved, not lost
    removed = [r.text for r in d.rows if r.op == "removed"]   # a move shows as one line removed and the
    assert len(removed) == 1 and removed == [r.text for r in d.rows if r.op == "added"]   # same line added


def test_diff_real_consecutive_generations(fixture_db):
    with open_store(fixture_db("buffered")) as store:
        hist = store.om_history("thread:long-run")
    for newer, older in itertools.pairwise(hist):
        d = diff_logs(older.active_observations, newer.active_observations,
                      older.observation_token_count, newer.observation_token_count)
        old_n = len([line for line in older.active_observations.splitlines() if line.strip()])
        new_n = len([line for line in newer.active_observations.splitlines() if line.strip()])
        assert d.kept + d.removed == old_n
        assert d.kept + d.added == new_n


def test_date_header_with_a_long_run_of_spaces():
    """A hostile line (a date, 50,000 spaces, a letter) parses to the right date (the old pattern
    backtracked quadratically on it)."""
    line = "Date: a" + " " * 50_000 + "b"
    log = parse_log(line + "\n* 🔴 (09:00) x\n")
    assert log.groups[0].date == "a" + " " * 50_000 + "b"
    assert parse_log("Date:   \n").lines[0].kind == "text"  # an empty date is not a header

"""The Reflect preview's figures say one thing: the condenser's "Removed N line(s)" note is the line diff's
`removed` count, and its parts (duplicates merged, lines dropped by priority, boundaries, headers) add up to N."""

from __future__ import annotations

import re

import pytest

from studio.engine.condenser import condense
from studio.engine.diff import diff_logs
from studio.engine.tokens import count_observations
from studio.store import open_store
from tests.conftest import FIXTURE_NAMES


def _note_figures(note: str) -> tuple[int, list[int]]:
    total, parts = note.split(": ", 1)
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", parts)]
    return int(total.split()[1].replace(",", "")), numbers


def _check(log: str, target: int) -> None:
    result = condense(log, target)
    diff = diff_logs(log, result.observations)
    assert diff.added == 0                              # the condenser only removes lines
    assert diff.removed == result.lines_removed
    removed_notes = [n for n in result.notes() if n.startswith("Removed ")]
    if diff.removed:
        total, parts = _note_figures(removed_notes[0])
        assert total == diff.removed == sum(parts)
    else:
        assert removed_notes == []


def test_degenerate_repetition_counts_add_up():
    # Mastra's degenerate-repetition case: one 🟡 line repeated thousands of times under 400 🔴 facts.
    # First principles: 3,199 copies are duplicates of the first; dropping 🟡 lines removes the first one too.
    lines = ["Date: Nov 6, 2026"] + [f"* 🔴 (10:{i % 60:02d}) unique fact {i}" for i in range(400)]
    lines += ["* 🟡 (11:00) the same thing again"] * 3200
    log = "\n".join(lines)
    _check(log, 2000)
    notes = condense(log, 2000).notes()
    assert notes[0] == "Removed 3,200 line(s): 3,199 duplicate observation(s) merged; 1 🟡 line(s) dropped"
    assert diff_logs(log, condense(log, 2000).observations).removed == 3200


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_logs_counts_add_up(fixture_db, name):
    with open_store(fixture_db(name)) as store:
        logs = [store.om_history(k["lookupKey"])[0].active_observations for k in store.om_lookup_keys()]
    for log in filter(None, logs):
        tokens = count_observations(log)
        for share in (0.9, 0.5, 0.1):
            _check(log, max(1, int(tokens * share)))

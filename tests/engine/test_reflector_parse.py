"""Reflector answers are read exactly as real Mastra reads them (oracle: mastra-reflect.mjs runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.common.jscompat import utf16_len
from studio.engine.reflector_parse import (
    TRUNCATION_MARK,
    detect_degenerate_repetition,
    parse_reflector_output,
    sanitize_observation_lines,
    strip_anchor_ids,
    strip_observation_groups,
)
from studio.engine.tokens import count_observations

ORACLE = json.loads((Path(__file__).parent / "data" / "reflector_answers.oracle.json").read_text(encoding="utf-8"))
CASES = ORACLE["cases"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_parse_matches_what_mastra_wrote(name):
    case = CASES[name]
    parsed = parse_reflector_output(case["answer"])
    if not case["reflected"]:  # Mastra refused: every attempt degenerate or empty
        assert parsed.degenerate or parsed.empty
        return
    assert not parsed.degenerate and not parsed.empty
    assert parsed.observations == case["activeObservations"]
    assert count_observations(parsed.observations) == case["observationTokenCount"]
    # what Mastra stored in the thread: the answer's value, else the previous one
    assert (parsed.current_task or ORACLE["prior"]["currentTask"]) == case["currentTask"]
    assert (parsed.suggested_response or ORACLE["prior"]["suggestedResponse"]) == case["suggestedResponse"]


def test_the_oracle_covers_the_interesting_cases():
    assert sum(1 for c in CASES.values() if not c["reflected"]) >= 4
    assert CASES["overlong-line"]["activeObservations"].split("\n")[0].endswith(TRUNCATION_MARK)
    assert CASES["last-current-task"]["currentTask"] == "second, quoted"
    # Mastra's reflection keeps the thread's title, whatever the answer's <thread-title> says
    answered = parse_reflector_output(CASES["tagged"]["answer"]).thread_title
    assert answered != ORACLE["prior"]["threadTitle"], "the tagged answer must name a title the thread does not have"
    assert CASES["tagged"]["threadTitle"] == ORACLE["prior"]["threadTitle"]


def test_thread_title_is_read_but_informational():
    assert parse_reflector_output(CASES["tagged"]["answer"]).thread_title == "April tax deadline"
    assert parse_reflector_output("<observations>\n* 🔴 (1:00) x\n</observations>").thread_title is None


def test_degenerate_detector_strategies():
    assert not detect_degenerate_repetition("short " * 10)
    assert not detect_degenerate_repetition(" ".join(f"word{i}" for i in range(2000)))
    assert detect_degenerate_repetition("abcdefghij" * 300)  # repeated windows
    unique = " ".join(f"w{i}" for i in range(12_000))
    assert detect_degenerate_repetition(unique[:50_001])  # one enormous line
    lines = [f"* 🟡 (10:{i % 60:02d}) a distinct observation number {i}" for i in range(20)]
    assert not detect_degenerate_repetition("\n".join(lines * 1))
    repeated = ["* 🟡 (10:00) a line that is repeated often"]
    # duplicate-line ratio among the 21 or 25 counted lines: 10/21 is not over half, 14/25 is
    assert not detect_degenerate_repetition("\n".join(lines[:9] + repeated * 11) + "\n" + unique[:2000])
    assert detect_degenerate_repetition("\n".join(lines[:9] + repeated * 15) + "\n" + unique[:2000])


def test_sanitize_counts_utf16_and_never_splits_a_surrogate_pair():
    line = "a" * 9_999 + "🎉" + "tail"
    out, cut = sanitize_observation_lines(line + "\nshort")
    assert cut == 1
    first = out.split("\n")[0]
    assert first == "a" * 9_999 + TRUNCATION_MARK
    assert utf16_len("a" * 9_998 + "🎉") == 10_000
    assert sanitize_observation_lines("a" * 9_998 + "🎉") == ("a" * 9_998 + "🎉", 0)


def test_anchor_and_group_stripping():
    assert strip_anchor_ids("[O1] * x\n  [O2-N3] * y\n[Q1] z") == "* x\n  * y\n[Q1] z"
    grouped = '<observation-group id="a" range="1:2">\n* 🔴 (1:00) x\n</observation-group>\n\n\n\n* y'
    assert strip_observation_groups(grouped) == "* 🔴 (1:00) x\n\n* y"

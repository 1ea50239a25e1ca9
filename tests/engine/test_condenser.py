"""The offline rule-based condenser: exact results on a hand-made log, and its rules on every fixture."""

from __future__ import annotations

import pytest

from studio.engine.condenser import condense
from studio.engine.observations import Priority, classify
from studio.engine.tokens import count_observations
from studio.llm import Cancelled, CancelToken
from studio.store import open_store
from tests.conftest import copy_fixture, load_oracle

LOG = """Date: Nov 1, 2026
* 🔴 (09:00) User stated they live in Porto
* ✅ (09:05) Fixed the build
* 🟢 (09:10) Mentioned liking tea
* 🟡 (09:20) Uses Hugo for the site
  * -> 🟢 (09:21) checked config

--- message boundary (2026-11-29T20:42:27.232Z) ---

Date: Nov 1, 2026
* 🔴 (10:00) User stated they live in Porto
* 🟡 (10:05) Deploys on Netlify
Date: Nov 2, 2026
* 🟢 (11:00) Asked about weather"""

CLEAN = """Date: Nov 1, 2026
* 🔴 (09:00) User stated they live in Porto
* ✅ (09:05) Fixed the build
* 🟢 (09:10) Mentioned liking tea
* 🟡 (09:20) Uses Hugo for the site
  * -> 🟢 (09:21) checked config
* 🟡 (10:05) Deploys on Netlify
Date: Nov 2, 2026
* 🟢 (11:00) Asked about weather"""

AFTER_2 = """Date: Nov 1, 2026
* 🔴 (09:00) User stated they live in Porto
* 🟡 (09:20) Uses Hugo for the site
  * -> 🟢 (09:21) checked config
* 🟡 (10:05) Deploys on Netlify
Date: Nov 2, 2026
* 🟢 (11:00) Asked about weather"""

AFTER_4 = """Date: Nov 1, 2026
* 🔴 (09:00) User stated they live in Porto
* 🟡 (09:20) Uses Hugo for the site
* 🟡 (10:05) Deploys on Netlify"""

ONLY_RED = """Date: Nov 1, 2026
* 🔴 (09:00) User stated they live in Porto"""


def test_lossless_cleanup_when_already_below():
    r = condense(LOG, 10_000)
    assert r.observations == CLEAN and r.reached and r.reason is None
    assert (r.boundaries_removed, r.duplicates_merged, r.date_headers_removed) == (1, 1, 1)
    assert [(d.text, d.reason) for d in r.dropped] == [("* 🔴 (10:00) User stated they live in Porto", "duplicate")]
    assert r.tokens == count_observations(CLEAN) and r.input_tokens == count_observations(LOG)


@pytest.mark.parametrize("expected", [AFTER_2, AFTER_4, ONLY_RED])
def test_drops_the_fewest_lines_in_the_documented_order(expected):
    r = condense(LOG, count_observations(expected) + 1)
    assert r.observations == expected and r.reached
    assert r.tokens == count_observations(expected)


def test_drop_order_completed_and_low_first_then_medium_oldest_first():
    r = condense(LOG, count_observations(AFTER_4) + 1)
    assert [(d.text, d.priority, d.reason) for d in r.dropped if d.reason != "duplicate"] == [
        ("* ✅ (09:05) Fixed the build", "✅", "low-priority"),
        ("* 🟢 (09:10) Mentioned liking tea", "🟢", "low-priority"),
        ("* -> 🟢 (09:21) checked config", "🟢", "low-priority"),
        ("* 🟢 (11:00) Asked about weather", "🟢", "low-priority"),
    ]
    assert r.date_headers_removed == 2  # the repeated Nov 1 and the emptied Nov 2


def test_says_why_when_only_high_priority_lines_are_left():
    r = condense(LOG, 5)
    assert r.observations == ONLY_RED and not r.reached
    assert "without losing 🔴 lines" in r.reason and f"{r.tokens:,} tokens" in r.reason
    assert r.high_priority_lines == 2 and any("Kept all 2 🔴" in n for n in r.notes())


def test_never_empties_a_log_without_high_priority_lines():
    r = condense("Date: Nov 1, 2026\n* 🟢 (09:00) a\n* 🟡 (09:01) b", 1)
    assert r.observations == "Date: Nov 1, 2026\n* 🟡 (09:01) b" and not r.reached


def test_red_children_protect_their_parent_and_unmarked_steps_follow_their_parent():
    log = ("Date: Nov 1, 2026\n* 🟢 (09:00) parent\n  * -> 🔴 (09:01) critical child\n* 🔴 (09:02) red\n"
           "  * -> ran a tool\n* 🟢 (09:03) low\n  * -> its step")
    r = condense(log, 1)
    assert r.observations == ("Date: Nov 1, 2026\n* 🟢 (09:00) parent\n  * -> 🔴 (09:01) critical child\n"
                              "* 🔴 (09:02) red\n  * -> ran a tool")


def test_empty_thread_sections_go():
    log = ('<thread id="a">\nDate: Nov 1, 2026\n* 🟢 (09:00) low\n</thread>\n<thread id="b">\nDate: Nov 1, 2026\n'
           '* 🔴 (09:00) kept\n</thread>')
    r = condense(log, 1)
    assert r.observations == '<thread id="b">\nDate: Nov 1, 2026\n* 🔴 (09:00) kept\n</thread>'


def test_cancel():
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        condense(LOG, 5, cancel=token)


# -- every fixture -------------------------------------------------------------------------------

CONDENSER_FIXTURES = ("support", "buffered", "resource", "collab", "tools", "live/support")


def _fixture_logs(tmp_path, without_log: list[str]):
    """Yield (label, log, threshold): each OM record's current log, and an oversize log made of its
    whole history (every generation, oldest first), since no fixture thread is over its threshold.
    Records none of whose generations holds a log are appended to WITHOUT_LOG as "name:lookupKey"."""
    from studio.common.om_settings import max_threshold, resolve_settings

    for name in CONDENSER_FIXTURES:
        with open_store(copy_fixture(name, tmp_path / name.replace("/", "_"))) as store:
            for key in store.om_lookup_keys():
                history = store.om_history(key["lookupKey"])
                threshold = max_threshold(resolve_settings(history[0].config, history[0].scope).reflection_tokens)
                logs = [h.active_observations for h in reversed(history) if h.active_observations.strip()]
                if not logs:
                    without_log.append(f"{name}:{key['lookupKey']}")
                    continue
                yield f"{name}:{key['lookupKey']}:current", logs[-1], threshold
                big = "\n\n".join(logs)
                yield f"{name}:{key['lookupKey']}:history", big, threshold
                yield f"{name}:{key['lookupKey']}:history-half", big, max(1, count_observations(big) // 2)


def _kind(raw: str):
    return classify(raw)


def test_every_fixture_log(tmp_path):
    over = 0
    checked = 0
    without_log: list[str] = []
    for label, log, target in _fixture_logs(tmp_path, without_log):
        checked += 1
        result = condense(log, target)
        assert condense(log, target).observations == result.observations, label  # deterministic
        out_lines = result.observations.split("\n")
        assert result.tokens == count_observations(result.observations), label
        # every distinct 🔴 line survives
        red_in = {ln.strip() for ln in log.split("\n") if _kind(ln).priority is Priority.HIGH}
        red_out = {ln.strip() for ln in out_lines if _kind(ln).priority is Priority.HIGH}
        assert red_in == red_out, label
        # output is the input's lines, in order (a subsequence), without boundaries
        source = iter(log.split("\n"))
        assert all(any(line == src for src in source) for line in out_lines if line), label
        assert not any(_kind(ln).kind == "boundary" for ln in out_lines), label
        # no empty or repeated date group
        significant = [ln for ln in out_lines if ln.strip()]
        for i, line in enumerate(significant):
            if _kind(line).kind == "date":
                assert i + 1 < len(significant) and _kind(significant[i + 1]).kind != "date", label
        if count_observations(log) >= target:
            over += 1
            if result.reached:
                assert result.tokens < target, label
            else:
                assert "🔴" in result.reason, label
                assert not any(_kind(ln).priority in (Priority.LOW, Priority.COMPLETED)
                               and _kind(ln).depth == 0 for ln in out_lines if _kind(ln).kind == "observation"
                               and not _has_red_child(out_lines, ln)), label
        else:
            assert result.reached and not [d for d in result.dropped if d.reason != "duplicate"], label
    # Mastra's oracle: the records none of whose generations holds a character of log are the only ones left out
    assert sorted(without_log) == sorted(
        f"{name}:{key}" for name in CONDENSER_FIXTURES for key, om in load_oracle(name)["om"].items()
        if all(h["chars"] == 0 for h in om["history"]))
    assert checked == 3 * sum(len(load_oracle(name)["om"]) for name in CONDENSER_FIXTURES) - 3 * len(without_log)
    assert over >= 10


def _has_red_child(lines: list[str], parent: str) -> bool:
    i = lines.index(parent)
    depth = _kind(parent).depth
    for line in lines[i + 1:]:
        c = _kind(line)
        if c.kind != "observation" or c.depth <= depth:
            return False
        if c.priority is Priority.HIGH:
            return True
    return False


def test_fixture_threads_over_their_threshold_are_brought_below_or_explained(tmp_path):
    """Real fixture threads: any over its reflection threshold is condensed below it or told why not."""
    from studio.engine.reflector import ReflectionInputError, load_reflection_input

    skipped, condensed = [], 0
    for name in CONDENSER_FIXTURES:
        path = copy_fixture(name, tmp_path / name.replace("/", "_"))
        with open_store(path) as store:
            threads = [t.id for t in store.list_threads()]
        for thread_id in threads:
            try:
                inp = load_reflection_input(str(path), thread_id=thread_id)
            except ReflectionInputError:
                skipped.append(f"{name}:{thread_id}")  # no OM, or nothing observed yet
                continue
            condensed += 1
            result = condense(inp.observations, inp.reflection_threshold)
            assert result.reached or result.reason
            if not inp.over_threshold:
                assert result.reached
    # the oracle's getStatus: the threads with no OM record, or whose record has observed nothing (0 tokens)
    observed = {f"{name}:{thread_id}": status["observationTokenCount"] for name in CONDENSER_FIXTURES
                for om in load_oracle(name)["om"].values() for thread_id, status in om["status"].items()}
    expected_skips = [f"{name}:{t}" for name in CONDENSER_FIXTURES for t in load_oracle(name)["threads"]
                      if observed.get(f"{name}:{t}", 0) == 0]
    assert sorted(skipped) == sorted(expected_skips)
    assert condensed == sum(len(load_oracle(name)["threads"]) for name in CONDENSER_FIXTURES) - len(skipped)

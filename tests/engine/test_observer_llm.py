"""The in-process Observer (studio.engine.observer) from first principles: prompt, parsing, progress, cancel.

Write parity with Mastra is tested in tests/interop/test_observe_interop.py and
tests/cli/test_observe_llm.py; here each expectation follows from the rule stated beside it.
"""

from __future__ import annotations

import pytest

from studio.common.cancel import Cancelled
from studio.engine import tokens
from studio.engine.observer import ObservationRejected, load_observation_window, run_observation
from studio.engine.observer_parse import parse_multi_thread_output
from studio.engine.observer_prompt import tail_within
from studio.llm import CancelToken, LLMClient
from tests.conftest import copy_fixture
from tests.fake_llm import Reply

ANSWER = "<observations>\nDate: Dec 2, 2026\n* 🔴 (10:00) A fact.\n</observations>\n"


def test_tail_within_keeps_the_newest_whole_lines_inside_the_budget():
    log = "\n".join(f"* 🟡 (09:{i:02d}) line number {i} of the kept log" for i in range(60))
    shown, cut = tail_within(log, 100)
    assert cut and log.endswith(shown) and tokens.count_observations(shown) <= 100
    # one more line would not fit: the cut is as late as the budget allows
    previous = log.split("\n")[-len(shown.split("\n")) - 1]
    assert tokens.count_observations(previous + "\n" + shown) > 100
    assert tail_within(log, 0) == (log, False)          # 0: no cut (Mastra's previousObserverTokens 0/false)
    assert tail_within("short", 2000) == ("short", False)


def test_multi_thread_parse_follows_mastras_rules():
    answer = ('<observations>\n<thread id="a">\n* one\n<thread-title>First</thread-title>\n'
              "<thread-title>Second</thread-title>\n<current-task>t</current-task>\n</thread>\n"
              '<thread id="b"></thread>\n</observations>\n<thread id="outside">\n* ignored\n</thread>')
    threads, degenerate = parse_multi_thread_output(answer)
    assert not degenerate and list(threads) == ["a"]          # empty block skipped; only the first <observations>
    a = threads["a"]
    assert a.thread_title == "First" and a.current_task == "t"   # the first section wins
    # only the first title is cut out (its line break stays, as String.replace leaves it); extractor sections
    # (current-task) go with the whitespace after them
    assert a.observations == "* one\n\n<thread-title>Second</thread-title>"
    repeated = "<observations>\n" + '<thread id="a">\n* same again\n</thread>\n' * 300 + "</observations>"
    assert parse_multi_thread_output(repeated) == ({}, True)


def test_progress_cancel_and_rejection(fake_llm, tmp_path):
    path = copy_fixture("support", tmp_path / "db")
    window = load_observation_window(str(path), "support-1")
    client = LLMClient.for_model("openai-compatible/observer", base_url=fake_llm.base_url)
    seen = []
    fake_llm.push(Reply(text=ANSWER))
    proposal = run_observation(window, client=client, path=str(path), progress=seen.append)
    assert [p.stage for p in seen] == ["request", "done"]
    assert proposal.new_lines == "Date: Dec 2, 2026\n* 🔴 (10:00) A fact."
    assert proposal.tokens_after == tokens.count_observations(proposal.new_log)
    assert proposal.new_log.startswith(window.record.active_observations + "\n\n--- message boundary (")

    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        run_observation(window, client=client, cancel=token)
    assert len(fake_llm.requests) == 1          # a cancelled preview sends nothing

    fake_llm.push(Reply(text="Nothing worth noting."))
    with pytest.raises(ObservationRejected) as err:
        run_observation(window, client=client)
    assert err.value.reason == "empty"

"""The Reflector loop (Mastra's compression ladder), its input from real fixtures, prompts and progress."""

from __future__ import annotations

import hashlib

import pytest

from studio.engine.reflector import (
    ReflectionInputError,
    ReflectionRejected,
    compression_start_level,
    load_reflection_input,
    proposal_diff,
    reflect_observations,
    run_reflection,
)
from studio.engine.reflector_prompt import build_prompt, compression_guidance, system_prompt
from studio.engine.tokens import count_observations
from studio.llm import Cancelled, CancelToken, LLMClient, RetryPolicy
from studio.llm.client import Completion
from studio.llm.wire import Usage
from tests.conftest import load_oracle
from tests.fake_llm import Reply
from tests.mastra_facts import lookup_keys, om_rows, oracle_thread

LOG = "\n".join(["Date: Nov 1, 2026"]
                + [f"* 🟡 (10:{i:02d}) observation number {i} about the project" for i in range(40)])
DEGENERATE = "<observations>\n" + "* 🟡 (10:00) the same observation again and again\n" * 60 + "</observations>"


def answer(n_lines: int, task: str | None = None) -> str:
    body = "\n".join(f"* 🔴 (09:{i:02d}) kept fact {i}" for i in range(n_lines))
    extra = f"\n<current-task>\n{task}\n</current-task>" if task else ""
    return f"<observations>\nDate: Nov 1, 2026\n{body}\n</observations>{extra}"


class Scripted:
    """An in-process stand-in for LLMClient: answers in order, records the prompts."""

    def __init__(self, *answers: str, model: str = "openai/test"):
        self.answers = list(answers)
        self.model = model
        self.prompts: list[tuple[str, str]] = []

    def complete(self, system, prompt, *, cancel=None, on_event=None):
        self.prompts.append((system, prompt))
        if on_event:
            from studio.llm.client import ClientEvent

            on_event(ClientEvent("request", 1))
        return Completion(self.answers.pop(0), Usage(10, 5, 15), "stop", 1, self.model)


def high_priority_floor(log: str) -> list[str]:
    """Return LOG's date headers, 🔴 observation lines and the lines indented under those: what no rule drops."""
    out, under_high = [], False
    for line in log.splitlines():
        if line.startswith("Date:"):
            out.append(line)
        elif line.startswith(("* ", "- ")):
            under_high = line[2:].startswith("🔴")
            if under_high:
                out.append(line)
        elif line[:1].isspace() and line.strip() and under_high:
            out.append(line)
    return out


def tokens_of(text: str) -> int:
    from studio.engine.reflector_parse import parse_reflector_output

    return count_observations(parse_reflector_output(text).observations)


def test_first_answer_below_threshold_is_taken():
    client = Scripted(answer(3, "- Primary: x"))
    result = reflect_observations(LOG, client=client, reflection_threshold=500)
    assert [a.to_json() for a in result.attempts] == [
        {"level": 1, "tokens": tokens_of(answer(3)), "degenerate": False, "empty": False}]
    assert result.current_task == "- Primary: x" and result.suggested_response is None
    assert result.reached_target and result.input_tokens == count_observations(LOG)
    assert result.usage.to_json() == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert result.model == "openai/test"


def test_ladder_escalates_to_level_4_and_keeps_the_smallest_answer():
    big, bigger, small_but_over, medium = answer(30), answer(40), answer(12), answer(20)
    threshold = tokens_of(answer(12)) - 1  # nothing gets below
    client = Scripted(big, bigger, small_but_over, medium)
    result = reflect_observations(LOG, client=client, reflection_threshold=threshold)
    assert [a.level for a in result.attempts] == [1, 2, 3, 4]
    assert result.observations.count("kept fact") == 12  # the smallest, not the last
    assert not result.reached_target and any("below the reflection threshold" in n for n in result.notes)
    guidance = compression_guidance()
    for (_, prompt), level in zip(client.prompts, [1, 2, 3, 4], strict=True):
        assert guidance[level] in prompt
        assert all(guidance[other] not in prompt for other in (1, 2, 3, 4) if other != level)


def test_ladder_stops_as_soon_as_an_answer_is_below():
    threshold = tokens_of(answer(10)) + 1
    client = Scripted(answer(30), answer(10), answer(2))
    result = reflect_observations(LOG, client=client, reflection_threshold=threshold)
    assert [a.level for a in result.attempts] == [1, 2] and len(client.answers) == 1


@pytest.mark.parametrize("model, start, levels", [("google/gemini-2.5-flash", None, [2, 3, 4]),
                                                  ("openai/gpt-4o", 0, [0, 1, 2, 3]),
                                                  ("openai/gpt-4o", None, [1, 2, 3, 4])])
def test_start_level_like_mastra(model, start, levels):
    client = Scripted(*[answer(30)] * 4, model=model)
    result = reflect_observations(LOG, client=client, reflection_threshold=1, start_level=start)
    assert [a.level for a in result.attempts] == levels
    assert compression_start_level("google/gemini-2.5-flash-lite") == 2 and compression_start_level(None) == 1


def test_degenerate_and_empty_answers_escalate_and_a_good_one_is_kept():
    client = Scripted(DEGENERATE, "<observations>\n</observations>", answer(3))
    result = reflect_observations(LOG, client=client, reflection_threshold=500)
    assert [(a.level, a.degenerate, a.empty) for a in result.attempts] == [(1, True, False), (2, False, True),
                                                                           (3, False, False)]
    assert result.observations.count("kept fact") == 3


@pytest.mark.parametrize("answers, reason", [([DEGENERATE] * 4, "degenerate"),
                                             (["", "  ", "<observations>\n</observations>", ""], "empty"),
                                             ([DEGENERATE, "", DEGENERATE, ""], "mixed")])
def test_all_attempts_failing_is_refused(answers, reason):
    client = Scripted(*answers)
    with pytest.raises(ReflectionRejected, match="nothing was written") as info:
        reflect_observations(LOG, client=client, reflection_threshold=500)
    assert info.value.reason == reason and len(info.value.attempts) == 4


def test_cancel_between_attempts():
    token = CancelToken()
    client = Scripted(answer(30), answer(3))

    def progress(p):
        if p.stage == "answer":
            token.cancel()

    with pytest.raises(Cancelled):
        reflect_observations(LOG, client=client, reflection_threshold=1, progress=progress, cancel=token)
    assert len(client.prompts) == 1


def test_progress_reports():
    seen = []
    reflect_observations(LOG, client=Scripted(answer(3)), reflection_threshold=500, progress=seen.append)
    assert [p.stage for p in seen] == ["attempt", "request", "answer", "done"]
    assert seen[0].level == 1 and seen[2].tokens == tokens_of(answer(3))


def test_prompt_carries_the_log_sizes_and_prior_hints():
    p = build_prompt("Date: X\n* 🔴 (1:00) {{input_tokens}} literal braces {x}", level=0, input_tokens=1234,
                     target_tokens=40000, prior_current_task="- Primary: old task", prior_suggested_response=None)
    assert "{{input_tokens}} literal braces {x}" in p.prompt  # the log is never templated
    assert "1,234 tokens" in p.prompt and "40,000 tokens" in p.prompt
    assert "<current-task>\n- Primary: old task\n</current-task>" in p.prompt and "<suggested-response>" not in p.prompt
    assert p.system == system_prompt()
    for tag in ("<observations>", "<current-task>", "<suggested-response>", "<thread-title>"):
        assert tag in p.system
    assert all(guidance not in p.prompt for guidance in compression_guidance().values())


def test_load_reflection_input_from_fixtures(fixture_db):
    inp = load_reflection_input(str(fixture_db("support")), thread_id="support-1")
    status = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]   # Mastra's getStatus
    assert (inp.lookup_key, inp.scope) == ("thread:support-1", "thread")
    assert inp.generation_count == status["generationCount"]
    assert inp.reflection_threshold == status["effectiveObservationTokensThreshold"]
    assert inp.observation_token_count == status["observationTokenCount"]
    assert inp.input_tokens == count_observations(inp.observations) == status["observationTokenCount"]
    assert inp.prior_current_task == prior_task("support-1")
    assert inp.default_model is None and inp.reflecting is None and not inp.over_threshold
    res = load_reflection_input(str(fixture_db("resource")), thread_id="res-a")
    erin = load_oracle("resource")["om"]["resource:user-erin"]["status"]["res-a"]
    assert res.lookup_key == "resource:user-erin" and res.scope == "resource"
    assert res.reflection_threshold == erin["effectiveObservationTokensThreshold"]
    with pytest.raises(ReflectionInputError, match="No thread"):
        load_reflection_input(str(fixture_db("support")), thread_id="nope")
    support = fixture_db("support")
    empty = [key.removeprefix("thread:") for key in lookup_keys(support)
             if not (om_rows(support, key)[-1]["activeObservations"] or "").strip()]
    assert empty, "no thread of support.db has an OM record with an empty log"
    with pytest.raises(ReflectionInputError, match="nothing to reflect"):
        load_reflection_input(str(fixture_db("support")), thread_id=empty[0])  # OM record, empty log
    with pytest.raises(ReflectionInputError, match="no observational memory"):
        load_reflection_input(str(fixture_db("history")), thread_id=_first_thread(fixture_db("history")))


def prior_task(thread_id: str) -> str:
    """Return THREAD_ID's currentTask in support.db as Mastra's listThreads gave it (its oracle)."""
    return oracle_thread(load_oracle("support"), thread_id)["metadata"]["mastra"]["om"]["currentTask"]


def _first_thread(path) -> str:
    from studio.store import open_store

    with open_store(path) as store:
        return store.list_threads()[0].id


def test_run_reflection_against_the_fake_server_reads_nothing_writes_nothing(fixture_db, fake_llm):
    path = fixture_db("support")
    before = {ext: hashlib.sha256((path.parent / f"{path.name}{ext}").read_bytes()).hexdigest()
              for ext in ("", "-wal")}
    inp = load_reflection_input(str(path), thread_id="support-1")
    fake_llm.push(Reply(text=answer(4, "- Primary: trip to Lisbon")))
    client = LLMClient.for_model("openai-compatible/reflector", base_url=fake_llm.base_url, env={}, keyring_get=None,
                                 retry=RetryPolicy(max_retries=0))
    result = run_reflection(inp, strategy="llm", client=client)
    assert result.current_task == "- Primary: trip to Lisbon"
    assert result.observation_token_count < inp.reflection_threshold
    request = fake_llm.requests[0]
    assert inp.observations.strip() in request.prompt
    assert f"<current-task>\n{prior_task('support-1')}" in request.prompt
    status = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]   # Mastra's getStatus
    diff = proposal_diff(inp, result)
    assert diff.old_tokens == status["observationTokenCount"] and diff.new_tokens == result.observation_token_count
    assert diff.high_priority_losses  # the fixture's 🔴 lines are not in the short answer
    after = {ext: hashlib.sha256((path.parent / f"{path.name}{ext}").read_bytes()).hexdigest() for ext in ("", "-wal")}
    assert after == before


def test_run_reflection_rule_based_and_bad_strategy(fixture_db):
    inp = load_reflection_input(str(fixture_db("support")), thread_id="support-1")
    # The rules never drop a 🔴 line (nor the lines under it) and keep the date headers: a target halfway
    # between that floor and the whole log is reachable by dropping lower-priority lines.
    floor = count_observations("\n".join(high_priority_floor(inp.observations)))
    assert floor < inp.input_tokens, "support-1's current log holds only 🔴 lines: nothing to drop"
    inp.reflection_threshold = (floor + inp.input_tokens) // 2
    result = run_reflection(inp, strategy="rule-based")
    assert result.strategy == "rule-based" and result.reached_target and result.model is None
    assert result.observation_token_count < inp.reflection_threshold
    assert result.current_task is None and [a.level for a in result.attempts] == [0]
    with pytest.raises(ReflectionInputError):
        run_reflection(inp, strategy="magic")
    with pytest.raises(ReflectionInputError):
        run_reflection(inp, strategy="llm")

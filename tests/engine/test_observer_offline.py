"""The Observer's prompts (our texts) and the deterministic rule-based Observer (first principles)."""

from __future__ import annotations

import pytest

from studio.engine.observations import Priority, parse_log
from studio.engine.observer_format import format_messages_for_observer
from studio.engine.observer_prompt import build_observer_prompt, system_prompt
from studio.engine.rule_observer import LABEL, rule_based_answer, rule_based_observation
from studio.engine.unobserved import unobserved_messages
from studio.errors import EngineError
from studio.store import open_store


def _msg(mid, role, text, at, parts=None):
    return {"id": mid, "role": role, "createdAt": at,
            "content": {"format": 2, "parts": parts if parts is not None else [{"type": "text", "text": text}]}}


MESSAGES = [
    _msg("u1", "user", "My favourite colour is teal.", "2026-01-01T23:58:00.000Z"),
    _msg("a1", "assistant", "Noted!", "2026-01-01T23:59:30.000Z"),
    _msg("m1", "assistant", "", "2026-01-02T00:00:10.000Z",
         parts=[{"type": "data-om-observation-start", "data": {"cycleId": "c"}}]),   # nothing to observe
    _msg("t1", "assistant", "", "2026-01-02T00:01:00.000Z",
         parts=[{"type": "tool-invocation", "toolInvocation": {"state": "result", "toolName": "search",
                                                               "args": {}, "result": "ok"}}]),
    _msg("u2", "user", "word " * 60, "2026-01-02T00:02:00.000Z"),
    _msg("s1", "system", "system text is never observed", "2026-01-02T00:03:00.000Z"),
]


def test_rule_based_answer_from_first_principles():
    answer = rule_based_answer(MESSAGES)
    parsed = rule_based_observation(MESSAGES)
    lines = parsed.observations.split("\n")
    # One date header per UTC date, then one line per message with something to show (u1, a1, t1, u2).
    assert lines[0] == "Date: Jan 1, 2026" and lines[3] == "Date: Jan 2, 2026"
    assert lines[1] == f"* 🟡 (23:58) {LABEL} User: My favourite colour is teal."
    assert lines[2] == f"* 🟢 (23:59) {LABEL} Assistant: Noted!"
    assert lines[4] == f"* 🟢 (00:01) {LABEL} Assistant: (called search)"
    assert lines[5].startswith(f"* 🟡 (00:02) {LABEL} User: word word") and lines[5].endswith("…")
    assert len(lines) == 6
    # Mastra's log parser reads every line as a dated observation with the priority written.
    log = parse_log(parsed.observations)
    assert [o.priority for o in log.observations] == [Priority.MEDIUM, Priority.LOW, Priority.LOW, Priority.MEDIUM]
    assert [g.date for g in log.groups] == ["Jan 1, 2026", "Jan 2, 2026"]
    assert parsed.current_task.startswith(f"- Primary: {LABEL} answer the user's latest message: word")
    assert parsed.suggested_response.startswith(LABEL) and not parsed.degenerate
    assert rule_based_answer(MESSAGES) == answer  # deterministic
    assert rule_based_answer(MESSAGES, tz="Europe/Lisbon").count("Date:") == 2
    assert rule_based_answer([MESSAGES[2], MESSAGES[5]]) == ""


def test_rule_based_observer_on_a_fixtures_unobserved_messages(fixture_db):
    with open_store(fixture_db("support")) as store:
        record = store.om_current("thread:support-2")
        dicts = [m.as_mastra() for m in store.list_messages("support-2")]
    pending = unobserved_messages(dicts, record.last_observed_at, record.observed_message_ids)
    assert pending
    parsed = rule_based_observation(pending)
    shown = [m for m in pending if m["role"] in ("user", "assistant")]
    assert len(parse_log(parsed.observations).observations) == len(shown)
    assert all(LABEL in o.raw for o in parse_log(parsed.observations).observations)


def test_observer_prompt_carries_the_transcript_and_the_prior_hints():
    prompt = build_observer_prompt(MESSAGES[:2], prior_current_task="- Primary: colours",
                                   prior_suggested_response="Ask about shades",
                                   other_threads='<other-conversation id="t2">\nx\n</other-conversation>')
    assert prompt.system == system_prompt() and "<observations>" in prompt.system
    assert format_messages_for_observer(MESSAGES[:2]).strip() in prompt.prompt
    assert "<current-task>\n- Primary: colours\n</current-task>" in prompt.prompt
    assert "<suggested-response>\nAsk about shades\n</suggested-response>" in prompt.prompt
    assert '<other-conversation id="t2">' in prompt.prompt
    assert "{{" not in prompt.prompt
    with pytest.raises(EngineError):
        build_observer_prompt([])

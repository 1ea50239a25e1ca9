"""The one write protocol's flow (`studio.app.write_protocol.protocol_steps`), step by step, with a scripted user.

The steps are performed here by a script instead of a database (each test says what every step
returns), so the flow's decisions are seen alone: what it asks, what it does with each answer,
what it records. The same flow runs under the command line (`run_steps`) and the studio
(`ProtocolController`); tests/ui/test_write_protocol_ui.py and tests/cli/test_write_exit_codes.py
run it against real files.
"""

from __future__ import annotations

import time

import pytest

from studio.app.changes import ChangeSet, Written, record_changes
from studio.app.write_protocol import (
    OVERWRITTEN,
    Commit,
    ProtocolOptions,
    ProtocolOutcome,
    Repair,
    WaitEnded,
    WaitForQuiet,
    WatchOvertaking,
    WatchSurvival,
    WriteJob,
    protocol_steps,
)
from studio.errors import StoreError, WriteRefused
from studio.store.write.protocol import AgentActivity, OvertakingWrite
from tests.scripted_interaction import ScriptedInteraction

KEY = "thread:t1"
ROW = {"id": "r2", "generationCount": 2, "activeObservations": "* new"}
ACTIVE = WriteRefused("busy", "The agent is active: a message was written 1.0 s ago by another program, not the "
                              "studio (quiet period 30 s). Nothing was written.")
QUIET = AgentActivity(now_ms=100_000, last_write_ms=10_000, live_flags=(), quiet_ms=30_000)
STILL_ACTIVE = AgentActivity(now_ms=100_000, last_write_ms=99_000, live_flags=(), quiet_ms=30_000)
FINDING = OvertakingWrite("superseded-row-written", KEY, "r1", 1, "r2", added_text="* the agent's line")

DEFAULT_OPTIONS = ProtocolOptions()


def written(row=ROW) -> Written:
    return Written(row, record_changes(KEY))


def run(script, *, options=DEFAULT_OPTIONS, told=None, in_place=False, activity=None, stopped=lambda: False):
    """Run the flow; SCRIPT maps each step type to what it returns (a list: one per step, in turn; a function
    of the step) or raises.

    Returns (what the flow returned or raised, [steps in order], outcome, the interaction).
    """
    told = told or ScriptedInteraction()
    outcome = ProtocolOutcome()
    job = WriteJob("memory.db", KEY, write=lambda _q: None, in_place=in_place)
    steps = protocol_steps(job, options, told, outcome, activity=activity, stopped=stopped)
    seen, value, error = [], None, None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            return done.value, seen, outcome, told
        except Exception as exc:
            return exc, seen, outcome, told
        seen.append(step)
        assert len(seen) < 50, f"the flow does not end: {seen[-5:]}"
        answers = script[type(step)]
        answer = answers.pop(0) if isinstance(answers, list) else answers
        if callable(answer):
            answer = answer(step)
        value, error = (None, answer) if isinstance(answer, BaseException) else (answer, None)


def test_a_quiet_write_is_committed_then_watched_and_nothing_is_asked():
    result, seen, outcome, told = run({Commit: written(), WatchOvertaking: ([], 1.0)})
    assert result.result == ROW and seen == [Commit(30_000), WatchOvertaking(None, None)]
    assert told.asked == [] and outcome.unrepaired == 0 and outcome.changes == record_changes(KEY)


def test_the_agent_is_active_force_writes_without_the_quiet_period():
    result, seen, _outcome, told = run({Commit: [ACTIVE, written()], WatchOvertaking: ([], 1.0)},
                                       told=ScriptedInteraction(wait_or_force="force"))
    assert [s for s in seen if isinstance(s, Commit)] == [Commit(30_000), Commit(0)]
    (question,) = told.texts("wait_or_force")
    assert question.startswith(str(ACTIVE)) and "quiet for 30 s" in question
    assert result.result == ROW


def test_cancel_leaves_the_refusal_standing():
    result, seen, _outcome, _told = run({Commit: ACTIVE}, told=ScriptedInteraction(wait_or_force="cancel"))
    assert result is ACTIVE and seen == [Commit(30_000)]


def test_wait_waits_for_the_quiet_period_then_writes_again():
    result, seen, _outcome, _told = run({Commit: [ACTIVE, written()], WaitForQuiet: QUIET, WatchOvertaking: ([], 1.0)},
                                        told=ScriptedInteraction(wait_or_force="wait"))
    assert seen[:3] == [Commit(30_000), WaitForQuiet(30_000, 600), Commit(30_000)]
    assert result.result == ROW


@pytest.mark.parametrize(("stopped", "says"), [(True, "You stopped waiting"), (False, "Still active after 10 minutes")])
def test_a_wait_that_ends_without_quiet_writes_nothing(stopped, says):
    result, seen, _outcome, _told = run({Commit: ACTIVE, WaitForQuiet: STILL_ACTIVE},
                                        told=ScriptedInteraction(wait_or_force="wait"), stopped=lambda: stopped)
    assert isinstance(result, WaitEnded) and says in str(result) and result.reason == "busy"
    assert seen == [Commit(30_000), WaitForQuiet(30_000, 600)]


def test_the_command_lines_wait_budget_stops_asking_when_it_runs_out():
    # --wait-idle 0 (the default): refused at once, nobody is asked
    result, seen, _outcome, told = run({Commit: ACTIVE}, options=ProtocolOptions(wait_s=0))
    assert result is ACTIVE and seen == [Commit(30_000)] and told.asked == []
    # with time left the wait is bounded by what is left; still active once it ran out: the refusal stands
    def wait(step):
        time.sleep(step.limit_s)
        return STILL_ACTIVE

    result, seen, _outcome, _told = run({Commit: ACTIVE, WaitForQuiet: wait}, options=ProtocolOptions(wait_s=0.2),
                                        told=ScriptedInteraction(wait_or_force="wait"))
    assert result is ACTIVE and isinstance(seen[1], WaitForQuiet) and 0 < seen[1].limit_s <= 0.2
    assert isinstance(seen[-1], Commit) and sum(isinstance(s, WaitForQuiet) for s in seen) == 1


def test_other_refusals_are_not_questions():
    refused = WriteRefused("generation-changed", "changed")
    result, seen, _outcome, told = run({Commit: refused})
    assert result is refused and told.asked == [] and seen == [Commit(30_000)]


def test_an_overtaking_write_is_reported_repaired_and_the_window_watched_to_its_end():
    repair = {"id": "r3", "generationCount": 3}
    result, seen, outcome, told = run(
        {Commit: written(), WatchOvertaking: [([FINDING], 5.0), ([], 5.0)], Repair: repair},
        told=ScriptedInteraction(overtaken="repair"), options=ProtocolOptions(watch_ms=4000))
    assert seen == [Commit(30_000), WatchOvertaking(4000, None), Repair("carry"), WatchOvertaking(4000, None, 5.0)]
    (question,) = told.texts("overtaken")
    assert FINDING.describe() in question and "Repair:" in question
    assert outcome.repairs == ["r3"] and outcome.unrepaired == 0
    assert [f["record_id"] for f in outcome.overtaken] == ["r1"]
    assert told.texts("inform") == ["Wrote generation 3 to repair it (record r3)."]
    assert result.result == ROW and outcome.changes == record_changes(KEY)


@pytest.mark.parametrize(("answer", "prefer"), [("revert", "revert"), ("leave", None)])
def test_the_agents_version_or_leaving_it(answer, prefer):
    _result, seen, outcome, _told = run({Commit: written(), WatchOvertaking: [([FINDING], 5.0), ([], 5.0)],
                                         Repair: {"id": "r3", "generationCount": 3}},
                                        told=ScriptedInteraction(overtaken=answer))
    repairs = [s for s in seen if isinstance(s, Repair)]
    assert repairs == ([Repair(prefer)] if prefer else [])
    if prefer is None:
        assert outcome.unrepaired == 1   # the command line exits 3


def test_a_refused_repair_is_said_and_left_unrepaired():
    _result, _seen, outcome, told = run({Commit: written(), WatchOvertaking: ([FINDING], 5.0),
                                         Repair: WriteRefused("busy", "isObserving is set")},
                                        told=ScriptedInteraction(overtaken="repair"))
    assert told.texts("inform") == ["The repair was refused: isObserving is set"]
    assert outcome.unrepaired == 1 and outcome.repairs == []


def test_a_write_in_place_is_watched_for_survival_and_never_repaired():
    _result, seen, outcome, told = run({Commit: written({"row": ROW}), WatchSurvival: False}, in_place=True,
                                       activity=QUIET)
    assert seen == [Commit(30_000), WatchSurvival("r2", "* new", None, QUIET.ago_ms)]
    assert outcome.unrepaired == 1 and outcome.overtaken[0]["kind"] == "observation-overwritten"
    assert told.texts("inform") == [OVERWRITTEN.format(record_id="r2")]
    _result, seen, outcome, told = run({Commit: written(ROW), WatchSurvival: True}, in_place=True)
    assert outcome.unrepaired == 0 and outcome.overtaken == [] and told.asked == []


def test_a_failed_write_is_raised_as_it_came():
    failure = StoreError("database or disk is full")
    result, _seen, _outcome, told = run({Commit: failure})
    assert result is failure and told.asked == []


def test_change_sets_combine():
    a = ChangeSet.of(threads=["t1"], om_records=[KEY])
    b = ChangeSet.of(messages_deleted=["m1"])
    assert (a | b).threads == {"t1"} and (a | b).messages_deleted == {"m1"} and bool(a | b)
    assert not ChangeSet() and (a | ChangeSet.full_reload()).everything
    assert record_changes("resource:u1") == ChangeSet.of(om_records=["resource:u1"])
    assert record_changes(KEY, messages=["m1"]).threads == {"t1"}

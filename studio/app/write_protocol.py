"""The OM write protocol, written once for both faces: write, wait or force, watch, repair (no Qt).

The primitives are the store's (`studio.store.write.protocol`: the quiet period, the agent's
activity, overtaking writes; `studio.store.write.repair`). This module strings them together
around one write of an OM record, the same way for `memory-studio reflect` / `revert` /
`observe` / `activate` and for the studio's Reflect now…, Revert, Observe now… and Activate
dialogs:

1. `preflight` (the command line, before the model is called): read the activity; wait for the
   quiet period (up to `ProtocolOptions.wait_s`) or say the write would be refused;
2. the write itself, WRITE(quiet_ms): refused ("busy", "the agent is active") while the agent
   wrote the conversation within the quiet period. Then the user chooses (`Interaction.
   ask_wait_or_force`): wait for the quiet period and write again, force the write (quiet period
   0; live busy flags still refuse), or cancel (the refusal stands);
3. after the commit, the watch: a new generation (reflect, revert) is watched for a running turn
   overtaking it (`find_overtaking_writes`); what overtook it is reported (`Interaction.
   report_overtaken`) and repaired (a new generation carrying the agent's observations forward),
   replaced by the agent's version, or left. A write in place (observe, activate: Mastra's own
   row, no studio mark) is watched for a turn rewriting it from an older copy; there is no
   repair (the messages are unobserved again: observe again).

The flow is `protocol_steps`, a generator: it yields each step that touches the database or
waits (`Commit`, `WaitForQuiet`, `WatchOvertaking`, `Repair`, `WatchSurvival`) and is sent the
step's result (or thrown its error); questions go to the `Interaction` between steps. A face
runs it: the command line with `run_steps` (every step in turn, in its one thread), the studio
with `studio.ui.widgets.write_protocol.ProtocolController` (each step on the TaskRunner, off the
GUI thread: the writes on the database worker, the waits and watches on its pool; the questions
on the GUI thread). Both perform a step with `perform`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from studio.app.changes import NO_CHANGES, ChangeSet, Written, record_changes
from studio.errors import StudioError, WriteRefused
from studio.store.write.protocol import DEFAULT_QUIET_MS, AgentActivity, OvertakingWrite

__all__ = [
    "WAIT_LIMIT_S",
    "Commit",
    "Interaction",
    "ProtocolOptions",
    "ProtocolOutcome",
    "Repair",
    "WaitEnded",
    "WaitForQuiet",
    "WatchOvertaking",
    "WatchSurvival",
    "WriteJob",
    "activity_json",
    "is_agent_active",
    "perform",
    "preflight",
    "protocol_steps",
    "refuses",
    "run_steps",
    "waiting_text",
    "watch_in_place",
]

#: How long one wait for the quiet period lasts at most when the options set no total (the studio's "Wait") (s).
WAIT_LIMIT_S = 600
#: What is said when a write in place was rewritten by a running turn during the watch.
OVERWRITTEN = ("A running agent rewrote the observation log (record {record_id}) from an older copy while the studio "
               "watched: the new lines are gone again (its messages are still unobserved). Observe again when the "
               "agent is quiet.")


class Interaction:
    """The questions a write asks its user, answered by a face (git-cola's interaction.py).

    The command line answers from its options (`studio.cli.interaction.TerminalInteraction`), the
    studio with message boxes (`studio.ui.interaction.QtInteraction`), tests from a script
    (`tests/scripted_interaction.py`). Called between the protocol's steps: in the studio on the
    GUI thread, never while a step runs.
    """

    def confirm(self, title: str, text: str) -> bool:
        """Ask TITLE / TEXT (plain text) before a write; True to write."""
        raise NotImplementedError

    def ask_wait_or_force(self, text: str) -> str:
        """The agent is active (TEXT: the refusal and the question): return "wait", "force" or "cancel"."""
        raise NotImplementedError

    def report_overtaken(self, findings: list[OvertakingWrite], text: str) -> str:
        """FINDINGS overtook the write (TEXT says so and what can be done): "repair", "revert" or "leave".

        "repair" writes a new generation keeping the studio's log and carrying the agent's
        observations and cursor forward; "revert" takes the agent's version; "leave" stops watching.
        """
        raise NotImplementedError

    def inform(self, text: str) -> None:
        """Say TEXT (what the protocol does now: waiting, a repair written or refused, a write rewritten).

        The studio's dialogs show these steps themselves (the controller's signals): its default says nothing.
        """


@dataclass(frozen=True)
class ProtocolOptions:
    """How the protocol runs around one write.

    QUIET_MS: the quiet period (ms; 0 = no check). FORCE: write without the quiet check from the
    start (live busy flags still refuse). WAIT_S: the longest time to wait for the quiet period in
    all (s; the command line's --wait-idle: 0 refuses at once), or None to let the user wait
    again and again, WAIT_LIMIT_S each time (the studio). WATCH_MS: how long to watch after the
    commit (ms), or None for the window the thread's stored turn timings give (`watch_window_ms`;
    0 when the conversation had been quiet for longer than that window).
    """

    quiet_ms: int = DEFAULT_QUIET_MS
    force: bool = False
    wait_s: float | None = None
    watch_ms: int | None = None


@dataclass
class ProtocolOutcome:
    """What the protocol did around one write (the command's JSON fields; see `to_json`).

    ACTIVITY: the quiet check as `activity_json` gives it; WATCHED_S: how long the watch ran (s);
    OVERTAKEN: the findings (`OvertakingWrite.to_json`, or an "observation-overwritten" finding);
    REPAIRS: the ids of the generations written to repair them; UNREPAIRED: findings left as they
    were (the command line exits 3); CHANGES: what the write and its repairs changed.
    """

    activity: dict | None = None
    watched_s: float = 0.0
    overtaken: list[dict] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    unrepaired: int = 0
    changes: ChangeSet = NO_CHANGES

    def to_json(self) -> dict:
        """The document's protocol fields."""
        return {"activity": self.activity, "watched_s": round(self.watched_s, 3), "overtaken": self.overtaken,
                "repairs": self.repairs}


@dataclass(frozen=True)
class WriteJob:
    """One OM write: PATH, the record's LOOKUP_KEY and WRITE(quiet_ms), which writes once.

    WRITE returns a `Written` (the new row, or a dict holding it under "row", and the ChangeSet),
    or refuses with WriteRefused (nothing written); it re-checks the quiet period inside its
    transaction. IN_PLACE: the write updates Mastra's own row (observe, activate), watched for
    survival instead of for overtaking. SESSION (a WriteSession): the repair's backup, as the write's.
    """

    path: str
    lookup_key: str
    write: Callable[[int], Written]
    in_place: bool = False
    session: Any = None


class WaitEnded(WriteRefused):
    """The wait for the quiet period ended without it (stopped, or still active after WAIT_LIMIT_S); nothing written."""

    def __init__(self, message: str):
        super().__init__("busy", message)


# -- the steps a face performs ----------------------------------------------------------------------

@dataclass(frozen=True)
class Commit:
    """Run the write with QUIET_MS (ms; 0 when forced) on the database worker; result: the `Written` WRITE returned."""

    quiet_ms: int


@dataclass(frozen=True)
class WaitForQuiet:
    """Wait at most LIMIT_S (s) for QUIET_MS (ms) of quiet; result: the last AgentActivity read (None: no record)."""

    quiet_ms: int
    limit_s: float


@dataclass(frozen=True)
class WatchOvertaking:
    """Watch the record until DEADLINE (time.monotonic(); None: WINDOW_MS from now, None: auto with AGO_MS).

    Result: (the unrepaired overtaking writes, as soon as any appear, else [] at the deadline; the deadline).
    """

    window_ms: int | None
    ago_ms: int | None
    deadline: float | None = None


@dataclass(frozen=True)
class Repair:
    """Write the repair generation; result: its row, or None (nothing to repair).

    PREFER "carry": the studio's log with the agent's lines carried forward; "revert": the agent's version.
    """

    prefer: str


@dataclass(frozen=True)
class WatchSurvival:
    """Watch the row RECORD_ID written in place with text WRITTEN for WINDOW_MS (None: auto with AGO_MS).

    Result: True when the text survived the window, False when a running turn rewrote it.
    """

    record_id: str
    written: str
    window_ms: int | None
    ago_ms: int | None


Step = Commit | WaitForQuiet | WatchOvertaking | Repair | WatchSurvival


# -- the flow ------------------------------------------------------------------------------------------

def is_agent_active(exc: BaseException) -> bool:
    """True when EXC is the quiet check's refusal ("busy": the agent is active), which waiting or forcing may pass."""
    return isinstance(exc, WriteRefused) and exc.reason == "busy" and "agent is active" in str(exc)


def protocol_steps(job: WriteJob, options: ProtocolOptions, interaction: Interaction, outcome: ProtocolOutcome, *,
                   activity: AgentActivity | None = None,
                   stopped: Callable[[], bool] = lambda: False) -> Generator[Step, Any, Any]:
    """Yield the protocol's steps around JOB's write (see the module docstring); return the write's `Written`.

    ACTIVITY: the agent's activity as last read (the preflight's, or the dialog's): the automatic
    watch window is 0 when the conversation had been quiet for longer than a turn takes. STOPPED()
    is true once the user stopped a wait or a watch. OUTCOME is filled as the steps run.
    Raises the write's refusal when the user cancels (or the command line's wait ran out),
    WaitEnded when a wait ended without quiet (studio), and what the write raised otherwise.
    """
    written, activity = yield from _commit_steps(options, interaction, activity, stopped)
    outcome.changes = written.changes
    ago = activity.ago_ms if activity is not None else None
    if job.in_place:
        result = written.result
        row = result.get("row", result) if isinstance(result, dict) else {}
        yield from _survival_steps(row, options, interaction, outcome, ago)
    else:
        yield from _overtaking_steps(job, options, interaction, outcome, ago)
    return written


def _commit_steps(options: ProtocolOptions, interaction: Interaction, activity: AgentActivity | None,
                  stopped: Callable[[], bool]):
    """Write; on "the agent is active" ask wait / force / cancel. Return (the write's result, the last activity)."""
    force = options.force
    deadline = None if options.wait_s is None else time.monotonic() + options.wait_s
    while True:
        try:
            return (yield Commit(0 if force else options.quiet_ms)), activity
        except WriteRefused as exc:
            if not is_agent_active(exc) or (deadline is not None and time.monotonic() >= deadline):
                raise
            choice = interaction.ask_wait_or_force(
                f"{exc}\n\nWait until it has been quiet for {options.quiet_ms / 1000:g} s and then write, or force the "
                "write now?")
            if choice == "force":
                force = True
                continue
            if choice != "wait":
                raise
            limit = WAIT_LIMIT_S if deadline is None else max(0.0, deadline - time.monotonic())
            activity = (yield WaitForQuiet(options.quiet_ms, limit)) or activity
            if stopped():
                raise WaitEnded("You stopped waiting, so nothing was written.") from exc
            if activity is not None and activity.active and deadline is None:
                raise WaitEnded(f"Still active after {WAIT_LIMIT_S // 60} minutes: {activity.message()}") from exc
            # quiet now (or the command line's wait ran out: the write says so once more)


def _overtaking_steps(job: WriteJob, options: ProtocolOptions, interaction: Interaction, outcome: ProtocolOutcome,
                      ago_ms: int | None):
    """Watch the new generation; report and repair (or revert to the agent's version) what overtook it."""
    started = time.monotonic()
    deadline = None
    found: list[OvertakingWrite] = []
    while True:
        found, deadline = yield WatchOvertaking(options.watch_ms, ago_ms, deadline)
        if not found:
            break
        outcome.overtaken.extend(f.to_json() for f in found)
        text = "\n".join(f.describe() for f in found)
        choice = interaction.report_overtaken(
            found, f"{text}\n\nRepair: write a new generation keeping the studio's log and carrying the agent's "
                   "observations and cursor forward. Or use the agent's version instead. (Mastra's rows are never "
                   "edited.)")
        if choice not in ("repair", "revert"):
            break
        try:
            row = yield Repair("carry" if choice == "repair" else "revert")
        except StudioError as exc:
            interaction.inform(f"The repair was {'refused' if isinstance(exc, WriteRefused) else 'not written'}: "
                               f"{exc}")
            break
        if row is not None:
            outcome.repairs.append(row["id"])
            outcome.changes = outcome.changes | record_changes(job.lookup_key)
            interaction.inform(f"Wrote generation {row['generationCount']} to repair it (record {row['id']}).")
        found = []   # the rest of the window: the agent may still be in its turn
    outcome.watched_s = time.monotonic() - started
    outcome.unrepaired = len(found)


def _survival_steps(row: dict, options: ProtocolOptions, interaction: Interaction, outcome: ProtocolOutcome,
                    ago_ms: int | None):
    """Watch a write in place; report (no repair exists) when a running turn rewrote it from an older copy."""
    started = time.monotonic()
    record_id = row.get("id")
    survived = yield WatchSurvival(record_id, row.get("activeObservations") or "", options.watch_ms, ago_ms)
    outcome.watched_s = time.monotonic() - started
    if not survived:
        text = OVERWRITTEN.format(record_id=record_id)
        outcome.overtaken.append({"kind": "observation-overwritten", "record_id": record_id, "message": text})
        outcome.unrepaired = 1
        interaction.inform(text)


# -- performing the steps ---------------------------------------------------------------------------------

def perform(step: Step, job: WriteJob, *, cancelled: Callable[[], bool] = lambda: False,
            progress: Callable[[AgentActivity], None] | None = None,
            sleep: Callable[[float], None] = time.sleep) -> Any:
    """Run STEP of JOB's protocol here (it may take the whole watch window) and return its result.

    CANCELLED() ends a wait or a watch at its next poll. PROGRESS(activity) follows a wait, probe
    by probe. Raises what the write or the repair raises (WriteRefused, StoreError).
    """
    from studio.store.write import protocol

    if isinstance(step, Commit):
        return job.write(step.quiet_ms)
    if isinstance(step, WaitForQuiet):
        def probe():
            activity = protocol.store_activity(job.path, job.lookup_key, step.quiet_ms, in_place=job.in_place)
            if activity is not None and progress is not None:
                progress(activity)
            return activity
        return protocol.wait_for_quiet(probe, step.limit_s, cancelled=cancelled, sleep=sleep)
    if isinstance(step, WatchOvertaking):
        end = step.deadline
        if end is None:
            end = time.monotonic() + _window_ms(job.path, job.lookup_key, step.window_ms, step.ago_ms) / 1000
        left_ms = max(0, int((end - time.monotonic()) * 1000))
        return protocol.watch_for_overtaking(protocol.history_reader(job.path, job.lookup_key), left_ms,
                                             cancelled=cancelled, sleep=sleep), end
    if isinstance(step, Repair):
        from studio.engine.tokens import count_observations
        from studio.store import writes

        write = job.session.repair_overtaken_writes if job.session is not None else writes.repair_overtaken_writes
        return write(job.path, lookup_key=job.lookup_key, prefer=step.prefer, count_observations=count_observations)
    if isinstance(step, WatchSurvival):
        return watch_in_place(job.path, job.lookup_key, step.record_id, step.written, step.ago_ms, cancelled,
                              step.window_ms, sleep=sleep)
    raise TypeError(f"not a protocol step: {step!r}")


def _window_ms(path: str, lookup_key: str, window_ms: int | None, ago_ms: int | None) -> int:
    """WINDOW_MS, or the automatic watch window: from the stored turn timings, 0 when quiet for longer (AGO_MS)."""
    if window_ms is not None:
        return window_ms
    from studio.store.write.protocol import store_turn_ms, watch_window_ms

    window = watch_window_ms(store_turn_ms(path, lookup_key))
    if ago_ms is None or ago_ms > window:
        return 0  # quiet for longer than a turn takes: nothing can still be in flight
    return window


def watch_in_place(path: str, lookup_key: str, record_id: str, written: str, ago_ms: int | None,
                   cancelled: Callable[[], bool], window_ms: int | None = None, *,
                   sleep: Callable[[float], None] = time.sleep) -> bool:
    """Watch an in-place write (observe / activate) for the protocol's window; return False when it was overwritten.

    The written row carries no studio mark, so what is watched is its text: a turn that read the
    row before the commit rewrites `activeObservations` from its own copy and drops ours
    (studio.store.write.observation.observation_survived). WINDOW_MS defaults to the stored turn
    timings' window, 0 when the conversation was quiet for longer (AGO_MS) than a turn takes.
    """
    from studio.store.write.observation import observation_survived

    window_ms = _window_ms(path, lookup_key, window_ms, ago_ms)
    deadline = time.monotonic() + window_ms / 1000
    while True:
        if not observation_survived(path, record_id, written):
            return False
        if time.monotonic() >= deadline or cancelled():
            return True
        sleep(min(0.25, max(0.0, deadline - time.monotonic())))


def run_steps(steps: Generator[Step, Any, Any], job: WriteJob, *, cancelled: Callable[[], bool] = lambda: False,
              progress: Callable[[AgentActivity], None] | None = None,
              sleep: Callable[[float], None] = time.sleep) -> Any:
    """Run the protocol's STEPS one after the other in this thread (the command line); return the flow's result.

    Each step's error (a StudioError) is thrown into the flow, which decides; what it does not
    handle is raised here.
    """
    value, error = None, None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            return done.value
        try:
            value, error = perform(step, job, cancelled=cancelled, progress=progress, sleep=sleep), None
        except StudioError as exc:
            value, error = None, exc


# -- before the expensive part -------------------------------------------------------------------------

def preflight(path: str, lookup_key: str, options: ProtocolOptions,
              on_wait: Callable[[AgentActivity], None] | None = None, *,
              in_place: bool = False) -> AgentActivity | None:
    """Read the agent's activity before the model is called; wait up to OPTIONS.wait_s for the quiet period.

    ON_WAIT(activity) is called before a wait (the conversation is active, the write is not
    forced and there is time to wait). Returns the last activity read (None: no record); `refuses`
    says whether the write would be refused now.
    """
    from studio.store.write.protocol import store_activity, wait_for_quiet

    def probe():
        return store_activity(path, lookup_key, options.quiet_ms, in_place=in_place)

    activity = probe()
    if activity is not None and activity.active and not options.force and options.wait_s:
        if on_wait is not None:
            on_wait(activity)
        activity = wait_for_quiet(probe, options.wait_s)
    return activity


def refuses(activity: AgentActivity | None, options: ProtocolOptions) -> bool:
    """True when a write now would be refused: a live busy flag, or activity within the quiet period (not forced)."""
    return activity is not None and bool(activity.live_flags or (activity.active and not options.force
                                                                  and options.quiet_ms > 0))


def activity_json(activity: AgentActivity | None) -> dict | None:
    """ACTIVITY as the command's JSON gives it (seconds), or None."""
    if activity is None:
        return None
    return {"active": activity.active, "last_write_ago_s": None if activity.ago_ms is None else activity.ago_ms / 1000,
            "quiet_period_s": activity.quiet_ms / 1000, "live_flags": list(activity.live_flags),
            "message": activity.message()}


def waiting_text(activity: AgentActivity | None, quiet_ms: int) -> str:
    """Return the sentence shown while waiting for QUIET_MS (ms) of quiet, from the last ACTIVITY read (or None)."""
    period = f"{quiet_ms / 1000:g} s"
    if activity is None:
        return f"Waiting for {period} of quiet…"
    if activity.live_flags:
        return f"Waiting: {', '.join(activity.live_flags)} is set on this record (the agent is working on it)…"
    if activity.active:
        return (f"Waiting for {period} of quiet: {activity.what or 'the conversation'} was written "
                f"{activity.ago_ms / 1000:.1f} s ago ({activity.wait_ms / 1000:.1f} s to go)…")
    return f"Quiet for {period}: writing…"

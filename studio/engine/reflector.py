"""Run a reflection in-process: Mastra's Reflector loop against a model, or the offline condenser.

Three steps, all Qt-free and synchronous (the studio runs them on a worker thread):

    inp = load_reflection_input(path, thread_id="t1")            # read-only; what to reflect
    result = run_reflection(inp, strategy="llm", client=client,  # or strategy="rule-based"
                            progress=callback, cancel=token)
    diff = proposal_diff(inp, result)                            # current vs proposed log

Nothing here writes to the database; `studio.store.writes.commit_reflection` does, with
`expected_record_id=inp.record_id` (and `expected_active_observations=inp.observations`) so a
generation that changed since the preview is refused; pass `current_task` /
`suggested_response` from the result (None keeps the thread's values, as Mastra does) and
`clear_stale_reflecting=True` only after the user confirmed clearing a stale flag
(`inp.reflecting == "stale"`; "live" means refuse).

For the studio: call `load_reflection_input` on the database worker, `run_reflection` on the
network pool, with `progress` (a ReflectionProgress per step, from the worker thread: forward it
through a signal) and `cancel` (a studio.llm.CancelToken the Cancel button fires: an HTTP request
in flight is closed at once and `Cancelled` is raised). Errors to show: ReflectionInputError
(nothing to reflect), ReflectionRejected (degenerate/empty answers; `.attempts`), the
studio.llm.errors classes (bad key, unknown model, unreachable, timeout, rate limited, server
error), Cancelled. `studio.llm.key_status(model)` tells the dialog where the key comes from, and
`studio.llm.PROVIDERS` lists what can be picked. `ReflectionResult.to_json()` and
`proposal_diff(...)` (rows, `high_priority_losses`, `compression_ratio`) feed the preview.

The LLM loop mirrors Mastra's `ReflectorRunner.call` (@mastra/memory 1.31.0): the first attempt
uses the model's start level (Mastra's getCompressionStartLevel: 1, or 2 for gemini-2.5-flash),
each retry adds stronger compression guidance up to min(4, start + 3); an attempt whose answer is
degenerate (repetitive) or holds no observations is a failure and escalates; the loop stops at
the first acceptable answer below the reflection threshold (`tokens < observationTokens`, Mastra's
validateCompression). Where Mastra commits the last attempt, we keep the smallest acceptable one.
When every attempt failed, `ReflectionRejected` is raised (Mastra refuses to commit an empty
reflection). Tokens are Mastra's estimate (`studio.engine.tokens.count_observations`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from studio.common.cancel import CancelToken
from studio.engine import tokens
from studio.engine.diff import GenerationDiff, diff_logs
from studio.engine.reflector_parse import has_observation_groups, parse_reflector_output
from studio.engine.reflector_prompt import MAX_COMPRESSION_LEVEL, build_prompt
from studio.errors import EngineError
from studio.llm.wire import Usage

STRATEGIES = ("llm", "rule-based")


class ReflectionInputError(EngineError):
    """What was asked to reflect does not exist or holds nothing to reflect (CLI exit 2)."""


class ReflectionRejected(EngineError):
    """Every Reflector answer was degenerate or empty: there is nothing safe to commit.

    `reason` is "degenerate", "empty" or "mixed"; `attempts` lists every Attempt.
    """

    def __init__(self, message: str, reason: str, attempts: list[Attempt]):
        super().__init__(message)
        self.reason = reason
        self.attempts = attempts


@dataclass(frozen=True)
class ReflectionProgress:
    """One progress report.

    stage: "attempt" (a Reflector attempt starts), "request" (HTTP try), "retry-wait" (waiting
    DELAY_S before retrying), "answer" (an attempt's result, TOKENS set), "condensing"
    (rule-based), "done". ATTEMPT is 1-based; LEVEL is the compression level (0-4).
    """

    stage: str
    message: str
    attempt: int | None = None
    level: int | None = None
    tokens: int | None = None
    delay_s: float | None = None


ProgressCallback = Callable[[ReflectionProgress], None]


@dataclass
class Attempt:
    """One Reflector attempt: compression LEVEL, TOKENS of its observations (Mastra's estimate;
    for a degenerate answer, of the raw answer), whether it was DEGENERATE or EMPTY, provider USAGE."""

    level: int
    tokens: int
    degenerate: bool = False
    empty: bool = False
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    @property
    def acceptable(self) -> bool:
        """Return True when the attempt produced a usable log."""
        return not self.degenerate and not self.empty

    def to_json(self) -> dict:
        """Return {level, tokens, degenerate, empty}."""
        return {"level": self.level, "tokens": self.tokens, "degenerate": self.degenerate, "empty": self.empty}


@dataclass
class ReflectionInput:
    """What a reflection starts from (read from the database, read-only).

    Tokens: `observation_token_count` is the stored count, `input_tokens` Mastra's estimate of
    the log now (what its Reflector is measured against); `reflection_threshold` is the record's
    observationTokens in force. `reflecting` is None, "live" or "stale" (isReflecting set by a
    process that is or is not still working, judged by the record's age).
    """

    path: str
    thread_id: str | None
    lookup_key: str
    scope: str
    record_id: str
    generation_count: int
    observations: str
    observation_token_count: int
    input_tokens: int
    reflection_threshold: int
    prior_current_task: str | None = None
    prior_suggested_response: str | None = None
    default_model: str | None = None
    reflecting: str | None = None

    @property
    def over_threshold(self) -> bool:
        """Return True when the stored count is at or over the threshold (Mastra's shouldReflect)."""
        return self.observation_token_count >= self.reflection_threshold


@dataclass
class ReflectionResult:
    """A proposed new generation (nothing written yet).

    `observations` is the new log and `observation_token_count` its estimate (tokens, what the
    new row stores); `current_task` / `suggested_response` are None when the answer had none
    (Mastra then keeps the thread's previous values); `thread_title` is informational (Mastra's
    reflection does not store it). `notes` are user-facing remarks (lines truncated, target not
    reached, ...). `reached_target` is False when the log is not below the threshold.
    """

    strategy: str
    observations: str
    observation_token_count: int
    input_tokens: int
    reflection_threshold: int
    model: str | None = None
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    notes: list[str] = field(default_factory=list)
    elapsed_ms: int = 0

    @property
    def reached_target(self) -> bool:
        """Return True when the new log is below the reflection threshold."""
        return self.observation_token_count < self.reflection_threshold

    @property
    def compression_ratio(self) -> float | None:
        """Return input / output tokens (2.0 = half the size), None for an empty output."""
        return self.input_tokens / self.observation_token_count if self.observation_token_count else None

    def to_json(self) -> dict:
        """Return a JSON-ready summary (without the diff)."""
        return {
            "strategy": self.strategy, "model": self.model, "observations": self.observations,
            "observation_token_count": self.observation_token_count, "input_tokens": self.input_tokens,
            "reflection_threshold": self.reflection_threshold, "reached_target": self.reached_target,
            "current_task": self.current_task, "suggested_response": self.suggested_response,
            "thread_title": self.thread_title, "attempts": [a.to_json() for a in self.attempts],
            "usage": self.usage.to_json(), "notes": list(self.notes),
        }


# -- input -------------------------------------------------------------------------------------

def load_reflection_input(path: str, *, thread_id: str | None = None, lookup_key: str | None = None,
                          now_ms: int | None = None) -> ReflectionInput:
    """Read what a reflection of THREAD_ID's OM record (or of LOOKUP_KEY) starts from; read-only.

    Raises StoreError (file unusable) or ReflectionInputError (no such thread, no OM record,
    nothing observed yet).
    """
    from studio.common.om_settings import max_threshold, resolve_settings
    from studio.engine.status import flag_states
    from studio.llm.providers import default_model_from_config
    from studio.store import open_store

    with open_store(path) as store, store.snapshot():
        thread = None
        if thread_id is not None:
            thread = store.get_thread(thread_id)
            if thread is None:
                raise ReflectionInputError(f"No thread {thread_id!r} in {store.location.display}")
            key = store.lookup_key_for_thread(thread) if lookup_key is None else lookup_key
            if key is None:
                raise ReflectionInputError(f"Thread {thread_id!r} has no observational memory to reflect")
        elif lookup_key is not None:
            key = lookup_key
        else:
            raise ReflectionInputError("Say which thread (or OM lookup key) to reflect")
        record = store.om_current(key)
        if record is None:
            raise ReflectionInputError(f"No observational memory record {key!r} in {store.location.display}")
        display = store.location.display
    observations = record.active_observations
    if not observations.strip():
        raise ReflectionInputError(f"{key} has no observations yet: there is nothing to reflect")
    settings = resolve_settings(record.config, record.scope)
    om_meta = thread.om_metadata if thread is not None else {}
    flag = next((f for f in flag_states(record, now_ms) if f.name == "isReflecting" and f.set), None)

    def text(value) -> str | None:
        return value if isinstance(value, str) and value.strip() else None

    return ReflectionInput(
        path=display, thread_id=thread_id if thread is not None else record.thread_id, lookup_key=key,
        scope=record.scope, record_id=record.id, generation_count=record.generation_count,
        observations=observations, observation_token_count=record.observation_token_count,
        input_tokens=tokens.count_observations(observations),
        reflection_threshold=max_threshold(settings.reflection_tokens),
        prior_current_task=text(om_meta.get("currentTask")),
        prior_suggested_response=text(om_meta.get("suggestedResponse")),
        default_model=default_model_from_config(record.config),
        reflecting=None if flag is None else ("stale" if flag.stale else "live"),
    )


# -- the LLM loop ------------------------------------------------------------------------------

def compression_start_level(model: str | None) -> int:
    """Return Mastra's getCompressionStartLevel for MODEL: 2 for gemini-2.5-flash models, else 1."""
    return 2 if model and "gemini-2.5-flash" in model else 1


def reflect_observations(observations: str, *, client, reflection_threshold: int,
                         prior_current_task: str | None = None, prior_suggested_response: str | None = None,
                         start_level: int | None = None, progress: ProgressCallback | None = None,
                         cancel: CancelToken | None = None) -> ReflectionResult:
    """Ask CLIENT (an LLMClient) to reflect OBSERVATIONS below REFLECTION_THRESHOLD (tokens).

    START_LEVEL defaults to Mastra's start level for the model (see compression_start_level; 0
    reproduces Mastra's own `reflect()` API ladder 0-3). Raises ReflectionRejected, a
    ProviderError (studio.llm.errors) or Cancelled; see the module docstring for the loop.
    """
    started = time.monotonic()
    report = progress or (lambda p: None)
    input_tokens = tokens.count_observations(observations)
    level = compression_start_level(getattr(client, "model", None)) if start_level is None else start_level
    level = max(0, min(MAX_COMPRESSION_LEVEL, level))
    max_level = min(MAX_COMPRESSION_LEVEL, level + 3)
    attempts: list[Attempt] = []
    best = None  # (tokens, ParsedReflection)
    usage = Usage()
    truncated = 0
    while True:
        if cancel is not None:
            cancel.raise_if_cancelled()
        number = len(attempts) + 1
        report(ReflectionProgress("attempt", f"Attempt {number} at compression level {level}", number, level))
        prompt = build_prompt(observations, level=level, input_tokens=input_tokens,
                              target_tokens=reflection_threshold, prior_current_task=prior_current_task,
                              prior_suggested_response=prior_suggested_response)

        def on_event(event, number=number, level=level) -> None:
            if event.kind == "retry-wait":
                report(ReflectionProgress("retry-wait", f"{event.message}; retrying in {event.delay_s:.1f} s",
                                          number, level, delay_s=event.delay_s))
            elif event.kind == "request":
                report(ReflectionProgress("request", f"Waiting for {client.model} (try {event.attempt})",
                                          number, level))

        answer = client.complete(prompt.system, prompt.prompt, cancel=cancel, on_event=on_event)
        usage = usage + answer.usage
        parsed = parse_reflector_output(answer.text)
        if parsed.degenerate:
            attempt = Attempt(level, tokens.count_observations(answer.text), degenerate=True)
        else:
            attempt = Attempt(level, tokens.count_observations(parsed.observations), empty=parsed.empty)
        attempt.usage, attempt.finish_reason = answer.usage, answer.finish_reason
        attempts.append(attempt)
        what = ("degenerate (repetitive)" if attempt.degenerate else "empty" if attempt.empty
                else f"{attempt.tokens:,} tokens")
        report(ReflectionProgress("answer", f"Attempt {number}: {what}", number, level, attempt.tokens))
        if attempt.acceptable:
            if best is None or attempt.tokens < best[0]:
                best = (attempt.tokens, parsed)
                truncated = parsed.truncated_lines
            if attempt.tokens < reflection_threshold:
                break
        if level >= max_level:
            break
        level += 1

    if best is None:
        kinds = {("degenerate" if a.degenerate else "empty") for a in attempts}
        reason = kinds.pop() if len(kinds) == 1 else "mixed"
        said = {"degenerate": "degenerate (the model repeated itself)", "empty": "empty (no observations)",
                "mixed": "degenerate or empty"}[reason]
        raise ReflectionRejected(
            f"Every Reflector answer was {said} after {len(attempts)} attempt(s); nothing was written",
            reason, attempts)
    chosen = best[1]
    notes = []
    if truncated:
        notes.append(f"{truncated} overlong line(s) were cut at 10,000 characters, as Mastra does")
    if best[0] >= reflection_threshold:
        notes.append(f"No attempt got below the reflection threshold ({reflection_threshold:,} tokens); "
                     f"the smallest answer has {best[0]:,} tokens")
    if has_observation_groups(observations):
        notes.append("The log has retrieval-mode observation groups; the new log is written without them")
    result = ReflectionResult(
        strategy="llm", model=getattr(client, "model", None), observations=chosen.observations,
        observation_token_count=best[0], input_tokens=input_tokens, reflection_threshold=reflection_threshold,
        current_task=chosen.current_task, suggested_response=chosen.suggested_response,
        thread_title=chosen.thread_title, attempts=attempts, usage=usage, notes=notes,
        elapsed_ms=int((time.monotonic() - started) * 1000))
    report(ReflectionProgress("done", f"Proposed log: {best[0]:,} tokens", len(attempts), None, best[0]))
    return result


# -- both strategies ---------------------------------------------------------------------------

def run_reflection(inp: ReflectionInput, *, strategy: str = "llm", client=None, start_level: int | None = None,
                   progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> ReflectionResult:
    """Propose a new generation for INP with STRATEGY "llm" (needs CLIENT) or "rule-based" (offline).

    Raises ReflectionInputError for an unknown strategy or a missing client, plus whatever
    reflect_observations raises.
    """
    if strategy == "llm":
        if client is None:
            raise ReflectionInputError("The llm strategy needs a model (provider/model)")
        return reflect_observations(inp.observations, client=client, reflection_threshold=inp.reflection_threshold,
                                    prior_current_task=inp.prior_current_task,
                                    prior_suggested_response=inp.prior_suggested_response,
                                    start_level=start_level, progress=progress, cancel=cancel)
    if strategy == "rule-based":
        from studio.engine.condenser import condense

        report = progress or (lambda p: None)
        report(ReflectionProgress("condensing", "Condensing the log offline (rule-based)"))
        started = time.monotonic()
        condensed = condense(inp.observations, inp.reflection_threshold, cancel=cancel)
        result = ReflectionResult(
            strategy="rule-based", observations=condensed.observations, observation_token_count=condensed.tokens,
            input_tokens=inp.input_tokens, reflection_threshold=inp.reflection_threshold,
            attempts=[Attempt(0, condensed.tokens)], notes=condensed.notes(),
            elapsed_ms=int((time.monotonic() - started) * 1000))
        report(ReflectionProgress("done", f"Proposed log: {condensed.tokens:,} tokens", 1, 0, condensed.tokens))
        return result
    raise ReflectionInputError(f"Unknown strategy {strategy!r} (use one of: {', '.join(STRATEGIES)})")


def proposal_diff(inp: ReflectionInput, result: ReflectionResult) -> GenerationDiff:
    """Return the line diff of the current log against the proposed one, with token figures.

    Old tokens are the stored observationTokenCount, new tokens the count the new row will store.
    """
    return diff_logs(inp.observations, result.observations, inp.observation_token_count,
                     result.observation_token_count)


def proposal_changes_nothing(inp: ReflectionInput, result: ReflectionResult) -> bool:
    """Return True when RESULT would write a copy of INP's generation: the same log, and a current task /
    suggested response that are absent or the thread's own (see `reflection_changes_nothing`).

    Such a proposal is not written (the store refuses it with reason "unchanged"); the CLI says
    "nothing to condense" and the Reflect dialog keeps Commit disabled.
    """
    from studio.store.write.common import present_string
    from studio.store.write.reflection import reflection_changes_nothing

    om = {key: value for key, value in (("currentTask", inp.prior_current_task),
                                        ("suggestedResponse", inp.prior_suggested_response)) if value is not None}
    return reflection_changes_nothing(inp.observations, om, result.observations,
                                      present_string(result.current_task, "current_task"),
                                      present_string(result.suggested_response, "suggested_response"))


def nothing_to_condense(strategy: str, outcome: str = "nothing was written") -> str:
    """The one sentence said when a proposal changes nothing (STRATEGY "rule-based" or "llm"), ending in OUTCOME."""
    who = "the rules leave" if strategy == "rule-based" else "the Reflector's answer leaves"
    return f"nothing to condense: {who} the log as it is; {outcome}"

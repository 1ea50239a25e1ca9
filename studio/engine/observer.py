"""Run an observation in-process: Mastra's Observer against a model, the rule-based Observer, or a given answer.

Three steps, all Qt-free and synchronous (the studio runs them on worker threads):

    window = load_observation_window(path, "t1")          # read-only; what observe() would observe
    proposal = run_observation(window, strategy="llm", client=client,   # or "rule-based", or answer=TEXT
                               progress=callback, cancel=token)
    row = commit_proposal(path, proposal, force=False, idle_ms=30_000)  # the write (protocol inside)

`window` is a `studio.store.write.observation.ObservationWindow` (thread scope) or an
`observation_resource.ResourceObservationWindow` (resource scope); both have `meets`, `tokens`,
`pending_message_tokens`, `threshold` (observe()'s gate, Mastra's tokenx estimate, tokens) and
`message_ids`. The proposal holds the parsed answer in the shape the write takes (an
ObserverOutput, or {thread id: ObserverOutput} in resource scope), the new lines, and the
observation-token count before and after as the commit will store it (Mastra's
`countObservations` of the whole new log).

The LLM call mirrors Mastra's synchronous Observer (@mastra/memory 1.31.0): one request with our
own prompt texts (`studio.engine.observer_prompt`: the window rendered by
formatMessagesForObserver, the kept log cut to previousObserverTokens, the thread's prior current
task / suggested response; in resource scope the multi-thread form), the answer parsed by
Mastra's rules (`studio.engine.observer_parse`). A degenerate (repetitive) answer or one without
observation lines is rejected (`ObservationRejected`), as Mastra commits nothing then. Errors:
ObservationInputError (nothing to observe, unknown strategy), ObservationRejected, the
studio.llm.errors classes, studio.llm.Cancelled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from studio.common.cancel import CancelToken
from studio.common.jscompat import js_trim
from studio.engine import tokens
from studio.errors import EngineError
from studio.llm.wire import Usage

STRATEGIES = ("llm", "rule-based")


class ObservationInputError(EngineError):
    """Nothing to observe (no thread, no record, no unobserved messages) or an unusable request (CLI exit 2)."""


class ObservationRejected(EngineError):
    """The Observer's answer cannot be committed: REASON "degenerate" (it repeated itself) or "empty"."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ObservationProgress:
    """One progress report: STAGE "request" (HTTP try), "retry-wait" (DELAY_S before a retry),
    "observing" (rule-based / answer file), "done"."""

    stage: str
    message: str
    delay_s: float | None = None


ProgressCallback = Callable[[ObservationProgress], None]


@dataclass
class ObservationProposal:
    """A proposed observation (nothing written yet).

    OUTPUT: an ObserverOutput (thread scope) or {thread id: ObserverOutput} (resource scope);
    NEW_LINES: the observation text this cycle adds (resource scope: the per-thread sections);
    TOKENS_BEFORE / TOKENS_AFTER: the record's observationTokenCount now and after the commit
    (tokens, Mastra's estimate of the whole log); REFLECTION_THRESHOLD: the record's
    observationTokens (a reflection follows at or above it). NOTES: user-facing remarks.
    """

    strategy: str
    window: object = field(repr=False)
    output: object
    new_lines: str
    new_log: str = field(repr=False)
    tokens_before: int
    tokens_after: int
    reflection_threshold: int
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    notes: list[str] = field(default_factory=list)
    elapsed_ms: int = 0

    @property
    def resource_scope(self) -> bool:
        """True when the proposal is a resource-scope (multi-thread) observation."""
        return isinstance(self.output, dict)

    def hints(self) -> dict[str, dict]:
        """Return {thread id: {current_task, suggested_response, thread_title}} the commit will store."""
        outputs = self.output if self.resource_scope else {self.window.thread_id: self.output}
        return {t: {"current_task": o.current_task, "suggested_response": o.suggested_response,
                    "thread_title": o.thread_title} for t, o in outputs.items()}

    def to_json(self) -> dict:
        """Return a JSON-ready summary (the window's own to_json() is separate)."""
        doc = {"strategy": self.strategy, "model": self.model, "observations": self.new_lines,
               "observation_tokens_before": self.tokens_before, "observation_tokens_after": self.tokens_after,
               "reflection_threshold": self.reflection_threshold, "usage": self.usage.to_json(),
               "notes": list(self.notes)}
        if self.resource_scope:
            doc["threads"] = self.hints()
        else:
            doc.update(self.hints()[self.window.thread_id])
        return doc


def load_observation_window(path: str, thread_id: str):
    """Return THREAD_ID's unobserved window (either scope), read-only, as Mastra's observe() selects it.

    Raises ObservationInputError when the thread or its OM record is missing; StoreError when the
    file is unusable.
    """
    from studio.engine.observe_window import observation_window, resource_observation_window
    from studio.errors import WriteRefused
    from studio.store import open_store

    with open_store(path) as store:
        thread = store.get_thread(thread_id)
        if thread is None:
            raise ObservationInputError(f"No thread {thread_id!r} in {store.location.display}")
        key = store.lookup_key_for_thread(thread)
    if key is None:
        raise ObservationInputError(f"Thread {thread_id!r} has no observational memory")
    try:
        return resource_observation_window(path, thread_id) if key.startswith("resource:") \
            else observation_window(path, thread_id)
    except WriteRefused as exc:
        raise ObservationInputError(str(exc)) from exc


def _thread_hints(path: str, thread_ids: list[str]) -> dict[str, tuple[str | None, str | None]]:
    from studio.store import open_store

    out = {}
    with open_store(path) as store:
        for tid in thread_ids:
            thread = store.get_thread(tid)
            om = thread.om_metadata if thread is not None else {}
            task, response = om.get("currentTask"), om.get("suggestedResponse")
            out[tid] = (task if isinstance(task, str) else None, response if isinstance(response, str) else None)
    return out


def _config(window) -> dict:
    import json

    config = window.record.config
    if isinstance(config, (str, bytes)):
        try:
            config = json.loads(config)
        except ValueError:
            config = {}
    return config if isinstance(config, dict) else {}


def default_observer_model(window) -> str | None:
    """Return the Observer model stored in WINDOW's record config as `provider/model`, or None when
    absent or not one we can call (`studio.llm.providers.default_model_from_config`)."""
    from studio.llm.providers import default_model_from_config

    return default_model_from_config(_config(window), role="observation")


def _settings(window):
    from studio.common.om_settings import max_threshold, resolve_settings

    config = _config(window)
    obs = config.get("observation") if isinstance(config.get("observation"), dict) else {}
    previous = obs.get("previousObserverTokens", 2000)
    previous = previous if isinstance(previous, (int, float)) and not isinstance(previous, bool) else 2000
    settings = resolve_settings(config, "resource" if _is_resource(window) else "thread")
    return int(previous), max_threshold(settings.reflection_tokens)


def _is_resource(window) -> bool:
    return hasattr(window, "window_ids")


def _threads(window) -> list[tuple[str, list[dict]]]:
    if _is_resource(window):
        return [(t, msgs) for t, msgs, _ in window.threads]
    return [(window.thread_id, window.messages)]


def build_prompt_for(window, path: str | None = None):
    """Return the ObserverPrompt the LLM strategy sends for WINDOW (PATH: where to read the threads' prior hints)."""
    from studio.engine.observer_prompt import build_multi_thread_prompt, build_observer_prompt

    previous_tokens, _ = _settings(window)
    previous = window.record.active_observations
    threads = _threads(window)
    prior = _thread_hints(path, [t for t, _ in threads]) if path else {}
    if _is_resource(window):
        return build_multi_thread_prompt(threads, prior=prior, previous=previous, previous_tokens=previous_tokens)
    task, response = prior.get(window.thread_id, (None, None))
    return build_observer_prompt(window.messages, prior_current_task=task, prior_suggested_response=response,
                                 previous=previous, previous_tokens=previous_tokens)


def parse_answer(window, text: str, source: str = "The Observer"):
    """Return the write's input for WINDOW from an Observer answer TEXT, parsed as Mastra parses it
    with the record's inline extractors (its stored config: thread-title when `threadTitle` is on).

    Thread scope: an ObserverOutput; resource scope: {thread id: ObserverOutput} of the observed
    threads. Raises ObservationRejected when the answer is degenerate or holds no observation lines.
    """
    from studio.engine.observer_parse import observer_slugs, parse_multi_thread_output, parse_observer_output
    from studio.store.write.observation import ObserverOutput

    def out(p) -> ObserverOutput:
        return ObserverOutput(p.observations, p.current_task, p.suggested_response, p.thread_title, p.extracted)

    slugs = observer_slugs(_config(window))
    if _is_resource(window):
        parsed, degenerate = parse_multi_thread_output(text, slugs)
        observed = {t for t, _ in _threads(window)}
        outputs = {t: out(p) for t, p in parsed.items() if t in observed}
        empty = not any(js_trim(o.observations) for o in outputs.values())
    else:
        p = parse_observer_output(text, slugs)
        degenerate, outputs, empty = p.degenerate, out(p), p.empty
    if degenerate:
        raise ObservationRejected(f"{source}'s answer repeats itself (Mastra rejects it as degenerate); "
                                  "nothing was written", "degenerate")
    if empty:
        raise ObservationRejected(f"{source}'s answer holds no observations for the observed thread(s); "
                                  "nothing was written", "empty")
    return outputs


def proposed_log(window, output) -> tuple[str, str]:
    """Return (the new lines, the whole activeObservations) the commit of OUTPUT writes for WINDOW."""
    import re

    from studio.store.records import iso_to_ms
    from studio.store.write.common import js_date_round_trip
    from studio.store.write.observation_resource import replace_or_append_section

    def newest(msgs: list[dict]) -> dict:
        return max(msgs, key=lambda m: iso_to_ms(m.get("createdAt")) or 0)

    old = window.record.active_observations or ""
    if not _is_resource(window):
        obs = js_trim(output.observations or "")
        at = js_date_round_trip(newest(window.messages).get("createdAt"))
        return obs, (f"{old}\n\n--- message boundary ({at}) ---\n\n{obs}" if old else obs)
    text, sections = old, []
    for tid, msgs, _ in window.threads:
        o = output.get(tid)
        obs = js_trim(o.observations or "") if o else ""
        at = js_date_round_trip(newest(msgs).get("createdAt"))
        body = js_trim(re.sub(r"</?thread\b[^>]{0,1024}>", "", obs, flags=re.I))
        section = f'<thread id="{tid}">\n{body}\n</thread>'
        sections.append(section)
        text = replace_or_append_section(text, section, at)
    return "\n\n".join(sections), text


def run_observation(window, *, strategy: str = "llm", client=None, answer: str | None = None, path: str | None = None,
                    progress: ProgressCallback | None = None, cancel: CancelToken | None = None) -> ObservationProposal:
    """Propose the observation of WINDOW with STRATEGY "llm" (needs CLIENT), "rule-based" (offline,
    thread scope), or from ANSWER (an Observer answer's text; STRATEGY is then ignored).

    PATH: the database, to read the threads' prior hints for the prompt. Raises
    ObservationInputError (no messages, unknown strategy, rule-based in resource scope, no client),
    ObservationRejected, a ProviderError, or Cancelled.
    """
    started = time.monotonic()
    report = progress or (lambda p: None)
    if not window.message_ids:
        raise ObservationInputError(f"Thread {window.thread_id!r} has no unobserved messages")
    usage, model, notes = Usage(), None, []
    if answer is not None:
        used, source = "answer", "The answer"
        report(ObservationProgress("observing", "Reading the given answer"))
        text = answer
    elif strategy == "rule-based":
        if _is_resource(window):
            raise ObservationInputError("The rule-based Observer observes thread-scope records only "
                                        "(this one is resource scope); pick a model")
        from studio.engine.rule_observer import rule_based_answer

        used, source = "rule-based", "The rule-based Observer"
        report(ObservationProgress("observing", "Observing offline (rule-based: one dated line per message)"))
        text = rule_based_answer(window.messages)
        notes.append("Rule-based: every line is marked [rule-based]; no model read the messages")
    elif strategy == "llm":
        if client is None:
            raise ObservationInputError("The llm strategy needs a model (provider/model)")
        used, source, model = "llm", f"The Observer ({client.model})", client.model
        prompt = build_prompt_for(window, path)

        def on_event(event) -> None:
            if event.kind == "retry-wait":
                report(ObservationProgress("retry-wait", f"{event.message}; retrying in {event.delay_s:.1f} s",
                                           delay_s=event.delay_s))
            elif event.kind == "request":
                report(ObservationProgress("request", f"Waiting for {client.model} (try {event.attempt})"))

        if cancel is not None:
            cancel.raise_if_cancelled()
        completion = client.complete(prompt.system, prompt.prompt, cancel=cancel, on_event=on_event)
        text, usage = completion.text, completion.usage
    else:
        raise ObservationInputError(f"Unknown strategy {strategy!r} (use one of: {', '.join(STRATEGIES)})")
    if cancel is not None:
        cancel.raise_if_cancelled()
    output = parse_answer(window, text, source)
    new_lines, new_log = proposed_log(window, output)
    _, reflection_threshold = _settings(window)
    after = tokens.count_observations(new_log)
    if after >= reflection_threshold:
        notes.append(f"After this observation the log holds {after:,} tokens, at or over the reflection threshold "
                     f"({reflection_threshold:,}): Mastra reflects on the next turn")
    proposal = ObservationProposal(
        strategy=used, window=window, output=output, new_lines=new_lines, new_log=new_log,
        tokens_before=window.record.observation_token_count, tokens_after=after,
        reflection_threshold=reflection_threshold, model=model, usage=usage, notes=notes,
        elapsed_ms=int((time.monotonic() - started) * 1000))
    report(ObservationProgress("done", f"Proposed {tokens.count_observations(new_lines):,} tokens of new observations"))
    return proposal


def commit_proposal(path: str, proposal: ObservationProposal, *, force: bool = False, idle_ms: int = 0,
                    now_ms: int | None = None) -> dict:
    """Write PROPOSAL as Mastra's observe() writes it (one transaction, protocol checks inside); return the OM row.

    FORCE: write although the window is below the threshold. Raises WriteRefused (file unchanged).
    """
    from studio.store.write.observation import commit_observation
    from studio.store.write.observation_resource import commit_resource_observation

    commit = commit_resource_observation if proposal.resource_scope else commit_observation
    return commit(path, proposal.window, proposal.output, force=force, idle_ms=idle_ms, now_ms=now_ms)

"""Replay a thread's real messages through Observational Memory's trigger rules with other settings.

Mirrors when @mastra/memory 1.31.0 fires each OM operation at step 0 of a turn (the
`ObservationStep.prepare` of its processor; turn k starts at the k-th user message):

1. async buffering on: activate buffered chunks when the window is at the threshold
   (`activate` with `checkThreshold`; chunk choice of `swapBufferedToActive`);
2. `maybeReflect`: reflect when the log is at `observationTokens` (sync), or with async
   reflection buffer a reflection at `bufferActivation` of it and activate it at the threshold
   (sync again above `blockAfter`); a best-effort reflection still over the threshold is not
   retried until the log changes;
3. `getStatus`: below the threshold buffer a chunk each time the window crosses a
   `bufferTokens` interval (half intervals near the threshold); at the threshold activate
   chunks if any, else observe synchronously and then `maybeReflect` (whose new generation
   starts from the cursor the record had before that observation, as Mastra's does).

What the Observer and the Reflector would write is not known, so output sizes are modelled
from this thread's measured compression ratios (`observation_ratio`: observation tokens per
message token observed; `reflection_ratio`: reflection tokens per observation token): the
result is an estimate. Replaying with the stored settings uses the real outputs' sizes, cycle by
cycle, so the replay reproduces the real run. Background operations are taken to finish before
the next turn; steps after step 0 (tool loops) are not replayed.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from studio.common.om_settings import activation_chunk_count, js_round
from studio.engine import tokens
from studio.engine.events import (
    ACTIVATION,
    BUFFERING,
    OBSERVATION,
    REFLECTION,
    REFLECTION_ACTIVATION,
    REFLECTION_BUFFERING,
    OMEvent,
)
from studio.engine.timeline import MessageWindow, Point, Timeline, build_timeline
from studio.engine.whatif_settings import (  # re-exported: the settings part lives there
    ResolvedSettings,
    WhatIfSettings,
    WhatIfSettingsError,
    settings_with,  # noqa: F401 (re-exported for the CLI, the panel and tests)
)
from studio.errors import EngineError
from studio.store.memory_store import MemoryStore

#: Tokens a `--- message boundary (…) ---` separator adds to the log (tokenx estimate).
BOUNDARY_TOKENS = tokens.count_string("\n\n--- message boundary (2026-01-01T00:00:00.000Z) ---\n\n")
#: Ratios used when the thread has no measured cycle (typical Observer / Reflector compression).
DEFAULT_OBSERVATION_RATIO = 0.1
DEFAULT_REFLECTION_RATIO = 0.5
MAX_COMPRESSION_LEVEL = 4


@dataclass
class TurnContext:
    """What the actor's context held from memory at one turn, after OM's step-0 work (tokens)."""

    turn: int
    at: str | None
    message_tokens: int
    observation_tokens: int
    buffered_tokens: int
    threshold: int
    reflection_threshold: int

    @property
    def context_tokens(self) -> int:
        return self.message_tokens + self.observation_tokens

    def to_json(self) -> dict:
        return {**asdict(self), "context_tokens": self.context_tokens}


@dataclass
class WhatIfResult:
    """A replay's series, events and counts (an estimate unless noted; token figures in tokens)."""

    settings: WhatIfSettings
    resolved: ResolvedSettings
    observation_ratio: float
    reflection_ratio: float
    uses_real_sizes: bool
    points: list[Point] = field(default_factory=list)
    events: list[OMEvent] = field(default_factory=list)
    turns: list[TurnContext] = field(default_factory=list)
    observer_calls: int = 0
    reflector_calls: int = 0
    thread_id: str | None = None
    lookup_key: str = ""

    def count(self, *kinds: str) -> int:
        """Return how many events of the given kinds fired."""
        return sum(1 for e in self.events if e.kind in kinds)

    def turns_of(self, *kinds: str) -> list[int]:
        """Return the turns on which events of KINDS fired, in order."""
        return [e.turn for e in self.events if e.kind in kinds]

    @property
    def peak_context_tokens(self) -> int:
        """Return the largest message window + log the actor got at a turn (after step 0; tokens).

        Window and log are taken at the same moment (a turn's `TurnContext`), as
        `studio.engine.context.agent_peaks` measures the real run.
        """
        return max((t.context_tokens for t in self.turns), default=0)

    @property
    def peak_message_tokens(self) -> int:
        """Return the largest message window the actor got at a turn (after step 0; tokens).

        Measured at the same moments as `peak_context_tokens`, so it is never larger than it; the
        window just before an observation (which no actor call saw) is not counted.
        """
        return max((t.message_tokens for t in self.turns), default=0)

    def to_json(self) -> dict:
        """Return the `whatif --json` document."""
        return {
            "thread_id": self.thread_id, "lookup_key": self.lookup_key, "estimate": True,
            "uses_real_sizes": self.uses_real_sizes, "settings": self.settings.to_json(),
            "ratios": {"observation": round(self.observation_ratio, 6), "reflection": round(self.reflection_ratio, 6)},
            "observer_calls": self.observer_calls, "reflector_calls": self.reflector_calls,
            "observations": self.count(OBSERVATION), "reflections": self.count(REFLECTION, REFLECTION_ACTIVATION),
            "bufferings": self.count(BUFFERING), "activations": self.count(ACTIVATION),
            "peak_context_tokens": self.peak_context_tokens, "peak_message_tokens": self.peak_message_tokens,
            "turns": [t.to_json() for t in self.turns],
            "points": [p.to_json() for p in self.points],
            "events": [e.to_json() for e in self.events],
        }


def real_sizes(timeline: Timeline) -> dict[str, list[int]]:
    """Return the real run's log sizes after each cycle: {"observation": [...], "reflection": [...], "chunk": [...]}.

    "observation": `observationTokenCount` right after each sync observation; "reflection": the
    new generation's size after each reflection; "chunk": each activated chunk's observation tokens.
    """
    out: dict[str, list[int]] = {"observation": [], "reflection": [], "chunk": []}
    for e in timeline.events:
        if e.kind == OBSERVATION and e.status == "completed" and e.total_observation_tokens is not None:
            out["observation"].append(e.total_observation_tokens)
        elif e.kind in (REFLECTION, REFLECTION_ACTIVATION) and e.status in ("completed", "recorded"):
            size = e.total_observation_tokens if e.total_observation_tokens is not None else e.output_tokens
            if size is not None:
                out["reflection"].append(size)
        elif e.kind == ACTIVATION and e.output_tokens is not None:
            out["chunk"].append(e.output_tokens)
    return out


def measured_ratios(timeline: Timeline) -> tuple[float, float]:
    """Return (observation ratio, reflection ratio) measured on TIMELINE, defaults when unmeasured."""
    obs, refl = timeline.observation_ratio, timeline.reflection_ratio
    return (obs if obs is not None else DEFAULT_OBSERVATION_RATIO,
            refl if refl is not None else DEFAULT_REFLECTION_RATIO)


def modelled_reflection(tokens_in: int, ratio: float) -> int:
    """Return the modelled size of a reflection of TOKENS_IN observation tokens at RATIO (tokens, >= 1).

    The model never lets a reflection grow the log: Mastra retries a Reflector output that is not
    below the threshold at stronger compression and keeps the smallest candidate, so a ratio
    above 1 (measured on a thread whose Reflector output repeated itself) keeps the log's size.
    Applied at every reflection, a ratio above 1 would multiply the log geometrically, into
    figures no counter can hold.
    """
    return max(1, min(tokens_in, js_round(tokens_in * ratio)))


def reflector_attempts(output: int, threshold: int, model: str | None) -> int:
    """Return Reflector calls for one reflection: retries escalate while the output is not below THRESHOLD."""
    start = 2 if model and "gemini-2.5-flash" in model else 1
    last = min(MAX_COMPRESSION_LEVEL, start + 3)
    return 1 if output < threshold else last - start + 1


class _Replay:
    """State of one replay (see the module docstring for the order of checks)."""

    def __init__(self, tl: Timeline, dicts: list[dict], rs: ResolvedSettings, obs_ratio: float,
                 refl_ratio: float, sizes: dict[str, list[int]] | None, result: WhatIfResult):
        self.tl, self.rs, self.result = tl, rs, result
        self.obs_ratio, self.refl_ratio, self.sizes = obs_ratio, refl_ratio, sizes
        self.window = MessageWindow(dicts, tl.message_counts, eligible=tl.message_eligible or None)
        self.dicts = dicts
        self.obs = 0
        self.generation = 0
        self.chunks: list[dict] = []
        self.buffered_ids: set[str] = set()
        self.buffer_cursor: int | None = None
        self.last_boundary = 0
        self.buffered_reflection: tuple[int, int] | None = None
        self.suppressed_at: int | None = None
        self.n_obs = self.n_refl = self.n_chunk = 0
        self.turn = 0
        self.at: str | None = None
        self.at_ms: int | None = None
        self.model = tl.settings.reflection_model

    # -- points and events --------------------------------------------------------------------

    def point(self, kind: str, message_index: int | None = None, event_index: int | None = None) -> None:
        thr, rthr = self.rs.thresholds(self.obs)
        self.result.points.append(Point(
            at=self.at, at_ms=self.at_ms, turn=self.turn, message_tokens=self.window.tokens(),
            observation_tokens=self.obs, buffered_tokens=sum(c["messageTokens"] for c in self.chunks),
            threshold=thr, reflection_threshold=rthr, reconstructed=True, kind=kind, message_index=message_index,
            event_index=event_index, generation=self.generation))

    def event(self, kind: str, tokens_in: int | None, output: int | None, **extra: Any) -> OMEvent:
        e = OMEvent(kind=kind, status="completed" if kind not in (ACTIVATION, REFLECTION_ACTIVATION) else "recorded",
                    at=self.at, at_ms=self.at_ms, turn=self.turn, tokens=tokens_in, output_tokens=output,
                    generation=self.generation, total_observation_tokens=self.obs, inferred=True, **extra)
        self.result.events.append(e)
        self.point(kind, event_index=len(self.result.events) - 1)
        return e

    def _real(self, kind: str, n: int) -> int | None:
        if self.sizes is None:
            return None
        values = self.sizes.get(kind, [])
        return values[n] if n < len(values) else None

    # -- operations ---------------------------------------------------------------------------

    def observe(self) -> None:
        idx = self.window.indexes()
        if not idx:
            return
        tokens_in = self.window.tokens()
        self.pre_observation = self.window.snapshot()
        times = [self.window.times[i] for i in idx if self.window.times[i] is not None]
        self.window.observe(idx, max(times) if times else None)
        real = self._real("observation", self.n_obs)
        self.n_obs += 1
        output = max(1, js_round(tokens_in * self.obs_ratio))
        before = self.obs
        self.obs = real if real is not None else before + output + (BOUNDARY_TOKENS if before else 0)
        self.result.observer_calls += 1
        self.event(OBSERVATION, tokens_in, self.obs - before if real is not None else output)

    def reflect_output(self, tokens_in: int) -> int:
        real = self._real("reflection", self.n_refl)
        self.n_refl += 1
        return real if real is not None else modelled_reflection(tokens_in, self.refl_ratio)

    def new_generation(self, size: int, cursor: int | None) -> None:
        self.generation += 1
        self.obs = size
        self.window.reset(cursor, set())
        self.chunks.clear()  # a reflection's new row carries no chunks
        self.buffered_ids.clear()

    def maybe_reflect(self, after_observation: bool) -> None:
        rs = self.rs
        threshold = rs.observation_tokens
        async_refl = rs.buffer_tokens is not None and rs.reflection_buffer_activation is not None
        point = threshold * (rs.reflection_buffer_activation or 1)
        if async_refl and self.obs < threshold and self.buffered_reflection is None and self.obs >= point:
            self.buffer_reflection()
        if self.obs < threshold:
            return
        if async_refl:
            if self.buffered_reflection is not None:
                tokens_in, output = self.buffered_reflection
                self.buffered_reflection = None
                size = output + max(0, self.obs - tokens_in)
                before = self.obs
                self.new_generation(size, self.window.cursor_ms)
                self.event(REFLECTION_ACTIVATION, before, size)
                return
            if not (rs.reflection_block_after and self.obs >= rs.reflection_block_after):
                if self.obs >= point:
                    self.buffer_reflection()
                return
        if self.suppressed_at is not None and self.obs == self.suppressed_at:
            return
        before = self.obs
        output = self.reflect_output(before)
        self.result.reflector_calls += reflector_attempts(output, threshold, self.model)
        cursor = self.pre_observation[0] if after_observation else self.window.cursor_ms
        self.new_generation(output, cursor)
        self.suppressed_at = output if output >= threshold else None
        self.event(REFLECTION, before, output)

    def buffer_reflection(self) -> None:
        output = self.reflect_output(self.obs)
        self.result.reflector_calls += reflector_attempts(output, self.rs.observation_tokens, self.model)
        self.buffered_reflection = (self.obs, output)
        self.event(REFLECTION_BUFFERING, self.obs, output)

    def should_buffer(self, pending: int, threshold: int) -> bool:
        bt = self.rs.buffer_tokens
        if bt is None or pending >= threshold:
            return False
        effective = bt / 2 if pending >= threshold - bt * 1.1 else bt
        return math.floor(pending / effective) > math.floor(self.last_boundary / effective)

    def buffer(self, pending: int) -> None:
        self.last_boundary = pending
        cursor = max(filter(lambda x: x is not None, [self.buffer_cursor, self.window.cursor_ms]), default=None)
        idx = [i for i in self.window.indexes() if self.dicts[i].get("id") not in self.buffered_ids
               and (cursor is None or (self.window.times[i] is not None and self.window.times[i] > cursor))]
        if not idx:
            return
        new_tokens = tokens.TOKENS_PER_CONVERSATION + sum(self.window.counts[i] for i in idx)
        if new_tokens < self.rs.buffer_tokens / 2:
            return
        real = self._real("chunk", self.n_chunk)
        self.n_chunk += 1
        output = real if real is not None else max(1, js_round(new_tokens * self.obs_ratio))
        times = [self.window.times[i] for i in idx if self.window.times[i] is not None]
        last = max(times) if times else None
        self.chunks.append({"messageTokens": new_tokens, "tokenCount": output, "lastObservedAt": last})
        self.buffered_ids.update(self.dicts[i].get("id") for i in idx)
        self.buffer_cursor = last + 1 if last is not None else self.buffer_cursor
        self.result.observer_calls += 1
        self.event(BUFFERING, new_tokens, output)

    def activate(self, pending: int) -> bool:
        if not self.chunks:
            return False
        rs = self.rs
        activation = rs.buffer_activation if rs.buffer_activation is not None else 0.8
        force = rs.block_after is not None and pending >= rs.block_after
        n = activation_chunk_count(self.chunks, pending, rs.top, activation, force)
        activated, self.chunks = self.chunks[:n], self.chunks[n:]
        cursor = activated[-1]["lastObservedAt"]
        self.window.observe([], cursor)
        for chunk in activated:
            self.obs += chunk["tokenCount"]
            self.event(ACTIVATION, chunk["messageTokens"], chunk["tokenCount"])
        self.last_boundary = 0
        return True

    def step0(self, index: int) -> None:
        rs = self.rs
        self.pre_observation = self.window.snapshot()
        if rs.buffer_tokens is not None:
            pending = self.window.tokens()
            if self.last_boundary > 0 and pending < self.last_boundary * 0.5:
                self.last_boundary = 0
            if self.chunks and pending >= rs.thresholds(self.obs)[0]:
                self.activate(pending)
        self.maybe_reflect(after_observation=False)
        pending = self.window.tokens()
        threshold = rs.thresholds(self.obs)[0]
        if rs.buffer_tokens is not None and self.should_buffer(pending, threshold):
            self.buffer(pending)
        if pending >= threshold:
            if self.chunks:
                self.activate(pending)
                self.maybe_reflect(after_observation=False)
            else:
                self.observe()
                self.maybe_reflect(after_observation=True)
            if rs.buffer_tokens is not None:
                self.last_boundary = 0
        thr, rthr = rs.thresholds(self.obs)
        got = self.window.tokens()
        if not self.window.holds(index):  # observed at this step 0: Mastra keeps the turn's input
            got += self.window.counts[index] + (0 if got else tokens.TOKENS_PER_CONVERSATION)
        self.result.turns.append(TurnContext(
            turn=self.turn, at=self.at, message_tokens=got, observation_tokens=self.obs,
            buffered_tokens=sum(c["messageTokens"] for c in self.chunks), threshold=thr, reflection_threshold=rthr))

    def run(self, cancel: threading.Event | None) -> None:
        for i, message in enumerate(self.dicts):
            if cancel is not None and cancel.is_set():
                raise EngineError("Cancelled")
            self.window.add_until(i)
            self.at, self.at_ms = message.get("createdAt"), self.window.times[i]  # parsed once, by the window
            if message.get("role") == "user":
                self.turn += 1
            self.point("message", message_index=i)
            if message.get("role") == "user":
                self.step0(i)


def simulate(timeline: Timeline, settings: WhatIfSettings, *, observation_ratio: float | None = None,
             reflection_ratio: float | None = None, use_real_sizes: bool | None = None,
             cancel: threading.Event | None = None) -> WhatIfResult:
    """Replay TIMELINE's messages with SETTINGS; return the simulated series, events and call counts.

    Ratios default to those measured on the thread (`measured_ratios`). USE_REAL_SIZES defaults
    to True exactly when SETTINGS equal the stored ones and no ratio is given. Raises WhatIfSettingsError for settings
    Mastra would reject, EngineError when cancelled.
    """
    current = timeline.generations[-1]
    stored = WhatIfSettings.from_record(current)
    resolved = settings.resolve(timeline.scope)
    measured_obs, measured_refl = measured_ratios(timeline)
    obs_ratio = measured_obs if observation_ratio is None else observation_ratio
    refl_ratio = measured_refl if reflection_ratio is None else reflection_ratio
    if obs_ratio < 0 or refl_ratio < 0:
        raise WhatIfSettingsError("Compression ratios must not be negative")
    if use_real_sizes is None:
        real = settings == stored and observation_ratio is None and reflection_ratio is None
    else:
        real = use_real_sizes
    result = WhatIfResult(settings=settings, resolved=resolved, observation_ratio=obs_ratio,
                          reflection_ratio=refl_ratio, uses_real_sizes=real, thread_id=timeline.thread_id,
                          lookup_key=timeline.lookup_key)
    dicts = [{"id": m.id, "role": m.role, "createdAt": m.created_at} for m in timeline.messages]
    _Replay(timeline, dicts, resolved, obs_ratio, refl_ratio, real_sizes(timeline) if real else None,
            result).run(cancel)
    return result


def run_whatif(store: MemoryStore, thread_id: str, settings: WhatIfSettings | None = None,
               **kwargs: Any) -> WhatIfResult:
    """Build THREAD_ID's timeline and replay it with SETTINGS (default: the stored ones); see `simulate`.

    Raises TimelineError (unknown thread, no OM record), WhatIfSettingsError, StoreError.
    """
    timeline = build_timeline(store, thread_id)
    return simulate(timeline, settings or WhatIfSettings.from_record(timeline.generations[-1]), **kwargs)

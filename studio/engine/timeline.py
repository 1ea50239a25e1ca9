"""Draw how one OM record's context evolved: token series over time and over turns, with events.

For a thread (or a resource-scope record) this replays the stored messages in order and applies
the OM events `events.build_events` found (markers and generations), giving after every message
and every event:

* the message window (tokens of the messages OM has not observed, Mastra's `countMessagesAsync`
  estimate, as `getStatus` counts them: `createdAt` after the observation cursor and not in
  `observedMessageIds`, a generation created by a reflection starting with no observed ids);
* the observation log (`observationTokenCount` as Mastra stored it at that moment, recounted
  from the generation's log up to that cycle when a marker does not carry it);
* the buffered chunk tokens waiting for activation (async buffering);
* the thresholds in force (`calculateDynamicThreshold`, reflection threshold as getStatus).

A point is `reconstructed` when it rests on an observation no marker recorded (inferred from the
generation log, message times and the cursor), or on resource scope, whose other-thread context
is not replayed. Turn k starts at the k-th user message. An observation's markers usually sit on
the turn's reply, seeded empty before the cycle; when they follow content the message already held
(Mastra reused an existing assistant message), that content was in the cycle's window.
Mirrors @mastra/memory 1.31.0.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from studio.common.om_settings import OMSettings, ThresholdRange, dynamic_threshold, max_threshold, resolve_settings
from studio.engine import tokens
from studio.engine.events import (
    ACTIVATION,
    BUFFERING,
    MARKER_PREFIX,
    OBSERVATION,
    REFLECTION,
    REFLECTION_ACTIVATION,
    EventLog,
    OMEvent,
    build_events,
    iso_or_none,
    turn_at,
)
from studio.engine.unobserved import (
    OBSERVATION_START,
    is_working_memory_state_signal,
    last_completed_observation_boundary,
    unobserved_parts,
)
from studio.errors import EngineError, UncountableMessage
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, OMRecord, Thread, iso_to_ms


class TimelineError(EngineError):
    """The timeline cannot be built: unknown thread, or no OM record governs it."""


@dataclass
class Point:
    """The OM state right after one message or one event (all token figures in tokens).

    `kind` is "message" or the event kind; `message_index` indexes `Timeline.messages`
    (the message just added, or the newest one before the event); `event_index` indexes
    `Timeline.events` (None for message points).
    """

    at: str | None
    at_ms: int | None
    turn: int
    message_tokens: int
    observation_tokens: int
    buffered_tokens: int
    threshold: int
    reflection_threshold: int
    reconstructed: bool
    kind: str = "message"
    message_index: int | None = None
    event_index: int | None = None
    generation: int | None = None

    @property
    def context_tokens(self) -> int:
        """Return message window + observation log: what the actor's context holds from memory (tokens)."""
        return self.message_tokens + self.observation_tokens

    def to_json(self) -> dict:
        """Return the stable `timeline --json` point shape."""
        return {"at": self.at, "turn": self.turn, "message_tokens": self.message_tokens,
                "observation_tokens": self.observation_tokens, "buffered_tokens": self.buffered_tokens,
                "threshold": self.threshold, "reflection_threshold": self.reflection_threshold,
                "reconstructed": self.reconstructed}


def thresholds(settings: OMSettings, observation_tokens: int) -> tuple[int, int]:
    """Return (message threshold, reflection threshold) in force for OBSERVATION_TOKENS (getStatus)."""
    threshold = dynamic_threshold(settings.message_tokens, observation_tokens)
    if isinstance(settings.message_tokens, ThresholdRange):
        return threshold, max(settings.message_tokens.max - threshold, 1000)
    return threshold, max_threshold(settings.reflection_tokens)


class MessageWindow:
    """The messages OM has not observed yet, over a fixed message list, as they arrive.

    Mirrors `getUnobservedMessages` over what `loadMessagesFromStorage` returns: a message
    counts when it has arrived, its `createdAt` is after the cursor (`lastObservedAt`) and its id
    is not in `observedMessageIds`; system messages and working-memory signals never count.
    `tokens()` is `countMessagesAsync` of that list (24 once + each message), in tokens. TIMES: each
    message's createdAt (epoch ms) when the caller already parsed them.
    """

    def __init__(self, messages: list[dict], counts: list[int], after_marker: dict[int, int | None] | None = None,
                 eligible: list[bool] | None = None, before_marker: dict[int, int] | None = None,
                 times: list[int | None] | None = None):
        self.messages = messages
        self.counts = counts
        self.after_marker = after_marker or {}   # index -> tokens of the parts after its last end marker
        self.before_marker = before_marker or {}  # index -> tokens of the parts before its first start marker
        self.marked: set[int] = set()
        self.times = times if times is not None else [iso_to_ms(m.get("createdAt")) for m in messages]
        self._sorted_times, last = [], -1  # storage order is createdAt order; a missing time keeps its place
        for t in self.times:
            last = max(last, t) if t is not None else last
            self._sorted_times.append(last)
        self.eligible = eligible if eligible is not None else message_eligibility(messages)
        self.arrived = 0
        self.cursor_ms: int | None = None
        self.observed: set[str] = set()
        self._sum = 0
        self._n = 0
        self._start = 0

    def _tokens_of(self, i: int) -> int:
        if i in self.marked:
            return self.after_marker.get(i) or 0
        if i in self.before_marker:
            return self.before_marker[i]
        return self.counts[i]

    def _counts_now(self, i: int) -> bool:
        if not self.eligible[i] or self.messages[i].get("id") in self.observed:
            return False
        if i in self.marked and self.after_marker.get(i) is None:
            return False  # everything it holds was observed (Mastra's getUnobservedParts is empty)
        if self.cursor_ms is None:
            return True
        t = self.times[i]
        return t is not None and t > self.cursor_ms

    def _recompute(self) -> None:
        start = 0
        if self.cursor_ms is not None:  # createdAt-sorted: skip what the cursor already covers
            start = self._first_after(self.cursor_ms)
        self._start = start
        self._sum = self._n = 0
        for i in range(start, self.arrived):
            if self._counts_now(i):
                self._sum += self._tokens_of(i)
                self._n += 1

    def _first_after(self, ms: int) -> int:
        return bisect.bisect_right(self._sorted_times, ms, 0, self.arrived)

    def add_until(self, index: int) -> None:
        """Let messages up to INDEX (inclusive) arrive."""
        while self.arrived <= index and self.arrived < len(self.messages):
            i = self.arrived
            self.arrived += 1
            if self._counts_now(i):
                self._sum += self._tokens_of(i)
                self._n += 1

    def indexes(self) -> list[int]:
        """Return the indexes of the arrived messages that are in the window."""
        return [i for i in range(self._start, self.arrived) if self._counts_now(i)]

    def tokens(self) -> int:
        """Return the window's tokens (Mastra's estimate of the list; 0 when empty)."""
        return tokens.TOKENS_PER_CONVERSATION + self._sum if self._n else 0

    def holds(self, index: int) -> bool:
        """Return whether message INDEX counts in the window now (arrived, eligible, unobserved)."""
        return index < self.arrived and index >= self._start and self._counts_now(index)

    def message_tokens(self, index: int) -> int:
        """Return what message INDEX adds to the window (its unobserved parts once it holds a marker; tokens)."""
        return self._tokens_of(index)

    def tokens_through(self, index: int) -> int:
        """Return `tokens()` counting only the arrived messages up to INDEX (inclusive; tokens, 0 when none).

        Costs the messages arrived after INDEX, not the window's size.
        """
        total, n = self._sum, self._n
        for i in range(max(index + 1, self._start), self.arrived):
            if self._counts_now(i):
                total -= self._tokens_of(i)
                n -= 1
        return tokens.TOKENS_PER_CONVERSATION + total if n else 0

    def mark(self, index: int) -> None:
        """Count message INDEX as Mastra does once it holds a completed observation's end marker."""
        if index in self.after_marker and index not in self.marked:
            self.marked.add(index)
            self._recompute()

    def observe(self, indexes: list[int], cursor_ms: int | None) -> None:
        """Mark INDEXES observed and move the cursor to CURSOR_MS (never backwards)."""
        self.observed.update(self.messages[i].get("id") for i in indexes if self.messages[i].get("id"))
        if cursor_ms is not None and (self.cursor_ms is None or cursor_ms > self.cursor_ms):
            self.cursor_ms = cursor_ms
        self._recompute()

    def reset(self, cursor_ms: int | None, observed: set[str]) -> None:
        """Set the cursor and observed ids as a new generation holds them."""
        self.cursor_ms = cursor_ms
        self.observed = set(observed)
        self._recompute()

    def snapshot(self) -> tuple[int | None, set[str]]:
        """Return (cursor ms, observed ids) to restore later."""
        return self.cursor_ms, set(self.observed)


@dataclass
class Timeline:
    """Series and events of one OM record, as `build_timeline` reconstructs them."""

    thread_id: str | None
    lookup_key: str
    scope: str
    settings: OMSettings
    points: list[Point]
    events: list[OMEvent]
    messages: list[Message]
    event_log: EventLog
    generations: list[OMRecord]
    message_counts: list[int] = field(default_factory=list)
    message_eligible: list[bool] = field(default_factory=list)
    #: The message Mastra cannot count (`UncountableMessage`), when one is governed: the series stops
    #: before it (messages and events from its time on are left out); None when every message counts.
    uncountable: UncountableMessage | None = None
    uncountable_at_ms: int | None = None   # that message's createdAt (epoch ms): where the series stops
    #: What the agent got at its heaviest turn after OM's step 0, (window + log, window) in tokens, when
    #: the loader measured it before dropping message contents (`studio.engine.context.agent_peaks`).
    agent_peaks: tuple[int, int] | None = None

    def slim(self) -> Timeline:
        """Return this timeline without message contents (ids, roles, times kept), to send between processes.

        The what-if replay needs only each message's id, role, time and token counts, all kept.
        """
        from dataclasses import replace

        light = [Message(id=m.id, thread_id=m.thread_id, role=m.role, content=None, created_at=m.created_at,
                         resource_id=m.resource_id, type=m.type) for m in self.messages]
        return replace(self, messages=light, event_log=replace(self.event_log, markers=[]))

    @property
    def observation_ratio(self) -> float | None:
        """Return observation tokens produced per message token observed, over this record's cycles."""
        pairs = [(e.tokens, e.output_tokens) for e in self.events
                 if e.kind in (OBSERVATION, BUFFERING) and e.status == "completed" and e.tokens and e.output_tokens]
        total_in = sum(p[0] for p in pairs)
        return sum(p[1] for p in pairs) / total_in if total_in else None

    @property
    def reflection_ratio(self) -> float | None:
        """Return reflection output tokens per observation token reflected, over this record's reflections."""
        pairs = [(e.tokens, e.output_tokens) for e in self.events
                 if e.kind in (REFLECTION, REFLECTION_ACTIVATION) and e.status in ("completed", "recorded")
                 and e.tokens and e.output_tokens is not None]
        total_in = sum(p[0] for p in pairs)
        return sum(p[1] for p in pairs) / total_in if total_in else None

    def to_json(self) -> dict:
        """Return the stable `timeline --json` document {"points": [...], "events": [...]}, with
        "uncountable" (`UncountableMessage.to_json`) when the series stops before a message Mastra cannot count."""
        doc = {"points": [p.to_json() for p in self.points], "events": [e.to_json() for e in self.events]}
        if self.uncountable is not None:
            doc["uncountable"] = self.uncountable.to_json()
        return doc

    def point_for_event(self, event_index: int) -> Point | None:
        """Return the point drawn right after event EVENT_INDEX, or the last point before it."""
        best = None
        event = self.events[event_index]
        for p in self.points:
            if p.event_index == event_index:
                return p
            if p.at_ms is not None and event.at_ms is not None and p.at_ms <= event.at_ms:
                best = p
        return best


def message_eligibility(messages: list[dict]) -> list[bool]:
    """Return, per message, whether it can count in the window (not system, not a working-memory signal)."""
    return [m.get("role") != "system" and not is_working_memory_state_signal(m) for m in messages]


def governed_messages(store: MemoryStore, record: OMRecord, thread: Thread | None) -> list[Message]:
    """Return the messages RECORD governs: the thread's, or every message of its resource (resource scope)."""
    if record.scope == "resource" and record.resource_id:
        return store.list_resource_messages(record.resource_id)
    return store.list_messages(thread.id if thread is not None else (record.thread_id or ""))


def resolve_record(store: MemoryStore, thread_id: str | None = None,
                   lookup_key: str | None = None) -> tuple[Thread | None, list[OMRecord]]:
    """Return (thread or None, generations oldest first) for THREAD_ID or LOOKUP_KEY.

    Raises TimelineError when the thread does not exist or no OM record governs it.
    """
    thread = None
    if thread_id is not None:
        thread = store.get_thread(thread_id)
        if thread is None:
            raise TimelineError(f"No thread {thread_id!r} in {store.location.display}")
        lookup_key = lookup_key or store.lookup_key_for_thread(thread)
        if lookup_key is None:
            raise TimelineError(f"Thread {thread_id!r} has no observational memory record")
    if lookup_key is None:
        raise TimelineError("Name a thread or an OM lookup key")
    generations = list(reversed(store.om_history(lookup_key)))
    if not generations:
        raise TimelineError(f"No observational memory record {lookup_key!r} in {store.location.display}")
    return thread, generations


def build_timeline(store: MemoryStore, thread_id: str | None = None, *, lookup_key: str | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   cancel: threading.Event | None = None) -> Timeline:
    """Return the timeline of THREAD_ID's OM record (or of the record LOOKUP_KEY).

    PROGRESS(done, total) is called as messages are counted; setting CANCEL stops early with
    TimelineError. A message Mastra's count throws on ends the series: the timeline holds the points
    up to the message before it, no message or timed event from its time on, and `uncountable` says why.
    Raises TimelineError (unknown thread, no OM record) or StoreError (read failed).
    """
    thread, generations = resolve_record(store, thread_id, lookup_key)
    current = generations[-1]
    messages = governed_messages(store, current, thread)
    settings = resolve_settings(current.config, current.scope)
    dicts = [m.as_mastra() for m in messages]
    counts = []
    uncountable, cut_ms = None, None
    for i, m in enumerate(dicts):
        if cancel is not None and cancel.is_set():
            raise TimelineError("Cancelled")
        try:
            counts.append(tokens.count_message_for_status(m, model=settings.counter_model))
        except UncountableMessage as exc:
            uncountable = exc
            break
        if progress is not None and (i % 500 == 0 or i == len(dicts) - 1):
            progress(i + 1, len(dicts))
    log = build_events(messages, generations, async_observation=settings.async_observation_enabled)
    if uncountable is not None:  # Mastra's getStatus throws from this message on: no figure past it
        cut_ms = messages[len(counts)].created_ms
        messages, dicts = messages[:len(counts)], dicts[:len(counts)]
        log.events[:] = [e for e in log.events if e.at_ms is None or (cut_ms is not None and e.at_ms < cut_ms)]
    after_marker, before_marker = marker_counts(dicts, settings.counter_model)
    timeline = Timeline(thread_id=thread.id if thread else None, lookup_key=current.lookup_key, scope=current.scope,
                        settings=settings, points=[], events=log.events, messages=messages, event_log=log,
                        generations=generations, message_counts=counts, message_eligible=message_eligibility(dicts),
                        uncountable=uncountable, uncountable_at_ms=cut_ms if uncountable is not None else None)
    _replay_real(timeline, dicts, counts, after_marker, before_marker)
    return timeline


def _count_parts(message: dict, parts: list, model: str | None) -> int:
    return tokens.count_message_for_status({**message, "content": {**message["content"], "parts": parts}}, model=model)


def marker_counts(dicts: list[dict], model: str | None = None) -> tuple[dict[int, int | None], dict[int, int]]:
    """Return (after, before): per message index, its tokens around its observation marker parts.

    `after[i]`: tokens of the parts after message i's last `data-om-observation-end` (None when
    nothing follows it): what getStatus counts of a message with a completed observation.
    `before[i]`: tokens of the content parts message i held before its first
    `data-om-observation-start`, for messages that have any. Such a host already held that content
    when the cycle started (Mastra put the markers on an assistant message that existed, not on the
    turn's fresh reply), and the cycle counted and observed it: its `tokensToObserve` includes it.
    """
    after: dict[int, int | None] = {}
    before: dict[int, int] = {}
    for i, m in enumerate(dicts):
        if last_completed_observation_boundary(m) != -1:
            parts = unobserved_parts(m)
            after[i] = _count_parts(m, parts, model) if parts else None
        content = m.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            continue
        start = next((k for k, p in enumerate(parts)
                      if isinstance(p, dict) and p.get("type") == OBSERVATION_START), None)
        if start:
            held = [p for p in parts[:start] if not str(p.get("type") if isinstance(p, dict) else "").startswith(
                MARKER_PREFIX)]
            if held:
                before[i] = _count_parts(m, held, model)
    return after, before


def _host_index(messages: list[Message], message_id: str | None) -> int | None:
    if message_id is None:
        return None
    return next((i for i, m in enumerate(messages) if m.id == message_id), None)


def replay_order(tl: Timeline, before_marker: dict[int, int] | None = None) -> list[tuple[int, int, int]]:
    """Return messages and events in the order the replay walks them: (ms, what, index), sorted.

    `what` is 0 for a message, 1 for an event (index into `tl.events`), 2 for a message moved
    after the observation it hosts: a turn's reply is seeded empty before its step-0 observation
    and filled after it. A host that already held content before the cycle's start marker
    (BEFORE_MARKER, see `marker_counts`) keeps its own place: it was there to be observed.
    Events without a time are left out (the replay places them).
    """
    before_marker = before_marker or {}
    times = [m.created_ms for m in tl.messages]
    order = []
    last_ms = None
    for i, t in enumerate(times):
        last_ms = t if t is not None else last_ms
        order.append((last_ms if last_ms is not None else -1, 0, i))
    for event in tl.events:
        host = _host_index(tl.messages, event.message_id)
        if (event.kind == OBSERVATION and event.status == "completed" and host is not None
                and host not in before_marker
                and event.at_ms is not None and times[host] is not None and times[host] <= event.at_ms):
            order[host] = (event.at_ms, 2, host)
    order += [(e.at_ms, 1, ei) for ei, e in enumerate(tl.events) if e.at_ms is not None]
    order.sort(key=lambda x: (x[0], x[1]))
    return order


def _replay_real(tl: Timeline, dicts: list[dict], counts: list[int], after_marker: dict[int, int | None],
                 before_marker: dict[int, int] | None = None) -> None:
    """Walk messages and events in time order and fill `tl.points` (see the module docstring)."""
    gens = {g.generation_count: g for g in tl.generations}
    gen_settings = {n: resolve_settings(g.config, g.scope) for n, g in gens.items()}
    window = MessageWindow(dicts, counts, after_marker, tl.message_eligible, before_marker)
    user_times = tl.event_log.user_times
    state = replay_state(tl)
    chunks: dict[str, int] = {}

    def settings_now() -> OMSettings:
        return gen_settings.get(state["generation"], tl.settings)

    def point(at_ms, kind, message_index=None, event_index=None, at=None):
        thr, rthr = thresholds(settings_now(), state["obs"])
        tl.points.append(Point(
            at=at if at is not None else (iso_or_none(at_ms)), at_ms=at_ms, turn=turn_at(user_times, at_ms),
            message_tokens=window.tokens(), observation_tokens=state["obs"], buffered_tokens=state["buffered"],
            threshold=thr, reflection_threshold=rthr, reconstructed=state["reconstructed"], kind=kind,
            message_index=message_index, event_index=event_index, generation=state["generation"]))

    # Place each event after the messages created at or before it.
    times = window.times
    order = replay_order(tl, before_marker)
    unplaced = [ei for ei, event in enumerate(tl.events) if event.at_ms is None]
    for ei in unplaced:  # an inferred first observation: when the window first reached the threshold
        tl.events[ei].inferred = True

    pending_first = [ei for ei in unplaced if tl.events[ei].kind in (OBSERVATION, ACTIVATION)]
    newest = -1
    for ms, what, idx in order:
        if what != 1:
            window.add_until(idx)
            newest = idx
            m = tl.messages[idx]
            point(times[idx], "message", message_index=idx, at=m.created_at)
            if pending_first and dicts[idx].get("role") == "user":
                thr, _ = thresholds(settings_now(), state["obs"])
                if window.tokens() >= thr:
                    ei = pending_first.pop(0)
                    event = tl.events[ei]
                    event.at_ms, event.at = times[idx], m.created_at
                    event.turn = turn_at(user_times, times[idx])
                    apply_event(tl, ei, window, state, chunks, newest)
                    point(times[idx], event.kind, message_index=idx, event_index=ei, at=m.created_at)
            continue
        event = tl.events[idx]
        if pending_first and event.changes_state and event.kind in (OBSERVATION, ACTIVATION, REFLECTION):
            ei = pending_first.pop(0)  # it happened before this one at the latest
            first = tl.events[ei]
            first.at_ms, first.at = ms, event.at
            first.turn = turn_at(user_times, ms)
            apply_event(tl, ei, window, state, chunks, newest)
            point(ms, first.kind, message_index=newest if newest >= 0 else None, event_index=ei, at=event.at)
        apply_event(tl, idx, window, state, chunks, newest)
        point(ms, event.kind, message_index=newest if newest >= 0 else None, event_index=idx, at=event.at)
    for ei in unplaced:
        if tl.events[ei].at_ms is None:
            tl.events[ei].turn = turn_at(user_times, None)
    before = list(tl.events)  # placing inferred events may change the order: points follow
    tl.events.sort(key=lambda e: (e.at_ms is None, e.at_ms if e.at_ms is not None else 0))
    position = {id(e): i for i, e in enumerate(tl.events)}
    for p in tl.points:
        if p.event_index is not None:
            p.event_index = position[id(before[p.event_index])]



def replay_state(tl: Timeline) -> dict:
    """Return the replay state `apply_event` keeps, as it stands before TL's first event.

    {"obs": log size (tokens), "buffered": buffered message tokens, "generation": the generation in
    force, "reconstructed": whether the figures are reconstructed (always in resource scope),
    "last_state": the kind of the last state-changing event, "pre_obs": (window snapshot, turn)
    before the last observation}.
    """
    return {"obs": 0, "buffered": 0, "generation": tl.generations[0].generation_count,
            "reconstructed": tl.scope == "resource", "last_state": None, "pre_obs": None}


def apply_event(tl: Timeline, ei: int, window: MessageWindow, state: dict, chunks: dict, newest: int) -> None:
    """Apply event EI of TL to the replay: WINDOW's cursor and STATE (`replay_state`: log size, buffer, generation).

    CHUNKS: {cycle id: message tokens} of the chunks buffered so far (updated); NEWEST: the index of
    the newest message placed (-1 when none). An event that changes no state does nothing.
    """
    event = tl.events[ei]
    if not event.changes_state:
        return
    if event.kind == OBSERVATION:
        host = _host_index(tl.messages, event.message_id)
        # The host counts when it held content before the start marker (see `marker_counts`).
        idx = [i for i in window.indexes() if i != host or host in window.before_marker]
        if event.at_ms is not None:
            idx = [i for i in idx if window.times[i] is None or window.times[i] <= event.at_ms]
        if event.tokens is None:
            event.tokens = tokens.TOKENS_PER_CONVERSATION + sum(window._tokens_of(i) for i in idx) if idx else 0
        cursor = iso_to_ms(event.last_observed_at)
        if cursor is None:
            known = [window.times[i] for i in idx if window.times[i] is not None]
            cursor = max(known) if known else window.cursor_ms
        else:
            idx = [i for i in idx if window.times[i] is None or window.times[i] <= cursor]
        state["pre_obs"] = (window.snapshot(), event.turn)
        window.observe(idx, cursor)
        if host is not None and not event.inferred:  # its end marker now sits on the host message
            window.mark(host)
        state["obs"] = (event.total_observation_tokens if event.total_observation_tokens is not None
                        else state["obs"] + (event.output_tokens or 0))
        state["reconstructed"] = event.inferred or tl.scope == "resource"
        if event.generation is not None:
            state["generation"] = event.generation
    elif event.kind == ACTIVATION:
        if event.cycle_id and event.cycle_id in chunks:
            state["buffered"] = max(0, state["buffered"] - chunks.pop(event.cycle_id))
        elif event.tokens:
            state["buffered"] = max(0, state["buffered"] - event.tokens)
        cursor = iso_to_ms(event.last_observed_at)
        if cursor is None:
            start = next((e for e in tl.events if e.kind == BUFFERING and e.cycle_id == event.cycle_id), None)
            limit = start.at_ms if start is not None else event.at_ms
            host = _host_index(tl.messages, start.message_id) if start is not None else None
            known = [window.times[i] for i in window.indexes()
                     if i != host and window.times[i] is not None and limit is not None and window.times[i] < limit]
            cursor = max(known) if known else None
            state["reconstructed"] = True
        else:
            state["reconstructed"] = event.inferred or tl.scope == "resource"
        if event.tokens is None and event.inferred:
            event.tokens = window.tokens()
        window.observe([], cursor)
        state["obs"] += event.output_tokens or 0
        if event.generation is not None:
            state["generation"] = event.generation
    elif event.kind == BUFFERING:
        amount = event.tokens or 0
        if event.cycle_id:
            chunks[event.cycle_id] = amount
        state["buffered"] += amount
    elif event.kind in (REFLECTION, REFLECTION_ACTIVATION):
        cursor, _ = window.snapshot()
        pre = state.get("pre_obs")
        if event.kind == REFLECTION and pre is not None and pre[1] == event.turn and state["last_state"] == OBSERVATION:
            # Mastra reflects right after a sync observation from the record it was given before
            # observing: the new generation starts from the old cursor (ReflectorRunner.maybeReflect).
            cursor = pre[0][0]
        window.reset(cursor, set())
        chunks.clear()  # a new generation row starts without buffered chunks (libSQL insert)
        state["buffered"] = 0
        if event.total_observation_tokens is not None:
            state["obs"] = event.total_observation_tokens
        elif event.output_tokens is not None:
            state["obs"] = event.output_tokens
        if event.generation is not None:
            state["generation"] = event.generation
    state["last_state"] = event.kind


CSV_COLUMNS = ["series", "kind", "at", "turn", "message_tokens", "observation_tokens", "buffered_tokens",
               "threshold", "reflection_threshold", "reconstructed", "message_id", "generation"]


def series_csv(timeline: Timeline, whatif_points: list[Point] | None = None) -> str:
    """Return the timeline's points (and a what-if replay's, series "whatif") as CSV text, tokens per column.

    One row per point; `series` is "real" or "whatif", `kind` "message" or the event kind.
    """
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for name, points in (("real", timeline.points), ("whatif", whatif_points or [])):
        for p in points:
            message_id = (timeline.messages[p.message_index].id
                          if p.message_index is not None and 0 <= p.message_index < len(timeline.messages) else "")
            writer.writerow([name, p.kind, p.at or "", p.turn, p.message_tokens, p.observation_tokens,
                             p.buffered_tokens, p.threshold, p.reflection_threshold,
                             "true" if p.reconstructed else "false", message_id,
                             "" if p.generation is None else p.generation])
    return buf.getvalue()

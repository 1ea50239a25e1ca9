"""Read the Observational Memory events a Mastra memory.db keeps: marker parts and generations.

Mastra (@mastra/memory 1.31.0) records OM's work as `data-om-*` parts inside messages:
`data-om-observation-start/end/failed` (a synchronous Observer or Reflector cycle),
`data-om-buffering-start/end/failed` (an async buffering cycle, `operationType` observation or
reflection), `data-om-activation` (buffered chunks or a buffered reflection made active) and
`data-om-thread-update` (a new thread title). Each generation of the OM record is a second source:
a row with `originType = 'reflection'` is a reflection, and inside a generation's log every
`--- message boundary (<lastObservedAt>) ---` starts the output of one more observation cycle.

Markers are lossy (a sync reflection's markers need a stream writer, and an observation's
markers can be overwritten when the turn saves its message), so `build_events` pairs the markers
it finds (starts with ends or failures; a start without either is *unfinished*) and adds what the
generations prove happened but no marker shows (`inferred=True`). Times are epoch milliseconds
plus the stored ISO text; token figures are Mastra's estimates (tokens).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from studio.engine import tokens
from studio.store.records import Message, OMRecord, iso_to_ms

MARKER_PREFIX = "data-om-"
BOUNDARY_RE = re.compile(r"\n\n--- message boundary \(([^)\n]*)\) ---\n\n")

#: Event kinds (the `type` of the timeline JSON adds `-failed` / `-unfinished` to a cycle's kind).
OBSERVATION = "observation"
REFLECTION = "reflection"
BUFFERING = "buffering"
REFLECTION_BUFFERING = "reflection-buffering"
ACTIVATION = "activation"
REFLECTION_ACTIVATION = "reflection-activation"
THREAD_UPDATE = "thread-update"
#: Kinds that change the message window or the observation log.
STATE_KINDS = {OBSERVATION, REFLECTION, ACTIVATION, REFLECTION_ACTIVATION, BUFFERING, REFLECTION_BUFFERING}


@dataclass
class MarkerPart:
    """One stored `data-om-*` part: its type, its `data` object and where it is stored."""

    type: str
    data: dict
    message_id: str
    thread_id: str | None = None

    @property
    def cycle_id(self) -> str | None:
        value = self.data.get("cycleId")
        return value if isinstance(value, str) else None

    @property
    def operation(self) -> str:
        value = self.data.get("operationType")
        return value if value in ("observation", "reflection") else "observation"


@dataclass
class OMEvent:
    """One OM event: a paired cycle, an activation, a reflection (generation) or a title update.

    `tokens` is the event's input in tokens (messages observed / buffered / activated; for a
    reflection, the observation tokens it condensed); `output_tokens` what it produced
    (observation tokens of the cycle's output; a reflection's new log size). `status` is
    completed, failed, unfinished (a start without an end) or recorded (an instant event).
    `inferred` events come from the generation log, not from a marker part.
    """

    kind: str
    status: str = "recorded"
    at: str | None = None
    at_ms: int | None = None
    end: str | None = None
    end_ms: int | None = None
    turn: int = 0
    cycle_id: str | None = None
    tokens: int | None = None
    output_tokens: int | None = None
    generation: int | None = None
    record_id: str | None = None
    thread_id: str | None = None
    message_id: str | None = None
    inferred: bool = False
    last_observed_at: str | None = None
    total_observation_tokens: int | None = None
    error: str | None = None
    detail: str | None = None
    parts: list[MarkerPart] = field(default_factory=list)

    @property
    def type(self) -> str:
        """Return the JSON type: the kind, plus `-failed` / `-unfinished` for such cycles."""
        return self.kind if self.status in ("completed", "recorded") else f"{self.kind}-{self.status}"

    @property
    def changes_state(self) -> bool:
        """Return True when the event moved the message window, the log or the buffer."""
        return self.kind in STATE_KINDS and self.status in ("completed", "recorded")

    def to_json(self) -> dict:
        """Return the stable `timeline --json` event shape {type, at, turn, cycle_id, tokens, generation}."""
        return {"type": self.type, "at": self.at, "turn": self.turn, "cycle_id": self.cycle_id,
                "tokens": self.tokens, "generation": self.generation}


@dataclass
class Segment:
    """One Observer output inside a generation's log (split at message boundaries).

    `boundary` is the ISO cursor written before it (None for a log's first segment); `prefix_end`
    is where the segment ends in the log text, so `text[:prefix_end]` is the log as it was stored
    right after this cycle.
    """

    generation: int
    record_id: str
    index: int
    boundary: str | None
    text: str
    prefix_end: int
    used: bool = False


@dataclass
class EventLog:
    """Events of one OM lookup key over its messages (time order), with the markers they came from."""

    events: list[OMEvent]
    markers: list[MarkerPart]
    generations: list[OMRecord]
    segments: list[Segment]
    user_times: list[int]

    def turn_at(self, ms: int | None) -> int:
        """Return the turn (1-based count of user messages at or before MS; 0 before the first)."""
        return turn_at(self.user_times, ms)


def turn_at(user_times: list[int], ms: int | None) -> int:
    """Return how many of USER_TIMES (sorted epoch ms) are <= MS (0 when MS is None)."""
    if ms is None:
        return 0
    return bisect.bisect_right(user_times, ms)


def user_turn_times(messages: Iterable[Message]) -> list[int]:
    """Return the sorted createdAt (ms) of the user messages: turn k starts at the k-th one."""
    return sorted(ms for m in messages if m.role == "user" and (ms := m.created_ms) is not None)


def extract_markers(messages: list[Message]) -> list[MarkerPart]:
    """Return every `data-om-*` part of MESSAGES in storage order (message, then part order)."""
    out = []
    for message in messages:
        for part in message.parts:
            if not isinstance(part, dict):
                continue
            ptype = part.get("type")
            if isinstance(ptype, str) and ptype.startswith(MARKER_PREFIX):
                data = part.get("data") if isinstance(part.get("data"), dict) else {}
                out.append(MarkerPart(ptype, data, message.id, message.thread_id))
    return out


def split_segments(record: OMRecord) -> list[Segment]:
    """Split a generation's log at its message boundaries into Observer outputs."""
    text = record.active_observations or ""
    if not text:
        return []
    out, start, boundary = [], 0, None
    for i, match in enumerate(BOUNDARY_RE.finditer(text)):
        out.append(Segment(record.generation_count, record.id, i, boundary, text[start:match.start()], match.start()))
        start, boundary = match.end(), match.group(1)
    out.append(Segment(record.generation_count, record.id, len(out), boundary, text[start:], len(text)))
    return out


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(value)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(data: dict, *keys: str) -> tuple[str | None, int | None]:
    for key in keys:
        text = _str(data.get(key))
        if text is not None:
            return text, iso_to_ms(text)
    return None, None


def _pair_cycles(markers: list[MarkerPart]) -> list[OMEvent]:
    """Pair start/end/failed markers of the same cycle; return one event per cycle or instant marker."""
    events: list[OMEvent] = []
    cycles: dict[tuple, OMEvent] = {}
    seen: set[tuple] = set()
    for marker in markers:
        suffix = marker.type[len(MARKER_PREFIX):]
        key = (marker.type, marker.cycle_id, marker.operation, marker.data.get("chunksActivated"),
               marker.data.get("activatedAt"))
        if marker.cycle_id is not None and key in seen:  # the same marker saved on two messages
            continue
        seen.add(key)
        data = marker.data
        family, _, phase = suffix.rpartition("-")
        if family in ("observation", "buffering") and phase in ("start", "end", "failed"):
            if family == "observation":
                kind = REFLECTION if marker.operation == "reflection" else OBSERVATION
            else:
                kind = REFLECTION_BUFFERING if marker.operation == "reflection" else BUFFERING
            ckey = (family, marker.operation, marker.cycle_id or f"#{len(events)}")
            event = cycles.get(ckey)
            if event is None or (phase == "start" and event.status != "unfinished"):
                event = OMEvent(kind=kind, status="unfinished", cycle_id=marker.cycle_id,
                                record_id=_str(data.get("recordId")), thread_id=_str(data.get("threadId")))
                cycles[ckey] = event
                events.append(event)
            event.parts.append(marker)
            event.message_id = event.message_id or marker.message_id
            if phase == "start":
                event.at, event.at_ms = _time(data, "startedAt")
                event.tokens = _int(data.get("tokensToObserve", data.get("tokensToBuffer")))
            elif phase == "end":
                event.status = "completed"
                event.end, event.end_ms = _time(data, "completedAt")
                tokens_in = _int(data.get("tokensObserved", data.get("tokensBuffered")))
                event.tokens = tokens_in if tokens_in is not None else event.tokens
                event.detail = _str(data.get("observations"))
                if kind == BUFFERING:  # bufferedTokens is the record's running total: count this chunk
                    event.output_tokens = tokens.count_observations(event.detail) if event.detail else None
                else:
                    event.output_tokens = _int(data.get("observationTokens", data.get("bufferedTokens")))
            else:
                event.status = "failed"
                event.end, event.end_ms = _time(data, "failedAt")
                if event.tokens is None:
                    event.tokens = _int(data.get("tokensAttempted"))
                event.error = _str(data.get("error")) or (str(data.get("error")) if data.get("error") else None)
            if event.at is None and event.end_ms is not None:  # no start marker: started durationMs before the end
                duration = _int(data.get("durationMs")) or 0
                event.at_ms = event.end_ms - max(0, duration)
                event.at = _str(data.get("startedAt")) or iso_or_none(event.at_ms)
            event.record_id = event.record_id or _str(data.get("recordId"))
        elif suffix == "activation":
            kind = REFLECTION_ACTIVATION if marker.operation == "reflection" else ACTIVATION
            at, at_ms = _time(data, "activatedAt")
            generation = _int(data.get("generationCount"))
            events.append(OMEvent(
                kind=kind, status="recorded", at=at, at_ms=at_ms, cycle_id=marker.cycle_id,
                tokens=_int(data.get("tokensActivated")), output_tokens=_int(data.get("observationTokens")),
                generation=generation, record_id=_str(data.get("recordId")), thread_id=_str(data.get("threadId")),
                message_id=marker.message_id, detail=_str(data.get("observations")), parts=[marker],
                total_observation_tokens=(_int(data.get("observationTokens")) if kind == REFLECTION_ACTIVATION
                                          else None)))
        else:
            at, at_ms = _time(data, "timestamp", "startedAt", "completedAt", "activatedAt", "failedAt")
            events.append(OMEvent(kind=suffix, status="recorded", at=at, at_ms=at_ms, cycle_id=marker.cycle_id,
                                  thread_id=_str(data.get("threadId")), message_id=marker.message_id,
                                  detail=_str(data.get("newTitle")), parts=[marker]))
    return events


def iso_or_none(ms: int | None) -> str | None:
    """Return epoch MS (ms) as Mastra's ISO text, or None for None or a time JavaScript cannot represent."""
    from studio.store.records import ms_to_iso

    if ms is None:
        return None
    try:
        return ms_to_iso(ms)
    except (ValueError, OverflowError, OSError):
        return None


def _norm(text: str | None) -> str:
    return (text or "").strip()


def _match_segments(events: list[OMEvent], segments: list[Segment], by_record: dict[str, OMRecord]) -> None:
    """Give observation / activation events their generation-log segment: cursor and log size after."""
    by_gen: dict[str, list[Segment]] = {}
    for seg in segments:
        by_gen.setdefault(seg.record_id, []).append(seg)
    for event in events:
        record = by_record.get(event.record_id or "")
        if record is not None and event.generation is None and event.kind != REFLECTION_ACTIVATION:
            event.generation = record.generation_count
        if event.status != "completed" and event.kind != ACTIVATION:
            continue
        if event.kind not in (OBSERVATION, ACTIVATION) or not event.detail:
            continue
        want = _norm(event.detail)
        for seg in by_gen.get(event.record_id or "", []):
            if (seg.index == 0 and record is not None and record.origin_type == "reflection"):
                continue  # a reflection generation's first segment is the Reflector's output
            text = _norm(seg.text)
            if (event.kind == OBSERVATION and text == want) or (event.kind == ACTIVATION and want and want in text):
                if event.kind == OBSERVATION and seg.used:
                    continue
                seg.used = True
                event.last_observed_at = seg.boundary or event.last_observed_at
                if event.kind == OBSERVATION:
                    event.total_observation_tokens = tokens.count_observations(
                        record.active_observations[:seg.prefix_end])
                break
    # Outputs rewrapped in the log (resource scope's <thread> sections): pair in time order, a
    # cycle with the first unused segment whose cursor is not after the cycle's start.
    for event in sorted((e for e in events if e.kind == OBSERVATION and e.status == "completed"
                         and e.total_observation_tokens is None and e.at_ms is not None), key=lambda e: e.at_ms):
        record = by_record.get(event.record_id or "")
        if record is None:
            continue
        for seg in by_gen.get(record.id, []):
            if seg.used or (seg.index == 0 and record.origin_type == "reflection"):
                continue
            boundary_ms = iso_to_ms(seg.boundary)
            if seg.boundary is None or (boundary_ms is not None and boundary_ms <= event.at_ms):
                seg.used = True
                event.last_observed_at = seg.boundary or event.last_observed_at
                event.total_observation_tokens = tokens.count_observations(record.active_observations[:seg.prefix_end])
            break


def build_events(messages: list[Message], generations: list[OMRecord], *,
                 async_observation: bool = False) -> EventLog:
    """Return the OM events of one lookup key: markers paired, joined with its generations.

    MESSAGES are the messages the record governs (a thread's, or a resource's for resource
    scope) in storage order; GENERATIONS its OM rows in any order. ASYNC_OBSERVATION says whether
    a log segment no marker explains was written by an activation (async buffering) rather than
    a synchronous observation. Never raises on odd stored values: unusable markers are kept as
    events without times. Events are sorted by time (events without a time last).
    """
    gens = sorted(generations, key=lambda g: g.generation_count)
    by_record = {g.id: g for g in gens}
    user_times = user_turn_times(messages)
    markers = extract_markers(messages)
    events = _pair_cycles(markers)
    segments = [seg for g in gens for seg in split_segments(g)]
    _match_segments(events, segments, by_record)

    # Reflections: one per generation created by a reflection, unless a marker already shows it.
    by_gen = {g.generation_count: g for g in gens}
    for g in gens:
        if g.origin_type != "reflection" or g.generation_count <= 0:
            continue
        previous = by_gen.get(g.generation_count - 1)
        shown = next((e for e in events if not e.inferred and e.status in ("completed", "recorded") and (
            (e.kind == REFLECTION_ACTIVATION and e.generation == g.generation_count)
            or (e.kind == REFLECTION and previous is not None and e.record_id == previous.id))), None)
        first = next((s for s in segments if s.record_id == g.id and s.index == 0), None)
        output = tokens.count_observations(first.text) if first is not None else g.observation_token_count
        at = _str(g.get("lastReflectionAt")) or g.created_at
        if shown is not None:
            shown.generation = g.generation_count
            shown.output_tokens = shown.output_tokens if shown.output_tokens is not None else output
            if shown.kind == REFLECTION:
                shown.total_observation_tokens = output
            continue
        events.append(OMEvent(
            kind=REFLECTION, status="completed", at=at, at_ms=iso_to_ms(at), end=at, end_ms=iso_to_ms(at),
            tokens=previous.observation_token_count if previous is not None else None, output_tokens=output,
            generation=g.generation_count, record_id=g.id, inferred=True, total_observation_tokens=output,
            thread_id=g.thread_id))

    # Observer outputs the log holds but no marker explains (a reflection generation's first
    # segment is the Reflector's; a segment repeated in a later generation is counted once).
    seen_boundaries = {seg.boundary for seg in segments if seg.used and seg.boundary}
    for seg in segments:
        record = by_record[seg.record_id]
        if seg.used or (seg.index == 0 and record.origin_type == "reflection") or not _norm(seg.text):
            continue
        if seg.boundary is not None and seg.boundary in seen_boundaries:
            continue
        if seg.boundary is not None:
            seen_boundaries.add(seg.boundary)
        kind = ACTIVATION if async_observation else OBSERVATION
        at = seg.boundary
        at_ms = iso_to_ms(at)
        if at is None:  # the first output of the first generation: its cursor is not in the log
            at, at_ms = None, None
        total = tokens.count_observations(record.active_observations[:seg.prefix_end]) if kind == OBSERVATION else None
        events.append(OMEvent(
            kind=kind, status="recorded" if kind == ACTIVATION else "completed", at=at, at_ms=at_ms, end=at,
            end_ms=at_ms, generation=seg.generation,
            record_id=seg.record_id, inferred=True, last_observed_at=seg.boundary,
            output_tokens=tokens.count_observations(seg.text), total_observation_tokens=total,
            thread_id=record.thread_id))
        seg.used = True

    for event in events:
        event.turn = turn_at(user_times, event.at_ms)
    events.sort(key=lambda e: (e.at_ms is None, e.at_ms if e.at_ms is not None else 0))
    return EventLog(events=events, markers=markers, generations=gens, segments=segments, user_times=user_times)

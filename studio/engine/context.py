"""What Observational Memory put into the model's context at turn N of a thread (read-only, no Qt).

Turn N starts at the thread's N-th user message (in time order; in thread scope the Timeline's
numbering) and lasts until the thread's next one. At the first step of a turn
Mastra (@mastra/memory 1.31.0, `ObservationStep.prepare`) activates buffered chunks, reflects if
due, observes synchronously if the window is over the threshold, then builds the context: the
record's observations (split at message boundaries), the current task and suggested response,
and the messages still unobserved, keeping the turn's own input even when it was just observed.

`turn_context` replays the stored messages and the OM events the Timeline reconstructs
(`studio.engine.timeline`) up to that point: every event of turns 1..N is applied, messages
arrive up to the N-th user message. In resource scope the resource's threads take turns in
between: the events applied are those before the resource's next user message, of whichever
thread, so another thread's later cycles are not shown at this turn's start. It reports the
generation in force, how many of its Observer outputs (segments) had been written (a generation
made by activating a buffered reflection starts with the Reflector's text and the unreflected
tail it kept), which buffered chunks had been activated and which were waiting, the window,
working memory (the stored value: Mastra keeps no history of it), and each section's tokens:
Mastra's estimate (tokenx, as `TokenCounter` counts) and the exact o200k count.
`window_after_turn_tokens` is the unobserved window once the turn's messages have all arrived (the
reply included, before the next turn's step 0), replayed in time order with every message and
event up to then (in resource scope the other threads' too), so it differs from the turn-start
window above. For the last turn it is what `getStatus` reports as pending tokens: in resource
scope that adds the `<other-conversation>` context of the resource's other threads, taken from the
OM status engine (`studio.engine.status`, exact for the present). For earlier turns of a
resource-scoped thread that other-thread context is not reconstructed
(`other_threads_after_turn_tokens` is None) and the window after the turn counts the resource's
messages only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from studio.engine import tokens
from studio.engine.events import ACTIVATION, OBSERVATION, REFLECTION, REFLECTION_ACTIVATION, iso_or_none, split_segments
from studio.engine.exact_counts import exact_message_tokens, exact_tokens
from studio.engine.resource_view import observer_lines
from studio.engine.timeline import MessageWindow, Timeline, apply_event, build_timeline, replay_state
from studio.engine.timeline_series import Peaks
from studio.engine.working_memory_view import working_memory_part
from studio.errors import EngineError
from studio.store.memory_store import MemoryStore
from studio.store.records import OMRecord


class ContextError(EngineError):
    """The turn's context cannot be built: unknown thread, no OM record, or no such turn."""


@dataclass
class WindowMessage:
    """A message of the window at the turn: tokens as Mastra estimates them for the window, and exact o200k.

    `in_flight` marks the turn's own user message when OM had just observed it: Mastra keeps it in
    the context by identity (`preserveMessageIds`), so the model still saw it.
    """

    id: str
    thread_id: str
    role: str
    created_at: str | None
    estimate: int
    exact: int
    in_flight: bool = False


@dataclass
class Section:
    """One section of the context: its text (None when absent) and tokens (Mastra's estimate, exact o200k)."""

    name: str
    text: str | None
    estimate: int
    exact: int


@dataclass
class TurnContext:
    """What OM put into the model's context at one turn (see the module docstring); tokens in tokens.

    `window_estimate` is the unobserved window at the start of the turn (after step 0), what the
    model got; `window_after_turn_tokens` the window once the turn's messages had all arrived (plus,
    in resource scope, `other_threads_after_turn_tokens`, None when not reconstructed). For the
    last turn `status_pending_tokens` / `status_unobserved_messages` are Mastra's getStatus figures
    now (the Observational memory tab's), None for earlier turns.
    """

    thread_id: str
    lookup_key: str
    scope: str
    turn: int
    turns: int
    user_message_id: str
    at: str | None
    until: str | None
    generation: int
    record_id: str
    segments_shown: int
    segments_total: int
    activated_chunks: list[str]
    pending_chunks: list[str]
    current_task: str | None
    suggested_response: str | None
    observations: Section
    window: list[WindowMessage]
    window_estimate: int
    window_exact: int
    other_threads_estimate: int
    working_memory: Section
    working_memory_scope: str
    window_after_turn_tokens: int
    reconstructed: bool
    other_threads_after_turn_tokens: int | None = None
    status_pending_tokens: int | None = None
    status_unobserved_messages: int | None = None
    events: list[dict] = field(default_factory=list)
    model_view: dict = field(default_factory=dict)
    semantic_recall: dict | None = None  # what semantic recall added (studio.app.recall_context), None: nothing
    #: Why no turn after `turns` can be shown (a message Mastra cannot count arrives there), else None.
    uncountable: str | None = None

    @property
    def total_estimate(self) -> int:
        """Return the sections' estimates added up (observations + window + working memory)."""
        return self.observations.estimate + self.window_estimate + self.working_memory.estimate

    @property
    def total_exact(self) -> int:
        """Return the sections' exact o200k counts added up."""
        return self.observations.exact + self.window_exact + self.working_memory.exact

    def to_json(self) -> dict:
        """Return the stable `context --json` document."""
        out = asdict(self)
        out["tokens"] = {
            "observations": {"estimate": self.observations.estimate, "exact": self.observations.exact},
            "window": {"estimate": self.window_estimate, "exact": self.window_exact},
            "working_memory": {"estimate": self.working_memory.estimate, "exact": self.working_memory.exact},
            "total": {"estimate": self.total_estimate, "exact": self.total_exact},
            "other_threads_window": {"estimate": self.other_threads_estimate},
        }
        return out


def _order(tl: Timeline, times: list[int | None] | None = None) -> list[tuple[int, int, int]]:
    """Messages and events in the order the Timeline replays them: (ms, 0=message/2=moved host, 1=event, index).

    TIMES: each message's createdAt (epoch ms) when the caller has them.
    """
    times = times if times is not None else [m.created_ms for m in tl.messages]
    order, last = [], None
    for i, t in enumerate(times):
        last = t if t is not None else last
        order.append((last if last is not None else -1, 0, i))
    ids = {m.id: i for i, m in enumerate(tl.messages)}
    for event in tl.events:
        host = ids.get(event.message_id or "")
        if (event.kind == OBSERVATION and event.status == "completed" and host is not None
                and event.at_ms is not None and times[host] is not None and times[host] <= event.at_ms):
            order[host] = (event.at_ms, 2, host)
    order += [(e.at_ms, 1, ei) for ei, e in enumerate(tl.events) if e.at_ms is not None]
    order.sort(key=lambda x: (x[0], x[1]))
    return order


def _marker_value(event, key: str) -> str | None:
    for part in event.parts:
        value = part.data.get(key)
        if part.type.endswith("observation-end") and isinstance(value, str):
            return value
    return None


def thread_turns(tl: Timeline, thread_id: str) -> list[tuple[int, int]]:
    """Return (createdAt ms, message index) of THREAD_ID's user messages in time order: turn k is the k-th.

    In thread scope these are the Timeline's turns; in resource scope the Timeline counts every
    thread of the resource, and a turn here is still one of this thread's user messages.
    """
    return sorted((m.created_ms, i) for i, m in enumerate(tl.messages)
                  if m.role == "user" and m.created_ms is not None and m.thread_id == thread_id)


def turn_at_time(tl: Timeline, thread_id: str, at_ms: int | None) -> int:
    """Return the turn of THREAD_ID in progress at AT_MS (epoch ms): its user messages at or before it (at least 1)."""
    users = thread_turns(tl, thread_id)
    if at_ms is None:
        return max(1, len(users))
    return max(1, sum(1 for ms, _ in users if ms <= at_ms))


def turn_context(store: MemoryStore, thread_id: str, turn: int, *, timeline: Timeline | None = None) -> TurnContext:
    """Return what OM put into the model's context at turn TURN (1-based) of THREAD_ID.

    TIMELINE: a full (not slim) `build_timeline` result to reuse. In a thread holding a message Mastra
    cannot count (`Timeline.uncountable`) the turns before it are shown, the last of them ending where
    that message arrives; a later turn raises ContextError saying why. Raises ContextError (unknown
    thread, no OM record, turn out of range) or StoreError.
    """
    from studio.engine.timeline import TimelineError

    try:
        tl = timeline or build_timeline(store, thread_id)
    except TimelineError as exc:
        raise ContextError(str(exc)) from exc
    users = thread_turns(tl, thread_id)
    user_times = [ms for ms, _ in users]
    if not user_times:
        raise ContextError(f"Thread {thread_id!r} has no user message, so no turn")
    if tl.uncountable is not None and turn > len(user_times):
        raise ContextError(f"Turn {turn} cannot be shown: {tl.uncountable.sentence()}; turns 1 to "
                           f"{len(user_times)} of thread {thread_id!r} come before it")
    if not 1 <= turn <= len(user_times):
        raise ContextError(f"Turn {turn} is out of range: thread {thread_id!r} has turns 1 to {len(user_times)}")
    start_ms, user_index = users[turn - 1]
    # the last turn ends now, or where a message Mastra cannot count arrives (the timeline stops there)
    end_ms = user_times[turn] if turn < len(user_times) else tl.uncountable_at_ms
    # In resource scope another thread's user message may come before this thread's next one: its
    # turn (and what OM did in it) is not part of this turn's start.
    step_end_ms = _next_user_ms(tl, user_index, end_ms)
    dicts = [m.as_mastra() for m in tl.messages]
    after_marker = _after_marker(dicts, tl)
    order = _order(tl)
    window = MessageWindow(dicts, tl.message_counts, after_marker, tl.message_eligible)
    state = replay_state(tl)
    chunks: dict[str, int] = {}
    applied: list[int] = []
    step0: list[tuple[str, list[int]]] = []   # this turn's step-0 observations / reflections, window before each
    for ms, what, idx in order:
        if what != 1:
            if idx <= user_index:
                window.add_until(idx)
            continue
        if step_end_ms is not None and ms >= step_end_ms:
            continue
        event = tl.events[idx]
        if ms >= start_ms and event.changes_state and (
                event.kind == REFLECTION or (event.kind == OBSERVATION and event.status == "completed")):
            step0.append((event.kind, list(window.indexes())))
        apply_event(tl, idx, window, state, chunks, -1)
        applied.append(idx)
    if step_end_ms is None:
        for ei, event in enumerate(tl.events):
            if event.at_ms is None and event.changes_state:
                apply_event(tl, ei, window, state, chunks, -1)
                applied.append(ei)
    snapshot = list(window.indexes())
    # The Timeline numbers turns over the whole lookup key (every thread of a resource): this turn's there.
    timeline_turn = turn if tl.scope != "resource" else tl.event_log.turn_at(start_ms)
    after_tokens = _window_after_turn(tl, dicts, after_marker, order, end_ms)

    record = _record(tl.generations, state["generation"])
    segments = split_segments(record)
    shown = _segments_written(tl, [tl.events[ei] for ei in applied], record, segments)
    block = record.active_observations[:segments[shown - 1].prefix_end] if shown else ""
    unsure: list[str] = []
    if tl.scope == "resource" and block:
        block, unsure = _resource_block(tl, record, block, applied)

    activated = [tl.events[ei].cycle_id for ei in applied
                 if tl.events[ei].kind == ACTIVATION and tl.events[ei].cycle_id]
    pending = list(chunks)  # buffered cycles not activated (a new generation starts without chunks)
    hints = _continuation_hints(tl, applied, thread_id)
    thread = store.get_thread(thread_id)
    later_cycles = step_end_ms is not None and any(  # resource scope: another thread's cycle after this turn
        e.kind == OBSERVATION and e.at_ms is not None and e.at_ms >= step_end_ms for e in tl.events)
    if end_ms is None and thread is not None and not later_cycles:  # the last turn: the thread's stored values
        om_meta = thread.om_metadata
        for key in ("currentTask", "suggestedResponse"):
            if isinstance(om_meta.get(key), str):
                hints[key] = (om_meta[key], {"kind": "thread-metadata", "thread_id": thread_id})
    task, suggestion = hints["currentTask"][0], hints["suggestedResponse"][0]

    mine = [i for i in snapshot if tl.messages[i].thread_id == thread_id]
    in_flight = user_index not in snapshot
    listed = sorted(set(mine) | ({user_index} if in_flight else set()))
    window_rows = []
    for i in listed:
        estimate = (after_marker.get(i) or 0) if i in window.marked else tl.message_counts[i]
        window_rows.append(WindowMessage(tl.messages[i].id, tl.messages[i].thread_id, tl.messages[i].role,
                                         tl.messages[i].created_at, estimate, exact_message_tokens(dicts[i]),
                                         in_flight=(i == user_index and in_flight)))
    window_estimate = tokens.TOKENS_PER_CONVERSATION + sum(w.estimate for w in window_rows) if window_rows else 0
    others = [i for i in snapshot if tl.messages[i].thread_id != thread_id]
    other_estimate = (tokens.TOKENS_PER_CONVERSATION + sum(tl.message_counts[i] for i in others)) if others else 0
    wm_text, wm_scope = _working_memory(store, thread)
    other_after: int | None = 0 if tl.scope != "resource" else None
    status = None
    if end_ms is None and thread is not None:  # the last turn's end is now: Mastra's getStatus applies
        from studio.engine.status import compute_status

        status = compute_status(store, thread)
        if status is not None and tl.scope == "resource":
            other_after = status.other_threads_tokens
            after_tokens += other_after
    if tl.scope == "resource":  # Mastra's window holds the resource's unobserved messages, every thread's
        view_rows = _resource_rows(tl, dicts, step0, after_marker, window, record, snapshot, user_index)
    else:
        view_rows = _step0_cleanup(tl, dicts, step0, after_marker, window_rows, user_index)
    view = _model_view(tl, dicts, record, block, shown, hints, task, suggestion, view_rows, user_index)
    view = {"working_memory": working_memory_part(store, thread, tl.messages[user_index].created_ms), **view}
    if unsure and view["observations"]["source"]:
        view["observations"]["source"]["sections_unsure"] = unsure
    return TurnContext(
        model_view=view,
        thread_id=thread_id, lookup_key=tl.lookup_key, scope=tl.scope, turn=turn, turns=len(user_times),
        user_message_id=tl.messages[user_index].id, at=tl.messages[user_index].created_at,
        until=(tl.messages[users[turn][1]].created_at if turn < len(user_times)
               else iso_or_none(end_ms) if end_ms is not None else None),
        generation=record.generation_count, record_id=record.id, segments_shown=shown, segments_total=len(segments),
        activated_chunks=activated, pending_chunks=pending, current_task=task, suggested_response=suggestion,
        observations=Section("observations", block, tokens.count_observations(block), exact_tokens(block)),
        window=window_rows, window_estimate=window_estimate, window_exact=sum(w.exact for w in window_rows),
        other_threads_estimate=other_estimate,
        working_memory=Section("working_memory", wm_text, tokens.count_string(wm_text or ""),
                               exact_tokens(wm_text or "")),
        working_memory_scope=wm_scope, window_after_turn_tokens=after_tokens,
        reconstructed=bool(state["reconstructed"]), other_threads_after_turn_tokens=other_after,
        status_pending_tokens=status.pending_tokens if status is not None else None,
        status_unobserved_messages=status.unobserved_message_count if status is not None else None,
        events=[{**tl.events[ei].to_json(), "inferred": tl.events[ei].inferred} for ei in applied
                if tl.events[ei].turn == timeline_turn],
        uncountable=tl.uncountable.sentence() if tl.uncountable is not None else None)


@dataclass(frozen=True)
class AgentTurn:
    """The memory load the agent got at one turn, after OM's step 0 (tokens, Mastra's estimates).

    `window`: the unobserved message window (`TurnContext.window_estimate`: the turn's own input
    kept even when step 0 observed it); `log`: the observation log in force (`observationTokenCount`).
    """

    turn: int
    window: int
    log: int


def agent_turns(tl: Timeline) -> list[AgentTurn]:
    """Return, for each turn of TL's lookup key, what the agent got after OM's step 0, in one pass.

    The figures `turn_context` gives turn by turn (thread scope: `window_estimate`, and the log in
    force), without the model view or exact counts: every OM event before the next user message
    applies (Mastra's step 0 runs before the actor is called, even when its rows are stamped after the
    turn's reply), messages count up to the turn's user message, and that message counts even when
    step 0 observed it (Mastra keeps the turn's input, `preserveMessageIds`). Turns are the lookup
    key's user messages in time order (in resource scope, every thread's, as the Timeline numbers
    them, and the window is the resource's: not what `turn_context` reports per thread there, so the
    studio measures thread scope only). The real run's side of What-if's "agent's peak".
    """
    times = [m.created_ms for m in tl.messages]
    # Only a message that hosts OM markers can hold an end marker: the others are read as id and time alone.
    hosts = {e.message_id for e in tl.events if e.message_id} | {
        mk.message_id for mk in tl.event_log.markers if mk.message_id}
    marked = [i for i, m in enumerate(tl.messages) if m.id in hosts]
    after_marker = _after_marker({i: tl.messages[i].as_mastra() for i in marked}, tl, marked)
    order = _order(tl, times)
    users = sorted((t, i) for i, (m, t) in enumerate(zip(tl.messages, times, strict=True))
                   if m.role == "user" and t is not None)
    light = [{"id": m.id, "createdAt": m.created_at} for m in tl.messages]
    window = MessageWindow(light, tl.message_counts, after_marker, tl.message_eligible, times=times)
    state = replay_state(tl)
    chunks: dict[str, int] = {}
    out: list[AgentTurn] = []
    pos = 0
    for k, (_start, user_index) in enumerate(users):
        step_end = users[k + 1][0] if k + 1 < len(users) else None
        while pos < len(order):
            ms, what, idx = order[pos]
            if what != 1:
                if step_end is not None and ms >= step_end and idx > user_index:
                    break
                window.add_until(idx)
            else:
                if step_end is not None and ms >= step_end:
                    break
                apply_event(tl, idx, window, state, chunks, -1)
            pos += 1
        if step_end is None:
            for ei, event in enumerate(tl.events):
                if event.at_ms is None and event.changes_state:
                    apply_event(tl, ei, window, state, chunks, -1)
        window.add_until(user_index)
        got = window.tokens_through(user_index)
        if not window.holds(user_index):   # observed at this step 0: the model still got it
            got += window.message_tokens(user_index) + (0 if got else tokens.TOKENS_PER_CONVERSATION)
        out.append(AgentTurn(turn=k + 1, window=got, log=state["obs"]))
    return out


def agent_peaks(tl: Timeline) -> Peaks:
    """Return the largest load the agent got at a turn after OM's step 0 (`agent_turns`; tokens).

    `context_tokens`: the largest window + log of one turn; `message_tokens`: the largest window.
    TL must hold message contents (a `build_timeline` result, not a slim one).
    """
    turns = agent_turns(tl)
    return Peaks(context_tokens=max((t.window + t.log for t in turns), default=0),
                 message_tokens=max((t.window for t in turns), default=0))


def _model_view(tl: Timeline, dicts: list[dict], record: OMRecord, block: str, shown: int, hints: dict,
                task: str | None, suggestion: str | None, window_rows: list[WindowMessage], user_index: int) -> dict:
    """Return the `model_view` document: what the model was given at the turn, in Mastra's rendering.

    {observations, current_task, suggested_response: {text, tokens: {estimate, exact}, source},
    messages: [{role, text, id, thread_id, tokens} | {role: "user", kind: "continuation-hint"}]}
    in the model's order; see `studio.engine.model_view`. The rendering's date is the turn's user
    message's (UTC).
    """
    from datetime import UTC, datetime

    from studio.engine import model_view as mv

    at = tl.messages[user_index].created_ms
    now = datetime.fromtimestamp(at / 1000, UTC) if at is not None else datetime.now(UTC)
    rendered = mv.render_observations(block, now)
    source = {"kind": "record", "record_id": record.id, "generation": record.generation_count,
              "segments": shown} if rendered else None
    messages: list[dict] = [{"role": "user", "kind": mv.CONTINUATION_HINT}] if rendered else []
    ids = {m.id: i for i, m in enumerate(tl.messages)}
    for w in window_rows:
        messages.append({"role": w.role, "text": mv.message_text(dicts[ids[w.id]]), "id": w.id,
                         "thread_id": w.thread_id, "tokens": {"estimate": w.estimate, "exact": w.exact}})
    return {
        "observations": mv.section(rendered, source, observations=True),
        "current_task": mv.section(task, hints["currentTask"][1] if task or hints["currentTask"][1] else None),
        "suggested_response": mv.section(suggestion, hints["suggestedResponse"][1]),
        "messages": messages,
    }


def _resource_block(tl: Timeline, record: OMRecord, block: str, applied: list[int]) -> tuple[str, list[str]]:
    """Return (resource-scope BLOCK without the lines later cycles merged into its sections, the threads whose
    section may still hold some) (`resource_view`)."""
    from studio.engine.resource_view import block_at_turn, sections_unsure

    done = set(applied)
    cycles = [(ei, e) for ei, e in enumerate(tl.events)
              if e.kind == OBSERVATION and e.status == "completed" and e.changes_state and e.thread_id and e.detail
              and (e.record_id == record.id or (e.record_id is None and e.generation == record.generation_count))]
    observed = [(e.thread_id, next((p.data.get("threadIds") for p in e.parts if p.type.endswith("observation-start")
                                    and isinstance(p.data.get("threadIds"), list)), []))
                for ei, e in cycles if ei not in done]
    unsure = sections_unsure(block, {e.thread_id for ei, e in cycles if ei in done}, observed)
    return block_at_turn(block, [(e.thread_id, e.detail) for ei, e in cycles if ei in done],
                         [(e.thread_id, e.detail) for ei, e in cycles if ei not in done]), unsure


def _resource_rows(tl: Timeline, dicts: list[dict], step0: list[tuple[str, list[int]]],
                   after_marker: dict[int, int | None], window: MessageWindow, record: OMRecord,
                   snapshot: list[int], user_index: int) -> list[WindowMessage]:
    """Return the resource-scope window the model got: every thread's unobserved messages in time order.

    After a synchronous observation at the turn's step 0 it is the window before it less what the
    record says was observed (`resource_view.step0_messages`); otherwise the replayed window plus
    the turn's input.
    """
    from studio.engine.resource_view import step0_messages, step0_reflection_only

    kinds = [kind for kind, _ in step0]
    ids = [m.id for m in tl.messages]
    if step0_reflection_only(kinds):
        listed = [user_index]
    elif OBSERVATION in kinds:
        first = kinds.index(OBSERVATION)
        listed = step0_messages(step0[first][1], set(record.observed_message_ids), ids, user_index,
                                REFLECTION in kinds[first:],
                                {i for i in step0[first][1] if after_marker.get(i) is not None and i in window.marked})
    else:
        listed = sorted({*snapshot, user_index})
    rows = []
    for i in listed:
        estimate = (after_marker.get(i) or 0) if i in window.marked else tl.message_counts[i]
        rows.append(WindowMessage(ids[i], tl.messages[i].thread_id, tl.messages[i].role, tl.messages[i].created_at,
                                  estimate, exact_message_tokens(dicts[i]), in_flight=i == user_index and
                                  i not in snapshot))
    return sorted(rows, key=lambda w: (_created_ms(w.created_at), w.id))


def _step0_cleanup(tl: Timeline, dicts: list[dict], step0: list[tuple[str, list[int]]],
                   after_marker: dict[int, int | None], window_rows: list[WindowMessage],
                   user_index: int) -> list[WindowMessage]:
    """Return the window the model got after a synchronous observation at the turn's step 0 (thread scope).

    Mastra (@mastra/memory 1.31.0, `ObservationStep.prepare` then `cleanupMessages`) removes what
    the Observer saw from the live context itself, by the record's `observedMessageIds`; a message
    that already held an earlier cycle's end marker keeps its parts after that marker, so it stays.
    When a reflection followed in the same step, the new generation has no observed ids yet and the
    cleanup cuts at the newest marker instead (the turn's own reply): only the turn's input stays,
    although the replayed record state, whose cursor the reflection set, shows more.
    STEP0: (event kind, window indexes before it) of this turn's step-0 events, in order.
    """
    kinds = [kind for kind, _ in step0]
    if OBSERVATION not in kinds:
        return window_rows
    first_obs = kinds.index(OBSERVATION)
    inflight = [w for w in window_rows if w.in_flight or w.id == tl.messages[user_index].id]
    if REFLECTION in kinds[first_obs:]:
        return inflight
    before = step0[first_obs][1]
    kept = {w.id for w in window_rows}
    partial = [i for i in before if after_marker.get(i) is not None and tl.messages[i].id not in kept
               and tl.messages[i].thread_id == tl.messages[user_index].thread_id]
    extra = [WindowMessage(tl.messages[i].id, tl.messages[i].thread_id, tl.messages[i].role,
                           tl.messages[i].created_at, after_marker[i] or 0, exact_message_tokens(dicts[i]))
             for i in partial]
    return sorted([*extra, *window_rows], key=lambda w: (_created_ms(w.created_at), w.id))


def _created_ms(iso: str | None) -> int:
    from studio.engine.timeline import iso_to_ms

    return (iso_to_ms(iso) if iso else None) or 0


def _continuation_hints(tl: Timeline, applied: list[int], thread_id: str) -> dict[str, tuple[str | None, dict | None]]:
    """Return {"currentTask"|"suggestedResponse": (text, source)} of THREAD_ID as the APPLIED events left them.

    An Observer's value is kept on its cycle's end marker (source `{"kind": "marker", "message_id"}`).
    A synchronous reflection may write its own values into the thread's metadata, which keeps no
    history of them: after one, until an Observer writes a value again, the value the model saw
    is not in the rows (`(None, {"kind": "unknown"})`). In resource scope a cycle's marker sits in
    one thread only, while the multi-thread Observer may rewrite every observed thread's values:
    after another thread's cycle (or one the Timeline inferred) this thread's values are unknown.
    """
    hints: dict[str, tuple[str | None, dict | None]] = {"currentTask": (None, None), "suggestedResponse": (None, None)}
    for ei in applied:
        e = tl.events[ei]
        if tl.scope == "resource" and e.kind == OBSERVATION and e.status == "completed" and e.changes_state \
                and e.thread_id != thread_id:
            hints = {key: (None, {"kind": "unknown"}) for key in hints}
        elif e.kind == OBSERVATION and e.status == "completed":
            for key in hints:
                value = _marker_value(e, key)
                if value:
                    hints[key] = (value, {"kind": "marker", "message_id": e.message_id})
        elif e.kind == REFLECTION and e.changes_state:
            hints = {key: (None, {"kind": "unknown"}) for key in hints}
    return hints


def _next_user_ms(tl: Timeline, user_index: int, end_ms: int | None) -> int | None:
    """Return when the turn of user message USER_INDEX ended for OM: the next user message of any thread (ms).

    In thread scope that is the thread's next user message (END_MS); in resource scope the
    resource's other threads take turns in between, and their events belong to their turns.
    """
    if tl.scope != "resource":
        return end_ms
    start_ms = tl.messages[user_index].created_ms
    later = [m.created_ms for i, m in enumerate(tl.messages)
             if i > user_index and m.role == "user" and m.created_ms is not None and m.created_ms >= start_ms]
    return min([*later, *([end_ms] if end_ms is not None else [])], default=None)


def _window_after_turn(tl: Timeline, dicts: list[dict], after_marker: dict[int, int | None],
                       order: list[tuple[int, int, int]], end_ms: int | None) -> int:
    """Return the unobserved window (tokens) just before END_MS (epoch ms; None = now), replayed in time order.

    Every message and OM event before END_MS, of this thread and (resource scope) of the other
    threads, applies in the order the Timeline replays them, so an observation observes only the
    messages that had arrived when it ran. With END_MS None the events the Timeline could not place
    in time apply at the end, as they do for the Timeline's present.
    """
    window = MessageWindow(dicts, tl.message_counts, after_marker, tl.message_eligible)
    state = replay_state(tl)
    chunks: dict[str, int] = {}
    for ms, what, idx in order:
        if end_ms is not None and ms >= end_ms:
            break
        if what != 1:
            window.add_until(idx)
        else:
            apply_event(tl, idx, window, state, chunks, -1)
    if end_ms is None:
        for ei, event in enumerate(tl.events):
            if event.at_ms is None and event.changes_state:
                apply_event(tl, ei, window, state, chunks, -1)
    # A reply that holds a later cycle's markers is placed at that cycle: it had arrived all the same.
    arrived = [i for i, t in enumerate(window.times) if end_ms is None or (t is not None and t < end_ms)]
    if arrived:
        window.add_until(max(arrived))
    return window.tokens()


def after_turn_lines(doc: dict) -> list[str]:
    """Return sentences saying what the window above is (the turn's start) and what it was after the turn.

    DOC: a `context --json` document. The figure after the last turn is Mastra's getStatus pending
    tokens (the Observational memory tab's); earlier turns' resource-scope other-thread context is
    not reconstructed, and the sentence says so.
    """
    start = doc["tokens"]["window"]["estimate"]
    after = doc["window_after_turn_tokens"]
    other = doc.get("other_threads_after_turn_tokens")
    first = (f"Unobserved messages: the window at the start of turn {doc['turn']} (after OM's step 0), "
             f"{start:,} tokens")
    if doc["scope"] == "resource":
        first += (f"; other threads' messages in the resource window then: "
                  f"{doc['tokens']['other_threads_window']['estimate']:,} tokens (their <other-conversation> "
                  f"context at that time is not reconstructed)")
    lines = [first]
    if doc["until"] is None:
        text = (f"After the turn (now): {after:,} tokens unobserved = Mastra's getStatus pending tokens "
                f"(the Observational memory tab's figure)")
        if doc.get("status_unobserved_messages") is not None:
            text += f", {doc['status_unobserved_messages']:,} message(s)"
    else:
        text = f"After the turn (before turn {doc['turn'] + 1}'s step 0): {after:,} tokens unobserved"
    if doc["scope"] == "resource":
        text += (f", of which {other:,} from other threads' context" if other is not None else
                 "; other threads' context after this turn is not reconstructed (Mastra adds it to pending "
                 "tokens), so this counts the resource's messages only")
    lines.append(text)
    if doc.get("uncountable"):
        lines.append(f"⚠ No turn after turn {doc['turns']} can be shown: {doc['uncountable']}")
    return lines


def _segments_written(tl: Timeline, applied: list, record: OMRecord, segments: list) -> int:
    """Return how many leading segments of RECORD's log the APPLIED events had written.

    A segment is written by the observation whose end marker holds its text (in resource scope: whose
    Observer lines its `<thread>` section holds, `resource_view`), by the activations
    whose chunk texts it holds (several chunks activated together share one segment), or by the
    inferred event of its boundary; a reflection generation's first segment is the Reflector's.
    """
    writes = [e for e in applied if e.kind in (OBSERVATION, ACTIVATION) and e.changes_state
              and (e.record_id == record.id or (e.record_id is None and e.generation == record.generation_count))]
    shown = 1 if record.origin_type == "reflection" and segments else 0
    if record.origin_type == "reflection":
        shown = max(shown, _segments_at_creation(applied, record, segments))
    for seg in segments:
        if seg.index == 0 and record.origin_type == "reflection":
            continue
        text = seg.text.strip()
        if not text:
            continue
        for e in writes:
            detail = (e.detail or "").strip()
            if (detail and (detail == text or (e.kind == ACTIVATION and detail in text)
                            or (tl.scope == "resource" and observer_lines(detail) in text))) or (
                    e.inferred and e.last_observed_at == seg.boundary and e.generation == record.generation_count):
                shown = max(shown, seg.index + 1)
                break
    if not shown and writes:  # markers whose texts are not in the log (rewrapped): count them
        shown = min(len(segments), len(writes))
    return shown


def _segments_at_creation(applied: list, record: OMRecord, segments: list) -> int:
    """Return how many leading segments of reflection generation RECORD its creating event wrote (0 if unknown).

    Activating a buffered reflection (`tryActivateBufferedReflection`, @mastra/memory 1.31.0)
    writes the new generation as the Reflector's text plus the lines it had not reflected (the
    unreflected tail, older Observer outputs with their message boundaries), and its
    `data-om-activation` marker records that whole log (`observations`). The segments that
    log holds were in the context from that moment on, not only the Reflector's first one.
    """
    logs = [(e.detail or "").strip() for e in applied
            if e.kind in (REFLECTION, REFLECTION_ACTIVATION) and e.changes_state and e.detail
            and e.generation == record.generation_count]
    shown = 0
    for log in logs:
        for seg in segments:
            if log.startswith(record.active_observations[:seg.prefix_end].strip()):
                shown = max(shown, seg.index + 1)
    return shown


def _record(generations: list[OMRecord], generation: int) -> OMRecord:
    same = [g for g in generations if g.generation_count == generation]
    return same[-1] if same else generations[-1]


def _after_marker(dicts, tl: Timeline, indexes: list[int] | None = None) -> dict[int, int | None]:
    """Return {message index: tokens of its parts after its last completed end marker (None: none left)}.

    DICTS: the messages as Mastra holds them (`as_mastra`), a list, or a dict by index with INDEXES
    naming the messages to look at (default: every one).
    """
    from studio.engine.unobserved import last_completed_observation_boundary, unobserved_parts

    out = {}
    for i in (range(len(dicts)) if indexes is None else indexes):
        m = dicts[i]
        if last_completed_observation_boundary(m) != -1:
            parts = unobserved_parts(m)
            out[i] = (tokens.count_message_for_status({**m, "content": {**m["content"], "parts": parts}},
                                                      model=tl.settings.counter_model) if parts else None)
    return out


def _working_memory(store: MemoryStore, thread) -> tuple[str | None, str]:
    """Return (working memory text, which one): Mastra's default scope reads the resource's, else the thread's."""
    if thread is None:
        return None, "none"
    resource = store.get_resource(thread.resource_id) if thread.resource_id else None
    resource_text = resource.working_memory if resource is not None and isinstance(resource.working_memory, str) \
        else None
    if resource_text:
        return resource_text, "resource"
    if thread.working_memory:
        return thread.working_memory, "thread"
    return None, "none"

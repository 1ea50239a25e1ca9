"""Mastra's observation writes by hand, for both faces (no Qt): observe the unobserved window, activate chunks.

`memory-studio observe` / `activate` and the studio's *Observe now…* and *Activate buffered
chunks…* run these: `load_window`, `preview` and `chunk_plan` read the database read-only,
`commit` and `activate` write (only after the user confirmed; the session's backup first) through
the OM write protocol (`studio.app.write_protocol`: they take its quiet period; Mastra's own row is
updated in place, so the protocol watches that the write survives) and return what they changed
(`studio.app.changes.Written`). Errors are raised as they come (StoreError, ProviderError,
EngineError, WriteRefused, Cancelled; BadInput for an answer Mastra would reject).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from studio.app.changes import Written, record_changes
from studio.app.failures import BadInput
from studio.app.reflection import LLM, make_client

TYPE_CHECKING = False  # the Observer and the LLM client load when an observation runs (`activate` needs neither)
if TYPE_CHECKING:
    from studio.engine.observer import ObservationProgress, ObservationProposal
    from studio.llm import CancelToken


@dataclass
class ObserveRequest:
    """What to preview: the database PATH, THREAD_ID, the strategy ("llm" with MODEL / BASE_URL, or "rule-based").

    ANSWER: a given Observer answer (the command line's --answer-file) instead of either;
    TIMEOUT_S: the longest wait for one model answer (None: the client's default).
    """

    path: str
    thread_id: str
    strategy: str = LLM
    model: str | None = None
    base_url: str | None = None
    answer: str | None = None
    timeout_s: float | None = None


@dataclass(frozen=True)
class WindowRow:
    """One message of the window: CREATED_AT (ISO), THREAD_ID, ROLE, TOKENS (Mastra's estimate), TEXT (visible)."""

    created_at: str | None
    thread_id: str
    role: str
    tokens: int
    text: str


def window_rows(window) -> list[WindowRow]:
    """Return the window's messages as WindowRows, thread by thread (resource scope) in Mastra's order."""
    import copy

    from studio.engine import tokens
    from studio.engine.rule_observer import visible_text

    groups = [(t, msgs) for t, msgs, _ in window.threads] if hasattr(window, "window_ids") \
        else [(window.thread_id, window.messages)]
    rows = []
    for thread_id, messages in groups:
        for m in messages:
            count = tokens.count_message_for_status(copy.deepcopy(m))
            rows.append(WindowRow(m.get("createdAt") if isinstance(m.get("createdAt"), str) else None, thread_id,
                                  str(m.get("role") or ""), int(count or 0), visible_text(m)))
    return rows


@dataclass
class ObservePreview:
    """A proposed observation: the request, the proposal (with its window) and the window's rows."""

    request: ObserveRequest
    proposal: ObservationProposal
    rows: list[WindowRow]

    @property
    def window(self):
        """The window previewed (ObservationWindow or ResourceObservationWindow)."""
        return self.proposal.window


def load_window(path: str, thread_id: str):
    """Read THREAD_ID's unobserved window (read-only); raises ObservationInputError, StoreError."""
    from studio.engine.observer import load_observation_window

    return load_observation_window(path, thread_id)


def stored_model(window) -> str | None:
    """The Observer model stored in the window's record config, when one we can call."""
    from studio.engine.observer import default_observer_model

    return default_observer_model(window)


def propose(request: ObserveRequest, window, client, progress: Callable[[ObservationProgress], None] | None,
            cancel: CancelToken) -> ObservationProposal:
    """Run the Observer (CLIENT), the rule-based Observer, or REQUEST.answer on WINDOW; write nothing.

    Raises ObservationRejected (a degenerate or empty answer), ObservationInputError, ProviderError, Cancelled.
    """
    from studio.engine.observer import run_observation

    strategy = request.strategy or LLM
    return run_observation(window, strategy=strategy, client=client, answer=request.answer, path=request.path,
                           progress=progress, cancel=cancel)


def preview(request: ObserveRequest, progress: Callable[[ObservationProgress], None] | None,
            cancel: CancelToken) -> ObservePreview:
    """Read the window afresh and run the Observer (or the rule-based Observer) on it; write nothing.

    Raises StoreError, ObservationInputError, ObservationRejected, ProviderError or Cancelled.
    """
    window = load_window(request.path, request.thread_id)
    cancel.raise_if_cancelled()
    client = make_client(request.model or "", request.base_url, request.timeout_s) \
        if request.strategy == LLM and request.answer is None else None
    proposal = propose(request, window, client, progress, cancel)
    return ObservePreview(request, proposal, window_rows(window))


def commit(path: str, proposal: ObservationProposal, *, below_threshold: bool = False, session=None,
           quiet_ms: int = 0) -> Written:
    """Write PROPOSAL as Mastra's observe() writes it, after the session's backup; return the updated OM row.

    On a server store SESSION keeps the row backup the write saves (`WriteSession.routed`).
    Refused (WriteRefused, nothing written) when the window or record changed since the preview,
    a busy flag is live, the window is below the threshold without BELOW_THRESHOLD, or ("busy",
    "the agent is active") the conversation was written less than QUIET_MS (ms) ago. Changes: the
    record, the window's threads, and the messages it observed.
    """
    from studio.engine.observer import commit_proposal

    window = proposal.window
    if session is None:
        row = commit_proposal(path, proposal, force=below_threshold, idle_ms=quiet_ms)
    else:
        with session.routed(path):   # its row backup (and the file copy, if asked)
            row = commit_proposal(path, proposal, force=below_threshold, idle_ms=quiet_ms)
    threads = [t for t, _msgs, _ids in window.threads] if hasattr(window, "window_ids") else [window.thread_id]
    return Written(row, record_changes(window.lookup_key, threads=threads, messages=window.message_ids))


def parse_observer_answer(text: str, config: dict | None = None):
    """Return an ObserverOutput from an Observer answer TEXT, parsed as Mastra's parseObserverOutput does.

    Uses studio.engine.observer_parse (sections at line start, list-line fallback, overlong lines
    cut) with the inline extractors of the record CONFIG (its stored config; None: Mastra's
    defaults, no thread-title); raises BadInput when Mastra would reject the answer as degenerate repetition.
    """
    from studio.engine.observer_parse import observer_slugs, parse_observer_output
    from studio.store.write.observation import ObserverOutput

    parsed = parse_observer_output(text, observer_slugs(config))
    if parsed.degenerate:
        raise BadInput("the Observer answer repeats itself (Mastra rejects it as degenerate); nothing written")
    return ObserverOutput(observations=parsed.observations, current_task=parsed.current_task,
                          suggested_response=parsed.suggested_response, thread_title=parsed.thread_title,
                          extracted=parsed.extracted)


def parse_multi_thread_answer(text: str, config: dict | None = None) -> dict:
    """Return {thread id: ObserverOutput} from a resource-scope answer's `<thread id="T">…</thread>` blocks.

    Read as Mastra's parseMultiThreadObserverOutput reads it (studio.engine.observer_parse.
    parse_multi_thread_output) with the inline extractors of the record CONFIG (None: Mastra's
    defaults); raises BadInput when Mastra would reject the answer as degenerate.
    """
    from studio.engine.observer_parse import observer_slugs, parse_multi_thread_output
    from studio.store.write.observation import ObserverOutput

    parsed, degenerate = parse_multi_thread_output(text, observer_slugs(config))
    if degenerate:
        raise BadInput("the Observer answer repeats itself (Mastra rejects it as degenerate); nothing written")
    return {t: ObserverOutput(p.observations, p.current_task, p.suggested_response, p.thread_title, p.extracted)
            for t, p in parsed.items()}


# -- activation --------------------------------------------------------------------------------------

@dataclass
class ChunkPlan:
    """A record's buffered chunks and what an activation moves (Mastra's swapBufferedToActive rule).

    THREAD_ID / LOOKUP_KEY / RECORD_ID: the record as read; CHUNKS: the stored chunk dicts, oldest
    first; COUNT: how many are activated; PENDING_TOKENS, THRESHOLD: the figures the rule used
    (tokens); MOVES: `studio.store.write.activation.activation_plan` of the row (the ids, tokens and
    text the activation moves: the rule the write itself applies); OBSERVATION_TOKEN_COUNT: the
    record's stored log size (tokens).
    """

    lookup_key: str
    record_id: str
    chunks: list[dict]
    count: int
    pending_tokens: int
    threshold: int
    thread_id: str = ""
    moves: dict | None = None
    observation_token_count: int = 0
    #: getStatus's pending tokens of the thread now (the bar's figure), None when it could not be computed
    window_tokens: int | None = None


def chunk_plan(path: str, thread_id: str) -> ChunkPlan:
    """Read THREAD_ID's record and plan its activation (read-only).

    Raises BadInput for an unknown thread or one without OM, StoreError.
    """
    from studio.store import open_store
    from studio.store.write.activation import activation_plan

    with open_store(path) as store, store.snapshot():
        thread = store.get_thread(thread_id)
        if thread is None:
            raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
        key = store.lookup_key_for_thread(thread)
        record = store.om_current(key) if key else None
        if record is None:
            raise BadInput(f"Thread {thread_id!r} has no observational memory")
        from studio.engine.status import compute_status

        status = compute_status(store, thread, record)
    moves = activation_plan(record.columns)
    count = moves["chunks_before"] - moves["chunks_after"]
    return ChunkPlan(key, record.id, list(record.buffered_chunks or []), count, moves["pending_message_tokens"],
                     moves["threshold"], thread_id, moves, record.observation_token_count,
                     status.pending_tokens if status is not None else None)


def pending_difference(plan: ChunkPlan) -> str:
    """Return why the activation rule's pending tokens differ from the bar's (getStatus's), or "" when they agree.

    Mastra's activate() reads the record's stored `pendingMessageTokens` (or, when none is stored, the
    chunks' message tokens): the figure the agent saved at the end of its last step. getStatus, which
    the bars show, counts the thread's unobserved messages as stored now, so a message saved after
    that step (the turn's reply, a later message) is in the bar's figure and not yet in the rule's.
    """
    bar = plan.window_tokens
    if bar is None or bar == plan.pending_tokens:
        return ""
    stored = plan.moves is not None and plan.moves.get("pending_message_tokens") == plan.pending_tokens
    source = ("the record's pendingMessageTokens, which the agent stored at the end of its last step"
              if stored else "the record's pendingMessageTokens")
    return (f"The bar shows {bar:,} pending tokens and the rule {plan.pending_tokens:,}: Mastra's activation reads "
            f"{source}, while the bar (getStatus) recounts the thread's unobserved messages as they are stored "
            "now; what was saved after that step (the turn's reply, say) is in the bar's figure only.")


def activate(path: str, plan: ChunkPlan, *, session=None, quiet_ms: int = 0) -> Written:
    """Activate PLAN's chunks as Mastra's activate() does (studio.store.write.activation), after the session's backup.

    On a server store SESSION keeps the row backup the write saves. Refused (WriteRefused,
    nothing written) when the record moved on, a busy flag is live, or the agent wrote less than
    QUIET_MS (ms) ago. Returns activate_buffered's result ({"row", "chunks_after",
    "activated_cycle_ids", "activated_message_ids"}) and what changed.
    """
    from studio.engine.tokens import stamp_estimates
    from studio.store.write.activation import activate_buffered

    def write() -> dict:
        return activate_buffered(path, thread_id=plan.thread_id, lookup_key=plan.lookup_key,
                                 stamp_estimates=stamp_estimates, expected_record_id=plan.record_id, idle_ms=quiet_ms)

    if session is None:
        result = write()
    else:
        with session.routed(path):   # its row backup (and the file copy, if asked)
            result = write()
    return Written(result, record_changes(plan.lookup_key, threads=[plan.thread_id],
                                          messages=result.get("activated_message_ids") or ()))

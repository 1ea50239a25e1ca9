"""What the *Observe now…* and *Activate buffered chunks…* dialogs run off the GUI thread (plain functions, no Qt).

Each function opens the database itself: `load_window`, `preview` and `chunk_plan` read-only,
`commit` and `activate` for writing (only after the user confirmed; the backup of the session
first). Errors are raised as they come (StoreError, ProviderError, EngineError, WriteRefused,
Cancelled); `studio.app.reflection.describe_error` turns them into one sentence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from studio.engine.observer import (
    ObservationProgress,
    ObservationProposal,
    commit_proposal,
    default_observer_model,
    load_observation_window,
    run_observation,
)
from studio.llm import CancelToken
from studio.app.reflection import LLM, make_client


@dataclass
class ObserveRequest:
    """What to preview: the database PATH, THREAD_ID, the strategy ("llm" with MODEL / BASE_URL, or "rule-based")."""

    path: str
    thread_id: str
    strategy: str = LLM
    model: str | None = None
    base_url: str | None = None


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
    return load_observation_window(path, thread_id)


def stored_model(window) -> str | None:
    """The Observer model stored in the window's record config, when one we can call."""
    return default_observer_model(window)


def preview(request: ObserveRequest, progress: Callable[[ObservationProgress], None] | None,
            cancel: CancelToken) -> ObservePreview:
    """Read the window afresh and run the Observer (or the rule-based Observer) on it; write nothing.

    Raises StoreError, ObservationInputError, ObservationRejected, ProviderError or Cancelled.
    """
    window = load_window(request.path, request.thread_id)
    cancel.raise_if_cancelled()
    client = make_client(request.model or "", request.base_url) if request.strategy == LLM else None
    proposal = run_observation(window, strategy=request.strategy, client=client, path=request.path,
                               progress=progress, cancel=cancel)
    return ObservePreview(request, proposal, window_rows(window))


def commit(p: ObservePreview, *, below_threshold: bool = False, session=None, quiet_ms: int = 0) -> dict:
    """Write P as Mastra's observe() writes it, after the session's backup; return the updated OM row.

    Refused (WriteRefused, nothing written) when the window or record changed since the preview,
    a busy flag is live, the window is below the threshold without BELOW_THRESHOLD, or ("busy",
    "the agent is active") the conversation was written less than QUIET_MS (ms) ago.
    """
    if session is not None:
        session.before_destructive_write(p.request.path)
    return commit_proposal(p.request.path, p.proposal, force=below_threshold, idle_ms=quiet_ms)


@dataclass
class ChunkPlan:
    """A record's buffered chunks and how many an activation moves (Mastra's swapBufferedToActive rule).

    CHUNKS: the stored chunk dicts, oldest first; COUNT: how many are activated; PENDING_TOKENS,
    THRESHOLD: the figures the rule used (tokens).
    """

    lookup_key: str
    record_id: str
    chunks: list[dict]
    count: int
    pending_tokens: int
    threshold: int


def chunk_plan(path: str, thread_id: str) -> ChunkPlan:
    """Read THREAD_ID's record and plan its activation (read-only); raises ObservationInputError, StoreError."""
    from studio.engine.observer import ObservationInputError
    from studio.common.om_settings import max_threshold, resolve_settings
    from studio.store.memory_store import MemoryStore
    from studio.store.write.activation import DEFAULT_BUFFER_ACTIVATION, activation_chunk_count

    with MemoryStore.open(path) as store:
        thread = store.get_thread(thread_id)
        key = store.lookup_key_for_thread(thread) if thread is not None else None
        record = store.om_current(key) if key else None
    if record is None:
        raise ObservationInputError(f"Thread {thread_id!r} has no observational memory")
    chunks = list(record.buffered_chunks or [])
    config = record.config if isinstance(record.config, dict) else {}
    obs = config.get("observation") if isinstance(config.get("observation"), dict) else {}
    settings = resolve_settings(config, record.scope)
    threshold = max_threshold(settings.message_tokens)
    pending = int(record.columns.get("pendingMessageTokens") or 0) or sum(int(c.get("messageTokens") or 0)
                                                                         for c in chunks)
    ratio = obs.get("bufferActivation")
    ratio = DEFAULT_BUFFER_ACTIVATION if not isinstance(ratio, (int, float)) else float(ratio)
    block_after = obs.get("blockAfter") if isinstance(obs.get("blockAfter"), (int, float)) else 0
    count = activation_chunk_count(chunks, pending, threshold, ratio, bool(block_after) and pending >= block_after)
    return ChunkPlan(key, record.id, chunks, count, pending, threshold)


def activate(path: str, thread_id: str, plan: ChunkPlan, *, session=None, quiet_ms: int = 0) -> dict:
    """Activate PLAN's chunks as Mastra's activate() does (studio.store.write.activation), after the session's backup.

    Refused (WriteRefused, nothing written) when the record moved on, a busy flag is live, or the
    agent wrote less than QUIET_MS (ms) ago. Returns activate_buffered's result.
    """
    from studio.engine.tokens import stamp_estimates
    from studio.store.write.activation import activate_buffered

    if session is not None:
        session.before_destructive_write(path)
    return activate_buffered(path, thread_id=thread_id, lookup_key=plan.lookup_key, stamp_estimates=stamp_estimates,
                             expected_record_id=plan.record_id, idle_ms=quiet_ms)


def watch_in_place(path: str, lookup_key: str, record_id: str, written: str, ago_ms: int | None,
                   cancelled: Callable[[], bool], window_ms: int | None = None) -> bool:
    """Watch an in-place write (observe / activate) for the protocol's window; return False when it was overwritten.

    The written row carries no studio mark, so what is watched is its text: a turn that read the
    row before the commit rewrites `activeObservations` from its own copy and drops ours
    (studio.store.write.observation.observation_survived). WINDOW_MS defaults to the stored turn
    timings' window, 0 when the conversation was quiet for longer (AGO_MS) than a turn takes.
    """
    from studio.store.write.observation import observation_survived
    from studio.store.write.protocol import store_turn_ms, watch_window_ms

    if window_ms is None:
        window_ms = watch_window_ms(store_turn_ms(path, lookup_key))
        if ago_ms is None or ago_ms > window_ms:
            window_ms = 0
    deadline = time.monotonic() + window_ms / 1000
    while True:
        if not observation_survived(path, record_id, written):
            return False
        if time.monotonic() >= deadline or cancelled():
            return True
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))

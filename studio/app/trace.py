"""Module-level loaders of the Trace panel and the turn-context view (no Qt: they run in a worker or the helper)."""

from __future__ import annotations

from studio.engine.context import TurnContext, turn_context
from studio.engine.trace import TraceResult, trace_fact
from studio.store.memory_store import MemoryStore
from studio.app.listing import require_store


def load_trace(store: MemoryStore | None, thread_id: str, text: str) -> TraceResult:
    """Return `trace_fact` of TEXT in THREAD_ID (raises StoreError without a database, TraceError)."""
    return trace_fact(require_store(store), thread_id, text)


def load_turn_context(store: MemoryStore | None, thread_id: str, turn: int | None,
                      at_ms: int | None = None) -> TurnContext:
    """Return the context of TURN of THREAD_ID; TURN None: the turn in progress at AT_MS (epoch ms), or the last.

    Raises StoreError without a database, ContextError (no OM record, turn out of range).
    """
    from studio.engine.context import ContextError, turn_at_time
    from studio.engine.timeline import TimelineError, build_timeline

    store = require_store(store)
    try:
        timeline = build_timeline(store, thread_id)
    except TimelineError as exc:
        raise ContextError(str(exc)) from exc
    if turn is None:
        turn = turn_at_time(timeline, thread_id, at_ms)
    return turn_context(store, thread_id, turn, timeline=timeline)

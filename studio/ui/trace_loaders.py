"""Module-level loaders of the Trace panel and the turn-context view (no Qt: they run in a worker or the helper)."""

from __future__ import annotations

from studio.engine.context import TurnContext, turn_context
from studio.engine.trace import TraceResult, trace_fact
from studio.store.memory_store import MemoryStore
from studio.ui.loaders import require_store


def load_trace(store: MemoryStore | None, thread_id: str, text: str) -> TraceResult:
    """Return `trace_fact` of TEXT in THREAD_ID (raises StoreError without a database, TraceError)."""
    return trace_fact(require_store(store), thread_id, text)


def load_turn_context(store: MemoryStore | None, thread_id: str, turn: int | None) -> TurnContext:
    """Return the context of TURN (None: the last turn) of THREAD_ID (raises StoreError, ContextError)."""
    from studio.engine.timeline import build_timeline

    store = require_store(store)
    if turn is None:
        from studio.engine.context import ContextError
        from studio.engine.timeline import TimelineError

        try:
            timeline = build_timeline(store, thread_id)
        except TimelineError as exc:
            raise ContextError(str(exc)) from exc
        return turn_context(store, thread_id, max(1, len(timeline.event_log.user_times)), timeline=timeline)
    return turn_context(store, thread_id, turn)

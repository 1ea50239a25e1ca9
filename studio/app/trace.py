"""Follow a fact through a thread's generations, and what OM put into the context at a turn (no Qt).

The loaders of the studio's Trace panel and turn-context view (module-level: they run on the
database worker or in the helper process) and the documents of `memory-studio trace` and
`context` (each reads an open store; the caller holds one snapshot).
"""

from __future__ import annotations

from studio.app.failures import BadInput
from studio.app.loads import require_store

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.engine.context import TurnContext
    from studio.engine.trace import TraceResult
    from studio.store.memory_store import MemoryStore


def load_trace(store: MemoryStore | None, thread_id: str, text: str) -> TraceResult:
    """Return `trace_fact` of TEXT in THREAD_ID (raises StoreError without a database, TraceError)."""
    from studio.engine.trace import trace_fact

    return trace_fact(require_store(store), thread_id, text)


def load_turn_context(store: MemoryStore | None, thread_id: str, turn: int | None,
                      at_ms: int | None = None) -> TurnContext:
    """Return the context of TURN of THREAD_ID; TURN None: the turn in progress at AT_MS (epoch ms), or the last.

    Raises StoreError without a database, ContextError (no OM record, turn out of range).
    """
    from studio.engine.context import ContextError, turn_at_time, turn_context
    from studio.engine.timeline import TimelineError, build_timeline

    store = require_store(store)
    try:
        timeline = build_timeline(store, thread_id)
    except TimelineError as exc:
        raise ContextError(str(exc)) from exc
    if turn is None:
        turn = turn_at_time(timeline, thread_id, at_ms)
    return turn_context(store, thread_id, turn, timeline=timeline)


def trace_document(store: MemoryStore, thread_id: str, text: str) -> dict:
    """Return the `trace --json` document for TEXT in THREAD_ID (`TraceResult.to_json`); BadInput for an unknown
    thread or an empty text."""
    from studio.engine.trace import TraceError, trace_fact

    try:
        return trace_fact(store, thread_id, text).to_json()
    except TraceError as exc:
        raise BadInput(str(exc)) from exc


def context_document(store: MemoryStore, thread_id: str, turn: int) -> dict:
    """Return the `context --json` document of turn TURN (from 1) of THREAD_ID (`TurnContext.to_json`); BadInput
    for an unknown thread, one without OM, or a turn out of range."""
    from studio.engine.context import ContextError, turn_context

    try:
        return turn_context(store, thread_id, turn).to_json()
    except ContextError as exc:
        raise BadInput(str(exc)) from exc

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
    from studio.engine.history_view import HistoryContext
    from studio.engine.semantic import SemanticConfig
    from studio.engine.trace import TraceResult
    from studio.store.memory_store import MemoryStore


def load_trace(store: MemoryStore | None, thread_id: str, text: str) -> TraceResult:
    """Return `trace_fact` of TEXT in THREAD_ID (raises StoreError without a database, TraceError)."""
    from studio.engine.trace import trace_fact

    return trace_fact(require_store(store), thread_id, text)


def load_turn_context(store: MemoryStore | None, thread_id: str, turn: int | None,
                      at_ms: int | None = None, semantic: SemanticConfig | None = None,
                      vector_store: str | None = None) -> TurnContext:
    """Return the context of TURN of THREAD_ID; TURN None: the turn in progress at AT_MS (epoch ms), or the last.

    With what semantic recall added (SEMANTIC: its options, None: Mastra's defaults) when the turn's user
    message was embedded; its vectors read from VECTOR_STORE when given (`studio.app.vector_store`).
    Raises StoreError without a database, ContextError (no OM record, turn out of range).
    """
    from studio.app.recall_context import apply_turn_recall
    from studio.app.vector_store import attach_vector_store
    from studio.engine.context import ContextError, turn_at_time, turn_context
    from studio.engine.timeline import TimelineError, build_timeline

    store = require_store(store)
    attach_vector_store(store, vector_store)
    try:
        timeline = build_timeline(store, thread_id)
    except TimelineError as exc:
        raise ContextError(str(exc)) from exc
    if turn is None:
        turn = turn_at_time(timeline, thread_id, at_ms)
    return apply_turn_recall(store, turn_context(store, thread_id, turn, timeline=timeline), semantic)


def trace_document(store: MemoryStore, thread_id: str, text: str) -> dict:
    """Return the `trace --json` document for TEXT in THREAD_ID (`TraceResult.to_json`); BadInput for an unknown
    thread or an empty text."""
    from studio.engine.trace import TraceError, trace_fact

    try:
        return trace_fact(store, thread_id, text).to_json()
    except TraceError as exc:
        raise BadInput(str(exc)) from exc


def context_document(store: MemoryStore, thread_id: str, turn: int, last_messages: int | None = None,
                     semantic: SemanticConfig | None = None) -> dict:
    """Return the `context --json` document of turn TURN (from 1) of THREAD_ID; BadInput for an unknown thread or a
    turn out of range.

    With OM: `TurnContext.to_json`. Without: `HistoryContext.to_json` (`scope: "history"`), the
    message history Mastra gave the model with `lastMessages` LAST_MESSAGES (None: Mastra's default).
    Either way `semantic_recall` says what semantic recall (options SEMANTIC, None: Mastra's defaults)
    added from the turn's user message's stored vector, and the model view holds it
    (`studio.app.recall_context`); None when that message has no stored vector.
    """
    from studio.app.recall_context import apply_turn_recall
    from studio.engine.context import ContextError, turn_context
    from studio.engine.history_view import HistoryViewError, history_turn_view

    try:
        if without_om(store, thread_id):
            ctx = history_turn_view(store, thread_id, turn, last_messages=last_messages)
        else:
            ctx = turn_context(store, thread_id, turn)
        return apply_turn_recall(store, ctx, semantic).to_json()
    except (ContextError, HistoryViewError) as exc:
        raise BadInput(str(exc)) from exc


def without_om(store: MemoryStore, thread_id: str) -> bool:
    """Return True when THREAD_ID exists and no OM record governs it (its context is its message history)."""
    thread = store.get_thread(thread_id)
    return thread is not None and store.lookup_key_for_thread(thread) is None


def load_history_context(store: MemoryStore | None, thread_id: str, turn: int | None,
                         last_messages: int | None = None, semantic: SemanticConfig | None = None,
                         vector_store: str | None = None) -> HistoryContext:
    """Return the message-history context of TURN (None: the last) of THREAD_ID, a thread without OM.

    LAST_MESSAGES: the agent's `lastMessages` (None: Mastra's default); with what semantic recall (options
    SEMANTIC, None: Mastra's defaults; vectors from VECTOR_STORE when given) added. Raises StoreError without
    a database, HistoryViewError (unknown thread, turn out of range).
    """
    from studio.app.recall_context import apply_turn_recall
    from studio.app.vector_store import attach_vector_store
    from studio.engine.history_view import HistoryViewError, history_turn_view

    store = require_store(store)
    attach_vector_store(store, vector_store)
    if turn is None:
        thread = store.get_thread(thread_id)
        if thread is None:
            raise HistoryViewError(f"No thread {thread_id!r}")
        turn = max(1, sum(1 for m in store.list_messages(thread_id) if m.role == "user"))
    return apply_turn_recall(store, history_turn_view(store, thread_id, turn, last_messages=last_messages), semantic)

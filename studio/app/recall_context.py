"""What semantic recall brought into turn N, offline, joined to the turn's context (no Qt).

The turn's user message's stored vector is the query the agent's SemanticRecall processor used
(`studio.app.semantic.turn_recall`); the messages its hits brought in that the context did not hold
already join the model view (`studio.engine.recall_view.apply_recall`). Used by `context --json`
(`semantic_recall`), the Context view's "Semantic recall" part and the Timeline's recall marks.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.engine.semantic import SemanticConfig
    from studio.store.memory_store import MemoryStore

__all__ = ["apply_turn_recall", "load_recall_marks", "recall_marks", "turn_semantic_recall"]


def _message_facts(m) -> dict:
    return {"id": m.id, "role": m.role, "thread_id": m.thread_id, "created_at": m.created_at}


def turn_semantic_recall(store: MemoryStore, user_message_id: str, view: dict, config: SemanticConfig,
                         ) -> tuple[dict | None, dict]:
    """Return (the `semantic_recall` document, VIEW with recall's additions) for the turn of USER_MESSAGE_ID.

    VIEW is the turn's model view without recall (its messages are what the context held already,
    Mastra's `existingIds`). The document: {query_message_id, index_name, query_exact, agent_turn (the
    vector is keyed by the message id, as the SemanticRecall processor stores an agent turn's; False: a
    random id, as `Memory.saveMessages` stores it, so no agent turn may have queried with it), semantic_recall
    (the options, Mastra's shape), vector_hits: [{id, message_id, thread_id, score, text}] (score: libSQL's
    float32 cosine), brought_in_ids (the hits' messages with their ranges, as of the turn), recalled (the
    same-thread ones added: [{id, role, thread_id, created_at}]), other_threads (scope "resource": the
    other threads' ones, in the system message's order), system_message (its text, None without)}.
    (None, VIEW) when the message has no stored vector: it was not embedded, so no recall is known.
    Raises StoreError.
    """
    from studio.app.semantic import stored_vector, turn_recall
    from studio.engine.recall_view import apply_recall, recall_order

    found_vector = stored_vector(store, user_message_id)
    if found_vector is None:
        return None, view
    found = turn_recall(store, user_message_id, config, last_messages=0)
    thread_id = found["thread_id"]
    held = {m.get("id") for m in view.get("messages") or [] if m.get("id")}
    wanted = [i for i in found["range_ids"] if i not in held]
    ids = list(dict.fromkeys([*wanted, *held]))
    rows = {m.id: m for m in store.select_messages(f"WHERE id IN ({', '.join('?' * len(ids))})", ids)} if ids else {}
    new = [rows[i] for i in wanted if i in rows]
    same = [m.as_mastra() for m in new if not m.thread_id or m.thread_id == thread_id]
    others = recall_order([m.as_mastra() for m in new if m.thread_id and m.thread_id != thread_id]) \
        if config.scope == "resource" else []
    created = {i: rows[i].created_at for i in held if i in rows and rows[i].created_at}
    shown = apply_recall(view, same, others, thread_id, created)
    facts = {m.id: _message_facts(m) for m in new}
    doc = {"query_message_id": user_message_id, "index_name": found["index_name"],
           "query_exact": found["query_exact"], "agent_turn": found_vector[1].vector_id == user_message_id,
           "semantic_recall": config.to_json(),
           "vector_hits": found["vector_hits"], "brought_in_ids": found["range_ids"],
           "recalled": [facts[m["id"]] for m in same], "other_threads": [facts[m["id"]] for m in others],
           "system_message": shown["remembered"]["text"]}
    return doc, shown


def apply_turn_recall(store: MemoryStore, ctx, config: SemanticConfig | None):
    """Set CTX's (a TurnContext or HistoryContext) `semantic_recall` and recall's additions to its model view,
    for the turn's user message (CONFIG None: Mastra's defaults); return CTX. Raises StoreError."""
    from studio.engine.semantic import SemanticConfig

    user = getattr(ctx, "user_message_id", None) or turn_user_message(store, ctx.thread_id, ctx.turn)
    if user is None:
        return ctx
    ctx.semantic_recall, ctx.model_view = turn_semantic_recall(store, user, ctx.model_view,
                                                               config or SemanticConfig())
    return ctx


def turn_user_message(store: MemoryStore, thread_id: str, turn: int) -> str | None:
    """Return the id of THREAD_ID's TURN-th user message (from 1, in stored order), or None."""
    users = [m.id for m in store.list_messages(thread_id) if m.role == "user"]
    return users[turn - 1] if 1 <= turn <= len(users) else None


def recall_marks(store: MemoryStore, thread_id: str, config: SemanticConfig, last_messages: int | None,
                 cancelled=lambda: False) -> list[dict]:
    """Return the Timeline's recall marks of THREAD_ID: [{turn, message_id, created_at, recalled: [{id, role,
    thread_id, created_at, excerpt}]}] for each turn whose semantic recall brought messages in (same thread
    or others), in turn order; the context held is the LAST_MESSAGES window (None: Mastra's 10), as
    `turn_recall` takes it (for a thread with OM the window OM kept may differ: the Context view says
    what that turn's model view held). EXCERPT: the message's text on one line, at most 120 characters.

    CANCELLED() is asked between turns; when it answers True the marks found so far are returned.
    [] without a vector index. Raises StoreError.
    """
    from studio.app.semantic import memory_indexes, stored_vector, turn_recall

    if not memory_indexes(store):
        return []
    cap = 10 if last_messages is None else last_messages
    marks = []
    for n, user in enumerate((m for m in store.list_messages(thread_id) if m.role == "user"), start=1):
        if cancelled():
            break
        if stored_vector(store, user.id) is None:
            continue
        found = turn_recall(store, user.id, config, last_messages=cap)
        ids = found["recalled_ids"] + found["other_thread_ids"]
        if ids:
            rows = {m.id: m for m in store.select_messages(f"WHERE id IN ({', '.join('?' * len(ids))})", ids)}
            marks.append({"turn": n, "message_id": user.id, "created_at": user.created_at,
                          "recalled": [{**_message_facts(rows[i]), "excerpt": _excerpt(rows[i])}
                                       for i in ids if i in rows]})
    return marks


def _excerpt(message, limit: int = 120) -> str:
    from studio.engine.model_view import message_text

    one = " ".join(message_text(message.as_mastra()).split())
    return one if len(one) <= limit else one[:limit - 1] + "…"


def load_recall_marks(store: MemoryStore | None, thread_id: str, config: SemanticConfig, last_messages: int | None,
                      vector_store: str | None = None, cancel=None) -> list[dict]:
    """Return `recall_marks` of THREAD_ID (a loader of the Timeline tab: the database worker or the helper
    process), the vectors read from VECTOR_STORE when given (`studio.app.vector_store`); CANCEL (a
    threading.Event, or None) stops it between turns. Raises StoreError."""
    from studio.app.loads import require_store
    from studio.app.vector_store import attach_vector_store

    store = require_store(store)
    attach_vector_store(store, vector_store)
    return recall_marks(store, thread_id, config, last_messages,
                        cancelled=(lambda: cancel.is_set()) if cancel is not None else (lambda: False))

"""What the model was given at turn N of a thread without Observational Memory: its message history (no Qt).

Without OM, Mastra's Memory (@mastra/core 1.71, `MessageHistory` and, with a token budget, a
`TokenLimiterProcessor` in `memory-only` trim mode) gives the model the thread's recent messages
and the turn's input:
- `lastMessages` (code, not data: the caller passes it, Mastra's default is 10) caps the history
  read before the input, newest first; `false`/0 turns history off;
- with `messageHistory: {maxTokens, atMaxRemoveTokens}` the agent keeps a boundary in the
  thread's metadata (`memoryTokenLimiter`: `{createdAt, messageIds, maxTokens, atMaxRemoveTokens}`,
  data). Messages at or before it are out of memory (`isAfterMemoryTokenBoundary`: newer than
  `createdAt`, or as new and not in `messageIds`). At each turn's input step the limiter counts
  the conversation (24 tokens, each message as @mastra/memory's `TokenCounter` counts it); over
  `maxTokens`, it drops the oldest history (tool-call-linked messages together) until the count is
  at most `maxTokens - atMaxRemoveTokens`, and moves the boundary to the newest message dropped
  (`advanceMemoryTokenBoundary`). A token budget replaces the default count window: only an
  explicit `lastMessages` caps it then.

The thread's metadata keeps only the newest boundary, so earlier turns are replayed from the
first turn; the replay's final boundary is compared with the stored one (`boundary_matches`).
The agent's instructions (code) are not counted: the limiter counts them too, so a long system
prompt can trim earlier than this replay does, which `boundary_matches` then shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.engine import tokens
from studio.engine.exact_counts import exact_message_tokens
from studio.errors import EngineError
from studio.store.memory_store import MemoryStore

#: Mastra's default `lastMessages` (@mastra/core `memoryDefaultOptions`).
DEFAULT_LAST_MESSAGES = 10


class HistoryViewError(EngineError):
    """The turn's history cannot be built: unknown thread, no user message, or no such turn."""


@dataclass
class HistoryContext:
    """What a thread without OM gave the model at one turn (module docstring); `model_view` as `TurnContext`'s."""

    thread_id: str
    turn: int
    turns: int
    at: str | None
    last_messages: int | None
    token_limit: dict | None
    boundary: dict | None
    replayed_boundary: dict | None
    stored_boundary: dict | None
    model_view: dict = field(default_factory=dict)
    semantic_recall: dict | None = None  # what semantic recall added (studio.app.recall_context), None: nothing

    @property
    def boundary_matches(self) -> bool | None:
        """Return whether the replay's newest boundary equals the stored one (None without a token budget)."""
        if self.token_limit is None:
            return None
        return _same_boundary(self.replayed_boundary, self.stored_boundary)

    def to_json(self) -> dict:
        """Return the `context --json` document of a thread without OM (`scope: "history"`)."""
        return {"thread_id": self.thread_id, "scope": "history", "turn": self.turn, "turns": self.turns,
                "at": self.at, "last_messages": self.last_messages, "token_limit": self.token_limit,
                "boundary_at_turn": self.boundary, "replayed_boundary": self.replayed_boundary,
                "stored_boundary": self.stored_boundary,
                "boundary_matches": self.boundary_matches, "model_view": self.model_view,
                "semantic_recall": self.semantic_recall}


def stored_boundary(metadata: dict | None) -> dict | None:
    """Return the thread metadata's `memoryTokenLimiter` when well formed (`getMemoryTokenBoundary`), else None."""
    value = (metadata or {}).get("memoryTokenLimiter") if isinstance(metadata, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("createdAt"), str):
        return None
    ids = value.get("messageIds")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return None
    if not all(isinstance(value.get(k), int | float) for k in ("maxTokens", "atMaxRemoveTokens")):
        return None
    return value


def _same_boundary(a: dict | None, b: dict | None) -> bool:
    if a is None or b is None:
        return a is b
    return _ms(a["createdAt"]) == _ms(b["createdAt"]) and set(a["messageIds"]) == set(b["messageIds"])


def _ms(iso: str) -> int | None:
    from studio.engine.timeline import iso_to_ms

    return iso_to_ms(iso)


def _after(message: dict, boundary: dict | None) -> bool:
    if boundary is None:
        return True
    t, start = _ms(message.get("createdAt") or ""), _ms(boundary["createdAt"])
    if t is None or start is None:
        return True
    return t > start or (t == start and message["id"] not in boundary["messageIds"])


def _tool_call_ids(message: dict) -> set[str]:
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    ids = {p["toolInvocation"]["toolCallId"] for p in content.get("parts") or []
           if isinstance(p, dict) and p.get("type") == "tool-invocation"
           and isinstance(p.get("toolInvocation"), dict) and p["toolInvocation"].get("toolCallId")}
    ids |= {t["toolCallId"] for t in content.get("toolInvocations") or []
            if isinstance(t, dict) and t.get("toolCallId")}
    return ids


def _groups(messages: list[dict]) -> list[list[int]]:
    """Return MESSAGES' indexes grouped as `groupLinkedToolMessages` groups them (shared tool-call ids), in order."""
    parent = list(range(len(messages)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    first: dict[str, int] = {}
    for i, m in enumerate(messages):
        for call in _tool_call_ids(m):
            if call in first:
                a, b = find(first[call]), find(i)
                if a != b:
                    parent[b] = a
            else:
                first[call] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(messages)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _advance(previous: dict | None, removed: list[dict], limit: dict) -> dict | None:
    """Return the boundary after REMOVED were trimmed (`advanceMemoryTokenBoundary`: monotonic)."""
    if not removed:
        return previous
    times = [(_ms(m.get("createdAt") or "") or 0, m) for m in removed]
    newest = max(t for t, _ in times)
    before = _ms(previous["createdAt"]) if previous else None
    if before is not None and newest < before:
        return previous
    ids = [m["id"] for t, m in times if t == newest]
    if before == newest:
        ids = list(dict.fromkeys([*previous["messageIds"], *ids]))
    created = next(m["createdAt"] for t, m in times if t == newest)
    return {"createdAt": created, "messageIds": ids, **limit}


def history_turn_view(store: MemoryStore, thread_id: str, turn: int, *,
                      last_messages: int | None = DEFAULT_LAST_MESSAGES) -> HistoryContext:
    """Return what the model was given at turn TURN (1-based) of THREAD_ID, a thread without OM.

    LAST_MESSAGES: the agent's `lastMessages` (None: not set, Mastra's default applies without a
    token budget; 0: no history). Raises HistoryViewError (unknown thread, turn out of range) or
    StoreError.
    """
    from studio.engine import model_view as mv
    from studio.engine.working_memory_view import working_memory_part

    thread = store.get_thread(thread_id)
    if thread is None:
        raise HistoryViewError(f"No thread {thread_id!r} in {store.location.display}")
    messages = [m.as_mastra() for m in store.list_messages(thread_id)]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not users:
        raise HistoryViewError(f"Thread {thread_id!r} has no user message, so no turn")
    if not 1 <= turn <= len(users):
        raise HistoryViewError(f"Turn {turn} is out of range: thread {thread_id!r} has turns 1 to {len(users)}")
    stored = stored_boundary(thread.metadata)
    limit = {"maxTokens": stored["maxTokens"], "atMaxRemoveTokens": stored["atMaxRemoveTokens"]} if stored else None
    cap = last_messages if (last_messages is not None or limit is not None) else DEFAULT_LAST_MESSAGES
    counts = [tokens.count_message(m) for m in messages]
    boundary, seen, at_turn = None, [], None
    for k, ui in enumerate(users[:turn] if limit is None else users):
        history = [i for i in range(ui) if _after(messages[i], boundary)]
        if cap is not None:
            history = history[-cap:] if cap > 0 else []
        window = [*history, ui]
        if limit is not None:
            total = tokens.TOKENS_PER_CONVERSATION + sum(counts[i] for i in window)
            removed: list[int] = []
            if total > limit["maxTokens"]:
                for group in _groups([messages[i] for i in window]):
                    if total <= limit["maxTokens"] - limit["atMaxRemoveTokens"]:
                        break
                    if any(window[g] == ui for g in group):
                        continue
                    removed += [window[g] for g in group]
                    total -= sum(counts[window[g]] for g in group)
            boundary = _advance(boundary, [messages[i] for i in removed], limit)
            window = [i for i in window if i not in removed]
        if k == turn - 1:
            seen, at_turn = window, boundary
    view_messages = [{"role": messages[i]["role"], "text": mv.message_text(messages[i]), "id": messages[i]["id"],
                      "thread_id": thread_id,
                      "tokens": {"estimate": counts[i], "exact": exact_message_tokens(messages[i])}} for i in seen]
    none = mv.section(None, None)
    return HistoryContext(
        thread_id=thread_id, turn=turn, turns=len(users), at=messages[users[turn - 1]].get("createdAt"),
        last_messages=cap, token_limit=limit, boundary=at_turn, replayed_boundary=boundary if limit else None,
        stored_boundary=stored,
        model_view={"working_memory": working_memory_part(store, thread, _ms(messages[users[turn - 1]].get("createdAt")
                                                                   or "")),
                    "observations": none, "current_task": none, "suggested_response": mv.section(None, None),
                    "messages": view_messages})

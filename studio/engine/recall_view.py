"""What semantic recall adds to the model view of a turn, in Mastra's rendering (pure, no I/O, no Qt).

The SemanticRecall input processor (@mastra/core 1.71, used by @mastra/memory 1.31.0) queries the
vector index with the turn's newest user message, lists every hit's message with `messageRange`
neighbours, and keeps those not already in the context (`existingIds`: the message history and the
input). Of these:
- same-thread messages (or messages without a thread) join the messages, as messages of source
  "memory" (`messageList.add(…, "memory")`), in createdAt order with the others;
- with scope "resource", other threads' messages become one system message
  (`formatCrossThreadMessages`): sorted by createdAt, thread id, role (system, user, assistant,
  tool), id (`sortMessagesForRecall`), rendered under a header per UTC date, each entry
  `Message from previous conversation at H:MM AM: Role: text` (text parts joined by one space, the
  entries written back to back), wrapped in the `remembered_from_other_conversation` tags.

`apply_recall` returns a model view (`studio.engine.model_view`'s document) with those additions:
recalled messages carry `recalled: True`, and the system message is the view's `remembered` part.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["REMEMBERED_KIND", "apply_recall", "other_conversation_block", "recall_order", "recall_report"]

#: The `source.kind` of the view's `remembered` part.
REMEMBERED_KIND = "semantic-recall"
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_ROLE_ORDER = {"system": 0, "user": 1, "assistant": 2, "tool": 3}


def _when(iso: str | None) -> datetime:
    """Parse a stored createdAt (ISO 8601, `Z` or an offset) as a UTC datetime; an unreadable one is the epoch."""
    try:
        value = datetime.fromisoformat(str(iso or "").replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def recall_order(messages: list[dict]) -> list[dict]:
    """Return MESSAGES (Mastra-shaped dicts: id, role, createdAt, threadId) in `sortMessagesForRecall`'s order:
    createdAt (to the millisecond), then thread id, role (system, user, assistant, tool, other), id."""
    def key(m: dict):
        return (_when(m.get("createdAt")).timestamp(), str(m.get("threadId") or ""), _ROLE_ORDER.get(m.get("role"), 99),
                str(m.get("id") or ""))
    return sorted(messages, key=key)


def _flat_text(message: dict) -> str:
    """The text Mastra's v1 message shows in the block: a string content itself, else its text parts joined by ' '."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = (content or {}).get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return str((content or {}).get("content") or "") if isinstance(content, dict) else ""
    return " ".join(p.get("text") or "" for p in parts if isinstance(p, dict) and p.get("type") == "text")


def other_conversation_block(messages: list[dict], thread_id: str) -> str | None:
    """Return the system message `formatCrossThreadMessages` writes for MESSAGES (other threads' recalled
    messages, Mastra-shaped dicts) seen from THREAD_ID, or None when there are none.

    Dates and times are UTC, as Mastra writes them (its month name follows the process's local zone:
    the same as UTC in the corpus's runs).
    """
    if not messages:
        return None
    out, last_day = [], None
    for m in recall_order(messages):
        at = _when(m.get("createdAt"))
        day = f"{at.year}, {_MONTHS[at.month - 1]}, {at.day}"
        if day != last_day:
            out.append(f"\nthe following messages are from {day}\n")
        hour = at.hour % 12 or 12
        clock = f"{hour}:{at.minute:02d} {'AM' if at.hour < 12 else 'PM'}"
        origin = "from previous conversation" if m.get("threadId") and m.get("threadId") != thread_id else ""
        role = str(m.get("role") or "")
        out.append(f"Message {origin} at {clock}: {role[:1].upper()}{role[1:]}: {_flat_text(m)}")
        last_day = day
    body = "".join(out)
    return ("The following messages were remembered from a different conversation:\n"
            f"<remembered_from_other_conversation>\n{body}\n<end_remembered_from_other_conversation>")


def apply_recall(view: dict, recalled: list[dict], others: list[dict], thread_id: str, created: dict[str, str]) -> dict:
    """Return model view VIEW with what semantic recall added at the turn (VIEW itself is not changed).

    RECALLED: same-thread messages to add (Mastra-shaped dicts), each joining `messages` with
    `recalled: True` before the first of VIEW's messages created after it (VIEW's order is kept; CREATED
    maps the ids of VIEW's messages to their createdAt). OTHERS: other threads' recalled messages, rendered
    as the `remembered` part (`other_conversation_block`).
    """
    from studio.engine import model_view as mv
    from studio.engine.exact_counts import exact_message_tokens
    from studio.engine.tokens import count_message

    added = []
    for m in recalled:
        entry = {"role": m["role"], "text": mv.message_text(m), "id": m["id"], "thread_id": m.get("threadId"),
                 "tokens": {"estimate": count_message(m), "exact": exact_message_tokens(m)}, "recalled": True}
        added.append((_when(m.get("createdAt")).timestamp(), entry))
    added.sort(key=lambda a: a[0])  # stable: equal times keep their order
    merged: list[dict] = []
    for m in view.get("messages") or []:
        at = _when(created[m["id"]]).timestamp() if m.get("id") in created else None
        while at is not None and added and added[0][0] < at:
            merged.append(added.pop(0)[1])
        merged.append(m)
    merged += [entry for _at, entry in added]
    out = {**view, "messages": merged}
    block = other_conversation_block(others, thread_id)
    source = {"kind": REMEMBERED_KIND, "message_ids": [m["id"] for m in recall_order(others)]} if block else None
    out["remembered"] = mv.section(block, source)
    return out


def _line(text: str, limit: int = 200) -> str:
    one = " ".join(str(text or "").split())
    return one if len(one) <= limit else one[:limit - 1] + "…"


def recall_report(recall: dict | None, view: dict) -> str:
    """Return what semantic recall did at a turn as plain text: RECALL is the `semantic_recall` document
    (`studio.app.recall_context`; None when the turn's user message has no stored vector), VIEW the model
    view it was applied to. Scores with four decimals; texts on one line, shortened to 200 characters,
    except the other-threads system message, given whole as the model read it."""
    if recall is None:
        return ("The turn's user message has no stored vector: semantic recall did not embed it (semanticRecall "
                "off, or the agent's vector store is another database), so nothing is known of what it recalled.")
    options = recall["semantic_recall"]
    out = [f"The turn's user message {recall['query_message_id']} was the query: its stored vector in "
           f"{recall['index_name']} (topK {options['topK']}, messageRange {options['messageRange']}, "
           f"scope {options['scope']})."]
    if not recall.get("agent_turn", True):
        out.append("Its vector has a random id, as Memory.saveMessages stores them: it was saved, not sent to an "
                   "agent, so this is what recall would find for it, not necessarily what an agent was given.")
    if not recall["query_exact"]:
        out.append("Its text was stored in several chunks; the processor embedded it whole, so the hits below "
                   "(from the first chunk) may differ from the agent's.")
    hits = recall["vector_hits"]
    out.append(f"\nVector hits ({len(hits)}):" if hits else "\nVector hits: none.")
    for h in hits:
        out.append(f"  {h['score']:.4f}  {h['thread_id'] or '?'} · {h['message_id'] or h['id']}\n"
                   f"          {_line(h['text'])}")
    out.append(f"\nThe hits and their ranges name {len(recall['brought_in_ids'])} message(s); those not already "
               "in the context were added.")
    recalled = [m for m in view.get("messages") or [] if m.get("recalled")]
    out.append(f"\nRecalled into this thread's messages ({len(recalled)}):" if recalled
               else "\nRecalled into this thread's messages: none.")
    out += [f"  {m['role']} · {m['id']}\n          {_line(m['text'])}" for m in recalled]
    block = recall["system_message"]
    if block is None:
        out.append("\nRemembered from other conversations: none.")
    else:
        out.append(f"\nRemembered from other conversations ({len(recall['other_threads'])} message(s), one system "
                   f"message, as the model read it):\n{block}")
    return "\n".join(out)

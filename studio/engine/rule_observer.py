"""A deterministic, offline Observer: each unobserved message becomes one dated observation line.

For *Observe now* without a model (`--strategy rule-based`). It writes an answer in the Observer's
format, which `studio.engine.observer_parse.parse_observer_output` reads like a model's:

* `Date: Mon D, YYYY` headers (the messages' dates in TZ, as Mastra's logs write them), then one
  line per message with text: `* <priority> (HH:MM) [rule-based] User: <its first words>`;
  the user's messages are 🟡, the assistant's 🟢; tool calls are named (`called search`);
  messages with nothing to show (only markers, reasoning or files) are skipped;
* `<current-task>`: answer the newest user message; `<suggested-response>`: a neutral hint.

Every line says `[rule-based]`, so a reader of the log can tell these lines came from no model.
"""

from __future__ import annotations

from datetime import tzinfo

from studio.common.jsdates import normalize_created_at, resolve_tz
from studio.engine.observer_parse import ParsedObservation, parse_observer_output

LABEL = "[rule-based]"
#: Characters of a message's text kept on its line (whole words, then "…").
MAX_LINE_TEXT = 160
PRIORITY = {"user": "🟡", "assistant": "🟢"}
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _shorten(text: str, limit: int = MAX_LINE_TEXT) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] or flat[:limit]
    return cut.rstrip(" ,;:.") + "…"


def visible_text(message: dict) -> str:
    """Return a message's visible text (text parts, tool calls named as "(called NAME)"), "" when none."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content.get("parts") if isinstance(content, dict) else None
    pieces = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif part.get("type") == "tool-invocation" and isinstance(part.get("toolInvocation"), dict):
            name = part["toolInvocation"].get("toolName")
            if isinstance(name, str) and name:
                pieces.append(f"(called {name})")
    if not pieces and isinstance(content, dict) and isinstance(content.get("content"), str):
        pieces.append(content["content"])
    return " ".join(p for p in pieces if p.strip())


def rule_based_answer(messages: list[dict], *, tz: tzinfo | str | None = None) -> str:
    """Return the rule-based Observer's answer for MESSAGES (MastraDBMessage dicts, oldest first).

    Returns "" when no message has anything to observe. Deterministic: the same messages give
    the same answer.
    """
    zone = resolve_tz(tz)
    lines: list[str] = []
    last_date = None
    last_user = None
    for message in messages:
        role = message.get("role")
        if role not in PRIORITY:
            continue
        text = visible_text(message)
        if not text.strip():
            continue
        when = normalize_created_at(message.get("createdAt"), zone)
        local = when.astimezone(zone) if when is not None else None
        date = f"{MONTHS[local.month - 1]} {local.day}, {local.year}" if local else None
        if date and date != last_date:
            lines.append(f"Date: {date}")
            last_date = date
        clock = f"({local.hour:02d}:{local.minute:02d}) " if local else ""
        speaker = "User" if role == "user" else "Assistant"
        lines.append(f"* {PRIORITY[role]} {clock}{LABEL} {speaker}: {_shorten(text)}")
        if role == "user":
            last_user = _shorten(text, 100)
    if not lines:
        return ""
    answer = ["<observations>", *lines, "</observations>"]
    if last_user:
        answer += ["", "<current-task>", f"- Primary: {LABEL} answer the user's latest message: {last_user}",
                   "</current-task>"]
    answer += ["", "<suggested-response>", f"{LABEL} Continue from the user's latest message.",
               "</suggested-response>"]
    return "\n".join(answer)


def rule_based_observation(messages: list[dict], *, tz: tzinfo | str | None = None) -> ParsedObservation:
    """Return the rule-based answer for MESSAGES, parsed as Mastra parses an Observer's answer."""
    return parse_observer_output(rule_based_answer(messages, tz=tz))

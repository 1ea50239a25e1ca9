"""What the model was given at a turn, in Mastra's own rendering (read-only, no Qt).

Observational Memory (@mastra/memory 1.31.0) does not hand the stored observation log to the
model verbatim. `formatObservationsForContext` first optimises it for the context
(`optimizeObservationsForContext`: ephemeral `[O1]` anchors dropped, the 🟡/🟢 priority emojis
dropped, `[tags]` dropped, `->` arrows become a space, runs of spaces collapse, three or more
newlines become two), then annotates dates relative to the call's date
(`addRelativeTimeToObservations`: `Date: Dec 4, 2026 (today)`, `(meaning May 30, 2023 - 3 weeks
ago)`, gap markers such as `[2 weeks later]` between distant date headers), splits the log at its
message boundaries into chunks (one system message each, the first preceded by an
`<observations>` message), and follows them with `<current-task>` and `<suggested-response>`
sections read from the thread's OM metadata. Whenever it injects observations it also adds a
continuation reminder as a user message dated 1970 (so first in the window); that message is
never stored, and this module names it by kind (`continuation-hint`) rather than copying it.

Dates are those of the turn's user message, in UTC (Mastra uses the agent process's local
zone; the corpus runs in UTC).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

CONTINUATION_HINT = "continuation-hint"

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAY_MS = 24 * 60 * 60 * 1000

_ANCHOR = re.compile(r"(^|\n)([^\S\n]*)\[(O\d+(?:-N\d+)?)\][^\S\n]*")
_TAG = re.compile(r"\[(?![\d\s]*items collapsed)[^\]]+\](?!\()")
_ARROW = re.compile(r"\s*->\s*")
_BOUNDARY = re.compile(r"\n{2,}--- message boundary \(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\) ---\n{2,}")
_INLINE_DATE = re.compile(r"\((estimated|meaning)\s+([^)]+\d{4})\)", re.I)
_DATE_HEADER = re.compile(r"^(Date:\s*)([A-Z][a-z]+ \d{1,2}, \d{4})$", re.M)
_FUTURE_INTENT = [re.compile(p, re.I) for p in (
    r"\bwill\s+(?:be\s+)?(?:\w+ing|\w+)\b", r"\bplans?\s+to\b", r"\bplanning\s+to\b", r"\blooking\s+forward\s+to\b",
    r"\bgoing\s+to\b", r"\bintends?\s+to\b", r"\bwants?\s+to\b", r"\bneeds?\s+to\b", r"\babout\s+to\b")]


def optimize_for_context(observations: str) -> str:
    """Return the observation log as `optimizeObservationsForContext` (@mastra/memory 1.31.0) shortens it."""
    text = _ANCHOR.sub(r"\1\2", observations)
    text = re.sub(r"🟡\s*", "", text)
    text = re.sub(r"🟢\s*", "", text)
    text = _TAG.sub("", text)
    text = _ARROW.sub(" ", text)
    text = re.sub(r"  +", " ", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _date(month: str, day: str, year: str) -> datetime | None:
    """Return the midnight (UTC) JavaScript's `new Date("Month D, YYYY")` gives, or None when it is no date."""
    key = month[:3].lower()
    if key not in _MONTHS or not 1 <= int(day) <= 31:
        return None
    return datetime(int(year), _MONTHS.index(key) + 1, 1, tzinfo=UTC) + timedelta(days=int(day) - 1)


def _days(later: datetime, earlier: datetime) -> int:
    return (int(later.timestamp() * 1000) - int(earlier.timestamp() * 1000)) // _DAY_MS


def relative_time(date: datetime, now: datetime) -> str:
    """Return how far DATE is from NOW in Mastra's words (`formatRelativeTime`): 'today', '3 days ago', 'in 1 week'."""
    diff = _days(now, date)
    if diff < 0:
        ahead = -diff
        if ahead == 1:
            return "tomorrow"
        if ahead < 7:
            return f"in {ahead} days"
        if ahead < 14:
            return "in 1 week"
        if ahead < 30:
            return f"in {ahead // 7} weeks"
        if ahead < 60:
            return "in 1 month"
        if ahead < 365:
            return f"in {ahead // 30} months"
        years = ahead // 365
        return f"in {years} year{'s' if years > 1 else ''}"
    if diff == 0:
        return "today"
    if diff == 1:
        return "yesterday"
    if diff < 7:
        return f"{diff} days ago"
    if diff < 14:
        return "1 week ago"
    if diff < 30:
        return f"{diff // 7} weeks ago"
    if diff < 60:
        return "1 month ago"
    if diff < 365:
        return f"{diff // 30} months ago"
    years = diff // 365
    return f"{years} year{'s' if years > 1 else ''} ago"


def _gap(earlier: datetime, later: datetime) -> str | None:
    days = _days(later, earlier)
    if days <= 1:
        return None
    if days < 7:
        return f"[{days} days later]"
    if days < 14:
        return "[1 week later]"
    if days < 30:
        return f"[{days // 7} weeks later]"
    if days < 60:
        return "[1 month later]"
    return f"[{days // 30} months later]"


def _content_date(text: str) -> datetime | None:
    """Return the date `parseDateFromContent` reads from TEXT ('May 30, 2023', 'May 27-28, 2023', 'late April 2023')."""
    for pattern in (r"([A-Z][a-z]+)\s+(\d{1,2}),?\s+(\d{4})", r"([A-Z][a-z]+)\s+(\d{1,2})-\d{1,2},?\s+(\d{4})"):
        m = re.search(pattern, text)
        if m and (d := _date(m.group(1), m.group(2), m.group(3))):
            return d
    m = re.search(r"(late|early|mid)[- ]?(?:to[- ]?(?:late|early|mid)[- ]?)?([A-Z][a-z]+)\s+(\d{4})", text, re.I)
    if m and (d := _date(m.group(2), {"early": "7", "late": "23"}.get(m.group(1).lower(), "15"), m.group(3))):
        return d
    m = re.search(r"([A-Z][a-z]+)\s+to\s+(?:early\s+)?([A-Z][a-z]+)\s+(\d{4})", text, re.I)
    if m and (d := _date(m.group(2), "1", m.group(3))):
        return d
    return None


def _expand_inline_dates(text: str, now: datetime) -> str:
    def expand(m: re.Match) -> str:
        target = _content_date(m.group(2))
        if target is None:
            return m.group(0)
        relative = relative_time(target, now)
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        if target < now and any(p.search(before) for p in _FUTURE_INTENT):
            return f"({m.group(1)} {m.group(2)} - {relative}, likely already happened)"
        return f"({m.group(1)} {m.group(2)} - {relative})"
    return _INLINE_DATE.sub(expand, text)


def add_relative_times(observations: str, now: datetime) -> str:
    """Return OBSERVATIONS with dates annotated relative to NOW as `addRelativeTimeToObservations` does."""
    text = _expand_inline_dates(observations, now)
    out, last, previous = [], 0, None
    for m in _DATE_HEADER.finditer(text):
        date = _date(*m.group(2).replace(",", "").split(" "))
        if date is None:
            continue
        out.append(text[last:m.start()])
        if previous is not None and (gap := _gap(previous, date)):
            out.append(f"\n{gap}\n\n")
        out.append(f"{m.group(1)}{m.group(2)} ({relative_time(date, now)})")
        last, previous = m.end(), date
    out.append(text[last:])
    return "".join(out)


def observation_chunks(observations: str, now: datetime) -> list[str]:
    """Return the system messages the observation log becomes at NOW (one per message-boundary chunk; [] if empty)."""
    text = add_relative_times(optimize_for_context(observations), now).strip()
    if not text:
        return []
    return [chunk.strip() for chunk in _BOUNDARY.split(text) if chunk.strip()]


def render_observations(observations: str | None, now: datetime) -> str | None:
    """Return the observation block as the model reads it at NOW: its chunks, one per line break (None when empty).

    Mastra gives each chunk as its own system message; a prompt that joins system messages with
    a newline (as the prompt log does) shows this text after the `<observations>` message.
    """
    chunks = observation_chunks(observations or "", now)
    return "\n".join(chunks) if chunks else None


def message_text(message: dict) -> str:
    """Return a stored message's text as the model gets it: its text parts joined by newlines (MESSAGE: Mastra shape).

    A message holding a completed observation's end marker reaches the model with only the parts
    after the marker (`getUnobservedParts`, @mastra/memory 1.31.0); a string content is itself.
    """
    from studio.engine.unobserved import last_completed_observation_boundary, unobserved_parts

    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = (content or {}).get("parts") or []
    if last_completed_observation_boundary(message) != -1:
        parts = unobserved_parts(message)
    return "\n".join(p.get("text") or "" for p in parts if isinstance(p, dict) and p.get("type") == "text")


def section(text: str | None, source: dict | None, *, observations: bool = False) -> dict:
    """Return one part of the model view: {text, tokens: {estimate, exact}, source} (tokens 0 when TEXT is None)."""
    from studio.engine import tokens
    from studio.engine.exact_counts import exact_tokens

    count = tokens.count_observations if observations else tokens.count_string
    figures = {"estimate": count(text), "exact": exact_tokens(text)} if text else {"estimate": 0, "exact": 0}
    return {"text": text, "tokens": figures, "source": source}


def source_text(source: dict | None) -> str:
    """Return a sentence naming the stored rows a model-view part came from (SOURCE: a part's `source`)."""
    kind = (source or {}).get("kind")
    if kind == "record":
        text = (f"generation {source['generation']}'s log ({source['segments']} observer output(s)), rendered; "
                f"OM record {source['record_id']}")
        if source.get("sections_unsure"):
            text += ("; the section(s) of " + ", ".join(source["sections_unsure"]) + " may hold lines a later "
                     "cycle merged (its marker keeps another thread's lines only)")
        return text
    if kind == "marker":
        return f"the Observer's end marker on message {source['message_id']}"
    if kind == "thread-metadata":
        return f"thread {source['thread_id']}'s OM metadata"
    if kind == "resource-working-memory":
        return f"resource {source['resource_id']}'s working memory"
    if kind == "thread-working-memory":
        return f"thread {source['thread_id']}'s working memory (metadata)"
    if kind == "unknown":
        return "source unknown: written by a reflection, not kept in the rows"
    if kind == "semantic-recall":
        return f"semantic recall: {len(source['message_ids'])} message(s) of other threads"
    return ""


def view_rows(view: dict) -> list[tuple[str, int, int, str]]:
    """Return (part, Mastra estimate, exact o200k, where it came from) for each part of a model view, in order.

    Working memory comes first (Mastra's system message, before the observations), then the
    observation block, task, suggestion and the messages in the model's order.
    """
    rows = []
    wm = view.get("working_memory") or {}
    if wm.get("text") is not None:
        latest = wm.get("exactness") == "latest"
        where = source_text(wm["source"]) + (
            ", the newest value: written after the turn began or not datable, so the turn may have seen another"
            if latest else ", unchanged since the turn")
        rows.append(("Working memory" + (" (newest value)" if latest else ""), wm["tokens"]["estimate"],
                     wm["tokens"]["exact"], where))
    for name, label in (("observations", "Observation block (rendered)"), ("current_task", "Current task"),
                        ("suggested_response", "Suggested response")):
        part = view[name]
        if part["text"] is not None or (part["source"] or {}).get("kind") == "unknown":
            rows.append((label, part["tokens"]["estimate"], part["tokens"]["exact"], source_text(part["source"])))
    if (part := view.get("remembered")) and part["text"] is not None:  # studio.engine.recall_view
        rows.append(("Remembered from other conversations", part["tokens"]["estimate"], part["tokens"]["exact"],
                     source_text(part["source"])))
    for m in view["messages"]:
        if m.get("kind") == CONTINUATION_HINT:
            rows.append((f"{m['role']}: continuation reminder", 0, 0, "injected by Mastra, never stored"))
        else:
            rows.append((f"{m['role']} message{' (recalled)' if m.get('recalled') else ''}", m["tokens"]["estimate"],
                         m["tokens"]["exact"],
                         f"message {m['id']}" + (f" (thread {m['thread_id']})" if m.get("thread_id") else "")))
    return rows


def view_text(view: dict) -> str:
    """Return the model view as plain text, in the model's order (section names in brackets, not Mastra's prose)."""
    out = []
    wm = view.get("working_memory") or {}
    if wm.get("text") is not None:
        latest = " (the newest value; the turn may have seen another)" if wm.get("exactness") == "latest" else ""
        out.append(f"[working memory{latest}]\n{wm['text'].rstrip()}")
    if view["observations"]["text"] is not None:
        out.append(f"[observations]\n{view['observations']['text']}")
    for name in ("current_task", "suggested_response"):
        part = view[name]
        if part["text"] is not None:
            out.append(f"[{name.replace('_', ' ')}]\n{part['text']}")
        elif (part["source"] or {}).get("kind") == "unknown":
            out.append(f"[{name.replace('_', ' ')}]\n(source unknown: a reflection wrote it; the rows do not keep it)")
    if (view.get("remembered") or {}).get("text") is not None:
        out.append(f"[remembered from other conversations]\n{view['remembered']['text']}")
    for m in view["messages"]:
        if m.get("kind") == CONTINUATION_HINT:
            out.append(f"[{m['role']}: Mastra's continuation reminder]")
        else:
            out.append(f"[{m['role']}{', recalled' if m.get('recalled') else ''}]\n{m['text']}")
    return "\n\n".join(out)

"""A thread exported to JSON (Mastra's stored message format) or to a readable Markdown transcript (no Qt).

JSON: `{"export": {...}, "thread": StorageThreadType, "messages": [MastraDBMessage, ...]}` — the thread as
Mastra's `getThreadById` returns it and every message as `Memory.recall({perPage: false})` does (content the
parsed v2 object `{format, parts, ...}`, in Mastra's storage order), so a script that reads Mastra's own
objects reads these.

Markdown: a heading with the title and ids, then one section per speaker turn: a user message with
`<turn author_name=… functional_role=…>` tags gives one section per turn, named after its speaker
(`studio.engine.turns`); other messages are named by role. Each text is in a fenced block longer than
any run of backticks or tildes it holds, so nothing stored is read as Markdown by a viewer.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from studio.app import text as fmt
from studio.app.failures import BadInput
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, Thread

#: Formats `export_thread` writes, by name.
FORMATS = ("json", "markdown")
#: The Mastra package whose objects the JSON export mirrors.
MIRRORS = "@mastra/memory 1.31.0 (getThreadById, recall)"


def _thread_json(thread: Thread) -> dict[str, Any]:
    return {"id": thread.id, "resourceId": thread.resource_id, "title": thread.title,
            "metadata": thread.metadata, "createdAt": thread.created_at, "updatedAt": thread.updated_at}


def _messages(store: MemoryStore, thread_id: str) -> tuple[Thread, list[Message]]:
    thread = store.get_thread(thread_id)
    if thread is None:
        raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
    return thread, store.list_messages(thread_id)


def thread_json(store: MemoryStore, thread_id: str) -> dict[str, Any]:
    """Return THREAD_ID as {"export", "thread", "messages"} (see the module). Raises BadInput for an unknown id."""
    thread, messages = _messages(store, thread_id)
    return {"export": {"format": "memory-studio thread export 1", "mirrors": MIRRORS,
                       "source": store.location.display, "messages": len(messages)},
            "thread": _thread_json(thread), "messages": [m.as_mastra() for m in messages]}


_FENCE_RUN = re.compile(r"`{3,}|~{3,}")


def fenced(text: str) -> str:
    """Return TEXT in a fenced block no line of it can close (longer than any ``` or ~~~ run it holds)."""
    longest = max((len(m.group()) for m in _FENCE_RUN.finditer(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _heading_text(text: str) -> str:
    """One line of stored TEXT made safe for a Markdown heading (no line breaks, Markdown marks escaped)."""
    line = " ".join(str(text).split())
    return re.sub(r"([\\`*_\[\]<>])", r"\\\1", line)


def _parts_summary(message: Message) -> list[str]:
    """Lines naming the non-text parts of MESSAGE (tool calls and results, files), in order."""
    lines = []
    for part in message.parts:
        if not isinstance(part, dict) or part.get("type") in ("text", "step-start"):
            continue
        kind = str(part.get("type"))
        if kind == "tool-invocation" and isinstance(part.get("toolInvocation"), dict):
            call = part["toolInvocation"]
            lines.append(f"tool {call.get('state', 'call')}: {call.get('toolName', '?')}")
        else:
            lines.append(f"part: {kind}")
    return lines


def thread_markdown(store: MemoryStore, thread_id: str) -> str:
    """Return THREAD_ID as a Markdown transcript (see the module). Raises BadInput for an unknown id."""
    from studio.engine.speakers import attribute_message

    thread, messages = _messages(store, thread_id)
    out = [f"# {_heading_text(thread.title or thread.id)}", "",
           _heading_text(f"thread {thread.id} · resource {thread.resource_id} · {len(messages):,} messages · "
                         f"exported from {store.location.display}"), ""]
    for n, message in enumerate(messages, 1):
        when = fmt.local_time(message.created_at, seconds=True)
        parse = attribute_message(message).parse
        if message.role == "user" and parse.turns:
            for turn in parse.turns:
                name = turn.author_name or turn.author_id or "unnamed speaker"
                role = f" ({turn.functional_role})" if turn.functional_role else ""
                out += [f"## {n}. {_heading_text(name + role)} · user · {when}", "", fenced(turn.body), ""]
            if parse.outside.strip():
                out += [f"## {n}. outside any turn · user · {when}", "", fenced(parse.outside.strip()), ""]
            continue
        out += [f"## {n}. {_heading_text(message.role)} · {when}", ""]
        text = message.text
        if text:
            out += [fenced(text), ""]
        for line in _parts_summary(message):
            out += [f"- {_heading_text(line)}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def export_text(store: MemoryStore, thread_id: str, fmt_name: str) -> str:
    """Return THREAD_ID exported in FMT_NAME ("json": indented, UTF-8 as is; "markdown"). Raises BadInput."""
    if fmt_name == "json":
        return json.dumps(thread_json(store, thread_id), ensure_ascii=False, indent=2) + "\n"
    if fmt_name == "markdown":
        return thread_markdown(store, thread_id)
    raise BadInput(f"Unknown export format {fmt_name!r}: choose one of {', '.join(FORMATS)}")


def write_export(text: str, destination: str | os.PathLike, *, store_path: str | None = None) -> Path:
    """Write TEXT to DESTINATION atomically (a temporary file in the same folder, then a rename); return its path.

    Refuses (BadInput) to write over STORE_PATH, the store being exported. OSError propagates (the
    callers name it as an I/O failure).
    """
    dest = Path(destination)
    if store_path and dest.exists() and Path(store_path).exists() and dest.resolve() == Path(store_path).resolve():
        raise BadInput(f"Refusing to write the export over the database itself ({dest})")
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def doctor_markdown(report: dict, *, source: str) -> str:
    """Return a `doctor --json` REPORT as Markdown: a heading per severity, one list item per finding (where, check,
    summary, fix), then what was checked. Stored text is escaped so a viewer shows it as written. SOURCE: the store's
    display name (secrets already hidden)."""
    lines = [f"# Memory doctor: {_heading_text(source)}", ""]
    for severity in ("error", "warning", "info"):
        group = [f for f in report["findings"] if f["severity"] == severity]
        if not group:
            continue
        lines += [f"## {severity.capitalize()} ({len(group)})", ""]
        for f in group:
            where = f.get("thread_id") or f.get("lookup_key") or f.get("resource_id") or "database"
            gen = f", generation {f['generation']}" if f.get("generation") is not None else ""
            lines.append(f"- **{_heading_text(f['check'])}** · {_heading_text(where)}{gen}: "
                         f"{_heading_text(f['summary'])}")
            if f.get("fix"):
                lines.append(f"  - fix: {_heading_text(f['fix'])}")
        lines.append("")
    if not report["findings"]:
        lines += ["No findings.", ""]
    checked = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in report["checked"].items())
    lines.append(f"Checked {checked}.")
    return "\n".join(lines) + "\n"

"""Render Mastra messages as the Observational Memory observer reads them.

Python port of `formatMessagesForObserver` from @mastra/memory 1.31.0
(src/processors/observational-memory/observer-agent.ts) and of the
`<other-conversation>` blocks that `ObservationalMemory.getOtherThreadsContext`
builds through `formatUnobservedContextBlocks`.  Mastra counts the tokens of that
string when it reports a resource-scoped thread's pending tokens, so the output
here must match Mastra character for character.

Messages are plain dicts shaped like MastraDBMessage::

    {"id": str, "role": str, "createdAt": ISO str | epoch ms | datetime,
     "content": {"format": 2, "parts": [...], "content": str, "metadata": {...}}
               | str,
     "threadId": str, "resourceId": str, "type": str}

JavaScript semantics reproduced on purpose (helpers in :mod:`studio.common.jscompat`):

* Messages are converted to UTF-16 form first, so string lengths, slicing and
  truncation count UTF-16 code units: an emoji counts as 2 and is never cut in
  half (Mastra's `safeSlice`); the result is converted back at the end.
* Object keys iterate in JavaScript order (array-index keys first, ascending),
  and numbers print as JavaScript's `Number#toString` / `JSON.stringify` do.
* Tool-result and tool-argument budgets use the tokenx 1.3.0 port
  (:mod:`studio.engine.tokenx`); their formatting lives in
  :mod:`studio.engine.tool_results` and :mod:`studio.engine.tool_arguments`.
* Dates print as `toLocaleDateString`/`toLocaleTimeString('en-US')` under
  Node 20 (:mod:`studio.common.jsdates`).  Mastra uses the process's local time
  zone; pass it as `tz` (default UTC, which is what the oracle used).
* Attachment labels come from `new URL(...)` / `decodeURIComponent`
  (:mod:`studio.common.jsurl`).

Known approximations (none occur in Mastra-written databases): date strings
other than ISO 8601 / RFC 2822 are treated as invalid; dates outside years
1-9999 are treated as invalid; and inputs on which Mastra itself would throw
(e.g. a text part whose `text` is not a string) are skipped instead.
"""

from __future__ import annotations

import math
from datetime import datetime, tzinfo

from studio.common.jscompat import (
    UNDEFINED,
    from_utf16,
    is_nonblank,
    is_number,
    js_string,
    js_trim,
    property_key,
    safe_slice,
    to_utf16,
    truthy,
)
from studio.common.jsdates import format_date, format_time, normalize_created_at, resolve_tz
from studio.common.jsurl import decode_uri_component, parse_url
from studio.engine.images import is_image_like_file
from studio.engine.tokenx import estimate_token_count
from studio.engine.tool_arguments import format_tool_arguments
from studio.engine.tool_results import format_tool_result, resolve_tool_result

__all__ = ["estimate_token_count", "format_messages_for_observer", "format_other_threads_context"]

OTHER_THREADS_MAX_PART_LENGTH = 500


def _to_js_value(value):
    """Return a copy of a JSON-like VALUE with every string (keys too) in UTF-16 form."""
    if isinstance(value, str):
        return to_utf16(value)
    if isinstance(value, dict):
        return {to_utf16(property_key(k)): _to_js_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_js_value(v) for v in value]
    return value


# --------------------------------------------------------------------------- attachments

def _attachment_label(part: dict):
    filename = part.get("filename")
    if is_nonblank(filename):
        return js_trim(filename)
    mime = part.get("mimeType", UNDEFINED)
    asset = part.get("image") if part.get("type") == "image" else part.get("data")
    if not isinstance(asset, str) or asset.startswith("data:"):
        return mime
    url = parse_url(asset)
    if url is None:
        return mime
    segments = [s for s in url[1].split("/") if s]
    if not segments:
        return mime
    decoded = decode_uri_component(segments[-1])
    return mime if decoded is None else to_utf16(decoded)


def _attachment_placeholder(part: dict, counter: dict) -> str:
    kind = "Image" if part.get("type") == "image" or is_image_like_file(part, http_prefix_only=False) else "File"
    key = "image" if kind == "Image" else "file"
    number = counter[key]
    counter[key] += 1
    label = _attachment_label(part)
    return f"[{kind} #{number}: {js_string(label)}]" if truthy(label) else f"[{kind} #{number}]"


def _result_block_attachment(block) -> dict | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return None
    media = block.get("mediaType")
    media = media if isinstance(media, str) else UNDEFINED
    filename = block.get("filename")
    filename = filename if isinstance(filename, str) else UNDEFINED
    kind = block["type"]
    if kind == "image-data":
        data = block.get("data")
        if not isinstance(data, str):
            return None
        return {"type": "image", "image": f"data:{media};base64,{data}" if media else data, "mimeType": media}
    if kind == "image-url":
        url = block.get("url")
        return {"type": "image", "image": url, "mimeType": media} if isinstance(url, str) else None
    if kind == "media":
        data = block.get("data")
        if not isinstance(data, str) or not media:
            return None
        uri = f"data:{media};base64,{data}"
        if media.lower().startswith("image/"):
            return {"type": "image", "image": uri, "mimeType": media}
        return {"type": "file", "data": uri, "mimeType": media}
    if kind == "file-data":
        data = block.get("data")
        if not isinstance(data, str):
            return None
        uri = f"data:{media};base64,{data}" if media else data
        return {"type": "file", "data": uri, "mimeType": media, "filename": filename}
    if kind == "file-url":
        url = block.get("url")
        if not isinstance(url, str):
            return None
        return {"type": "file", "data": url, "mimeType": media, "filename": filename}
    return None


def _replace_result_attachments(result, counter: dict):
    """Swap attachment blocks of a `{type: 'content', value: [...]}` tool result for placeholders."""
    if not isinstance(result, dict) or result.get("type") != "content" or not isinstance(result.get("value"), list):
        return result
    found = False
    value = []
    for block in result["value"]:
        attachment = _result_block_attachment(block)
        if attachment is None:
            value.append(block)
            continue
        found = True
        value.append({"type": block.get("type"), "placeholder": _attachment_placeholder(attachment, counter)})
    return {**result, "value": value} if found else result


# --------------------------------------------------------------------------- messages

def _maybe_truncate(text: str, max_len) -> str:
    """Port of maybeTruncate: cut TEXT to MAX_LEN UTF-16 units and note how many were dropped."""
    if not truthy(max_len) or len(text) <= max_len:
        return text
    kept = safe_slice(text, max_len)
    return f"{kept}\n... [truncated {len(text) - len(kept)} characters]"


def _format_observer_tool_arguments(args, max_len) -> str:
    if args is UNDEFINED:
        return _maybe_truncate("[arguments unavailable]", max_len)
    return format_tool_arguments(args, max_characters=max_len if truthy(max_len) else math.inf)


def _map_key(value):
    """Key VALUE as a JavaScript Map would (SameValueZero; objects by identity)."""
    if value is UNDEFINED or value is None or isinstance(value, (bool, str)):
        return (type(value).__name__, value)
    if is_number(value):
        return ("number", "NaN" if value != value else float(value))
    return ("object", id(value))


_CALL_STATES = {"call", "partial-call", "approval-requested", "approval-responded"}
_TERMINAL_STATES = {"result", "output-error", "output-denied"}


class _Exchange:
    __slots__ = ("first", "signature", "terminal", "terminal_occurrence")

    def __init__(self, first: int):
        self.first = first
        self.signature = None
        self.terminal = None
        self.terminal_occurrence = None


class _ToolState:
    """Port of createObserverToolFormattingState: which part shows each tool call and outcome."""

    def __init__(self, messages: list):
        self.exchanges: dict = {}
        self.occurrences: dict = {}
        self.emitted_calls: set = set()
        self.emitted_outcomes: set = set()
        occurrence = 0
        for message in messages:
            content = message.get("content")
            if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
                continue
            for part in content["parts"]:
                if not isinstance(part, dict) or part.get("type") != "tool-invocation":
                    continue
                inv = _invocation(part)
                self.occurrences[id(part)] = occurrence
                state = inv.get("state")
                is_call = state in _CALL_STATES
                is_terminal = state in _TERMINAL_STATES
                if not is_call and not is_terminal:
                    occurrence += 1
                    continue
                key = _map_key(inv.get("toolCallId", UNDEFINED))
                exchange = self.exchanges.get(key) or _Exchange(occurrence)
                if is_call and ("args" in inv or exchange.signature is None):
                    exchange.signature = inv
                if is_terminal:
                    exchange.terminal = inv
                    exchange.terminal_occurrence = occurrence
                self.exchanges[key] = exchange
                occurrence += 1
        for exchange in self.exchanges.values():
            if exchange.terminal is not None and ("args" in exchange.terminal or exchange.signature is None):
                exchange.signature = exchange.terminal


def _invocation(part: dict) -> dict:
    inv = part.get("toolInvocation")
    return inv if isinstance(inv, dict) else {}


def _temporal_gap_text(message: dict):
    content = message.get("content")
    metadata = content.get("metadata") if isinstance(content, dict) else None
    if not isinstance(metadata, dict):
        return None
    if metadata.get("reminderType") == "temporal-gap" and isinstance(metadata.get("gapText"), str):
        return metadata["gapText"]
    reminder = metadata.get("systemReminder")
    if (isinstance(reminder, dict) and reminder.get("type") == "temporal-gap"
            and isinstance(reminder.get("gapText"), str)):
        return reminder["gapText"]
    return None


def _message_lines(message: dict, counter: dict, tools: _ToolState, max_len, tz: tzinfo) -> list:
    """Port of formatObserverMessage (text side): the (date, time, title, body) lines of MESSAGE."""
    role_name = message.get("role")
    role_name = role_name if isinstance(role_name, str) else ""
    role = role_name[:1].upper() + role_name[1:]
    message_at = normalize_created_at(message.get("createdAt"), tz)
    lines: list = []

    def push(title: str, body, created_at: datetime | None) -> None:
        if not truthy(body):
            return
        when = created_at or message_at
        lines.append((format_date(when, tz), format_time(when, tz), title, js_string(body)))

    def push_text(title: str, text, created_at: datetime | None) -> None:
        if isinstance(text, str):
            push(title, _maybe_truncate(text, max_len), created_at)

    msg_id = message.get("id")
    gap_text = _temporal_gap_text(message) if isinstance(msg_id, str) and msg_id.startswith("__temporal_") else None
    content = message.get("content")

    if gap_text:
        push("", gap_text, message_at)
    elif isinstance(content, str):
        push_text(role, content, message_at)
    elif isinstance(content, dict) and isinstance(content.get("parts"), list) and content["parts"]:
        for part in content["parts"]:
            if not isinstance(part, dict):
                continue
            part_at = normalize_created_at(part.get("createdAt"), tz) or message_at
            kind = part.get("type")
            if kind == "text":
                push_text(role, part.get("text"), part_at)
            elif kind == "tool-invocation":
                _tool_lines(part, counter, tools, max_len, part_at, push)
            elif kind == "reasoning":
                reasoning = part.get("reasoning")
                if truthy(reasoning):
                    push_text("Reasoning", reasoning, part_at)
            elif kind in ("image", "file"):
                title = "Image" if kind == "image" else "File"
                push(title, _attachment_placeholder(part, counter), part_at)
    elif isinstance(content, dict) and truthy(content.get("content")):
        push_text(role, content["content"], message_at)
    return lines


def _tool_lines(part: dict, counter: dict, tools: _ToolState, max_len, part_at, push) -> None:
    inv = _invocation(part)
    occurrence = tools.occurrences.get(id(part))
    key = _map_key(inv.get("toolCallId", UNDEFINED))
    exchange = tools.exchanges.get(key)
    tool_name = js_string(inv.get("toolName", UNDEFINED))

    if (
        exchange is not None
        and occurrence == exchange.first
        and exchange.signature is not None
        and key not in tools.emitted_calls
    ):
        tools.emitted_calls.add(key)
        signature = exchange.signature
        push(
            f"Tool Call {js_string(signature.get('toolName', UNDEFINED))}",
            _format_observer_tool_arguments(signature.get("args", UNDEFINED), max_len),
            part_at,
        )

    is_outcome = (
        exchange is not None
        and exchange.terminal_occurrence == occurrence
        and key not in tools.emitted_outcomes
    )
    state = inv.get("state")
    if state == "result":
        result, _ = resolve_tool_result(part, inv.get("result", UNDEFINED))
        result = _replace_result_attachments(result, counter)
        if is_outcome:
            tools.emitted_outcomes.add(key)
            has_result = result is not UNDEFINED and (not isinstance(result, str) or js_trim(result) != "")
            is_error = truthy(inv.get("isError"))
            if has_result:
                body = format_tool_result(result)
            elif is_error:
                error_text = inv.get("errorText")
                body = error_text if is_nonblank(error_text) else "Tool execution failed"
            else:
                body = "[empty result]"
            push(f"{'Tool Error' if is_error else 'Tool Result'} {tool_name}", _maybe_truncate(body, max_len), part_at)
        return

    if is_outcome:
        tools.emitted_outcomes.add(key)
        if state == "output-error":
            error_text = inv.get("errorText")
            body = error_text if is_nonblank(error_text) else "Tool execution failed"
            push(f"Tool Error {tool_name}", _maybe_truncate(body, max_len), part_at)
        elif state == "output-denied":
            approval = inv.get("approval")
            reason = approval.get("reason") if isinstance(approval, dict) else None
            if not is_nonblank(reason):
                reason = "Tool call was not approved by the user"
            push(f"Tool Denied {tool_name}", _maybe_truncate(reason, max_len), part_at)
        return

    if exchange is None:
        push(f"Tool Call {tool_name}", _format_observer_tool_arguments(inv.get("args", UNDEFINED), max_len), part_at)


def _render_lines(lines: list, context: dict) -> str:
    """Port of formatObserverLines: prefix date headers and show each time once."""
    output = []
    previous_date = context.get("date")
    previous_time = context.get("time")
    for date, time, title, body in lines:
        if date and date != previous_date:
            output.append(f"{date}:")
            previous_date = date
            previous_time = None
        label = f"({time})" if time and time != previous_time else ""
        if not title:
            output.append(f"{label}: {body}" if label else body)
        else:
            output.append(f"{title}{' ' + label if label else ''}: {body}")
        previous_time = time or previous_time
    context["date"] = previous_date
    context["time"] = previous_time
    return "\n".join(output)


def format_messages_for_observer(
    messages: list[dict], max_part_length: int | None = None, *, tz: tzinfo | str | None = None
) -> str:
    """Render MESSAGES as Mastra's formatMessagesForObserver(messages, {maxPartLength}) does.

    max_part_length caps each text/tool part in UTF-16 code units (None or 0: no cap);
    tz is the zone Mastra's Node process ran in (tzinfo or IANA name; default UTC).
    Returns the observer transcript: date headers, "Role (h:mm AM): text" lines.
    """
    zone = resolve_tz(tz)
    converted = [_to_js_value(m) if isinstance(m, dict) else {} for m in messages]
    tools = _ToolState(converted)
    counter = {"image": 1, "file": 1}
    context: dict = {}
    sections = []
    for message in converted:
        lines = _message_lines(message, counter, tools, max_part_length, zone)
        if not lines:
            continue
        text = _render_lines(lines, context)
        if text:
            sections.append(text)
    return from_utf16("\n".join(sections))


def format_other_threads_context(
    messages_by_thread: dict[str, list[dict]], current_thread_id: str, *, tz: tzinfo | str | None = None
) -> str | None:
    """Build the <other-conversation> blocks of Mastra's getOtherThreadsContext/formatUnobservedContextBlocks.

    messages_by_thread maps thread id -> that thread's unobserved messages (already filtered,
    oldest first), iterated in Mastra's thread order (listThreads' default: createdAt DESC);
    the current thread and empty threads are skipped.  Thread ids
    appear verbatim (Mastra's default obscureThreadIds=false).  Returns None when no block is left.
    """
    blocks = []
    for thread_id, messages in messages_by_thread.items():
        if thread_id == current_thread_id or not messages:
            continue
        formatted = format_messages_for_observer(messages, OTHER_THREADS_MAX_PART_LENGTH, tz=tz)
        if formatted:
            blocks.append(f'<other-conversation id="{thread_id}">\n{formatted}\n</other-conversation>')
    return "\n\n".join(blocks) or None

"""Tool-call arguments as Mastra's observer shows them: a size-bounded outline (formatToolArgumentsForObserver).

Arguments that fit are shown whole; otherwise as an outline, breadth-first, one line per entry
(``path.to.key: value``), at most 20 entries per container, 100 outline entries, depth 5, long
paths shortened with an FNV-1a digest, and strings over 160 characters summarised with a
size-limited preview appended after the outline. The outline keeps the shallowest and cheapest
entries that fit the budget (2,000 tokenx tokens and, when given, a character cap).

Works on values whose strings are in UTF-16 form (see :mod:`studio.common.jscompat`): lengths
and cuts are in code units, as in JavaScript.
"""

from __future__ import annotations

import math
import re
from collections import deque

from studio.common.jscompat import (
    UNDEFINED,
    js_items,
    js_string,
    json_quote,
    property_key,
    safe_slice,
    safe_tail,
    to_utf16,
)
from studio.engine.tokenx import estimate_token_count

__all__ = ["DEFAULT_MAX_TOKENS", "format_tool_arguments"]

DEFAULT_MAX_TOKENS = 2_000
_ARG_INLINE_STRING_MAX_CHARS = 160
_ARG_MAX_DEPTH = 5
_ARG_MAX_ENTRIES_PER_CONTAINER = 20
_ARG_MAX_OUTLINE_ENTRIES = 100
_ARG_MAX_PATH_CHARS = 160
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _fits(text: str, limits: tuple) -> bool:
    max_tokens, max_chars = limits
    return len(text) <= max_chars and estimate_token_count(text) <= max_tokens


def _is_container(value) -> bool:
    return isinstance(value, (dict, list, tuple))


_LONE_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def _sanitize_surrogates(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text)


def _path_digest(text: str) -> str:
    h = 0x811C9DC5
    for ch in text:
        h = ((h ^ ord(ch)) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


def _truncate_path(path: str) -> str:
    if len(path) <= _ARG_MAX_PATH_CHARS:
        return path
    omitted = len(path) - 50 - 60
    return f"{safe_slice(path, 50)}…[{omitted} chars; {_path_digest(path)}]…{safe_tail(path, 60)}"


def _format_path(parent: str, key, is_array: bool) -> str:
    if is_array:
        return _truncate_path(f"{parent}[{key}]")
    name = to_utf16(property_key(key))
    segment = name if _IDENTIFIER.fullmatch(name) else f"[{json_quote(name)}]"
    return _truncate_path(f"{parent}.{segment}" if parent else segment)


def _format_primitive(value) -> str:
    if isinstance(value, str):
        return json_quote(value)
    if value is UNDEFINED:
        return "<undefined>"
    if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0:
        return "-0"
    return to_utf16(js_string(value))


def _container_summary(value) -> str:
    if isinstance(value, dict):
        return "<object>"
    return f"<array, {len(value)} {'item' if len(value) == 1 else 'items'}>"


def _read_entries(value) -> tuple[list, bool]:
    if isinstance(value, dict):
        items = js_items(value)
        return items[:_ARG_MAX_ENTRIES_PER_CONTAINER], len(items) > _ARG_MAX_ENTRIES_PER_CONTAINER
    visible = min(len(value), _ARG_MAX_ENTRIES_PER_CONTAINER)
    return [(i, value[i]) for i in range(visible)], len(value) > visible


def _join_entries(entries: list, marker: str | None = None) -> str:
    lines = [text for _, _, text in sorted(entries, key=lambda e: e[1])]
    if marker:
        lines.append(marker)
    return "\n".join(lines)


def _select_outline(entries: list, limits: tuple) -> str:
    """Entries are (depth, order, text); keep the shallowest, cheapest ones that fit."""
    everything = _join_entries(entries)
    if _fits(everything, limits):
        return everything
    marker = "... [additional argument fields omitted by size limit]"
    candidates = sorted(entries, key=lambda e: (e[0], estimate_token_count(e[2]), len(e[2]), e[1]))
    selected: list = []
    for candidate in candidates:
        if _fits(_join_entries([*selected, candidate], marker), limits):
            selected.append(candidate)
    rendered = _join_entries(selected, marker)
    if _fits(rendered, limits):
        return rendered
    if _fits(marker, limits):
        return marker
    return "…" if _fits("…", limits) else ""


def _format_preview(path: str, value: str, limits: tuple, prefix: str = "") -> str:
    clean = _sanitize_surrogates(value)

    def render(visible: str) -> str:
        omitted = len(clean) - len(visible)
        body = "\n".join(f"  | {line}" for line in visible.split("\n"))
        tail = f"\n  | ... [{omitted} characters omitted]" if omitted > 0 else ""
        return f"{path}:\n{body}{tail}"

    low, high, best = 0, len(clean), ""
    while low <= high:
        mid = (low + high) // 2
        candidate = render(safe_slice(clean, mid))
        if _fits(f"{prefix}\n{candidate}" if prefix else candidate, limits):
            best = candidate
            low = mid + 1
        else:
            high = mid - 1
    return best


def _append_within_budget(base: str, addition: str, limits: tuple) -> str | None:
    if not addition:
        return None
    candidate = f"{base}\n{addition}" if base else addition
    return candidate if _fits(candidate, limits) else None


def _share(amount, count: int):
    return amount if math.isinf(amount) else math.floor(amount / count)


def format_tool_arguments(value, max_characters: float = math.inf, max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """Return the observer's text for tool-call arguments VALUE within MAX_TOKENS tokens and MAX_CHARACTERS code units.

    A primitive (or a string up to 160 code units) is shown inline; a container as a path outline;
    longer strings as size-limited previews. Returns "" or "…" when nothing fits.
    """
    limits = (max_tokens, max_characters)
    if max_tokens <= 0 or max_characters <= 0:
        return ""

    if not _is_container(value):
        if not isinstance(value, str) or len(value) <= _ARG_INLINE_STRING_MAX_CHARS:
            primitive = _format_primitive(value)
            if _fits(primitive, limits):
                return primitive
            return "…" if _fits("…", limits) else ""
        summary = f"<string, {len(value)} characters; preview size-limited>"
        preview = _format_preview("preview", value, limits, summary)
        rendered = _append_within_budget(summary, preview, limits)
        if rendered:
            return rendered
        if _fits(summary, limits):
            return summary
        return "…" if _fits("…", limits) else ""

    outline: list = []  # (depth, order, text)
    previews: list = []  # (path, string)
    pending = deque([("", value, 0, frozenset([id(value)]))])
    outline_entries = 0
    order = 0
    structural_limit = False

    while pending and outline_entries < _ARG_MAX_OUTLINE_ENTRIES:
        path, container, depth, ancestors = pending.popleft()
        is_array = not isinstance(container, dict)
        entries, has_more = _read_entries(container)
        if not entries and not has_more:
            kind = "array" if is_array else "object"
            outline.append((depth, order, f"{path or 'arguments'}: [empty {kind}]"))
            order += 1
            outline_entries += 1
            continue
        if has_more:
            label = path or ("items" if is_array else "fields")
            outline.append((depth, order, f"{label}: ... [additional entries omitted]"))
            order += 1
            outline_entries += 1

        for key, entry in entries:
            if outline_entries >= _ARG_MAX_OUTLINE_ENTRIES:
                structural_limit = True
                break
            entry_path = _format_path(path, key, is_array)
            outline_entries += 1
            if isinstance(entry, str) and len(entry) > _ARG_INLINE_STRING_MAX_CHARS:
                text = f"{entry_path}: <string, {len(entry)} characters; preview size-limited>"
                outline.append((depth, order, text))
                order += 1
                previews.append((entry_path, entry))
                continue
            if not _is_container(entry):
                outline.append((depth, order, f"{entry_path}: {_format_primitive(entry)}"))
                order += 1
                continue
            if id(entry) in ancestors:
                outline.append((depth, order, f"{entry_path}: [circular]"))
                order += 1
                continue
            summary = _container_summary(entry)
            if depth >= _ARG_MAX_DEPTH:
                outline.append((depth, order, f"{entry_path}: {summary} [max depth reached]"))
                order += 1
                continue
            outline.append((depth, order, f"{entry_path}: {summary}"))
            order += 1
            pending.append((entry_path, entry, depth + 1, ancestors | {id(entry)}))

    if pending or structural_limit:
        outline.append((math.inf, order, "... [additional nested entries omitted by structure limit]"))
        order += 1

    rendered_outline = _select_outline(outline, limits)
    if not previews:
        return rendered_outline

    rendered = _append_within_budget(rendered_outline, "Large string previews (size-limited):", limits)
    if not rendered:
        return rendered_outline

    shown = 0
    omitted = 0
    for index, (path, text) in enumerate(previews):
        remaining_count = len(previews) - index
        used_tokens = estimate_token_count(rendered)
        remaining_tokens = max(0, max_tokens - used_tokens)
        remaining_chars = max(0, max_characters - len(rendered) - 1)
        preview_limits = (
            used_tokens + _share(remaining_tokens, remaining_count),
            len(rendered) + 1 + _share(remaining_chars, remaining_count),
        )
        preview = _format_preview(path, text, preview_limits, rendered)
        if not preview:
            omitted += 1
            continue
        with_preview = _append_within_budget(rendered, preview, limits)
        if not with_preview:
            omitted += 1
            continue
        rendered = with_preview
        shown += 1

    if shown == 0:
        return rendered_outline
    if omitted > 0:
        marker = f"... [{omitted} large string {'preview' if omitted == 1 else 'previews'} omitted]"
        rendered = _append_within_budget(rendered, marker, limits) or rendered
    return rendered


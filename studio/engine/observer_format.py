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

JavaScript semantics reproduced on purpose:

* String lengths, slicing and truncation count UTF-16 code units, so an emoji
  counts as 2 and is never cut in half (Mastra's `safeSlice`).
* Object keys iterate in JavaScript order (array-index keys first, ascending),
  and numbers print as JavaScript's `Number#toString` / `JSON.stringify` do.
* Tool-result and tool-argument budgets use a port of `tokenx` 1.3.0's
  `estimateTokenCount` (bundled into @mastra/memory).
* Dates print as `toLocaleDateString`/`toLocaleTimeString('en-US')` under
  Node 20 (ICU 78: an ordinary space before AM/PM).  Mastra uses the process's
  local time zone; pass it as `tz` (default UTC, which is what the oracle used).

Known approximations (none occur in Mastra-written databases): `new URL()` is
emulated only as far as attachment labels need (scheme, host presence, path
percent-encoding and dot segments); date strings other than ISO 8601 / RFC 2822
are treated as invalid; dates outside years 1-9999 are treated as invalid; and
inputs on which Mastra itself would throw (e.g. a text part whose `text` is not
a string) are skipped instead.
"""

from __future__ import annotations

import math
import re
from collections import deque
from datetime import datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from email.utils import parsedate_tz
from zoneinfo import ZoneInfo

__all__ = ["format_messages_for_observer", "format_other_threads_context", "estimate_token_count"]

OTHER_THREADS_MAX_PART_LENGTH = 500
DEFAULT_TOOL_RESULT_MAX_TOKENS = 5_000


class _Undefined:
    """JavaScript `undefined`: a missing property, distinct from JSON null."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEFINED = _Undefined()


# --------------------------------------------------------------------------- UTF-16 strings

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _split_astral(match: re.Match) -> str:
    cp = ord(match.group()) - 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def _to_js(text: str) -> str:
    """Return TEXT with astral characters as surrogate pairs, so len() counts UTF-16 units."""
    return _ASTRAL.sub(_split_astral, text)


def _from_js(text: str) -> str:
    """Return TEXT with surrogate pairs recombined (lone surrogates are kept)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _is_high(ch: str) -> bool:
    return "\ud800" <= ch <= "\udbff"


def _is_low(ch: str) -> bool:
    return "\udc00" <= ch <= "\udfff"


def _safe_slice(text: str, end: int) -> str:
    """Mirror Mastra's safeSlice: first END code units, never ending on a high surrogate."""
    if end <= 0:
        return ""
    if end >= len(text):
        return text
    return text[: end - 1] if _is_high(text[end - 1]) else text[:end]


def _safe_tail(text: str, length: int) -> str:
    start = max(0, len(text) - length)
    if start > 0 and _is_low(text[start]):
        start += 1
    return text[start:]


_JS_WHITESPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_TRIM = re.compile(f"^[{_JS_WHITESPACE}]+|[{_JS_WHITESPACE}]+$")


def _js_trim(text: str) -> str:
    return _JS_TRIM.sub("", text)


def _to_js_value(value):
    """Return a copy of a JSON-like VALUE with every string (keys too) in UTF-16 form."""
    if isinstance(value, str):
        return _to_js(value)
    if isinstance(value, dict):
        return {_js_key(k): _to_js_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_js_value(v) for v in value]
    return value


def _js_key(key) -> str:
    return _to_js(key) if isinstance(key, str) else _js_string(key)


# --------------------------------------------------------------------------- JavaScript values

_ARRAY_INDEX = re.compile("0|[1-9][0-9]*")


def _own_keys(obj: dict) -> list:
    """Return OBJ's keys in JavaScript property order (array indices first, ascending)."""
    indices = []
    names = []
    for key in obj:
        if isinstance(key, str) and _ARRAY_INDEX.fullmatch(key) and int(key) < 2**32 - 1:
            indices.append(key)
        else:
            names.append(key)
    if not indices:
        return names
    indices.sort(key=int)
    return indices + names


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _truthy(value) -> bool:
    if value is None or value is UNDEFINED or value is False:
        return False
    if _is_number(value):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def _number_to_string(value) -> str:
    """Format a number exactly as JavaScript's Number#toString does."""
    if isinstance(value, int):
        if -(2**53) < value < 2**53:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = k + exponent
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _js_string(value) -> str:
    """Convert VALUE as JavaScript's String() does."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if _is_number(value):
        return _number_to_string(value)
    if isinstance(value, list):
        return ",".join("" if v is None or v is UNDEFINED else _js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_JSON_NEEDS_ESCAPE = re.compile(
    '[\x00-\x1f"\\\\]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]'
)


def _json_escape_char(match: re.Match) -> str:
    ch = match.group()
    return _JSON_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def _json_quote(text: str) -> str:
    """Quote TEXT as JSON.stringify does (lone surrogates escaped, the rest raw)."""
    return '"' + _JSON_NEEDS_ESCAPE.sub(_json_escape_char, text) + '"'


def _json_stringify(value, gap: str = "", indent: str = ""):
    """Port of JSON.stringify(VALUE, null, GAP); returns None where JavaScript returns undefined."""
    if value is UNDEFINED:
        return None
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _json_quote(value)
    if _is_number(value):
        if isinstance(value, float) and (value != value or math.isinf(value)):
            return "null"
        return _number_to_string(value)
    if isinstance(value, datetime):
        return _json_quote(_iso_string(value))
    inner = indent + gap
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items = [_json_stringify(v, gap, inner) or "null" for v in value]
        if not gap:
            return "[" + ",".join(items) + "]"
        return "[\n" + inner + (",\n" + inner).join(items) + "\n" + indent + "]"
    if isinstance(value, dict):
        members = []
        for key in _own_keys(value):
            rendered = _json_stringify(value[key], gap, inner)
            if rendered is not None:
                members.append(_json_quote(_js_key(key)) + (": " if gap else ":") + rendered)
        if not members:
            return "{}"
        if not gap:
            return "{" + ",".join(members) + "}"
        return "{\n" + inner + (",\n" + inner).join(members) + "\n" + indent + "}"
    return _json_quote(_to_js(str(value)))


# --------------------------------------------------------------------------- tokenx 1.3.0

_PUNCT_CLASS = r"[.,!?;(){}\[\]<>:/\\|@#$%^&*+=`~_\-]"
_TOKEN_SPLIT = re.compile(f"([{_JS_WHITESPACE}]+|{_PUNCT_CLASS}+)")
_WHITESPACE_ONLY = re.compile(f"[{_JS_WHITESPACE}]+")
_CJK = re.compile(
    "[\u4e00-\u9fff\u3400-\u4dbf\u3000-\u303f\uff00-\uffef\u30a0-\u30ff\u2e80-\u2eff\u31c0-\u31ef"
    "\u3200-\u32ff\u3300-\u33ff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]"
)
_NUMERIC = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_PUNCTUATION = re.compile(_PUNCT_CLASS)
# tokenx's case-insensitive language classes, expanded the way a non-unicode JS /i regex matches.
_LANGUAGE_CHARS_PER_TOKEN = (
    (re.compile("[\u00c4\u00d6\u00dc\u00df\u00e4\u00f6\u00fc\u1e9e]"), 3),
    (
        re.compile(
            "[\u00c0\u00c1\u00c2\u00c6\u00c7\u00c8\u00c9\u00ca\u00cb\u00cd\u00ce\u00cf\u00d1\u00d3\u00d4"
            "\u00d9\u00da\u00db\u00dc\u00e0\u00e1\u00e2\u00e6\u00e7\u00e8\u00e9\u00ea\u00eb\u00ed\u00ee"
            "\u00ef\u00f1\u00f3\u00f4\u00f9\u00fa\u00fb\u00fc\u00ff\u0152\u0153\u0178]"
        ),
        3,
    ),
    (
        re.compile(
            "[\u00d3\u00da\u00dd\u00f3\u00fa\u00fd\u0104\u0105\u0106\u0107\u010c\u010d\u010e\u010f\u0118"
            "\u0119\u011a\u011b\u0141\u0142\u0143\u0144\u0147\u0148\u0158\u0159\u015a\u015b\u0160\u0161"
            "\u0164\u0165\u016e\u016f\u0179\u017a\u017b\u017c\u017d\u017e]"
        ),
        3.5,
    ),
)
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _segment_tokens(segment: str) -> int:
    if _WHITESPACE_ONLY.fullmatch(segment):
        return 0
    if _CJK.search(segment):
        return len(segment) - len(_SURROGATE_PAIR.findall(segment))
    if _NUMERIC.fullmatch(segment):
        return 1
    if len(segment) <= 3:
        return 1
    if _PUNCTUATION.search(segment):
        return math.ceil(len(segment) / 2) if len(segment) > 1 else 1
    # tokenx's alphanumeric branch and its fallback compute the same thing, so they share this path.
    chars_per_token = 6
    for pattern, per_token in _LANGUAGE_CHARS_PER_TOKEN:
        if pattern.search(segment):
            chars_per_token = per_token
            break
    return math.ceil(len(segment) / chars_per_token)


def _estimate_js(text: str) -> int:
    if not text:
        return 0
    return sum(_segment_tokens(s) for s in _TOKEN_SPLIT.split(text) if s)


def estimate_token_count(text: str) -> int:
    """Estimate TEXT's tokens as tokenx 1.3.0's estimateTokenCount does (heuristic count)."""
    return _estimate_js(_to_js(text))


# --------------------------------------------------------------------------- tool arguments

_ARG_MAX_TOKENS = 2_000
_ARG_INLINE_STRING_MAX_CHARS = 160
_ARG_MAX_DEPTH = 5
_ARG_MAX_ENTRIES_PER_CONTAINER = 20
_ARG_MAX_OUTLINE_ENTRIES = 100
_ARG_MAX_PATH_CHARS = 160
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _fits(text: str, limits: tuple) -> bool:
    max_tokens, max_chars = limits
    return len(text) <= max_chars and _estimate_js(text) <= max_tokens


def _is_container(value) -> bool:
    return isinstance(value, (dict, list, tuple))


def _sanitize_surrogates(text: str) -> str:
    return re.sub(
        "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]", "\ufffd", text
    )


def _path_digest(text: str) -> str:
    h = 0x811C9DC5
    for ch in text:
        h = ((h ^ ord(ch)) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


def _truncate_path(path: str) -> str:
    if len(path) <= _ARG_MAX_PATH_CHARS:
        return path
    omitted = len(path) - 50 - 60
    return f"{_safe_slice(path, 50)}…[{omitted} chars; {_path_digest(path)}]…{_safe_tail(path, 60)}"


def _format_path(parent: str, key, is_array: bool) -> str:
    if is_array:
        return _truncate_path(f"{parent}[{key}]")
    name = _js_key(key)
    segment = name if _IDENTIFIER.fullmatch(name) else f"[{_json_quote(name)}]"
    return _truncate_path(f"{parent}.{segment}" if parent else segment)


def _format_primitive(value) -> str:
    if isinstance(value, str):
        return _json_quote(value)
    if value is UNDEFINED:
        return "<undefined>"
    if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0:
        return "-0"
    return _to_js(_js_string(value))


def _container_summary(value) -> str:
    if isinstance(value, dict):
        return "<object>"
    return f"<array, {len(value)} {'item' if len(value) == 1 else 'items'}>"


def _read_entries(value) -> tuple[list, bool]:
    if isinstance(value, dict):
        keys = _own_keys(value)
        visible = keys[:_ARG_MAX_ENTRIES_PER_CONTAINER]
        return [(k, value[k]) for k in visible], len(keys) > len(visible)
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
    candidates = sorted(entries, key=lambda e: (e[0], _estimate_js(e[2]), len(e[2]), e[1]))
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
        candidate = render(_safe_slice(clean, mid))
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


def _format_tool_arguments(value, max_characters=math.inf, max_tokens=_ARG_MAX_TOKENS) -> str:
    """Port of formatToolArgumentsForObserver: a size-bounded outline of tool-call arguments."""
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
        used_tokens = _estimate_js(rendered)
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


def _format_observer_tool_arguments(args, max_len) -> str:
    if args is UNDEFINED:
        return _maybe_truncate("[arguments unavailable]", max_len)
    return _format_tool_arguments(args, max_characters=max_len if _truthy(max_len) else math.inf)


# --------------------------------------------------------------------------- tool results

def _sanitize_tool_result(value):
    if isinstance(value, (list, tuple)):
        return [_sanitize_tool_result(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for key in _own_keys(value):
            entry = value[key]
            if key == "encryptedContent" and isinstance(entry, str) and len(entry) > 256:
                out[key] = f"[stripped encryptedContent: {len(entry)} characters]"
            else:
                out[key] = _sanitize_tool_result(entry)
        return out
    return value


def _truncate_by_tokens(text: str, max_tokens: int) -> str:
    """Port of truncateStringByTokens: keep the longest prefix whose note-suffixed form fits."""
    if not text or max_tokens <= 0:
        return ""
    total = _estimate_js(text)
    if total <= max_tokens:
        return text

    def candidate(end: int) -> str:
        visible = _safe_slice(text, end)
        return f"{visible}\n... [truncated ~{total - _estimate_js(visible)} tokens]"

    low, high, best = 0, len(text), candidate(0)
    while low <= high:
        mid = (low + high) // 2
        attempt = candidate(mid)
        if _estimate_js(attempt) <= max_tokens:
            best = attempt
            low = mid + 1
        else:
            high = mid - 1
    return best


def _format_tool_result(value, max_tokens: int = DEFAULT_TOOL_RESULT_MAX_TOKENS) -> str:
    serialized = value if isinstance(value, str) else _json_stringify(_sanitize_tool_result(value), "  ")
    return _truncate_by_tokens(serialized or "", max_tokens)


def _resolve_tool_result(part: dict, result):
    metadata = part.get("providerMetadata")
    mastra = metadata.get("mastra") if isinstance(metadata, dict) else None
    if isinstance(mastra, dict) and "modelOutput" in mastra:
        return mastra["modelOutput"]
    return result


# --------------------------------------------------------------------------- attachments

_IMAGE_EXTENSIONS = {"png", "jpg", "jpeg", "webp", "gif", "bmp", "tiff", "tif", "heic", "heif", "avif"}
_EXTENSION = re.compile(r"\.([a-zA-Z0-9]+)\Z")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_SPECIAL_SCHEMES = {"http", "https", "ws", "wss", "ftp", "file"}
_FORBIDDEN_HOST = set("\x00\t\n\r #/:<>?@[\\]^|%")
_SINGLE_DOT = {".", "%2e"}
_DOUBLE_DOT = {"..", ".%2e", "%2e.", "%2e%2e"}


def _path_extension(value: str) -> str | None:
    normalized = value.split("#", 1)[0].split("?", 1)[0]
    match = _EXTENSION.search(normalized)
    return match.group(1).lower() if match else None


def _has_image_extension(filename) -> bool:
    return isinstance(filename, str) and (_path_extension(filename) or "") in _IMAGE_EXTENSIONS


def _percent_encode_path(path: str, opaque: bool) -> str:
    out = []
    for ch in _from_js(path):
        if "\ud800" <= ch <= "\udfff":
            ch = "\ufffd"
        code = ord(ch)
        if code < 0x20 or code > 0x7E or (not opaque and ch in ' "#<>?`{}'):
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return _to_js("".join(out))


def _normalize_path(path: str) -> str:
    segments = path.split("/")[1:] if path.startswith("/") else path.split("/")
    out: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            if out:
                out.pop()
            if last:
                out.append("")
        elif lowered in _SINGLE_DOT:
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


def _parse_url(text: str) -> tuple[str, str] | None:
    """Return (scheme, pathname) as WHATWG `new URL(text)` would, or None where it throws."""
    text = re.sub("[\t\n\r]", "", text.strip("".join(chr(c) for c in range(0x21))))
    match = _SCHEME.match(text)
    if not match:
        return None
    scheme = match.group(1).lower()
    rest = text[match.end():]
    special = scheme in _SPECIAL_SCHEMES
    if special:
        rest = rest.replace("\\", "/")
    rest = re.split("[?#]", rest, maxsplit=1)[0]
    if special or rest.startswith("//"):
        if scheme != "file" and special:
            stripped = rest.lstrip("/")
            has_authority = True
        else:
            stripped = rest[2:] if rest.startswith("//") else rest.lstrip("/")
            has_authority = rest.startswith("//")
        if has_authority:
            authority, slash, path = stripped.partition("/")
            path = slash + path
            host = authority.rpartition("@")[2]
            host, colon, port = host.partition(":") if not host.startswith("[") else (host, "", "")
            if scheme != "file" and special and not host:
                return None
            if any(ch in _FORBIDDEN_HOST for ch in host) and not host.startswith("["):
                return None
            if colon and port and (not port.isascii() or not port.isdigit() or int(port) > 65535):
                return None
        else:
            path = "/" + stripped
        if not path and not special:
            return scheme, ""
        return scheme, _normalize_path(_percent_encode_path(path or "/", opaque=False))
    if rest.startswith("/"):
        return scheme, _normalize_path(_percent_encode_path(rest, opaque=False))
    return scheme, _percent_encode_path(rest, opaque=True)


def _decode_uri_component(text: str) -> str | None:
    """Port of decodeURIComponent; None where JavaScript throws URIError."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        raw = bytearray()
        while i < n and text[i] == "%":
            pair = text[i + 1 : i + 3]
            if len(pair) < 2 or not all(c in "0123456789abcdefABCDEF" for c in pair):
                return None
            raw.append(int(pair, 16))
            i += 3
        try:
            out.append(_to_js(raw.decode("utf-8")))
        except UnicodeDecodeError:
            return None
    return "".join(out)


def _is_image_like_file(part: dict) -> bool:
    if part.get("type") != "file":
        return False
    mime = part.get("mimeType")
    if isinstance(mime, str) and mime.lower().startswith("image/"):
        return True
    data = part.get("data")
    if isinstance(data, str):
        if data.startswith("data:image/"):
            return True
        url = _parse_url(data)
        if url and url[0] in ("http", "https") and _has_image_extension(url[1]):
            return True
    return _has_image_extension(part.get("filename"))


def _attachment_label(part: dict):
    filename = part.get("filename")
    if isinstance(filename, str) and _js_trim(filename):
        return _js_trim(filename)
    mime = part.get("mimeType", UNDEFINED)
    asset = part.get("image") if part.get("type") == "image" else part.get("data")
    if not isinstance(asset, str) or asset.startswith("data:"):
        return mime
    url = _parse_url(asset)
    if url is None:
        return mime
    segments = [s for s in url[1].split("/") if s]
    if not segments:
        return mime
    decoded = _decode_uri_component(segments[-1])
    return mime if decoded is None else decoded


def _attachment_placeholder(part: dict, counter: dict) -> str:
    kind = "Image" if part.get("type") == "image" or _is_image_like_file(part) else "File"
    key = "image" if kind == "Image" else "file"
    number = counter[key]
    counter[key] += 1
    label = _attachment_label(part)
    return f"[{kind} #{number}: {_js_string(label)}]" if _truthy(label) else f"[{kind} #{number}]"


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


# --------------------------------------------------------------------------- dates

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ISO_DATE = re.compile(
    r"([+-][0-9]{6}|[0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?"
    r"(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?"
    r"([Zz]|[+-][0-9]{2}:?[0-9]{2})?)?"
)


def _resolve_tz(tz) -> tzinfo:
    if tz is None:
        return timezone.utc
    if isinstance(tz, str):
        return timezone.utc if tz.upper() == "UTC" else ZoneInfo(tz)
    return tz


def _from_epoch_ms(ms) -> datetime | None:
    if not isinstance(ms, (int, float)) or ms != ms or math.isinf(ms):
        return None
    ms = int(ms)
    if abs(ms) > 8.64e15:
        return None
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None


def _parse_date_string(text: str, tz: tzinfo) -> datetime | None:
    match = _ISO_DATE.fullmatch(text)
    if match:
        year_s, month_s, day_s, hour_s, minute_s, second_s, frac_s, offset_s = match.groups()
        year = int(year_s)
        if year_s == "-000000":
            return None
        month = int(month_s) if month_s else 1
        day = int(day_s) if day_s else 1
        hour = int(hour_s) if hour_s else 0
        minute = int(minute_s) if minute_s else 0
        second = int(second_s) if second_s else 0
        millis = int((frac_s or "0")[:3].ljust(3, "0"))
        if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
            return None
        if hour > 24 or (hour == 24 and (minute or second or millis)):
            return None
        try:
            base = datetime(year, month, 1)
        except ValueError:
            return None
        naive = base + timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second, milliseconds=millis)
        if hour_s is None:
            return naive.replace(tzinfo=timezone.utc)
        if offset_s is None:
            return _localize(naive, tz)
        if offset_s in ("Z", "z"):
            return naive.replace(tzinfo=timezone.utc)
        digits = offset_s[1:].replace(":", "")
        delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        return (naive - delta if offset_s[0] == "+" else naive + delta).replace(tzinfo=timezone.utc)
    parsed = parsedate_tz(text)
    if parsed is None:
        return None
    try:
        naive = datetime(*parsed[:6])
    except ValueError:
        return None
    if parsed[9] is None:
        return _localize(naive, tz)
    return (naive - timedelta(seconds=parsed[9])).replace(tzinfo=timezone.utc)


def _localize(naive: datetime, tz: tzinfo) -> datetime:
    return naive.replace(tzinfo=tz).astimezone(timezone.utc)


def _normalize_created_at(value, tz: tzinfo) -> datetime | None:
    """Port of normalizeObserverCreatedAt: a Date from a Date, epoch-ms number or date string."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if _is_number(value):
        return _from_epoch_ms(value)
    if isinstance(value, str):
        try:
            return _parse_date_string(_from_js(value), tz)
        except (ValueError, OverflowError):
            return None
    return None


def _iso_string(value: datetime) -> str:
    utc = value.astimezone(timezone.utc) if value.tzinfo else value
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _format_date(value: datetime | None, tz: tzinfo) -> str:
    if value is None:
        return ""
    try:
        local = value.astimezone(tz)
    except (OverflowError, ValueError):
        return ""
    return f"{_MONTHS[local.month - 1]} {local.day} {local.year}"


def _format_time(value: datetime | None, tz: tzinfo) -> str:
    if value is None:
        return ""
    try:
        local = value.astimezone(tz)
    except (OverflowError, ValueError):
        return ""
    return f"{local.hour % 12 or 12}:{local.minute:02d} {'AM' if local.hour < 12 else 'PM'}"


# --------------------------------------------------------------------------- messages

def _maybe_truncate(text: str, max_len) -> str:
    """Port of maybeTruncate: cut TEXT to MAX_LEN UTF-16 units and note how many were dropped."""
    if not _truthy(max_len) or len(text) <= max_len:
        return text
    kept = _safe_slice(text, max_len)
    return f"{kept}\n... [truncated {len(text) - len(kept)} characters]"


def _map_key(value):
    """Key VALUE as a JavaScript Map would (SameValueZero; objects by identity)."""
    if value is UNDEFINED or value is None or isinstance(value, (bool, str)):
        return (type(value).__name__, value)
    if _is_number(value):
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
            if exchange.terminal is not None and "args" in exchange.terminal:
                exchange.signature = exchange.terminal
            elif exchange.signature is None and exchange.terminal is not None:
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
    if isinstance(reminder, dict) and reminder.get("type") == "temporal-gap" and isinstance(reminder.get("gapText"), str):
        return reminder["gapText"]
    return None


def _message_lines(message: dict, counter: dict, tools: _ToolState, max_len, tz: tzinfo) -> list:
    """Port of formatObserverMessage (text side): the (date, time, title, body) lines of MESSAGE."""
    role_name = message.get("role")
    role_name = role_name if isinstance(role_name, str) else ""
    role = role_name[:1].upper() + role_name[1:]
    message_at = _normalize_created_at(message.get("createdAt"), tz)
    lines: list = []

    def push(title: str, body, created_at: datetime | None) -> None:
        if not _truthy(body):
            return
        when = created_at or message_at
        lines.append((_format_date(when, tz), _format_time(when, tz), title, _js_string(body)))

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
            part_at = _normalize_created_at(part.get("createdAt"), tz) or message_at
            kind = part.get("type")
            if kind == "text":
                push_text(role, part.get("text"), part_at)
            elif kind == "tool-invocation":
                _tool_lines(part, counter, tools, max_len, part_at, push)
            elif kind == "reasoning":
                reasoning = part.get("reasoning")
                if _truthy(reasoning):
                    push_text("Reasoning", reasoning, part_at)
            elif kind in ("image", "file"):
                title = "Image" if kind == "image" else "File"
                push(title, _attachment_placeholder(part, counter), part_at)
    elif isinstance(content, dict) and _truthy(content.get("content")):
        push_text(role, content["content"], message_at)
    return lines


def _tool_lines(part: dict, counter: dict, tools: _ToolState, max_len, part_at, push) -> None:
    inv = _invocation(part)
    occurrence = tools.occurrences.get(id(part))
    key = _map_key(inv.get("toolCallId", UNDEFINED))
    exchange = tools.exchanges.get(key)
    tool_name = _js_string(inv.get("toolName", UNDEFINED))

    if (
        exchange is not None
        and occurrence == exchange.first
        and exchange.signature is not None
        and key not in tools.emitted_calls
    ):
        tools.emitted_calls.add(key)
        signature = exchange.signature
        push(
            f"Tool Call {_js_string(signature.get('toolName', UNDEFINED))}",
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
        result = _resolve_tool_result(part, inv.get("result", UNDEFINED))
        result = _replace_result_attachments(result, counter)
        if is_outcome:
            tools.emitted_outcomes.add(key)
            has_result = result is not UNDEFINED and (not isinstance(result, str) or _js_trim(result) != "")
            is_error = _truthy(inv.get("isError"))
            if has_result:
                body = _format_tool_result(result)
            elif is_error:
                error_text = inv.get("errorText")
                body = error_text if isinstance(error_text, str) and _js_trim(error_text) else "Tool execution failed"
            else:
                body = "[empty result]"
            push(f"{'Tool Error' if is_error else 'Tool Result'} {tool_name}", _maybe_truncate(body, max_len), part_at)
        return

    if is_outcome:
        tools.emitted_outcomes.add(key)
        if state == "output-error":
            error_text = inv.get("errorText")
            body = error_text if isinstance(error_text, str) and _js_trim(error_text) else "Tool execution failed"
            push(f"Tool Error {tool_name}", _maybe_truncate(body, max_len), part_at)
        elif state == "output-denied":
            approval = inv.get("approval")
            reason = approval.get("reason") if isinstance(approval, dict) else None
            if not (isinstance(reason, str) and _js_trim(reason)):
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
    zone = _resolve_tz(tz)
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
    return _from_js("\n".join(sections))


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

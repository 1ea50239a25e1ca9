"""Tool results as Mastra serialises them: for token counting (in full) and for the observer (token-bounded).

Ports the behaviour of Mastra's tool-result helpers: a string result is used as it is; any other
result is pretty-printed JSON (2 spaces) after long ``encryptedContent`` strings are replaced by a
``[stripped encryptedContent: N characters]`` note. The observer then keeps the longest prefix
that, with a ``... [truncated ~N tokens]`` note, fits its token budget (tokenx estimate).
"""

from __future__ import annotations

from typing import Any

from studio.common.jscompat import get, js_items, json_stringify, safe_slice, utf16_len
from studio.engine.tokenx import estimate_token_count

__all__ = [
    "DEFAULT_TOOL_RESULT_MAX_TOKENS",
    "format_tool_result",
    "resolve_tool_result",
    "sanitize_tool_result",
    "stringify_tool_result",
    "truncate_by_tokens",
]

DEFAULT_TOOL_RESULT_MAX_TOKENS = 5_000
_ENCRYPTED_CONTENT_MAX_CHARS = 256


def resolve_tool_result(part: Any, result: Any) -> tuple[Any, bool]:
    """Return (value, from_model_output): `providerMetadata.mastra.modelOutput` when stored, else RESULT."""
    mastra = get(get(part, "providerMetadata"), "mastra")
    if isinstance(mastra, dict) and "modelOutput" in mastra:
        return mastra["modelOutput"], True
    return result, False


def sanitize_tool_result(value: Any) -> Any:
    """Return a copy of VALUE with every `encryptedContent` string over 256 UTF-16 units replaced by a note."""
    if isinstance(value, (list, tuple)):
        return [sanitize_tool_result(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, entry in js_items(value):
            if key == "encryptedContent" and isinstance(entry, str) and utf16_len(entry) > _ENCRYPTED_CONTENT_MAX_CHARS:
                out[key] = f"[stripped encryptedContent: {utf16_len(entry)} characters]"
            else:
                out[key] = sanitize_tool_result(entry)
        return out
    return value


def stringify_tool_result(value: Any) -> str | None:
    """Return VALUE itself when a string, else its sanitised `JSON.stringify(value, null, 2)` (None for undefined)."""
    return value if isinstance(value, str) else json_stringify(sanitize_tool_result(value), 2)


def truncate_by_tokens(text: str, max_tokens: int) -> str:
    """Return UTF-16-form TEXT cut to at most MAX_TOKENS tokenx tokens, with a `[truncated ~N tokens]` note.

    Binary-searches the longest surrogate-safe prefix whose noted form fits, like truncateStringByTokens.
    """
    if not text or max_tokens <= 0:
        return ""
    total = estimate_token_count(text)
    if total <= max_tokens:
        return text

    def candidate(end: int) -> str:
        visible = safe_slice(text, end)
        return f"{visible}\n... [truncated ~{total - estimate_token_count(visible)} tokens]"

    low, high, best = 0, len(text), candidate(0)
    while low <= high:
        mid = (low + high) // 2
        attempt = candidate(mid)
        if estimate_token_count(attempt) <= max_tokens:
            best = attempt
            low = mid + 1
        else:
            high = mid - 1
    return best


def format_tool_result(value: Any, max_tokens: int = DEFAULT_TOOL_RESULT_MAX_TOKENS) -> str:
    """Return the observer's text for a tool result VALUE (UTF-16 form): serialised, then token-bounded."""
    return truncate_by_tokens(stringify_tool_result(value) or "", max_tokens)

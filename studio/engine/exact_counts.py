"""Exact token counts of what a model sees, with tiktoken's o200k_base built offline from the bundled ranks.

Mastra itself only estimates (see :mod:`studio.engine.tokens`); these counts are the reference the
studio shows next to Mastra's figures. No network is ever used: the encoding is assembled from
tiktoken's own definition (pattern, special tokens) over the rank file bundled with the studio.
"""

from __future__ import annotations

import functools
import threading

from studio.engine.jscompat import UNDEFINED, get, json_stringify
from studio.engine.tool_results import resolve_tool_result

__all__ = ["exact_tokens", "model_visible_text", "exact_message_tokens"]

_ENCODING_LOCK = threading.Lock()
_RANK_HASHES = {"o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"}


@functools.lru_cache(maxsize=4)
def _encoding(name: str):
    """Build tiktoken encoding NAME from the bundled rank file; never touches the network."""
    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as openai_public
    from unittest import mock

    from studio.paths import TOKENIZERS

    constructor = openai_public.ENCODING_CONSTRUCTORS.get(name)
    rank_file = TOKENIZERS / f"{name}.tiktoken"
    if constructor is None or not rank_file.is_file():
        raise ValueError(f"no bundled tokenizer {name!r} in {TOKENIZERS}")

    def load_local(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # tiktoken's own definition (pattern, special tokens) over our local ranks, hash-checked.
        return tiktoken.load.load_tiktoken_bpe(str(rank_file), expected_hash=_RANK_HASHES.get(name, expected_hash))

    with _ENCODING_LOCK, mock.patch.object(openai_public, "load_tiktoken_bpe", load_local):
        spec = constructor()
    return tiktoken.Encoding(**spec)


def exact_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Count real tokens (int) in TEXT with tiktoken ENCODING (special-token text counts as plain text)."""
    return len(_encoding(encoding).encode_ordinary(text)) if text else 0


def model_visible_text(message: dict) -> str:
    """Return the text a model sees for one MastraDBMessage dict, one piece per line (no attachments).

    Pieces: the role; each text part; reasoning text; a tool call's name and arguments (JSON,
    compact) and its outcome (result as a string or compact JSON, preferring the stored
    `modelOutput` like Mastra, else the error/denial text). `data-*` parts never reach a model and
    file/image parts are not text, so both are left out.
    """
    pieces = [message.get("role") or ""]
    content = message.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if isinstance(content, str):
        pieces.append(content)
    elif not isinstance(parts, list) and isinstance(get(content, "content"), str):
        pieces.append(content["content"])
    for part in parts if isinstance(parts, list) else []:
        ptype = get(part, "type")
        if ptype == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif ptype == "reasoning":
            details = [d.get("text") for d in part.get("details") or [] if isinstance(d, dict)]
            texts = [t for t in details if isinstance(t, str)] or [part.get("reasoning")]
            pieces.extend(t for t in texts if isinstance(t, str))
        elif ptype == "tool-invocation" and isinstance(inv := part.get("toolInvocation"), dict):
            if isinstance(inv.get("toolName"), str):
                pieces.append(inv["toolName"])
            if "args" in inv:
                pieces.append(inv["args"] if isinstance(inv["args"], str) else json_stringify(inv["args"]))
            result, _ = resolve_tool_result(part, inv.get("result", UNDEFINED))
            if inv.get("state") == "result" and result is not UNDEFINED:
                pieces.append(result if isinstance(result, str) else json_stringify(result))
            elif inv.get("state") in ("output-error", "result") and isinstance(inv.get("errorText"), str):
                pieces.append(inv["errorText"])
            elif isinstance(reason := get(get(inv, "approval"), "reason"), str):
                pieces.append(reason)
    return "\n".join(p for p in pieces if p)


def exact_message_tokens(message: dict, encoding: str = "o200k_base") -> int:
    """Count real tokens (int) of `model_visible_text(message)` with tiktoken ENCODING (no framing overhead)."""
    return exact_tokens(model_visible_text(message), encoding)

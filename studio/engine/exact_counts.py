"""Exact token counts of what a model sees, with tiktoken's o200k_base built offline from the bundled ranks.

Mastra itself only estimates (see :mod:`studio.engine.tokens`); these counts are the reference the
studio shows next to Mastra's figures. No network is ever used: the encoding is assembled through
tiktoken's public API (`tiktoken.Encoding`, `tiktoken.load.load_tiktoken_bpe`) from tiktoken's
definition of o200k_base (pattern, special tokens) over the rank file bundled with the studio.
"""

from __future__ import annotations

import functools
import os
import re

from studio.common.jscompat import UNDEFINED, get, json_stringify
from studio.engine.text_units import SpaceUnits, joined_units, space_units
from studio.engine.tool_results import resolve_tool_result

__all__ = ["exact_message_tokens", "exact_tokens", "model_visible_text", "split_for_bpe", "tiktoken_encoding"]

#: tiktoken's own definition of o200k_base (`tiktoken_ext.openai_public.o200k_base`, unchanged from
#: tiktoken 0.7 to 0.14): its pre-tokenizer pattern, special tokens and the SHA-256 of its rank file.
#: tests/engine/test_tokens_parity.py checks them against the installed tiktoken's.
_O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
#: {encoding name: (pattern, special tokens, SHA-256 of the bundled rank file)}.
ENCODINGS = {"o200k_base": (_O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
                            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")}


@functools.lru_cache(maxsize=4)
def tiktoken_encoding(name: str = "o200k_base"):
    """Return tiktoken encoding NAME (a `tiktoken.Encoding`) built from the bundled rank file; never uses the network.

    tiktoken's definition of NAME (`ENCODINGS`: pattern, special tokens) over the ranks in
    `studio.paths.TOKENIZERS`, read with `tiktoken.load.load_tiktoken_bpe` and checked against
    tiktoken's published SHA-256. Built once per name. Raises ValueError for an encoding not bundled.
    """
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    from studio.paths import TOKENIZERS

    spec = ENCODINGS.get(name)
    rank_file = TOKENIZERS / f"{name}.tiktoken"
    if spec is None or not rank_file.is_file():
        raise ValueError(f"no bundled tokenizer {name!r} in {TOKENIZERS}")
    pattern, special_tokens, sha256 = spec
    return tiktoken.Encoding(name, pat_str=pattern, special_tokens=special_tokens,
                             mergeable_ranks=load_tiktoken_bpe(str(rank_file), expected_hash=sha256))


#: Texts at least this long (chars) are encoded in pieces, on several threads (see `split_for_bpe`).
CHUNKED_MIN_CHARS = 1 << 20
CHUNK_CHARS = 1 << 18
# A space with an alphanumeric character before it and a letter after it: no token of the o200k
# (or cl100k) pattern crosses it. The token before ends at the alphanumeric character (no pattern
# takes a trailing space after a letter, digit or punctuation), and the one after is " word",
# which the pattern also finds at the start of a piece. BPE merges stay inside a token.
_SAFE_CUT = re.compile(r"(?<=[^\W_]) (?=[^\W\d_])")

_BIG_MEMO: dict[tuple[str, str], int] = {}
_BIG_MEMO_ENTRIES = 4


def _count_units(enc, units: SpaceUnits) -> int | None:
    """Count a text's tokens from its UNITS as the sum over its units: the text before the first
    space, then each space with what follows it up to the next space (" word,", " {\"a\":"); None
    when that is unsafe.

    Valid when every space follows a non-whitespace character (no two spaces in a row, no space
    after a newline or tab): then no token crosses a space (see _SAFE_CUT's reasoning, which needs
    only that), so the count is the sum of the units' counts. Units repeat, so only the distinct
    ones are encoded: seconds for a 50 MB message. Python's isspace() covers every character the
    tokenizer's \\s does, so the check errs on the safe side.
    """
    counts, first, last = units.counts, units.first, units.last
    empties = counts.get("", 0) - (first == "") - (units.has_space and last == "")
    after_whitespace = sum(n for k, n in counts.items() if k and k[-1].isspace()) - bool(last and last[-1].isspace())
    if empties > 0 or after_whitespace > 0:
        return None
    keys, times = [], []
    for key, n in counts.items():
        n -= key == first   # the first piece is counted below, without its (absent) leading space
        if n > 0:
            keys.append(key)
            times.append(n)
    lengths = enc.encode_ordinary_batch([" " + k for k in keys], num_threads=os.cpu_count() or 2)
    total = sum(len(tokens) * n for tokens, n in zip(lengths, times, strict=True))
    return total + (len(enc.encode_ordinary(first)) if first else 0)


def split_for_bpe(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Cut TEXT into pieces of about SIZE chars at spaces no token crosses (see _SAFE_CUT); join == TEXT.

    The token count of TEXT is the sum of its pieces' counts. A text without such a space stays whole.
    """
    pieces, start = [], 0
    while len(text) - start > size:
        cut = _SAFE_CUT.search(text, start + size)
        if cut is None:
            break
        pieces.append(text[start:cut.start()])
        start = cut.start()
    pieces.append(text[start:])
    return pieces


def exact_tokens(text: str, encoding: str = "o200k_base", *, joined: list[str] | None = None) -> int:
    """Count real tokens (int) in TEXT with tiktoken ENCODING (special-token text counts as plain text).

    Texts of CHUNKED_MIN_CHARS or more are counted by their distinct space-separated units
    (`_count_units`, from `text_units`, shared with Mastra's estimate of the same text), else as
    `split_for_bpe` pieces on tiktoken's threads (same count, the GIL released); the last few
    such counts are remembered. JOINED: the texts whose "\n".join is TEXT (their units are reused).
    """
    if not text:
        return 0
    enc = tiktoken_encoding(encoding)
    if len(text) < CHUNKED_MIN_CHARS:
        return len(enc.encode_ordinary(text))
    key = (encoding, text)
    if key in _BIG_MEMO:
        return _BIG_MEMO[key]
    count = _count_units(enc, joined_units(joined) if joined is not None else space_units(text))
    if count is None:
        count = sum(map(len, enc.encode_ordinary_batch(split_for_bpe(text), num_threads=os.cpu_count() or 2)))
    try:
        while len(_BIG_MEMO) >= _BIG_MEMO_ENTRIES:
            _BIG_MEMO.pop(next(iter(_BIG_MEMO)), None)
    except (StopIteration, RuntimeError):
        _BIG_MEMO.clear()
    _BIG_MEMO[key] = count
    return count


def _visible_pieces(message: dict) -> list[str]:
    """Return the non-empty pieces of `model_visible_text(message)`, in order."""
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
    return [p for p in pieces if p]


def model_visible_text(message: dict) -> str:
    """Return the text a model sees for one MastraDBMessage dict, one piece per line (no attachments).

    Pieces: the role; each text part; reasoning text; a tool call's name and arguments (JSON,
    compact) and its outcome (result as a string or compact JSON, preferring the stored
    `modelOutput` like Mastra, else the error/denial text). `data-*` parts never reach a model and
    file/image parts are not text, so both are left out.
    """
    return "\n".join(_visible_pieces(message))


def exact_message_tokens(message: dict, encoding: str = "o200k_base") -> int:
    """Count real tokens (int) of `model_visible_text(message)` with tiktoken ENCODING (no framing overhead)."""
    pieces = _visible_pieces(message)
    return exact_tokens("\n".join(pieces), encoding, joined=pieces)

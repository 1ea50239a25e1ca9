"""A faithful Python port of the `tokenx` 1.3.0 heuristic that Mastra uses to estimate tokens.

Mastra's TokenCounter calls tokenx's ``estimateTokenCount`` for every piece of text it counts.
The heuristic splits the text into runs of whitespace, runs of ASCII punctuation and the words in
between, then prices each run: whitespace is free, CJK costs one token per character, a plain
number one token, any run of at most three characters one token, a punctuation run half its
length, and everything else its length divided by an average chars-per-token figure (6 by
default, 3 or 3.5 when German, French/Spanish or Central-European letters appear).

JavaScript semantics are reproduced on purpose:

* lengths are UTF-16 code-unit counts (an emoji such as U+1F600 is 2), except for CJK runs,
  which tokenx measures in code points (``Array.from``);
* ``\\s`` is JavaScript's whitespace set, ``\\d`` is ASCII only, ``$`` is the end of input;
* the case-insensitive language classes are expanded to the exact characters JavaScript's
  non-unicode ``/i`` matching accepts (computed once with node over the whole BMP).
"""

from __future__ import annotations

import math
import re

__all__ = ["estimate_token_count", "utf16_len"]

# JavaScript's `\s` (WhiteSpace + LineTerminator), which differs from Python's `\s`
# (Python adds U+001C..U+001F and U+0085, JavaScript adds U+FEFF).
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WS_CLASS = f"[{JS_WHITESPACE}]"

# Only ASCII punctuation; note that quotes (' and ") are *not* in tokenx's class.
_PUNCT_CLASS = r"[.,!?;(){}\[\]<>:/\\|@#$%^&*+=`~_\-]"

_CJK_CLASS = (
    "[\u4e00-\u9fff\u3400-\u4dbf\u3000-\u303f\uff00-\uffef\u30a0-\u30ff\u2e80-\u2eff"
    "\u31c0-\u31ef\u3200-\u32ff\u3300-\u33ff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
    "\ua960-\ua97f\ud7b0-\ud7ff]"
)

_SPLIT = re.compile(f"({_JS_WS_CLASS}+|{_PUNCT_CLASS}+)")
_WHITESPACE_ONLY = re.compile(f"{_JS_WS_CLASS}+")
_CJK = re.compile(_CJK_CLASS)
_NUMERIC = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_PUNCT = re.compile(_PUNCT_CLASS)

DEFAULT_CHARS_PER_TOKEN = 6
SHORT_TOKEN_THRESHOLD = 3

# (characters that select the rule, average chars per token). The character sets are what
# JavaScript's non-unicode case-insensitive classes /[äöüßẞ]/i, /[éèêëàâîïôûùüÿçœæáíóúñ]/i and
# /[ąćęłńóśźżěščřžýůúďťň]/i accept; the first matching rule wins, in this order.
_LANGUAGE_RULES: tuple[tuple[frozenset[str], float], ...] = (
    (frozenset("\u00c4\u00d6\u00dc\u00df\u00e4\u00f6\u00fc\u1e9e"), 3),
    (
        frozenset(
            "\u00c0\u00c1\u00c2\u00c6\u00c7\u00c8\u00c9\u00ca\u00cb\u00cd\u00ce\u00cf\u00d1\u00d3"
            "\u00d4\u00d9\u00da\u00db\u00dc\u00e0\u00e1\u00e2\u00e6\u00e7\u00e8\u00e9\u00ea\u00eb"
            "\u00ed\u00ee\u00ef\u00f1\u00f3\u00f4\u00f9\u00fa\u00fb\u00fc\u00ff\u0152\u0153\u0178"
        ),
        3,
    ),
    (
        frozenset(
            "\u00d3\u00da\u00dd\u00f3\u00fa\u00fd\u0104\u0105\u0106\u0107\u010c\u010d\u010e\u010f"
            "\u0118\u0119\u011a\u011b\u0141\u0142\u0143\u0144\u0147\u0148\u0158\u0159\u015a\u015b"
            "\u0160\u0161\u0164\u0165\u016e\u016f\u0179\u017a\u017b\u017c\u017d\u017e"
        ),
        3.5,
    ),
)


def utf16_len(text: str) -> int:
    """Return the JavaScript `.length` of TEXT: its UTF-16 code units (astral characters count 2)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _chars_per_token(segment: str) -> float:
    chars = set(segment)
    for letters, per_token in _LANGUAGE_RULES:
        if not chars.isdisjoint(letters):
            return per_token
    return DEFAULT_CHARS_PER_TOKEN


def _segment_tokens(segment: str) -> int:
    if _WHITESPACE_ONLY.fullmatch(segment):
        return 0
    if _CJK.search(segment):
        # tokenx counts code points here (Array.from), not UTF-16 units.
        return len(segment)
    if _NUMERIC.fullmatch(segment):
        return 1
    length = utf16_len(segment)
    if length <= SHORT_TOKEN_THRESHOLD:
        return 1
    if _PUNCT.search(segment):
        return math.ceil(length / 2) if length > 1 else 1
    # tokenx has separate branches for "alphanumeric" and other words, but both divide the
    # UTF-16 length by the same language-dependent figure.
    return math.ceil(length / _chars_per_token(segment))


def estimate_token_count(text: str) -> int:
    """Estimate tokens (int) in TEXT exactly like tokenx 1.3.0 `estimateTokenCount` with defaults."""
    if not text:
        return 0
    total = 0
    for segment in _SPLIT.split(text):
        if segment:
            total += _segment_tokens(segment)
    return total

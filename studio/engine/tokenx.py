"""Python port of the `tokenx` 1.3.0 heuristic that Mastra uses to estimate tokens.

Mastra's TokenCounter and its observer helpers price text with tokenx's ``estimateTokenCount``.
The heuristic cuts the text into runs of whitespace, runs of ASCII punctuation and the words in
between, then prices each run: whitespace is free, a run holding CJK costs one token per
character, a plain number one token, any run of at most three characters one token, a
punctuation run half its length (rounded up), and everything else its length divided by an
average chars-per-token figure (6 by default, 3 or 3.5 when German, French/Spanish or
Central-European letters appear).

JavaScript semantics are reproduced on purpose:

* lengths are UTF-16 code units (an emoji such as U+1F600 is 2), except for CJK runs, which
  tokenx measures in code points (``Array.from``: a surrogate pair is one);
* ``\\s`` is JavaScript's whitespace set, ``\\d`` is ASCII only;
* the case-insensitive language classes are expanded to the exact characters JavaScript's
  non-unicode ``/i`` matching accepts (computed once with node over the whole BMP).

Text may be in Python or UTF-16 form (see :mod:`studio.common.jscompat`); both give the same count.

Speed: whitespace runs cost nothing, so only the other runs are found (one ``findall``), and
since a run's cost depends only on its text and runs repeat heavily in natural language and JSON,
costs are memoised in a bounded dict read straight from C (``sum(map(cache.__getitem__, runs))``);
only unseen runs go through the classification in :func:`_run_tokens`. Big texts (64 Ki chars
and more) are counted by distinct space-separated piece instead (`_estimate_by_units`), from the
units `studio.engine.text_units` shares with the exact o200k count.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right

from studio.common.jscompat import JS_WHITESPACE, JS_WHITESPACE_CHARS, utf16_len
from studio.engine.text_units import space_units

__all__ = ["JS_WHITESPACE", "estimate_token_count", "utf16_len"]

# tokenx's punctuation class: ASCII only, and without the quote characters ' and ".
_PUNCT_CHARS = ".,!?;(){}[]<>:/\\|@#$%^&*+=`~_-"
_PUNCT_CLASS = "[" + re.escape(_PUNCT_CHARS) + "]"

# tokenx splits on (whitespace+|punctuation+) and keeps the separators; whitespace runs cost 0,
# so finding only the other runs (words and punctuation runs) gives the same total, faster.
_PRICED_RUNS = re.compile(f"[^{JS_WHITESPACE}{re.escape(_PUNCT_CHARS)}]+|{_PUNCT_CLASS}+")
_CJK_CLASS = (
    "[\u4e00-\u9fff\u3400-\u4dbf\u3000-\u303f\uff00-\uffef\u30a0-\u30ff\u2e80-\u2eff"
    "\u31c0-\u31ef\u3200-\u32ff\u3300-\u33ff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
    "\ua960-\ua97f\ud7b0-\ud7ff]"
)
_CJK_SPANS = sorted((_CJK_CLASS[i], _CJK_CLASS[i + 2]) for i in range(1, len(_CJK_CLASS) - 1, 3))  # "a-b" triples
_CJK_STARTS = [lo for lo, _ in _CJK_SPANS]  # the class's ranges (none overlap), for a bisect per char
_CJK_ENDS = [hi for _, hi in _CJK_SPANS]
_CJK_FIRST = _CJK_STARTS[0]  # a run below it holds no CJK letter
_CJK_LOOP_MAX_CHARS = 64  # a run up to this long is tested char by char; a longer one by the regex
_cjk_pattern: re.Pattern | None = None  # compiled on the first long run that could match (~4 ms to build)


def _has_cjk(run: str) -> bool:
    """True when RUN holds a letter of tokenx's CJK class (the regex is built only for a long run)."""
    global _cjk_pattern
    if run.isascii() or max(run) < _CJK_FIRST:
        return False
    if len(run) <= _CJK_LOOP_MAX_CHARS:
        for ch in run:
            if ch >= _CJK_FIRST:
                i = bisect_right(_CJK_STARTS, ch) - 1
                if i >= 0 and ch <= _CJK_ENDS[i]:
                    return True
        return False
    if _cjk_pattern is None:
        _cjk_pattern = re.compile(_CJK_CLASS)
    return _cjk_pattern.search(run) is not None
_NUMERIC = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_PUNCT = re.compile(_PUNCT_CLASS)
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_DIGITS = frozenset("0123456789")

DEFAULT_CHARS_PER_TOKEN = 6
SHORT_TOKEN_THRESHOLD = 3

# (letters that select the rule, average chars per token); the first rule with a letter in the
# run wins. The sets are what JavaScript's non-unicode case-insensitive classes /[äöüßẞ]/i,
# /[éèêëàâîïôûùüÿçœæáíóúñ]/i and /[ąćęłńóśźżěščřžýůúďťň]/i accept.
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
_ANY_LANGUAGE_LETTER = re.compile(
    "[" + "".join(sorted(frozenset().union(*(letters for letters, _ in _LANGUAGE_RULES)))) + "]"
)


def _chars_per_token(run: str) -> float:
    if not _ANY_LANGUAGE_LETTER.search(run):
        return DEFAULT_CHARS_PER_TOKEN
    letters = set(run)
    for rule_letters, per_token in _LANGUAGE_RULES:
        if not letters.isdisjoint(rule_letters):
            return per_token
    return DEFAULT_CHARS_PER_TOKEN  # unreachable: some rule holds the letter found above


def _run_tokens(run: str) -> int:
    """Price one run exactly as tokenx's estimateSegmentTokens does (any string, not only split runs)."""
    if not run.strip(JS_WHITESPACE_CHARS):
        return 0  # empty, or only whitespace (tokenx never sees an empty run)
    if _has_cjk(run):
        # Array.from(run).length: code points, where a surrogate pair (UTF-16 form) is one.
        return len(run) - len(_SURROGATE_PAIR.findall(run))
    if run[0] in _DIGITS and _NUMERIC.fullmatch(run):
        return 1
    length = utf16_len(run)
    if length <= SHORT_TOKEN_THRESHOLD:
        return 1
    if _PUNCT.search(run):
        return (length + 1) >> 1  # ceil(length / 2); length > 3 here
    # tokenx has separate branches for "alphanumeric" and other words, but both divide the
    # UTF-16 length by the same language-dependent figure.
    return math.ceil(length / _chars_per_token(run))


_CACHE_MAX_ENTRIES = 100_000
_CACHE_MAX_RUN_CHARS = 64


class _RunCache(dict):
    """run text -> tokens; a miss is priced, and kept when short (the dict is emptied when full)."""

    def __missing__(self, run: str) -> int:
        tokens = _run_tokens(run)
        if len(run) <= _CACHE_MAX_RUN_CHARS:
            if len(self) >= _CACHE_MAX_ENTRIES:
                self.clear()
            self[run] = tokens
        return tokens


_RUN_TOKENS = _RunCache()
_lookup = _RUN_TOKENS.__getitem__


#: Texts at least this long (chars) are priced by distinct space-separated piece (see `_estimate_by_units`).
WORD_PATH_MIN_CHARS = 1 << 16

_BIG_MEMO: dict[str, int] = {}
_BIG_MEMO_ENTRIES = 4
_BIG_MEMO_MIN_CHARS = 1 << 20


def _remember(memo: dict, key: str, value: int, entries: int) -> None:
    """Keep KEY -> VALUE in MEMO, dropping the oldest entry beyond ENTRIES (safe across threads)."""
    try:
        while len(memo) >= entries:
            memo.pop(next(iter(memo)), None)
    except (StopIteration, RuntimeError):  # another thread changed it meanwhile
        memo.clear()
    memo[key] = value


def _estimate_by_units(text: str) -> int:
    """Price TEXT one distinct space-separated piece at a time, times its count.

    Same total as pricing every run: a priced run never holds a space (a space is whitespace in
    JavaScript's \\s and the pattern has no look-around), so the runs of TEXT are the runs of its
    pieces in order. Natural text and JSON repeat their pieces, so a 50 MB message has a few hundred
    thousand distinct pieces to price, not ten million runs; the pieces are counted once for this
    and the exact o200k count (`text_units.space_units`).
    """
    total = 0
    for piece, times in space_units(text).counts.items():
        total += times * sum(map(_lookup, _PRICED_RUNS.findall(piece)))
    return total


def estimate_token_count(text: str) -> int:
    """Estimate tokens (int) in TEXT exactly like tokenx 1.3.0 `estimateTokenCount` with defaults.

    Texts of WORD_PATH_MIN_CHARS or more are priced by distinct piece (`_estimate_by_units`), the
    same figure faster; the last few texts of 1 MiB or more are remembered (a status and a
    message list price the same big message twice).
    """
    if not text:
        return 0
    if len(text) < WORD_PATH_MIN_CHARS:
        return sum(map(_lookup, _PRICED_RUNS.findall(text)))
    if len(text) >= _BIG_MEMO_MIN_CHARS and text in _BIG_MEMO:
        return _BIG_MEMO[text]
    tokens = _estimate_by_units(text)
    if len(text) >= _BIG_MEMO_MIN_CHARS:
        _remember(_BIG_MEMO, text, tokens, _BIG_MEMO_ENTRIES)
    return tokens

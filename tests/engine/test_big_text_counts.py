"""Big texts are counted by their distinct words/units, and the figures stay exactly the same.

First principles: tokenx prices runs that never contain whitespace, so pricing each distinct
whitespace-separated word times its count equals pricing every run in order (the per-run path
is the one test_tokens_parity checks against Mastra's tokenx). For o200k, a space that follows a
non-whitespace character starts a token, so the count is the sum over the space-led units; the
reference here is tiktoken's own count of the whole text.
"""

from __future__ import annotations

import json
import random

import pytest

from studio.engine import exact_counts, tokenx
from studio.common.jscompat import JS_WHITESPACE_CHARS

WORDS = ("the quick brown fox jumps over lazy dog; memory observation (agent) reflection token 12,345 3.14 "
         "café über straße Zürich naïve żółć łódź don't it's we've 東京 データベース 😀 a+b=c "
         "snake_case kebab-case CamelCase URL:https://example.com/a?b=1 ...!!! {json:[1,2]}").split(" ")


def sample(chars: int, seed: int, sep=lambda rng: " ") -> str:
    rng = random.Random(seed)
    out, size = [], 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word + sep(rng))
        size += len(word) + 1
    return "".join(out)


def per_run(text: str) -> int:
    return sum(map(tokenx._lookup, tokenx._PRICED_RUNS.findall(text)))


def test_split_difference_is_exactly_where_python_and_javascript_whitespace_differ():
    python = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert python ^ set(JS_WHITESPACE_CHARS) == set(tokenx.SPLIT_DIFFERENCE)


@pytest.mark.parametrize("text", [
    sample(70_000, 1),
    sample(70_000, 2, lambda rng: rng.choice([" ", "  ", "\n", "\t", "\u3000", " \n "])),
    sample(70_000, 3) + "\x1c" + sample(1000, 4),      # Python splits here, JavaScript does not
    sample(70_000, 5) + "\ufeff" + sample(1000, 6),    # JavaScript splits here, Python does not
    json.dumps([{"id": i, "text": sample(200, i)} for i in range(400)], indent=2),
])
def test_word_path_prices_big_texts_exactly_like_every_run(text):
    assert len(text) >= tokenx.WORD_PATH_MIN_CHARS
    assert tokenx.estimate_token_count(text) == per_run(text)
    assert tokenx.estimate_token_count(text) == per_run(text)  # a remembered figure is the same


@pytest.mark.parametrize("text, units_path", [
    (sample(1_100_000, 7), True),
    (sample(1_100_000, 8, lambda rng: rng.choice([" ", " ", "\n", ". "])), True),
    (sample(1_100_000, 9, lambda rng: rng.choice([" ", "  ", "\n ", "\t"])), False),   # spaces after whitespace
    (json.dumps([{"id": i, "text": sample(300, i)} for i in range(4000)], indent=2), False),
])
def test_big_texts_get_tiktokens_own_count(text, units_path):
    assert len(text) >= exact_counts.CHUNKED_MIN_CHARS
    enc = exact_counts._encoding("o200k_base")
    whole = len(enc.encode_ordinary(text))
    assert (exact_counts._count_by_space_units(enc, text) is not None) == units_path
    assert exact_counts.exact_tokens(text) == whole
    pieces = exact_counts.split_for_bpe(text)
    assert "".join(pieces) == text and sum(len(enc.encode_ordinary(p)) for p in pieces) == whole

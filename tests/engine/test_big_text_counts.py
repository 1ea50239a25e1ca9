"""Big texts are counted by their distinct words/units, and the figures stay exactly the same.

First principles: tokenx prices runs that never contain a space, so pricing each distinct
space-separated piece times its count equals pricing every run in order (the per-run path
is the one test_tokens_parity checks against Mastra's tokenx). For o200k, a space that follows a
non-whitespace character starts a token, so the count is the sum over the space-led units; the
reference here is tiktoken's own count of the whole text. Both share one count of the pieces
(`text_units`); the pieces of joined texts are the pieces of the join.
"""

from __future__ import annotations

import json
import random

import pytest

from studio.engine import exact_counts, text_units, tokenx

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog;", "memory", "observation", "(agent)",
         "reflection", "token", "12,345", "3.14", "café", "über", "straße", "Zürich", "naïve", "żółć", "łódź", "don't",
         "it's", "we've", "東京", "データベース", "😀", "a+b=c", "snake_case", "kebab-case", "CamelCase",
         "URL:https://example.com/a?b=1", "...!!!", "{json:[1,2]}"]


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


@pytest.mark.parametrize("texts", [
    ["user", "a b c"], ["user", "one"], ["a b", "c", "d e"], ["a b ", " c", "", "d"], [" lead", "trail "],
    ["x", "y", "z"], ["user", sample(70_000, 10)], ["assistant", sample(70_000, 11), "tool", sample(70_000, 12)],
])
def test_the_pieces_of_joined_texts_are_the_pieces_of_the_join(texts):
    whole = text_units.space_units("\n".join(texts))
    joined = text_units.joined_units(texts)
    assert (+joined.counts, joined.first, joined.last) == (+whole.counts, whole.first, whole.last)


def test_a_big_message_is_counted_exactly_both_ways_from_one_split(monkeypatch):
    text = sample(1_100_000, 13, lambda rng: rng.choice([" ", " ", "\n", ". "]))
    message = {"role": "user", "content": {"format": 2, "parts": [{"type": "text", "text": text}]}}
    splits = []   # (text length, the SpaceUnits returned)
    real = text_units.space_units

    def spy(t):
        splits.append((len(t), real(t)))
        return splits[-1][1]
    monkeypatch.setattr(text_units, "space_units", spy)
    monkeypatch.setattr(tokenx, "space_units", text_units.space_units)
    text_units._MEMO.clear()
    assert tokenx.estimate_token_count(text) == per_run(text)
    enc = exact_counts.tiktoken_encoding("o200k_base")
    assert exact_counts.exact_message_tokens(message) == len(enc.encode_ordinary("user\n" + text))
    big = [units for n, units in splits if n == len(text)]
    assert len(big) == 2 and big[0] is big[1]   # split and counted once, reused by the exact count


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
    enc = exact_counts.tiktoken_encoding("o200k_base")
    whole = len(enc.encode_ordinary(text))
    assert (exact_counts._count_units(enc, text_units.space_units(text)) is not None) == units_path
    assert exact_counts.exact_tokens(text) == whole
    pieces = exact_counts.split_for_bpe(text)
    assert "".join(pieces) == text and sum(len(enc.encode_ordinary(p)) for p in pieces) == whole


def test_the_cache_key_of_a_big_text_is_hashed_once_and_stays_nodes():
    import hashlib

    from studio.common import jscompat

    text = sample(1_100_000, 14) + "\ud800"   # a lone surrogate: Node writes U+FFFD
    expected = hashlib.sha256(text[:-1].encode("utf-8") + "\ufffd".encode("utf-8")).hexdigest()
    jscompat._SHA_MEMO.clear()
    assert jscompat.sha256_hex(text) == expected and {text: expected} == jscompat._SHA_MEMO
    assert jscompat.sha256_hex(text[:-1] + "\ud800") == expected   # an equal text (another object): remembered

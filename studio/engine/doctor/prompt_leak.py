"""Find Mastra's own Observer / Reflector / context instructions stored as memory (the `prompt-leak` check).

A model that echoes its instructions leaves them in what Mastra stores from its answer: the log
(`activeObservations`), a buffered chunk (`observations`, `currentTask`, `suggestedContinuation`)
or a thread's `metadata.mastra.om.currentTask` / `suggestedResponse` (mastra #22195).

The phrases are short runs of words from Mastra's Observer task prompt, Observer and Reflector
system prompts, observation-context preamble and continuation hint (@mastra/memory 1.31.0). The
repository keeps only their hashes, never their text: each phrase is given by one of its words
(the anchor, a rare word that makes the scan cheap), the anchor's position in the phrase, the
phrase's length in words and the first 16 hex digits of the SHA-256 of its normalised words
joined by single spaces. Normalised: lower-cased, split into runs of ASCII letters and digits
(so punctuation, tags and line breaks do not matter). `tests/engine/test_doctor_prompt_leak.py`
checks every hash against the text of Mastra's own dist files.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

#: (anchor word, its index in the phrase, phrase length in words, SHA-256 prefix of the phrase).
PHRASE_HASHES = (
    ("extract", 0, 8, "42cc282950eb115f"),        # the Observer task prompt's request
    ("specified", 7, 11, "bdb9c2f010f3e7e9"),     # ... and the format it asks for
    ("repeat", 2, 11, "9f41c0c0455fbcc3"),        # ... and its "no repeats" rule
    ("consciousness", 4, 9, "748e49cf6aac17b1"),  # the Observer / Reflector system prompt's opening
    ("naturally", 2, 8, "27f72896a0b9a99b"),      # the continuation hint
    ("block", 3, 10, "d354e1a6f6585165"),         # the observation-context preamble
    ("summarization", 6, 7, "086ed97101472288"),  # the continuation hint's "do not mention" rule
    ("reminder", 4, 11, "30aeb0320ffdfff9"),      # the continuation hint's last sentence
    ("appended", 5, 10, "ded53b41e5190351"),      # the Observer task prompt, with previous observations
    ("continuity", 1, 11, "4615acbbb276bdd1"),    # the Observer task prompt, with prior thread metadata
)
#: The tag Mastra wraps its continuation hint in (a tag name, matched case-insensitively).
REMINDER_TAG = "<system-reminder>"
_WORD = re.compile(r"[a-z0-9]+")
_BY_ANCHOR: dict[str, list[tuple[int, int, str, int]]] = {}
for _i, (_anchor, _at, _length, _digest) in enumerate(PHRASE_HASHES):
    _BY_ANCHOR.setdefault(_anchor, []).append((_at, _length, _digest, _i))


def phrase_digest(words: list[str]) -> str:
    """Return the 16-hex-digit SHA-256 prefix of WORDS (normalised) joined by single spaces."""
    return hashlib.sha256(" ".join(words).encode()).hexdigest()[:16]


def normalised_words(text: str) -> list[str]:
    """Return TEXT's words as the phrase hashes see them: lower-cased runs of ASCII letters and digits."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class Leak:
    """One phrase of Mastra's instructions found in a stored text.

    `phrase` is the index into PHRASE_HASHES (None for the `<system-reminder>` tag); `excerpt` the
    stored words that matched (stored data, shown as plain text).
    """

    phrase: int | None
    excerpt: str


def find_leaks(text: str | None) -> list[Leak]:
    """Return the phrases of Mastra's instructions in TEXT, in PHRASE_HASHES order (each at most once).

    Cost: one lower-casing and one substring test per anchor; a text holding no anchor word is
    never split into words (nearly every log).
    """
    if not text:
        return []
    low = text.lower()
    out = [Leak(None, REMINDER_TAG)] if REMINDER_TAG in low else []
    if not any(anchor in low for anchor in _BY_ANCHOR):
        return out
    words = _WORD.findall(low)
    found: dict[int, str] = {}
    for pos, word in enumerate(words):
        for at, length, digest, index in _BY_ANCHOR.get(word, ()):
            start = pos - at
            if index in found or start < 0 or start + length > len(words):
                continue
            window = words[start:start + length]
            if phrase_digest(window) == digest:
                found[index] = " ".join(window)
    return out + [Leak(i, found[i]) for i in sorted(found)]

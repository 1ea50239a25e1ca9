"""Mastra's own instruction phrases, read from @mastra/memory's dist in the installed corpus (never stored here).

`prompt_phrases()` returns, for each entry of `studio.engine.doctor.prompt_leak.PHRASE_HASHES`, the
text of Mastra's dist whose normalised words have that hash (original case and punctuation), so
tests can plant what a model echoing its instructions would store, and so that every hash is
checked against Mastra itself.
"""

from __future__ import annotations

import functools
import re

from studio.engine.doctor.prompt_leak import PHRASE_HASHES, phrase_digest
from tests.interop.conftest import install_corpus

_WORD = re.compile(r"[a-z0-9]+")


@functools.cache
def prompt_phrases() -> tuple[str, ...]:
    """Return Mastra's text of each phrase of PHRASE_HASHES, in order; AssertionError names any not found."""
    dist = install_corpus() / "node_modules" / "@mastra" / "memory" / "dist"
    found: dict[int, str] = {}
    for path in sorted(dist.glob("*.js")):
        text = path.read_text(encoding="utf-8")
        spans = list(_WORD.finditer(text.lower()))
        words = [m.group() for m in spans]
        for index, (anchor, at, length, digest) in enumerate(PHRASE_HASHES):
            if index in found:
                continue
            for pos, word in enumerate(words):
                start = pos - at
                if word == anchor and start >= 0 and start + length <= len(words) \
                        and phrase_digest(words[start:start + length]) == digest:
                    found[index] = text[spans[start].start():spans[start + length - 1].end()]
                    break
        if len(found) == len(PHRASE_HASHES):
            break
    missing = [i for i in range(len(PHRASE_HASHES)) if i not in found]
    assert not missing, f"phrases {missing} of PHRASE_HASHES are not in {dist}"
    return tuple(found[i] for i in range(len(PHRASE_HASHES)))

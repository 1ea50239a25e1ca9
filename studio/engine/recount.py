"""Say which estimator a stored `observationTokenCount` agrees with.

Mastra stores the size of each generation's log as the *writing* version computed it: releases
around @mastra/memory 1.5 counted with js-tiktoken `o200k_base`, current ones with the tokenx
estimate (and, while observations are appended, as a running sum of the parts, which can drift a
few tokens from a count of the whole text). The studio shows the stored figure (it is what Mastra
thresholds on) and, beside it, both recounts and which one the stored figure matches.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.engine.exact_counts import exact_tokens
from studio.engine.tokens import count_observations


@dataclass(frozen=True)
class Recount:
    """A stored observation token count beside two recounts of the same text (all in tokens).

    `matches` is "tokenx" (current Mastra's estimate of the whole text), "o200k" (exact count,
    as older Mastra stored it), or "neither" (typically a running sum of appended parts).
    """

    stored: int
    tokenx: int
    o200k: int

    @property
    def matches(self) -> str:
        """Return which recount equals the stored figure ("tokenx", "o200k" or "neither")."""
        if self.stored == self.tokenx:
            return "tokenx"
        if self.stored == self.o200k:
            return "o200k"
        return "neither"

    def to_json(self) -> dict:
        """Return {"stored", "tokenx", "o200k", "matches"}."""
        return {"stored": self.stored, "tokenx": self.tokenx, "o200k": self.o200k, "matches": self.matches}


def recount_observations(text: str, stored: int) -> Recount:
    """Recount observation log TEXT with Mastra's estimator and exactly (o200k), beside STORED tokens."""
    return Recount(stored=stored, tokenx=count_observations(text or ""), o200k=exact_tokens(text or ""))

"""The corpus's deterministic `hash64` embedder (../shared/mastra-corpus/README.md "The embedder"), for tests.

Steps as the README states them: lowercase (str.lower), tokens are maximal runs of letters and numbers
(Unicode categories L* and N*), stop words dropped, FNV-1a 32-bit of each token's UTF-8 bytes adds
±1 (sign from the top bit) at h % 64, the vector is divided by its norm (e0 when there are no tokens),
and each value rounded to float32.
"""

from __future__ import annotations

import math
import struct
import unicodedata

_STOP = ("a about after all also an and any are as at be but by can do for from has have how i if in into is it its "
         "me more my not of on only or our so that the their them then there these this to us was we what when which "
         "will with would you your")
STOP_WORDS = frozenset(_STOP.split(" "))
DIMENSION = 64


def tokens(text: str) -> list[str]:
    """The text's tokens after lowercasing, stop words dropped."""
    out: list[str] = []
    current: list[str] = []
    for ch in text.lower():
        if unicodedata.category(ch)[0] in "LN":
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return [t for t in out if t not in STOP_WORDS]


def hash64(text: str) -> list[float]:
    """TEXT's 64 float32 values (as Python floats)."""
    v = [0.0] * DIMENSION
    for token in tokens(text):
        h = 0x811C9DC5
        for b in token.encode("utf-8"):
            h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
        v[h % DIMENSION] += -1.0 if h >> 31 else 1.0
    norm = math.sqrt(sum(x * x for x in v))
    v = [1.0] + [0.0] * (DIMENSION - 1) if norm == 0 else [x / norm for x in v]
    return [struct.unpack("<f", struct.pack("<f", x))[0] for x in v]

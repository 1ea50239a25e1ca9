"""The space-separated units of a big text, counted once and shared by both token counts of it.

Both counts of a big text work on `text.split(" ")` counted by distinct piece: tokenx prices runs
that never hold whitespace (`tokenx._estimate_by_units`), and o200k starts a token at every space
that follows a non-whitespace character (`exact_counts._count_units`). The studio prices a 50 MB
message both ways (Mastra's estimate for the status, the exact o200k count in the Messages tab and
`tokens`), so the split and count, most of the time either takes, is done once here and remembered
for the last few big texts. `joined_units` gives the units of texts joined by a separator without
a space (the model-visible text of a message) from the units of each text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

__all__ = ["MEMO_MIN_CHARS", "SpaceUnits", "joined_units", "space_units"]

#: Texts at least this long (chars) have their units remembered (the last MEMO_ENTRIES of them).
MEMO_MIN_CHARS = 1 << 16
MEMO_ENTRIES = 4
#: Units with more distinct pieces than this are not remembered (a text of unique tokens: memory).
MEMO_MAX_DISTINCT = 1 << 20

_MEMO: dict[str, SpaceUnits] = {}


@dataclass(frozen=True)
class SpaceUnits:
    """`Counter(text.split(" "))` of a text, with its first and last piece and whether it holds a space.

    COUNTS must not be changed (it may be shared through the memo).
    """

    counts: Counter
    first: str
    last: str
    has_space: bool


def _remember(text: str, units: SpaceUnits) -> None:
    try:
        while len(_MEMO) >= MEMO_ENTRIES:
            _MEMO.pop(next(iter(_MEMO)), None)
    except (StopIteration, RuntimeError):  # another thread changed it meanwhile
        _MEMO.clear()
    _MEMO[text] = units


def space_units(text: str) -> SpaceUnits:
    """Return the SpaceUnits of TEXT (remembered for texts of MEMO_MIN_CHARS chars or more)."""
    big = len(text) >= MEMO_MIN_CHARS
    if big:
        found = _MEMO.get(text)
        if found is not None:
            return found
    head, space, _ = text.partition(" ")
    units = SpaceUnits(Counter(text.split(" ")), head, text[text.rfind(" ") + 1:] if space else text, bool(space))
    if big and len(units.counts) <= MEMO_MAX_DISTINCT:
        _remember(text, units)
    return units


def joined_units(texts: list[str], separator: str = "\n") -> SpaceUnits:
    """Return the SpaceUnits of SEPARATOR.join(TEXTS) from each text's units (SEPARATOR holds no space).

    Joining glues the last piece of one text, the separator and the first piece of the next into
    one piece; every other piece stays as it is. Equal to `space_units(separator.join(texts))`.
    """
    if " " in separator:
        raise ValueError("the separator must not contain a space")
    parts = [space_units(t) for t in texts]
    spaced = [u for u in parts if u.has_space]
    if not spaced:
        return space_units(separator.join(texts))
    biggest = max(spaced, key=lambda u: len(u.counts))
    counts = Counter(biggest.counts)   # a copy at C speed; the others are added piece by piece
    for u in spaced:
        if u is not biggest:
            counts.update(u.counts)
    first = carry = None
    for u in parts:
        if not u.has_space:
            carry = u.first if carry is None else carry + separator + u.first
            continue
        counts[u.first] -= 1
        counts[u.last] -= 1
        glued = u.first if carry is None else carry + separator + u.first
        counts[glued] += 1
        if first is None:
            first = glued
        carry = u.last
    counts[carry] += 1
    return SpaceUnits(+counts, first, carry, True)

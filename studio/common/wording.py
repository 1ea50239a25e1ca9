"""Small wording helpers shared by the CLI and the studio (no Qt, no store)."""

from __future__ import annotations


def plural(n: int, noun: str) -> str:
    """Return "N noun" with N grouped by thousands and an "s" unless N is 1: plural(1, "error") -> "1 error",
    plural(1200, "warning") -> "1,200 warnings". NOUN is a singular English noun taking a plain "s"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")

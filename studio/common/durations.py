"""Durations as people read them."""

from __future__ import annotations


def human_duration(ms: float) -> str:
    """Return MS (a duration in milliseconds, >= 0; a negative one is shown as its size) in words.

    "850 ms" under a second, "42 s" under a minute, "5 min 3 s" under an hour, "4 h 28 min" under a
    day, "2 days 5 h" under a week, then whole days: "181 days". Each unit is truncated, never
    rounded up (1,999 ms is "1 s").
    """
    ms = abs(int(ms))
    if ms < 1000:
        return f"{ms} ms"
    s = ms // 1000
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s} s" if s else f"{m} min"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(h, 24)
    days = f"{d:,} day" + ("" if d == 1 else "s")
    return f"{days} {h} h" if d < 7 and h else days

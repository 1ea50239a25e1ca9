"""Format figures for display: token counts, threshold ratios, timestamps and ages (no Qt)."""

from __future__ import annotations

import html
from datetime import UTC, datetime

from studio.store.records import iso_to_ms

ELLIPSIS = "…"
NONE = "—"

#: What a tab says when its read met the damaged part of the file (the thread view's banner names the damage).
DAMAGED_HERE = "the file is damaged in the part this reads (see the warning above)"


def read_failure(exc: BaseException) -> str:
    """Return the words a tab shows after "… could not be read: " for EXC.

    A StoreDamaged gets DAMAGED_HERE: the thread view's banner gives SQLite's sentence once, instead
    of every tab that meets the damage repeating it. Any other error: its own message.
    """
    from studio.errors import StoreDamaged

    return DAMAGED_HERE if isinstance(exc, StoreDamaged) else (str(exc) or exc.__class__.__name__)


def tokens(n: int | None) -> str:
    """Format a token count with thousands separators ("2,488"), or an em dash for None."""
    return NONE if n is None else f"{n:,}"


def token_count(n: int) -> str:
    """Format N tokens with the right plural ("1 token", "2,500 tokens", "0 tokens")."""
    return f"{tokens(n)} token{'' if n == 1 else 's'}"


def percent(value: int, threshold: int) -> int:
    """Return VALUE / THRESHOLD as a whole percentage, rounded down (99.5% shows 99%, not 100%)."""
    if not threshold:
        return 0
    return int(value * 100 // threshold)


def ratio_text(value: int, threshold: int) -> str:
    """Return "2,488 / 2,500 · 99%" for a bar."""
    return f"{value:,} / {threshold:,} · {percent(value, threshold)}%"


def _local(iso: str | None) -> datetime | str:
    """Return stored time ISO as a local datetime, or the text to show instead (em dash, or the raw value
    when it is not a time datetime can hold)."""
    ms = iso_to_ms(iso)
    if ms is None:
        return NONE if iso is None else str(iso)
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).astimezone()
    except (OverflowError, ValueError, OSError):
        return str(iso)


def local_time(iso: str | None, *, seconds: bool = False) -> str:
    """Format a stored ISO-8601 UTC time in local time ("2026-11-29 20:42"), or an em dash."""
    dt = _local(iso)
    if isinstance(dt, str):
        return dt
    return f"{_date(dt)} {dt.strftime('%H:%M:%S' if seconds else '%H:%M')}"


def short_time(iso: str | None, now: datetime | None = None, *, seconds: bool = False) -> str:
    """Format a stored time compactly in local time: "20:42" today, "Nov 29 20:42" this year, else "2025-11-29"."""
    dt = _local(iso)
    if isinstance(dt, str):
        return dt
    now = (now or datetime.now(UTC)).astimezone()
    clock = dt.strftime("%H:%M:%S" if seconds else "%H:%M")
    if dt.date() == now.date():
        return clock
    if dt.year == now.year:
        return f"{dt.strftime('%b')} {dt.day} {clock}"
    return _date(dt)


def clock_time(iso: str | None) -> str:
    """Format a stored time as the local clock with seconds ("20:42:27"), or an em dash."""
    dt = _local(iso)
    return dt if isinstance(dt, str) else dt.strftime("%H:%M:%S")


def _date(dt: datetime) -> str:
    """Return "0001-01-01": the year always has four digits (strftime's %Y gives "1" on glibc)."""
    return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"


def age(ms: int | None) -> str:
    """Format a duration in ms as a short age ("42 s", "3 min", "5 h", "2 d")."""
    if ms is None:
        return NONE
    s = ms // 1000
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h"
    return f"{s // 86400} d"


def ratio(x: float | None) -> str:
    """Format a compression ratio ("1.66×"), or an em dash."""
    return NONE if x is None else f"{x:.2f}×"


def signed(n: int) -> str:
    """Format a signed token delta with a real minus sign ("−297", "+12")."""
    return f"+{n:,}" if n > 0 else (f"−{-n:,}" if n < 0 else "0")


def preview(text: str | None, limit: int = 160) -> str:
    """Return TEXT on one line, shortened to LIMIT characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + ELLIPSIS


def plain_tooltip(text: str | None, limit: int = 2000) -> str:
    """Return stored TEXT as a tooltip Qt shows literally (tooltips would otherwise guess rich text)."""
    body = (text or "")[:limit]
    if text and len(text) > limit:
        body += ELLIPSIS
    return f"<p style='white-space:pre-wrap'>{html.escape(body)}</p>"


def changed_store_line(path: str) -> str:
    """The line a write's confirmation says about what it changes: "The file is changed: PATH" for a local file,
    "The store on the server is changed: URL" for a PostgreSQL or libSQL server (URL as the studio shows it)."""
    from studio.store.target import FILE, target_kind

    try:
        local = target_kind(path) == FILE
    except Exception:
        local = True
    return f"The file is changed: {path}" if local else f"The store on the server is changed: {path}"

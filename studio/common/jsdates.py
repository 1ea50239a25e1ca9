"""JavaScript `Date` behaviour the observer transcript depends on: parsing createdAt and en-US local display.

Mastra normalises a message's ``createdAt`` (a Date, epoch milliseconds or a date string) with
``new Date(...)`` and prints it with ``toLocaleDateString`` / ``toLocaleTimeString('en-US')``
under Node 20 (ICU 78: an ordinary space before AM/PM), in the process's local time zone.

Date strings: ISO 8601 (date-only forms are UTC, date-time forms without an offset are local
time) and RFC 2822. Other formats, and dates outside years 1-9999, are treated as invalid.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta, tzinfo
from email.utils import parsedate_tz
from zoneinfo import ZoneInfo

from studio.common.jscompat import from_utf16, is_number

__all__ = ["format_date", "format_time", "normalize_created_at", "resolve_tz"]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO_DATE = re.compile(
    r"([+-][0-9]{6}|[0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?"
    r"(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?"
    r"([Zz]|[+-][0-9]{2}:?[0-9]{2})?)?"
)


def resolve_tz(tz: tzinfo | str | None) -> tzinfo:
    """Return TZ as a tzinfo: None or "UTC" is UTC, another string an IANA zone name."""
    if tz is None:
        return UTC
    if isinstance(tz, str):
        return UTC if tz.upper() == "UTC" else ZoneInfo(tz)
    return tz


def _from_epoch_ms(ms) -> datetime | None:
    if not isinstance(ms, (int, float)) or ms != ms or math.isinf(ms):
        return None
    ms = int(ms)
    if abs(ms) > 8.64e15:
        return None
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None


def _parse_date_string(text: str, tz: tzinfo) -> datetime | None:
    match = _ISO_DATE.fullmatch(text)
    if match:
        year_s, month_s, day_s, hour_s, minute_s, second_s, frac_s, offset_s = match.groups()
        year = int(year_s)
        if year_s == "-000000":
            return None
        month = int(month_s) if month_s else 1
        day = int(day_s) if day_s else 1
        hour = int(hour_s) if hour_s else 0
        minute = int(minute_s) if minute_s else 0
        second = int(second_s) if second_s else 0
        millis = int((frac_s or "0")[:3].ljust(3, "0"))
        if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
            return None
        if hour > 24 or (hour == 24 and (minute or second or millis)):
            return None
        try:
            base = datetime(year, month, 1)
        except ValueError:
            return None
        naive = base + timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second, milliseconds=millis)
        if hour_s is None:
            return naive.replace(tzinfo=UTC)
        if offset_s is None:
            return _localize(naive, tz)
        if offset_s in ("Z", "z"):
            return naive.replace(tzinfo=UTC)
        digits = offset_s[1:].replace(":", "")
        delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        return (naive - delta if offset_s[0] == "+" else naive + delta).replace(tzinfo=UTC)
    parsed = parsedate_tz(text)
    if parsed is None:
        return None
    try:
        naive = datetime(*parsed[:6])
    except ValueError:
        return None
    if parsed[9] is None:
        return _localize(naive, tz)
    return (naive - timedelta(seconds=parsed[9])).replace(tzinfo=UTC)


def _localize(naive: datetime, tz: tzinfo) -> datetime:
    return naive.replace(tzinfo=tz).astimezone(UTC)


def normalize_created_at(value, tz: tzinfo) -> datetime | None:
    """Return an aware datetime for a createdAt VALUE (datetime, epoch ms or date string), None when invalid.

    Mirrors normalizeObserverCreatedAt; a naive datetime is taken as UTC, a string without offset as TZ local time.
    """
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if is_number(value):
        return _from_epoch_ms(value)
    if isinstance(value, str):
        try:
            return _parse_date_string(from_utf16(value), tz)
        except (ValueError, OverflowError):
            return None
    return None


def _local(value: datetime | None, tz: tzinfo) -> datetime | None:
    if value is None:
        return None
    try:
        return value.astimezone(tz)
    except (OverflowError, ValueError):
        return None


def format_date(value: datetime | None, tz: tzinfo) -> str:
    """Return "Mon D YYYY" in TZ ("" if unset), as `toLocaleDateString('en-US', {month: 'short'})`, getDate and
    getFullYear build it."""
    local = _local(value, tz)
    return "" if local is None else f"{_MONTHS[local.month - 1]} {local.day} {local.year}"


def format_time(value: datetime | None, tz: tzinfo) -> str:
    """Return "h:mm AM" in TZ (`toLocaleTimeString('en-US', {hour: 'numeric', minute: '2-digit'})`; "" if unset)."""
    local = _local(value, tz)
    return "" if local is None else f"{local.hour % 12 or 12}:{local.minute:02d} {'AM' if local.hour < 12 else 'PM'}"

"""Parse an OM observation log into dated groups, prioritized lines, sub-lines and message boundaries.

The log format Mastra's Observer and Reflector write (@mastra/memory 1.31.0):
`Date: Nov 4, 2026` headers, then lines `* <priority> (HH:MM) text` with priorities 🔴 high,
🟡 medium, 🟢 low and ✅ completed, indented sub-lines `  * -> ...`, and between successive Observer
outputs `--- message boundary (<ISO time>) ---`. Anything else is kept as a plain line. Parsing
never fails: unknown shapes become `kind="text"` lines, so the view can show every character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum


class Priority(str, Enum):  # noqa: UP042  (StrEnum would change what str() and format() of a member give)
    """An observation's priority marker."""

    HIGH = "🔴"
    MEDIUM = "🟡"
    LOW = "🟢"
    COMPLETED = "✅"

    @property
    def label(self) -> str:
        """Return the English name shown in the studio."""
        return {"🔴": "high", "🟡": "medium", "🟢": "low", "✅": "completed"}[self.value]


DATE_RE = re.compile(r"^\s*Date:(?P<date>.*)$")  # the date is stripped in code: no backtracking
BOUNDARY_RE = re.compile(r"^\s*---\s*message boundary\s*\((?P<at>[^)]*)\)\s*---\s*$")
OBS_RE = re.compile(
    r"^(?P<indent>\s*)[*-]\s+(?P<arrow>->\s+)?(?P<prio>🔴|🟡|🟢|✅)?\s*(?:\((?P<time>\d{1,2}:\d{2})\)\s*)?(?P<text>.*)$"
)


@dataclass
class LogLine:
    """One line of an observation log.

    kind: "date" | "observation" | "boundary" | "blank" | "text".
    `number` is the 1-based line number in the log; `depth` is 0 for top-level observations and
    1+ for indented sub-lines; `date` is the date header in force.
    """

    number: int
    raw: str
    kind: str
    date: str | None = None
    priority: Priority | None = None
    time: str | None = None
    text: str = ""
    depth: int = 0
    boundary_at: str | None = None


@dataclass
class DateGroup:
    """Observations under one `Date:` header (header None for lines before any header).

    `header_line` is the 1-based line number of the `Date:` header (None for the undated group).
    Mastra's log can repeat a date's header after a message boundary (each Observer output
    starts with its own `Date:` line), so two groups may carry the same date.
    """

    date: str | None
    lines: list[LogLine] = field(default_factory=list)
    header_line: int | None = None


@dataclass
class ObservationLog:
    """A parsed observation log: every line in order, plus dated groups and boundary count."""

    lines: list[LogLine]
    groups: list[DateGroup]

    @property
    def observations(self) -> list[LogLine]:
        """Return observation lines only (top-level and sub-lines)."""
        return [ln for ln in self.lines if ln.kind == "observation"]

    @property
    def dates(self) -> list[str]:
        """Return the distinct real dates of the `Date:` headers, in first-seen order.

        Repeated headers count once; lines before the first header are not a date.
        """
        return list(dict.fromkeys(g.date for g in self.groups if g.date is not None))

    @property
    def boundaries(self) -> list[LogLine]:
        """Return the message-boundary lines (one per later Observer output)."""
        return [ln for ln in self.lines if ln.kind == "boundary"]

    def count_by_priority(self) -> dict[str, int]:
        """Return {priority label or 'none': number of observation lines}."""
        counts: dict[str, int] = {}
        for ln in self.observations:
            key = ln.priority.label if ln.priority else "none"
            counts[key] = counts.get(key, 0) + 1
        return counts


def classify(raw: str, number: int = 0, date: str | None = None) -> LogLine:
    """Classify one raw log line (no trailing newline)."""
    if not raw.strip():
        return LogLine(number, raw, "blank", date=date)
    m = DATE_RE.match(raw)
    if m and m.group("date").strip():
        date = m.group("date").strip()
        return LogLine(number, raw, "date", date=date, text=date)
    m = BOUNDARY_RE.match(raw)
    if m:
        return LogLine(number, raw, "boundary", date=date, boundary_at=m.group("at"), text=raw.strip())
    m = OBS_RE.match(raw)
    if m and (m.group("prio") or m.group("time") or m.group("arrow")):
        indent = len(m.group("indent").expandtabs(2))
        depth = indent // 2 if indent else (1 if m.group("arrow") else 0)
        prio = Priority(m.group("prio")) if m.group("prio") else None
        return LogLine(number, raw, "observation", date=date, priority=prio, time=m.group("time"),
                       text=m.group("text"), depth=depth)
    return LogLine(number, raw, "text", date=date, text=raw.strip())


def parse_log(text: str | None) -> ObservationLog:
    """Parse an `activeObservations` string into an ObservationLog (never raises)."""
    lines: list[LogLine] = []
    groups: list[DateGroup] = []
    current_date: str | None = None
    current = DateGroup(None)
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = classify(raw, number, current_date)
        if line.kind == "date":
            current_date = line.date
            if current.lines or current.date is not None:
                groups.append(current)
            current = DateGroup(current_date, header_line=number)
        elif line.kind != "blank":
            current.lines.append(line)
        lines.append(line)
    if current.lines or current.date is not None:
        groups.append(current)
    return ObservationLog(lines=lines, groups=groups)

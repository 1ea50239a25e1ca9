"""The offline strategy: condense an observation log below a token target by rules, no model.

For users without a model, or who may not send memory to a provider. Deterministic: the same log
and target always give the same output. What it does, in order:

1. Lossless clean-up: drops `--- message boundary (...) ---` separators, merges duplicate
   observations (same priority and text, time aside: the first is kept, later childless copies
   go), removes date groups left empty and merges a date header into the previous one when both
   name the same day with nothing else between them, removes `<thread id>` sections left empty,
   and collapses runs of blank lines.
2. If still not below the target, drops observations: first ✅ (completed) and 🟢 (low) ones,
   oldest first, then 🟡 (medium) ones (and unmarked observations), oldest first; never 🔴.
   An observation is dropped with the lines indented under it; one whose subtree holds a 🔴 line
   is never dropped whole (its own lower-priority sub-lines still may be). Unmarked sub-lines
   count as their parent's priority. Lines that are not observations (free text, thread tags) are
   kept. The log is never emptied: at least one observation stays.
3. Reports honestly: `reached` is False, with the reason, when the target cannot be reached
   without losing 🔴 lines.

Tokens are Mastra's estimate of the whole rendered log (`tokens.count_observations`); "below the
target" means `tokens < target`, as Mastra's validateCompression.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from studio.common.cancel import CancelToken
from studio.engine import tokens as tk
from studio.engine.observations import Priority, classify

_THREAD_OPEN = re.compile(r"^\s*<thread\b[^>]*>\s*$")
_THREAD_CLOSE = re.compile(r"^\s*</thread>\s*$")
_RANK = {Priority.HIGH: 3, Priority.MEDIUM: 2, Priority.LOW: 1, Priority.COMPLETED: 1}


@dataclass
class _Line:
    number: int  # 1-based line number in the input
    raw: str
    kind: str  # date | observation | boundary | blank | text | open | close
    date: str | None = None
    priority: Priority | None = None
    depth: int = 0
    text: str = ""
    rank: int = 2
    children: list[_Line] = field(default_factory=list)

    def subtree(self) -> list[_Line]:
        out = [self]
        for child in self.children:
            out.extend(child.subtree())
        return out

    def subtree_rank(self) -> int:
        return max(line.rank for line in self.subtree())


@dataclass(frozen=True)
class DroppedLine:
    """A line the condenser removed: its 1-based NUMBER in the input, its text, priority label and why
    (reason: "low-priority" | "medium-priority" | "duplicate")."""

    number: int
    text: str
    priority: str
    reason: str


@dataclass
class CondenseResult:
    """The condensed log and an honest account of how it was made (tokens are Mastra's estimate).

    `reached` is tokens < target; when False, `reason` says why. `high_priority_tokens` is what the
    🔴 observations alone cost (tokens), the floor no rule will go under.
    """

    observations: str
    tokens: int
    input_tokens: int
    target: int
    dropped: list[DroppedLine]
    boundaries_removed: int
    duplicates_merged: int
    date_headers_removed: int
    high_priority_lines: int
    high_priority_tokens: int
    reason: str | None = None
    lines_removed: int = 0    # non-blank input lines the result no longer has (each counted once)

    @property
    def reached(self) -> bool:
        """Return True when the condensed log is below the target."""
        return self.tokens < self.target

    @property
    def other_lines_removed(self) -> int:
        """Return removed lines that are neither observations, boundaries nor date headers (empty sections)."""
        return max(0, self.lines_removed - len(self.dropped) - self.boundaries_removed - self.date_headers_removed)

    def notes(self) -> list[str]:
        """Return user-facing lines describing what was done (and why the target was missed, if so).

        The first line counts every removed line once, then splits that count by cause (duplicates merged,
        lines dropped by priority, message boundaries, date headers): the parts add up to the total, which
        is the `removed` count of a line diff of the input against the result.
        """
        counts: dict[str, int] = {}
        for d in self.dropped:
            if d.reason != "duplicate":
                counts[d.priority] = counts.get(d.priority, 0) + 1
        parts = []
        if self.duplicates_merged:
            parts.append(f"{self.duplicates_merged:,} duplicate observation(s) merged")
        if counts:
            parts.append(", ".join(f"{n:,} {p}" for p, n in sorted(counts.items())) + " line(s) dropped")
        if self.boundaries_removed:
            parts.append(f"{self.boundaries_removed:,} message boundary line(s)")
        if self.date_headers_removed:
            parts.append(f"{self.date_headers_removed:,} empty or repeated date header(s)")
        if self.other_lines_removed:
            parts.append(f"{self.other_lines_removed:,} other line(s) of emptied sections")
        out = [f"Removed {self.lines_removed:,} line(s): " + "; ".join(parts)] if parts else []
        out.append(f"Kept all {self.high_priority_lines} 🔴 line(s) ({self.high_priority_tokens:,} tokens)")
        if self.reason:
            out.append(self.reason)
        return out

    def to_json(self) -> dict:
        """Return a JSON-ready account of the condensation."""
        return {
            "tokens": self.tokens, "input_tokens": self.input_tokens, "target": self.target,
            "reached": self.reached, "reason": self.reason,
            "dropped": [{"line": d.number, "text": d.text, "priority": d.priority, "reason": d.reason}
                        for d in self.dropped],
            "boundaries_removed": self.boundaries_removed, "duplicates_merged": self.duplicates_merged,
            "date_headers_removed": self.date_headers_removed, "lines_removed": self.lines_removed,
            "high_priority_lines": self.high_priority_lines, "high_priority_tokens": self.high_priority_tokens,
        }


def _label(line: _Line) -> str:
    return line.priority.value if line.priority else "unmarked"


def _parse(text: str) -> list[_Line]:
    """Classify every line and link observation sub-lines to their parent (by indentation)."""
    lines: list[_Line] = []
    stack: list[_Line] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        c = classify(raw, number)
        kind = c.kind
        if kind == "text" and _THREAD_OPEN.match(raw):
            kind = "open"
        elif kind == "text" and _THREAD_CLOSE.match(raw):
            kind = "close"
        line = _Line(number, raw, kind, c.date, c.priority, c.depth, c.text)
        if kind == "observation":
            while stack and stack[-1].depth >= line.depth:
                stack.pop()
            parent = stack[-1] if stack else None
            if line.priority is not None:
                line.rank = _RANK[line.priority]
            elif parent is not None:
                line.rank = parent.rank  # an unmarked step belongs to its parent
            if parent is not None:
                parent.children.append(line)
            stack.append(line)
        elif kind != "blank":
            stack = []
        lines.append(line)
    return lines


def _norm(text: str) -> str:
    return " ".join(text.split())


def _render(lines: list[_Line], removed: set[int]) -> tuple[str, int]:
    """Return (log text, date headers removed) for LINES minus the REMOVED line numbers, tidied."""
    kept = [ln for ln in lines if ln.number not in removed and ln.kind != "boundary"]
    # empty <thread> sections (only blanks and date headers inside) go
    drop: set[int] = set()
    i = 0
    while i < len(kept):
        if kept[i].kind == "open":
            j = i + 1
            while j < len(kept) and kept[j].kind in ("blank", "date"):
                j += 1
            if j < len(kept) and kept[j].kind == "close":
                drop.update(ln.number for ln in kept[i:j + 1])
                i = j + 1
                continue
        i += 1
    kept = [ln for ln in kept if ln.number not in drop]
    headers_removed = sum(1 for n in drop if lines[n - 1].kind == "date")
    # date headers with nothing under them go; a repeat of the previous header (same container) goes
    out: list[_Line] = []
    previous_date: str | None = None
    for idx, ln in enumerate(kept):
        if ln.kind == "date":
            nxt = next((x for x in kept[idx + 1:] if x.kind != "blank"), None)
            if nxt is None or nxt.kind in ("date", "close"):
                headers_removed += 1
                continue
            if previous_date is not None and ln.date == previous_date:
                headers_removed += 1
                while out and out[-1].kind == "blank":  # the groups become one: no gap between them
                    out.pop()
                continue
            previous_date = ln.date
        elif ln.kind in ("open", "close"):
            previous_date = None
        out.append(ln)
    # blank runs collapse to one; none at either end
    text_lines: list[str] = []
    for ln in out:
        if ln.kind == "blank":
            if text_lines and text_lines[-1] != "":
                text_lines.append("")
            continue
        text_lines.append(ln.raw)
    while text_lines and text_lines[-1] == "":
        text_lines.pop()
    return "\n".join(text_lines), headers_removed


def condense(observations: str, target_tokens: int, *, cancel: CancelToken | None = None) -> CondenseResult:
    """Condense OBSERVATIONS below TARGET_TOKENS (tokens) by the rules in the module docstring.

    Never raises on odd input (unknown lines are kept); raises Cancelled if CANCEL fires.
    """
    text = observations or ""
    input_tokens = tk.count_observations(text)
    lines = _parse(text)
    boundaries = sum(1 for ln in lines if ln.kind == "boundary")
    observations_ = [ln for ln in lines if ln.kind == "observation"]

    # 1. duplicates: same priority and text (time aside); later childless copies go
    removed: set[int] = set()
    dropped: list[DroppedLine] = []
    seen: set[tuple] = set()
    for ln in observations_:
        key = (ln.priority, ln.depth, _norm(ln.text))
        if key in seen and not ln.children and _norm(ln.text):
            removed.add(ln.number)
            dropped.append(DroppedLine(ln.number, ln.raw.strip(), _label(ln), "duplicate"))
        else:
            seen.add(key)
    duplicates = len(dropped)

    # 2. the drop order: tier 1 (✅/🟢) then tier 2 (🟡, unmarked), each oldest first
    order = [ln for tier in (1, 2) for ln in observations_
             if ln.number not in removed and ln.subtree_rank() == tier]

    def removal(k: int) -> set[int]:
        gone = set(removed)
        for ln in order[:k]:
            if ln.number not in gone:
                gone.update(x.number for x in ln.subtree())
        return gone

    def measure(k: int) -> tuple[str, int, int]:
        if cancel is not None:
            cancel.raise_if_cancelled()
        rendered, headers = _render(lines, removal(k))
        return rendered, tk.count_observations(rendered), headers

    def has_observation(gone: set[int]) -> bool:
        return any(ln.number not in gone for ln in observations_)

    max_k = len(order)
    while max_k > 0 and not has_observation(removal(max_k)):
        max_k -= 1  # never empty the log
    rendered, count, headers = measure(0)
    k = 0
    if count >= target_tokens and max_k > 0:
        low, high = 1, max_k  # smallest k with count < target (count never grows with k)
        best = None
        while low <= high:
            mid = (low + high) // 2
            r, c, h = measure(mid)
            if c < target_tokens:
                best, high = (mid, r, c, h), mid - 1
            else:
                low = mid + 1
        if best is None:
            k = max_k
            rendered, count, headers = measure(max_k)
        else:
            k, rendered, count, headers = best
    gone = removal(k)
    for ln in order[:k]:
        for x in ln.subtree():
            if x.number in gone and x.number not in removed and all(d.number != x.number for d in dropped):
                dropped.append(DroppedLine(x.number, x.raw.strip(), _label(x),
                                           "low-priority" if x.rank <= 1 else "medium-priority"))
    dropped.sort(key=lambda d: d.number)
    high = [ln for ln in observations_ if ln.priority is Priority.HIGH]
    high_tokens = sum(tk.count_observations(ln.raw) for ln in high)
    reason = None
    if count >= target_tokens:
        others = count - high_tokens
        reason = (f"Cannot reach {target_tokens:,} tokens without losing 🔴 lines: after dropping every ✅, 🟢 and "
                  f"🟡 line the log still has {count:,} tokens, {high_tokens:,} of them in its {len(high)} 🔴 "
                  f"line(s)" + (f" and {others:,} in date headers, sub-lines under 🔴 entries and unclassified text"
                                if others > 0 else ""))
    return CondenseResult(
        observations=rendered, tokens=count, input_tokens=input_tokens, target=target_tokens, dropped=dropped,
        boundaries_removed=boundaries, duplicates_merged=duplicates, date_headers_removed=headers,
        high_priority_lines=len(high), high_priority_tokens=high_tokens, reason=reason,
        lines_removed=_significant_lines(text) - _significant_lines(rendered))


def _significant_lines(text: str) -> int:
    """Return the number of non-blank lines of TEXT (the lines a log diff compares)."""
    return sum(1 for line in text.splitlines() if line.strip())

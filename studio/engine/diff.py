"""Diff two generations of an observation log line by line (kept / added / removed).

Built on the standard library's difflib.SequenceMatcher (a well-kept, exact algorithm) over whole
lines; each diff row says which side it comes from, and removed high-priority (🔴) observations
are flagged, because those are the facts an agent is most likely to miss after a reflection.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from studio.engine.observations import Priority, classify


@dataclass
class DiffRow:
    """One row of a line diff.

    op: "kept" | "added" | "removed". `old_number` / `new_number` are 1-based line numbers in
    each side (None where the line is absent on that side). `high_priority_loss` marks a removed
    🔴 observation whose text does not reappear anywhere in the newer log.
    """

    op: str
    text: str
    old_number: int | None
    new_number: int | None
    high_priority_loss: bool = False


@dataclass
class GenerationDiff:
    """A line diff between an older and a newer log, with token figures (tokens)."""

    rows: list[DiffRow]
    old_tokens: int
    new_tokens: int
    kept: int = 0
    added: int = 0
    removed: int = 0
    high_priority_losses: list[DiffRow] = field(default_factory=list)

    @property
    def token_delta(self) -> int:
        """Return new - old tokens (negative when the newer log is smaller)."""
        return self.new_tokens - self.old_tokens

    @property
    def compression_ratio(self) -> float | None:
        """Return old / new tokens (2.0 = the newer log is half the size), None if new is 0."""
        return self.old_tokens / self.new_tokens if self.new_tokens else None

    def to_json(self) -> dict:
        """Return a JSON-ready summary: counts, tokens and the rows."""
        return {
            "kept": self.kept, "added": self.added, "removed": self.removed,
            "old_tokens": self.old_tokens, "new_tokens": self.new_tokens, "token_delta": self.token_delta,
            "compression_ratio": self.compression_ratio,
            "high_priority_losses": [r.text for r in self.high_priority_losses],
            "rows": [{"op": r.op, "text": r.text, "old": r.old_number, "new": r.new_number} for r in self.rows],
        }


def _significant(line: str) -> bool:
    return bool(line.strip())


def diff_logs(old: str | None, new: str | None, old_tokens: int = 0, new_tokens: int = 0) -> GenerationDiff:
    """Diff log OLD against log NEW line by line; blank lines are ignored for matching.

    OLD_TOKENS/NEW_TOKENS are the logs' stored token counts (observationTokenCount), used for the
    delta and the compression ratio. Lines compare exactly, trailing whitespace aside.
    """
    old_lines = [(i, ln.rstrip()) for i, ln in enumerate((old or "").splitlines(), 1) if _significant(ln)]
    new_lines = [(i, ln.rstrip()) for i, ln in enumerate((new or "").splitlines(), 1) if _significant(ln)]
    matcher = difflib.SequenceMatcher(a=[t for _, t in old_lines], b=[t for _, t in new_lines], autojunk=False)
    new_texts = {classify(t).text.strip() for _, t in new_lines}
    rows: list[DiffRow] = []
    result = GenerationDiff(rows=rows, old_tokens=old_tokens, new_tokens=new_tokens)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for (on, text), (nn, _) in zip(old_lines[i1:i2], new_lines[j1:j2], strict=True):
                rows.append(DiffRow("kept", text, on, nn))
            result.kept += i2 - i1
            continue
        for on, text in old_lines[i1:i2]:
            parsed = classify(text)
            loss = (parsed.kind == "observation" and parsed.priority is Priority.HIGH
                    and parsed.text.strip() not in new_texts)
            row = DiffRow("removed", text, on, None, high_priority_loss=loss)
            rows.append(row)
            if loss:
                result.high_priority_losses.append(row)
        for nn, text in new_lines[j1:j2]:
            rows.append(DiffRow("added", text, None, nn))
        result.removed += i2 - i1
        result.added += j2 - j1
    return result


def side_by_side(diff: GenerationDiff) -> list[tuple[DiffRow | None, DiffRow | None]]:
    """Pair rows for a two-column view: kept rows face each other, removed face added where possible."""
    pairs: list[tuple[DiffRow | None, DiffRow | None]] = []
    removed: list[DiffRow] = []
    added: list[DiffRow] = []

    def flush() -> None:
        for k in range(max(len(removed), len(added))):
            pairs.append((removed[k] if k < len(removed) else None, added[k] if k < len(added) else None))
        removed.clear()
        added.clear()

    for row in diff.rows:
        if row.op == "kept":
            flush()
            pairs.append((row, row))
        elif row.op == "removed":
            if added:
                flush()
            removed.append(row)
        else:
            added.append(row)
    flush()
    return pairs

"""Find writes that landed on a superseded OM generation (a running agent overtaken by another writer).

Mastra coordinates observation and reflection inside one process only: a running turn keeps the
OM record it read at its start and later writes onto that record's id. When another program (or
another process) inserted a newer generation in between, the agent's observations land on the
old, non-current row, and Mastra never reads them again.

`find_superseded_writes(generations)` is the rule of the doctor's `superseded-write` check: a
non-current generation G whose successor S is the next generationCount (the earliest-created row
of that count) was written after S existed when G.updatedAt > S.createdAt + SUPERSEDE_TOLERANCE_MS.

The tolerance exists because Mastra itself touches the old row right after inserting a reflection
(it clears the reflecting flag): in the real fixtures that touch comes a few milliseconds after
S.createdAt (0–6 ms in those of Dec 2026), far below the tolerance. Times are compared as epoch
milliseconds.

G's observation cursor ahead of S's (G.lastObservedAt > S.lastObservedAt) is reported as a second
reason ("cursor-ahead") but never decides on its own: Mastra's own reflect-after-observe leaves it
so. A reflection inside a turn gets the record as it was before that turn's observation, with the
observed log (`maybeReflect({record: {...record, activeObservations}})`), so S keeps the previous
cursor while G has the new one, and G is written only by the touch within the tolerance
(tests/interop/test_doctor_supersede.py makes real Mastra do it, thread and resource scope). An
earlier rule that fired on the cursor alone reported every such reflection.

The write path does not use this rule. After a studio write it knows what it based the new
generation on (the row's length, hash and cursor recorded in the new row's `metadata.studio`
mark), so `studio.store.write.protocol.find_overtaking_writes` finds exactly the text and cursor
a running turn added afterwards, and whether a studio repair already carried them forward. This
rule needs no marks and so covers any writer (another Mastra process, an older studio), judged by
timestamps alone; it does not know about repairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.store.records import OMRecord, iso_to_ms

#: How long after its successor's creation a touch of the old row is still Mastra's own bookkeeping (ms).
SUPERSEDE_TOLERANCE_MS = 1000


@dataclass
class SupersededWrite:
    """A generation written after its successor was created.

    `record` is the superseded generation, `successor` the row that replaced it; `late_by_ms` is
    G.updatedAt − S.createdAt (None when a time is missing); `reasons` names what was seen
    ("updated-after", always; "cursor-ahead": G's lastObservedAt is later than S's as well).
    """

    record: OMRecord
    successor: OMRecord
    late_by_ms: int | None
    reasons: list[str]

    def to_json(self) -> dict:
        """Return the evidence as JSON-ready figures."""
        return {
            "record_id": self.record.id, "generation": self.record.generation_count,
            "successor_record_id": self.successor.id, "successor_generation": self.successor.generation_count,
            "record_updated_at": self.record.updated_at, "successor_created_at": self.successor.created_at,
            "late_by_ms": self.late_by_ms, "record_last_observed_at": self.record.last_observed_at,
            "successor_last_observed_at": self.successor.last_observed_at, "reasons": list(self.reasons),
        }


def _successors(generations: list[OMRecord]) -> dict[int, OMRecord]:
    """Return {generationCount: the earliest-created row of that count} (createdAt, then id)."""
    first: dict[int, OMRecord] = {}
    for rec in generations:
        key = rec.generation_count
        best = first.get(key)
        mine = (iso_to_ms(rec.created_at) or 0, rec.id)
        if best is None or mine < (iso_to_ms(best.created_at) or 0, best.id):
            first[key] = rec
    return first


def find_superseded_writes(generations: list[OMRecord], *,
                           tolerance_ms: int = SUPERSEDE_TOLERANCE_MS) -> list[SupersededWrite]:
    """Return the generations of ONE lookup key that were written after their successor existed.

    GENERATIONS: every row of the key, any order. The current generation (highest count) has no
    successor and is never reported. Rows sharing a generationCount are each compared with the
    next count's earliest row (duplicates themselves are the `duplicate-generation` check).
    """
    if not generations:
        return []
    first = _successors(generations)
    counts = sorted(first)
    next_of = {c: counts[i + 1] for i, c in enumerate(counts[:-1])}
    out: list[SupersededWrite] = []
    for rec in sorted(generations, key=lambda r: (r.generation_count, r.created_at or "", r.id)):
        nxt = next_of.get(rec.generation_count)
        if nxt is None:
            continue
        succ = first[nxt]
        reasons = []
        updated, created = iso_to_ms(rec.updated_at), iso_to_ms(succ.created_at)
        late = updated - created if updated is not None and created is not None else None
        if late is None or late <= tolerance_ms:
            continue   # not written after S existed (Mastra's own touch, or its reflect-after-observe)
        reasons.append("updated-after")
        mine, theirs = iso_to_ms(rec.last_observed_at), iso_to_ms(succ.last_observed_at)
        if mine is not None and (theirs is None or mine > theirs):
            reasons.append("cursor-ahead")
        out.append(SupersededWrite(rec, succ, late, reasons))
    return out

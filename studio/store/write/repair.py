"""Repair a studio write a running agent overtook: a NEW generation carrying its observations and cursor forward.

See `studio.store.write.protocol` for the protocol and the findings (`find_overtaking_writes`).
Rows Mastra owns are never edited: the repair is one more generation, numbered past every row of
the record (so Mastra's next turn reads it, whichever forked row it held), written in one
BEGIN IMMEDIATE transaction exactly as a reflection generation is (flags 0, counters
re-estimated), plus the lines and cursor the overtaking writes left on rows no longer read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from studio.errors import WriteRefused
from studio.store.records import iso_to_ms
from studio.store.schema import OBSERVATIONAL_MEMORY
from studio.store.write.common import iso, new_id, now_ms_or_clock, read_om_row, to_int
from studio.store.write.protocol import (
    OvertakingWrite,
    find_overtaking_writes,
    make_mark,
    observations_hash,
    unrepaired,
)
from studio.store.write.reflection import _check_counter, _check_flags, _check_lookup_key, _insert_generation
from studio.store.write.transaction import write_transaction

__all__ = ["REPAIR_CHOICES", "repair_overtaken_writes"]

#: "carry": keep the studio's generation and add what overtook it; "revert": take the agent's
#: version (the forked row, or the row it wrote onto) and drop the studio's generation.
REPAIR_CHOICES = ("carry", "revert")


def _lines_not_in(text: str, base: set[str]) -> list[str]:
    """Return TEXT's observation lines not in BASE (stripped), keeping a `Date:` header before kept lines."""
    out: list[str] = []
    header: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("--- message boundary"):
            continue
        if stripped.startswith("Date:"):
            header = line
            continue
        if stripped in base:
            continue
        if header is not None:
            out.append(header)
            header = None
        out.append(line)
    return out


def _newest_cursor(values: list[Any]) -> Any:
    best, best_ms = None, None
    for value in values:
        ms = iso_to_ms(value)
        if ms is not None and (best_ms is None or ms > best_ms):
            best, best_ms = value, ms
    return best


def _plan(rows: list[dict], findings: list[OvertakingWrite], prefer: str) -> tuple[dict, list[str], list[dict]]:
    """Return (base row, carried lines, rows recorded as repaired) for FINDINGS over ROWS."""
    by_id = {r["id"]: r for r in rows}
    top = rows[-1]
    finding_ids = {f.record_id for f in findings}
    forks = [f for f in findings if f.kind == "fork"]
    if prefer == "revert":
        pick = max(forks, key=lambda f: str(by_id[f.record_id].get("createdAt") or "")) if forks else findings[-1]
        base = by_id[pick.record_id]
    elif top["id"] not in finding_ids:
        base = top
    else:
        base = by_id.get(findings[-1].overtaken_record_id) or top
    base_lines = {ln.strip() for ln in (base.get("activeObservations") or "").splitlines() if ln.strip()}
    carried: list[str] = []
    recorded = [by_id[f.record_id] for f in findings]
    sources: list[str] = []
    for f in findings:
        if f.record_id == base["id"]:
            continue
        sources.append(f.added_text)
        overtaken = by_id.get(f.overtaken_record_id)
        if f.kind == "fork" and prefer == "carry" and overtaken is not None and overtaken["id"] != base["id"] \
                and overtaken["id"] not in {r["id"] for r in recorded}:
            sources.append(overtaken.get("activeObservations") or "")  # the studio's row, orphaned by the fork
            recorded.append(overtaken)
    for text in sources:
        new = _lines_not_in(text, base_lines)
        carried += new
        base_lines |= {ln.strip() for ln in new}
    return base, carried, recorded


def _history(tx, lookup_key: str) -> list[dict]:
    """Every row of LOOKUP_KEY oldest first (generationCount, createdAt, then insertion: rowid / id on SQL, `_id` on
    MongoDB, whose ObjectIds the JS driver makes in insertion order), locked on PostgreSQL."""
    if tx.dialect == "mongodb":
        return tx.decoded(OBSERVATIONAL_MEMORY, {"lookupKey": lookup_key},
                          [("generationCount", 1), ("createdAt", 1), ("_id", 1)])
    return tx.select(OBSERVATIONAL_MEMORY,
                     f'WHERE "lookupKey" = ? ORDER BY "generationCount", "createdAt", {tx.insertion_tie}',
                     (lookup_key,), lock=True)


def repair_overtaken_writes(path: str | os.PathLike[str], *, lookup_key: str,
                            count_observations: Callable[[str], int], prefer: str = "carry",
                            now_ms: int | None = None, busy_timeout_ms: int | None = None,
                            studio_metadata: dict | None = None) -> dict | None:
    """Write one generation repairing every unrepaired overtaking write of LOOKUP_KEY; None when there is none.

    PREFER "carry" (default): the new generation holds the studio generation's current log (or, when
    the agent has legitimately moved on from it, the log the agent reads now) plus every
    observation line the overtaking writes left on rows no longer read (deduplicated, with their
    `Date:` headers), after a `--- message boundary (<cursor>) ---` line as Mastra separates
    appended observations. PREFER "revert": the agent's version (its forked row, or the row it
    wrote onto) plus lines it left elsewhere. Either way: generationCount = highest of the record
    + 1, lastObservedAt = the newest cursor of the rows involved, totalTokensObserved their
    maximum, observationTokenCount = COUNT_OBSERVATIONS(the new log) (Mastra's estimate, text ->
    tokens: the engine's `studio.engine.tokens.count_observations`), and `metadata.studio =
    {"kind": "repair", "prefer", "repairs": [{recordId, observationsLength, observationsHash,
    lastObservedAt}], ...}` (see protocol.make_mark), so the findings read as repaired afterwards.
    Checked and written in ONE transaction; the findings are computed inside it. Returns the new
    row, or None when nothing needed repair. Raises WriteRefused ("invalid", "not-found", "busy" /
    "reflecting" while the record's flags are live) and StoreError as commit_reflection does;
    nothing is written then.
    """
    lookup_key = _check_lookup_key(lookup_key)
    if prefer not in REPAIR_CHOICES:
        raise WriteRefused("invalid", f"prefer must be one of {', '.join(REPAIR_CHOICES)}, not {prefer!r}")
    count = _check_counter(count_observations)
    now = now_ms_or_clock(now_ms)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="repair") as tx:
        if not tx.schema.has_observational_memory:
            raise WriteRefused("not-found", f"{tx.location.display} has no Observational Memory table.")
        rows = _history(tx, lookup_key)
        if not rows:
            raise WriteRefused("not-found", f"There is no Observational Memory record for {lookup_key}.")
        findings = unrepaired(find_overtaking_writes(rows))
        if not findings:
            return None
        _check_flags(rows[-1], now, False)
        base, carried, recorded = _plan(rows, findings, prefer)
        involved = [base, *recorded]
        cursor = _newest_cursor([r.get("lastObservedAt") for r in involved])
        text = base.get("activeObservations") or ""
        if carried:
            text = f"{text.rstrip()}\n\n--- message boundary ({cursor}) ---\n\n" + "\n".join(carried)
        stamp = iso(now)
        record_id = new_id()
        extra = dict(studio_metadata or {})
        extra.update({"kind": "repair", "prefer": prefer, "carriedLines": len(carried), "repairs": [
            {"recordId": r["id"], "generationCount": to_int(r.get("generationCount")),
             "observationsLength": len(r.get("activeObservations") or ""),
             "observationsHash": observations_hash(r.get("activeObservations")),
             "lastObservedAt": r.get("lastObservedAt")} for r in involved]})
        mark = make_mark("repair", record_id, text, stamp, base, extra)
        template = dict(base)
        template["totalTokensObserved"] = max(to_int(r.get("totalTokensObserved")) for r in involved)
        generation = max(to_int(r.get("generationCount")) for r in rows) + 1
        _insert_generation(tx, template, text, stamp, mark, record_id, generation=generation, last_observed_at=cursor,
                           observation_tokens=count(text))
        return read_om_row(tx, record_id)


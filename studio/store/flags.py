"""The busy flags of a stored OM row (isObserving, isReflecting, isBuffering*): set, and live or stale.

Mastra keeps the truth about a running observation or reflection in its own process; from outside,
the flag columns and the age of the row's last update are the evidence. Read by the engine (status,
doctor, Reflector) and by the store's writes, which refuse while a flag looks live.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from studio.store import schema as sc
from studio.store.records import OMRecord, iso_to_ms

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore

__all__ = ["FLAG_COLUMNS", "STALE_FLAG_AFTER_MS", "FlagState", "any_flag_may_be_set", "flag_states"]

#: A busy flag whose record has not been updated for this long is taken as left by a dead process (ms).
STALE_FLAG_AFTER_MS = 10 * 60 * 1000
FLAG_COLUMNS = ("isObserving", "isReflecting", "isBufferingObservation", "isBufferingReflection")


@dataclass
class FlagState:
    """A busy flag of an OM record: set or not, and if set whether it looks live or stale."""

    name: str
    set: bool
    stale: bool = False
    age_ms: int | None = None


def flag_states(record: OMRecord, now_ms: int | None = None) -> list[FlagState]:
    """Return the record's busy flags; a set flag is stale when the record is older than STALE_FLAG_AFTER_MS.

    Mastra itself checks an in-process registry; from another process the age of the record's
    last update (`updatedAt`, or `lastBufferedAtTime` for buffering) is the best evidence we have.
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    out = []
    for name in FLAG_COLUMNS:
        if name not in record.columns:
            continue
        is_set = record.flag(name)
        stamp = iso_to_ms(record.get("lastBufferedAtTime")) if name == "isBufferingObservation" else None
        stamp = max(filter(None, [stamp, iso_to_ms(record.updated_at)]), default=None)
        age = None if stamp is None else max(0, now_ms - stamp)
        stale = is_set and (age is None or age > STALE_FLAG_AFTER_MS)
        out.append(FlagState(name=name, set=is_set, stale=stale, age_ms=age if is_set else None))
    return out


def any_flag_may_be_set(store: MemoryStore) -> bool:
    """Return True when an OM row of STORE may have a busy flag set: a flag column holding anything
    but NULL or 0, which covers every value `OMRecord.flag` takes as set (and a few it does not: "0" as text).

    False means no stored row has a flag set, so nothing read from the OM table depends on the clock (stale
    flags). One statement (a scan of the OM table, stopped at the first such row) on SQLite's SQL (a file, a libSQL
    server); another store is answered True without a read. Raises StoreError on a failed read.
    """
    if store.dialect != "sqlite":
        return True
    if not store.schema.has_table(sc.OBSERVATIONAL_MEMORY):
        return False
    cols = [c for c in FLAG_COLUMNS if store.schema.has_column(sc.OBSERVATIONAL_MEMORY, c)]
    if not cols:
        return False
    where = " OR ".join(f"({sc.quote_ident(c)} IS NOT NULL AND {sc.quote_ident(c)} != 0)" for c in cols)
    return bool(store.rows(f"SELECT 1 FROM {sc.OBSERVATIONAL_MEMORY} WHERE {where} LIMIT 1"))

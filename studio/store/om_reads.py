"""The Observational Memory reads of a store: lookup keys, generations, current records.

`OMReads` is mixed into `MemoryStore` (studio.store.memory_store) and works through its `_select`,
`_rows` and `schema`; the SQL is the libSQL file's, which PgStore and RemoteStore share or override.
"""

from __future__ import annotations

from studio.store import schema as sc
from studio.store.records import OMRecord, Thread, om_record_from_row

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any, Iterable


class OMReads:
    """`om_*` reads and `lookup_key_for_thread` over the store's `_select` / `_rows` / `schema` (see module doc)."""

    def _om(self, row: dict) -> OMRecord:
        return om_record_from_row(row)

    def om_lookup_keys(self) -> list[dict]:
        """Return one dict {lookupKey, scope, resourceId, threadId} per OM lookup key, sorted by key."""
        if not self.schema.has_observational_memory:
            return []
        cols = [c for c in ("lookupKey", "scope", "resourceId", "threadId")
                if self.schema.has_column(sc.OBSERVATIONAL_MEMORY, c)]
        sel = ", ".join(sc.quote_ident(c) for c in cols)
        rows = self._rows(f'SELECT DISTINCT {sel} FROM mastra_observational_memory ORDER BY "lookupKey"')
        out, seen = [], set()
        for r in rows:
            d = dict(zip(cols, r))
            if d["lookupKey"] in seen:
                continue
            seen.add(d["lookupKey"])
            d.setdefault("scope", "resource" if str(d["lookupKey"]).startswith("resource:") else "thread")
            out.append(d)
        return out

    def om_history(self, lookup_key: str, limit: int | None = None) -> list[OMRecord]:
        """Return LOOKUP_KEY's generations, newest (highest generationCount) first."""
        if not self.schema.has_observational_memory:
            return []
        tail, params = 'WHERE "lookupKey" = ? ORDER BY "generationCount" DESC', [lookup_key]
        if limit is not None:
            tail += " LIMIT ?"
            params.append(limit)
        return [self._om(r) for r in self._select(sc.OBSERVATIONAL_MEMORY, [], tail, params)]

    def om_histories(self, lookup_keys: Iterable[str] | None = None, chunk: int = 500) -> dict[str, list[OMRecord]]:
        """Return {lookup key: its generations, newest first} for LOOKUP_KEYS, CHUNK keys per query;
        None: every lookup key, in one statement (studio.store.batch).

        Every key asked for is in the result (an empty list when it has no row).
        """
        if lookup_keys is None:
            from studio.store import batch  # imported by the reads that batch (a `threads` command reads none)

            return batch.om_histories(self)
        keys = list(dict.fromkeys(lookup_keys))
        out: dict[str, list[OMRecord]] = {k: [] for k in keys}
        if not self.schema.has_observational_memory:
            return out
        for i in range(0, len(keys), chunk):
            part = keys[i:i + chunk]
            rows = self._select(sc.OBSERVATIONAL_MEMORY, [], f'WHERE "lookupKey" IN ({", ".join("?" * len(part))}) '
                                'ORDER BY "lookupKey", "generationCount" DESC', part)
            for row in rows:
                out.setdefault(row["lookupKey"], []).append(self._om(row))
        return out

    def om_current(self, lookup_key: str) -> OMRecord | None:
        """Return LOOKUP_KEY's current record (highest generationCount), or None."""
        rows = self.om_history(lookup_key, limit=1)
        return rows[0] if rows else None

    def om_record(self, record_id: str) -> OMRecord | None:
        """Return the OM generation with id RECORD_ID, or None."""
        if not self.schema.has_observational_memory:
            return None
        rows = self._select(sc.OBSERVATIONAL_MEMORY, [], "WHERE id = ?", (record_id,))
        return self._om(rows[0]) if rows else None

    def om_current_all(self) -> dict[str, OMRecord]:
        """Return {lookupKey: current record} for every OM lookup key, in one query."""
        return self._om_current_where("", ())

    def om_current_many(self, lookup_keys: Iterable[str], chunk: int = 400) -> dict[str, OMRecord]:
        """Return {lookupKey: current record} for the LOOKUP_KEYS that have one (CHUNK keys per query)."""
        keys = list(dict.fromkeys(lookup_keys))
        out: dict[str, OMRecord] = {}
        for i in range(0, len(keys), chunk):
            part = keys[i:i + chunk]
            out.update(self._om_current_where(f'AND o."lookupKey" IN ({", ".join("?" * len(part))})', part))
        return out

    def _om_current_where(self, condition: str, params: Iterable[Any]) -> dict[str, OMRecord]:
        if not self.schema.has_observational_memory:
            return {}
        rows = self._select(
            sc.OBSERVATIONAL_MEMORY, [],
            'AS o WHERE "generationCount" = (SELECT MAX(i."generationCount") FROM mastra_observational_memory AS i '
            f'WHERE i."lookupKey" = o."lookupKey") {condition} ORDER BY "lookupKey"', params)
        return {r["lookupKey"]: self._om(r) for r in rows}

    def lookup_key_for_thread(self, thread: Thread) -> str | None:
        """Return the OM lookup key that governs THREAD (thread scope first, then its resource), or None."""
        if not self.schema.has_column(sc.OBSERVATIONAL_MEMORY, "lookupKey"):
            return None
        candidates = [f"thread:{thread.id}", f"resource:{thread.resource_id}"]
        found = {r[0] for r in self._rows(
            'SELECT DISTINCT "lookupKey" FROM mastra_observational_memory WHERE "lookupKey" IN (?, ?)', candidates)}
        return next((key for key in candidates if key in found), None)

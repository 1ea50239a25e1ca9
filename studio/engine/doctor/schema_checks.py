"""Doctor checks on the database as a whole: schema drift and unreadable JSON in threads and resources.

* schema-drift: the memory tables' columns compared with those @mastra/libsql 1.23.1 creates
  (the version this studio's parity is checked against; a memory.db stores no version number, so
  its columns are what it "claims"). Missing columns (an older Mastra; the studio reads them as
  NULL) and unknown columns (a newer Mastra; ignored) are one info finding per table.
* malformed-json: a thread's or a resource's `metadata` that neither JSONB nor JSON text decodes.
* timestamp-twin-mismatch (PostgreSQL): a `"<col>Z"` TIMESTAMPTZ twin that @mastra/pg reads and that
  disagrees with its column to the millisecond. Threads, messages and resources read the twin first
  (a set twin that differs); OM records read `createdAt`, `updatedAt` and `lastObservedAt` only
  through the twin (also: one of the two NULL). Another writer that leaves a twin out gets its
  insert time (the twin defaults to NOW()), so Mastra reads a time nobody meant. One error a row.
"""

from __future__ import annotations

from studio.engine.doctor.model import Finding, finding
from studio.store.records import Resource, Thread

#: Columns of the memory tables written by @mastra/libsql 1.23.1 (@mastra/memory 1.31.0).
KNOWN_COLUMNS: dict[str, tuple[str, ...]] = {
    "mastra_threads": ("id", "resourceId", "title", "metadata", "createdAt", "updatedAt"),
    "mastra_messages": ("id", "thread_id", "content", "role", "type", "createdAt", "resourceId"),
    "mastra_resources": ("id", "workingMemory", "metadata", "createdAt", "updatedAt"),
    "mastra_observational_memory": (
        "id", "lookupKey", "scope", "resourceId", "threadId", "activeObservations", "activeObservationsPendingUpdate",
        "originType", "config", "generationCount", "lastObservedAt", "lastReflectionAt", "pendingMessageTokens",
        "totalTokensObserved", "observationTokenCount", "isObserving", "isReflecting", "observedMessageIds",
        "observedTimezone", "bufferedObservations", "bufferedObservationTokens", "bufferedMessageIds",
        "bufferedReflection", "bufferedReflectionTokens", "bufferedReflectionInputTokens",
        "reflectedObservationLineCount", "bufferedObservationChunks", "isBufferingObservation",
        "isBufferingReflection", "lastBufferedAtTokens", "lastBufferedAtTime", "metadata", "createdAt", "updatedAt"),
    "mastra_thread_state": ("threadId", "type", "value", "createdAt", "updatedAt"),
}


def check_schema(tables: dict[str, list[str]]) -> list[Finding]:
    """Return schema-drift findings for TABLES ({table: columns} as discovered; absent tables are skipped)."""
    out = []
    for table, known in KNOWN_COLUMNS.items():
        if table not in tables:
            continue
        present = tables[table]
        missing = [c for c in known if c not in present]
        unknown = [c for c in present if c not in known]
        if not missing and not unknown:
            continue
        parts = []
        if missing:
            parts.append(f"{len(missing)} column(s) missing ({', '.join(missing)}): written by an older Mastra")
        if unknown:
            parts.append(f"{len(unknown)} unknown column(s) ({', '.join(unknown)}): written by a newer Mastra")
        out.append(finding("schema-drift", f"{table}: " + "; ".join(parts),
                           evidence={"table": table, "missing": missing, "unknown": unknown,
                                     "reference_version": "@mastra/libsql 1.23.1"}))
    return out


def check_thread_json(thread: Thread) -> list[Finding]:
    """Return malformed-json when THREAD's metadata could not be decoded."""
    if not thread.metadata_error:
        return []
    return [finding("malformed-json", f"Thread metadata is not valid JSON ({thread.metadata_error})",
                    thread_id=thread.id, resource_id=thread.resource_id,
                    evidence={"table": "mastra_threads", "column": "metadata", "error": thread.metadata_error})]


def check_resource_json(resource: Resource) -> list[Finding]:
    """Return malformed-json when RESOURCE's metadata could not be decoded."""
    if not resource.metadata_error:
        return []
    return [finding("malformed-json", f"Resource metadata is not valid JSON ({resource.metadata_error})",
                    resource_id=resource.id,
                    evidence={"table": "mastra_resources", "column": "metadata", "error": resource.metadata_error})]


def check_timestamp_twins(mismatches: list[dict]) -> list[Finding]:
    """Return one timestamp-twin-mismatch per row of MISMATCHES (the store's `timestamp_twin_mismatches`)."""
    out = []
    for m in mismatches:
        table = m["table"]
        reads = "reads only the twin" if m["twin_only"] else "reads the twin first"
        summary = (f"{table} {m['id']}: {m['column']} is {m['value'] or 'NULL'} but {m['column']}Z is "
                   f"{m['twin'] or 'NULL'}; Mastra {reads}, so it sees {m['twin'] or 'no time'}")
        where = {"thread_id": m.get("thread_id"), "resource_id": m.get("resource_id")}
        if table == "mastra_observational_memory":
            where.update(record_id=m["id"], lookup_key=m.get("lookup_key"))
        elif table == "mastra_messages":
            where["message_ids"] = [m["id"]]
        out.append(finding("timestamp-twin-mismatch", summary, **where,
                           evidence={"table": table, "row": m["id"], "column": m["column"], "value": m["value"],
                                     "twin": m["twin"], "twin_only": m["twin_only"]}))
    return out

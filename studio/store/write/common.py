"""Helpers shared by the write functions: JavaScript value round-trips, clocks, row reads.

Mastra's libSQL store reads a row into JavaScript values (`JSON.parse`, `new Date(...)`) and
writes them back with `JSON.stringify` / `toISOString()`; copying a value the way Mastra does
therefore means the same round trip, which these helpers reproduce.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from studio.common.jscompat import js_trim, json_stringify
from studio.common.jsdates import normalize_created_at
from studio.errors import WriteRefused
from studio.store.records import ms_to_iso
from studio.store.schema import OBSERVATIONAL_MEMORY, THREADS
from studio.store.write.tx import Jsonb, WriteTx

THREAD_COLUMNS = ["id", "resourceId", "title", "metadata", "createdAt", "updatedAt"]


def now_ms_or_clock(now_ms: int | None) -> int:
    """Return NOW_MS, or the current time in epoch milliseconds."""
    if now_ms is None:
        return int(time.time() * 1000)
    if isinstance(now_ms, bool) or not isinstance(now_ms, int) or now_ms < 0:
        raise WriteRefused("invalid", f"now_ms must be epoch milliseconds (an int), not {now_ms!r}")
    return now_ms


def iso(ms: int) -> str:
    """Return epoch milliseconds MS as Mastra writes times (`Date#toISOString()`)."""
    return ms_to_iso(ms)


def new_id() -> str:
    """Return a new id as Mastra makes them (`crypto.randomUUID()`: a random UUID v4)."""
    return str(uuid.uuid4())


def js_date_round_trip(value: Any) -> Any:
    """Return `new Date(value).toISOString()` for a stored time; falsy -> None; unparseable -> as stored.

    (Mastra itself would throw on an unparseable stored time; the studio keeps the value instead.)
    """
    if value is None or value == "":
        return None
    dt = normalize_created_at(value, UTC)
    if dt is None:
        return value
    try:
        return ms_to_iso(round(dt.timestamp() * 1000))
    except (ValueError, OverflowError):
        return value


def js_parse(text: Any, what: str) -> Any:
    """Return `JSON.parse(text)` for a stored JSON column value; raise WriteRefused("invalid") when malformed."""
    if not isinstance(text, (str, bytes, bytearray)):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise WriteRefused("invalid", f"The stored {what} is not valid JSON ({exc}); nothing was written.") from exc


def stringify(value: Any) -> str:
    """Return `JSON.stringify(value)` (JavaScript key order and number text)."""
    text = json_stringify(value)
    return "null" if text is None else text


def present_string(value: Any, name: str) -> str | None:
    """Return VALUE trimmed as JavaScript trims, or None when it is None/blank (Mastra ignores blank values).

    Raises WriteRefused("invalid") when VALUE is neither None nor a string.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise WriteRefused("invalid", f"{name} must be a string, not {type(value).__name__}")
    trimmed = js_trim(value)
    return trimmed or None


def read_thread(tx: WriteTx, thread_id: str, *, lock: bool = False) -> dict | None:
    """Return the thread row (metadata as JSON text) or None; LOCK: FOR UPDATE on PostgreSQL.

    On MongoDB: the document as stored (`_id` kept, metadata an embedded document, Dates as datetimes), the
    values @mastra/mongodb's getThreadById hands back to the code that writes them again.
    """
    if tx.dialect == "mongodb":
        return tx.find_one(THREADS, {"id": thread_id})
    rows = tx.select(THREADS, "WHERE id = ?", (thread_id,), wanted=THREAD_COLUMNS, lock=lock)
    return rows[0] if rows else None


def read_row(tx: WriteTx, table: str, row_id: str, *, lock: bool = False) -> dict | None:
    """Return TABLE's row with id ROW_ID (every column) or None; LOCK: FOR UPDATE on PostgreSQL; on MongoDB the
    document as stored."""
    if tx.dialect == "mongodb":
        return tx.find_one(table, {"id": row_id})
    rows = tx.select(table, "WHERE id = ?", (row_id,), lock=lock)
    return rows[0] if rows else None


def json_value(tx: WriteTx, value: Any) -> Any:
    """VALUE (a JSON object or array) as the store's Mastra writes it: JSON text for a JSONB column (SQL), the
    embedded document itself on MongoDB (its Dates kept)."""
    return value if tx.dialect == "mongodb" else Jsonb(stringify(value))


def update_row(tx: WriteTx, table: str, row: dict, values: dict[str, Any]) -> int:
    """Set VALUES on ROW (as read) of TABLE, addressed by its id: UPDATE … WHERE id = ? on SQL, updateOne({id},
    {$set}) on MongoDB (compare-and-set on a standalone server); return the rows changed."""
    if tx.dialect == "mongodb":
        doc = row if "_id" in row else tx.find_one(table, {"id": row["id"]})
        if doc is None:
            return 0
        tx.set_fields(table, doc, values)
        return 1
    return tx.update(table, values, "id = ?", (row["id"],))


def delete_rows(tx: WriteTx, table: str, field: str, value: Any) -> int:
    """Delete TABLE's rows whose FIELD equals VALUE (deleteMany({field: value}) on MongoDB, one compare-and-set
    step a document on a standalone server); return how many went."""
    if tx.dialect == "mongodb":
        docs = tx.find(table, {field: value})
        tx.delete_many(table, docs)
        return len(docs)
    return tx.delete(table, f'"{field}" = ?', (value,))


def thread_metadata(row: dict) -> dict:
    """Return a thread row's metadata as Mastra's getThreadById parses it (NULL -> {}; not an object -> {})."""
    parsed = js_parse(row.get("metadata"), f"metadata of thread {row.get('id')!r}")
    return parsed if isinstance(parsed, dict) else {}


def latest_om_row(tx: WriteTx, lookup_key: str) -> dict | None:
    """Return LOOKUP_KEY's current OM row (highest generationCount, as Mastra's getObservationalMemory), or None.

    The row is locked (FOR UPDATE on PostgreSQL; the file's write lock on libSQL) until the write ends.
    """
    if not tx.schema.has_observational_memory:
        return None
    if tx.dialect == "mongodb":   # getObservationalMemory: findOne({lookupKey}, {sort: {generationCount: -1}})
        rows = tx.decoded(OBSERVATIONAL_MEMORY, {"lookupKey": lookup_key}, [("generationCount", -1)], limit=1)
        return rows[0] if rows else None
    rows = tx.select(OBSERVATIONAL_MEMORY, 'WHERE "lookupKey" = ? ORDER BY "generationCount" DESC LIMIT 1',
                     (lookup_key,), lock=True)
    return rows[0] if rows else None


def generation_row(tx: WriteTx, lookup_key: str, generation: int) -> dict | None:
    """Return LOOKUP_KEY's generation GENERATION (the newest such row when a race wrote two), or None."""
    if tx.dialect == "mongodb":
        rows = tx.decoded(OBSERVATIONAL_MEMORY, {"lookupKey": lookup_key, "generationCount": generation},
                          [("createdAt", -1)], limit=1)
    else:
        rows = tx.select(OBSERVATIONAL_MEMORY, 'WHERE "lookupKey" = ? AND "generationCount" = ? '
                                               f'ORDER BY "createdAt" DESC, {tx.insertion_tie} DESC LIMIT 1',
                         (lookup_key, generation))
    return rows[0] if rows else None


def read_om_row(tx: WriteTx, record_id: str) -> dict:
    """Return the OM row with id RECORD_ID (JSONB columns as JSON text; on MongoDB decoded as the studio reads it)."""
    if tx.dialect == "mongodb":
        return tx.decoded(OBSERVATIONAL_MEMORY, {"id": record_id})[0]
    return tx.select(OBSERVATIONAL_MEMORY, "WHERE id = ?", (record_id,))[0]


def to_int(value: Any) -> Any:
    """Return `Number(value || 0)` for an integer column: ints stay ints, integral floats become ints."""
    if not value:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    if number != number or number in (float("inf"), float("-inf")):
        return 0
    return int(number) if number.is_integer() else number


def check_datetime(value: Any, name: str) -> str | None:
    """Return a date bound as Mastra binds it: a string as given, a datetime / epoch ms as toISOString()."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return ms_to_iso(round((value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp() * 1000))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return ms_to_iso(int(value))
        except (ValueError, OverflowError, OSError) as exc:
            raise WriteRefused("invalid", f"{name} {value!r} is out of the range of dates") from exc
    raise WriteRefused("invalid", f"{name} must be an ISO string, a datetime or epoch ms, not {type(value).__name__}")

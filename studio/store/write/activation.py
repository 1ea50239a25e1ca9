"""Activate buffered observation chunks exactly as Mastra's `activate()` does, without a model (no Qt).

Mirrors @mastra/memory 1.31.0 `ObservationalMemory.activate()` as `runThresholdObservation` calls
it, then `resetBufferingState()`, with the libSQL store (@mastra/libsql 1.23.1), all in ONE
BEGIN IMMEDIATE transaction:

1. `swapBufferedToActive`: how many chunks (`studio.common.om_settings.activation_chunk_count`),
   then the OM row updated IN PLACE: `activeObservations` = old +
   `\\n\\n--- message boundary (<last chunk's lastObservedAt>) ---\\n\\n` + the chunks'
   observations joined by `\\n\\n`; `observationTokenCount` += Σ chunk.tokenCount;
   `pendingMessageTokens` = max(0, old − Σ chunk.messageTokens); `bufferedObservationChunks` = the
   rest (NULL when none); `lastObservedAt`; `updatedAt`. `resetBufferingState`:
   `lastBufferedAtTokens` 0, `isBufferingObservation` 0;
2. the thread: `metadata.mastra.om.{suggestedResponse, currentTask, threadTitle}` from the last
   activated chunk (`suggestedContinuation`, `currentTask`, `threadTitle`), the title rule, `updatedAt`;
3. one `data-om-activation` marker per activated chunk on the thread's newest assistant message,
   which also keeps the token-estimate caches Mastra stamps on its parts while counting (it counts the
   unobserved window only when the row's `lastBufferedAtTokens` is above 0).

Resource scope (a `resource:<id>` record; Mastra 1.31.0 never buffers there itself, its constructor
refuses async buffering with scope 'resource', but `activate()` swaps whatever chunks the row
holds): the same row update; the metadata and title go to the thread the activation runs for; the
marker goes on the newest assistant message of the turn's context, i.e. of the whole resource's
messages created after the record's `lastObservedAt` (possibly another thread's), with `threadId` ""
(the record's null threadId, as Mastra writes it), and without the token-estimate caches (Mastra
counts the window in activate() only when async observation is on, never in resource scope). One
deliberate difference: Mastra persists that marker with `threadId: ""`, which makes its store insert
an empty thread row with id "" for the resource; we update the message only and create no such row
(a junk thread; Mastra reads the database the same either way, see
tests/interop/test_activate_resource_interop.py).

Protocol: as the observation write (`studio.store.write.observation`): flags and quiet period
inside the transaction, the row must be as read ("generation-changed"), no studio mark (the row
is Mastra's, updated in place as Mastra updates it).

On MongoDB: `swapBufferedToActive`'s `$set` (the remaining chunks as stored, `[]` when none; lastObservedAt a
Date), then `setBufferingObservationFlag`'s; the thread and the markers as an observation writes them there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from studio.common.jscompat import UNDEFINED
from studio.common.om_settings import activation_chunk_count, max_threshold, resolve_settings
from studio.errors import WriteRefused
from studio.store.backends.mongodb import iso_to_bson_date
from studio.store.records import storage_cursor
from studio.store.schema import MESSAGES, OBSERVATIONAL_MEMORY
from studio.store.write.common import (
    iso,
    js_date_round_trip,
    js_parse,
    latest_om_row,
    now_ms_or_clock,
    read_om_row,
    read_thread,
    stringify,
    thread_metadata,
    to_int,
    update_row,
)
from studio.store.write.observation import update_thread
from studio.store.write.om_messages import (
    MESSAGE_COLUMNS,
    new_thread_title,
    newest_assistant_message,
    set_thread_om,
    upsert_message,
)
from studio.store.write.own_writes import remember_write
from studio.store.write.protocol import check_quiet
from studio.store.write.reflection import _check_flags
from studio.store.write.transaction import write_transaction
from studio.store.write.tx import WriteTx

__all__ = ["DEFAULT_BUFFER_ACTIVATION", "activate_buffered", "activation_plan"]

#: Mastra's default `observation.bufferActivation`.
DEFAULT_BUFFER_ACTIVATION = 0.7


def _num(value: Any) -> float:
    try:
        number = float(value or 0)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number else 0.0


def _chunks(value: Any) -> list[dict]:
    if not value:
        return []
    try:
        parsed = json.loads(value) if isinstance(value, (str, bytes, bytearray)) else value
    except ValueError:
        return []
    return [c for c in parsed if isinstance(c, dict)] if isinstance(parsed, list) else []


def _newest_resource_assistant(tx: WriteTx, resource_id: str, last_observed_at: str | None) -> dict | None:
    """The newest assistant message (content parsed, with a parts list) of RESOURCE_ID created after
    LAST_OBSERVED_AT: the last assistant message of a resource-scope turn's context, or None."""
    cursor = storage_cursor(last_observed_at)
    if tx.dialect == "mongodb":   # find({resourceId, createdAt: {$gte}}).sort({createdAt: -1}), no tie-break
        where: dict = {"resourceId": resource_id}
        if cursor is not None:
            where["createdAt"] = {"$gte": iso_to_bson_date(cursor)}
        rows = tx.decoded(MESSAGES, where, [("createdAt", -1)])
    else:
        tail, params = 'WHERE "resourceId" = ?', [resource_id]
        if cursor is not None:
            tail, params = tail + ' AND "createdAt" >= ?', [*params, cursor]
        order = f' ORDER BY "createdAt" DESC, {tx.insertion_tie} DESC'
        rows = tx.select(MESSAGES, tail + order, params, wanted=MESSAGE_COLUMNS)
    for row in rows:
        if row.get("role") != "assistant":
            continue
        content = js_parse(row.get("content"), f"content of message {row.get('id')!r}")
        if isinstance(content, dict) and isinstance(content.get("parts"), list):
            return {**row, "content": content}
    return None


def _plan(row: dict, chunks: list[dict]) -> tuple[dict, Any, int, float, int]:
    """Return (config, settings, chunks to activate, pending tokens, threshold) for ROW's CHUNKS, as
    swapBufferedToActive reckons them."""
    config = row.get("config") or {}
    config = js_parse(config, "OM record config") if isinstance(config, (str, bytes, bytearray)) else config
    config = config if isinstance(config, dict) else {}
    settings = resolve_settings(config, row.get("scope"))
    obs = config.get("observation") if isinstance(config.get("observation"), dict) else {}
    threshold = max_threshold(settings.message_tokens)
    pending = _num(row.get("pendingMessageTokens")) or sum(_num(c.get("messageTokens")) for c in chunks)
    activation = obs.get("bufferActivation")
    activation = DEFAULT_BUFFER_ACTIVATION if activation is None else _num(activation)
    block_after = _num(obs.get("blockAfter"))
    count = activation_chunk_count(chunks, pending, threshold, activation, bool(block_after) and pending >= block_after)
    return config, settings, count, pending, threshold


def activation_plan(row: dict) -> dict:
    """Return what `activate_buffered` would move from the OM row ROW ({column: value}; JSON as text or parsed).

    Read-only and pure: the same rule the write applies inside its transaction. Returns {"chunks_before",
    "chunks_after", "activated_cycle_ids", "activated_message_ids", "message_tokens" (Σ messageTokens of
    the chunks moved), "observation_tokens" (Σ tokenCount), "observations" (the text appended after the
    boundary), "pending_message_tokens", "threshold" (tokens)}; "chunks_before" 0 when none wait.
    """
    chunks = _chunks(row.get("bufferedObservationChunks"))
    count, pending, threshold = (_plan(row, chunks)[2:] if chunks else (0, 0.0, 0))
    done = chunks[:count]
    return {"chunks_before": len(chunks), "chunks_after": len(chunks) - count,
            "activated_cycle_ids": [c.get("cycleId") for c in done],
            "activated_message_ids": [i for c in done for i in (c.get("messageIds") or [])],
            "message_tokens": to_int(sum(_num(c.get("messageTokens")) for c in done)),
            "observation_tokens": sum(to_int(c.get("tokenCount")) for c in done),
            "observations": "\n\n".join(str(c.get("observations")) for c in done),
            "pending_message_tokens": to_int(pending), "threshold": to_int(threshold)}


def _swap(tx: WriteTx, latest: dict, active: str, done: list[dict], rest: list[dict], last_observed_at: str,
          now: str) -> None:
    """swapBufferedToActive then resetBufferingState on a SQL store: one UPDATE of LATEST (chunks left as JSON text,
    NULL when none)."""
    tx.update(OBSERVATIONAL_MEMORY, {
        "activeObservations": active,
        "observationTokenCount": to_int(latest.get("observationTokenCount"))
                                 + sum(to_int(c.get("tokenCount")) for c in done),
        "pendingMessageTokens": to_int(max(0, _num(latest.get("pendingMessageTokens"))
                                           - sum(_num(c.get("messageTokens")) for c in done))),
        "bufferedObservationChunks": stringify(rest) if rest else None,
        "lastObservedAt": last_observed_at, "lastBufferedAtTokens": 0, "isBufferingObservation": 0,
        "updatedAt": now}, "id = ?", (latest["id"],))


def _swap_on_mongodb(tx: WriteTx, latest: dict, active: str, done: list[dict], count: int, last_observed_at: str,
                     now: str) -> None:
    """swapBufferedToActive on MongoDBStore (`$set {activeObservations, observationTokenCount, pendingMessageTokens,
    bufferedObservationChunks: the rest as stored (an array, [] when none), lastObservedAt (a Date), updatedAt}`),
    then resetBufferingState's setBufferingObservationFlag (`$set {isBufferingObservation: false, updatedAt,
    lastBufferedAtTokens: 0}`)."""
    stored = tx.find_one(OBSERVATIONAL_MEMORY, {"id": latest["id"]})
    chunks = stored.get("bufferedObservationChunks")
    rest = [c for c in chunks if isinstance(c, dict)][count:] if isinstance(chunks, list) else []
    update_row(tx, OBSERVATIONAL_MEMORY, stored, {
        "activeObservations": active,
        "observationTokenCount": to_int(latest.get("observationTokenCount"))
                                 + sum(to_int(c.get("tokenCount")) for c in done),
        "pendingMessageTokens": max(0, _num(latest.get("pendingMessageTokens"))
                                    - sum(_num(c.get("messageTokens")) for c in done)),
        "bufferedObservationChunks": rest, "lastObservedAt": last_observed_at, "updatedAt": now})
    update_row(tx, OBSERVATIONAL_MEMORY, {"id": latest["id"]},
               {"isBufferingObservation": False, "updatedAt": now, "lastBufferedAtTokens": 0})


def _commit(tx: WriteTx, lookup_key: str, thread_id: str, expected_record_id: str | None, now_ms: int,
            idle_ms: int, stamp_estimates: Callable[[dict, Any], Any]) -> dict:
    latest = latest_om_row(tx, lookup_key)
    if latest is None:
        raise WriteRefused("not-found", f"There is no Observational Memory record for {lookup_key}.")
    if expected_record_id is not None and latest["id"] != expected_record_id:
        raise WriteRefused("generation-changed", f"The latest generation of {lookup_key} is now record {latest['id']}, "
                                                 f"not {expected_record_id}; nothing was written.")
    chunks = _chunks(latest.get("bufferedObservationChunks"))
    if not chunks:
        raise WriteRefused("not-found", f"{lookup_key} has no buffered observation chunks to activate.")
    _check_flags(latest, now_ms, False)
    check_quiet(tx, latest, now_ms, idle_ms)
    config, settings, count, _pending, _threshold = _plan(latest, chunks)
    obs = config.get("observation") if isinstance(config.get("observation"), dict) else {}
    ref = config.get("reflection") if isinstance(config.get("reflection"), dict) else {}
    done, rest = chunks[:count], chunks[count:]
    now = iso(now_ms)
    last = done[-1]
    last_observed_at = js_date_round_trip(last.get("lastObservedAt")) or now
    content = "\n\n".join(str(c.get("observations")) for c in done)
    old = latest.get("activeObservations") or ""
    active = f"{old}\n\n--- message boundary ({last_observed_at}) ---\n\n{content}" if old else content
    if tx.dialect == "mongodb":
        _swap_on_mongodb(tx, latest, active, done, count, last_observed_at, now)
    else:
        _swap(tx, latest, active, done, rest, last_observed_at, now)

    row = read_om_row(tx, latest["id"])
    resource = lookup_key.startswith("resource:")
    target = _newest_resource_assistant(tx, latest.get("resourceId"), latest.get("lastObservedAt")) if resource \
        else newest_assistant_message(tx, thread_id)
    if target is not None:
        # Mastra's activate() counts the unobserved window (caching estimates on the parts it counts) only
        # with async observation on (never in resource scope) and a buffering boundary stored (> 0)
        if not resource and _num(latest.get("lastBufferedAtTokens")) > 0:
            stamp_estimates(target, settings.counter_model)
        marker_config = {k: v for k, v in (("messageTokens", obs.get("messageTokens", UNDEFINED)),
                                           ("observationTokens", ref.get("observationTokens", UNDEFINED)),
                                           ("scope", latest.get("scope"))) if v is not UNDEFINED}
        parts = list(target["content"]["parts"])
        for chunk in done:
            parts.append({"type": "data-om-activation", "data": {
                "cycleId": chunk.get("cycleId"), "operationType": "observation", "activatedAt": now,
                "chunksActivated": 1, "tokensActivated": chunk.get("messageTokens"),
                "observationTokens": chunk.get("tokenCount"), "messagesActivated": len(chunk.get("messageIds") or []),
                "recordId": latest["id"],
                "threadId": (latest["threadId"] if latest.get("threadId") is not None
                             else "" if resource else thread_id),
                "generationCount": to_int(latest.get("generationCount")), "config": marker_config,
                "observations": chunk.get("observations"), "triggeredBy": "threshold"}})
        target["content"]["parts"] = parts
        upsert_message(tx, target, now)

    thread = read_thread(tx, thread_id)
    if thread is not None:
        metadata = thread_metadata(thread)
        new_meta = set_thread_om(metadata, {"suggestedResponse": last.get("suggestedContinuation", UNDEFINED),
                                            "currentTask": last.get("currentTask", UNDEFINED),
                                            "threadTitle": last.get("threadTitle", UNDEFINED)},
                                 undefined_as_null=tx.dialect == "mongodb")
        title = new_thread_title(thread, metadata, last.get("threadTitle"))
        update_thread(tx, thread_id, new_meta, title, now)
    return {"row": row, "activated_cycle_ids": [c.get("cycleId") for c in done],
            "activated_message_ids": [i for c in done for i in (c.get("messageIds") or [])],
            "chunks_before": len(chunks), "chunks_after": len(rest)}


def activate_buffered(path: str | os.PathLike[str], *, thread_id: str, lookup_key: str,
                      stamp_estimates: Callable[[dict, Any], Any], expected_record_id: str | None = None,
                      idle_ms: int = 0, now_ms: int | None = None,
                      busy_timeout_ms: int | None = None) -> dict:
    """Activate LOOKUP_KEY's buffered observation chunks as Mastra's activate() + resetBufferingState() do.

    THREAD_ID: the thread the activation runs for (metadata, title and the marker go there).
    STAMP_ESTIMATES(message, counter model): writes into the message dict the token-estimate caches
    Mastra's counter stamps on the parts it counts (the engine's `studio.engine.tokens.stamp_estimates`);
    applied to the marker's message inside the transaction.
    EXPECTED_RECORD_ID: the generation the caller looked at (None: whatever is current).
    IDLE_MS: the protocol's quiet period (ms; 0 = no time check). NOW_MS: the write time (epoch ms).
    Returns {"row": the updated OM row, "activated_cycle_ids", "activated_message_ids",
    "chunks_before", "chunks_after"}. Raises WriteRefused: "not-found" (no record, no chunks),
    "generation-changed", "busy" (live flag, quiet period, lock), "invalid"; the file is left byte-identical then.
    A `resource:` LOOKUP_KEY activates as Mastra does in resource scope (see the module docstring).
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise WriteRefused("invalid", "thread_id must be a thread id")
    if not isinstance(lookup_key, str) or not lookup_key.startswith(("thread:", "resource:")):
        raise WriteRefused("invalid", f"lookup_key must look like 'thread:<id>' or 'resource:<id>', not {lookup_key!r}")
    if not callable(stamp_estimates):
        raise WriteRefused("invalid", "stamp_estimates must be a function (message, model), such as "
                                      "studio.engine.tokens.stamp_estimates")
    now = now_ms_or_clock(now_ms)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="activate") as tx:
        result = _commit(tx, lookup_key, thread_id, expected_record_id, now, idle_ms, stamp_estimates)
    remember_write(tx.location, now)  # no mark on Mastra's row: the quiet period knows this time as the studio's
    return result

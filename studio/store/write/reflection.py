"""Commit a reflection (a new OM generation) exactly as Mastra's manual reflection writes one; undo one.

Mirrors `ObservationalMemory.reflect` (@mastra/memory 1.31.0) with the libSQL store
(@mastra/libsql 1.23.1), whose writes are, in order:

1. `setReflectingFlag(current.id, true)` … the Reflector runs … `createReflectionGeneration`:
   INSERT a row with a new id, the same lookupKey / scope / resourceId / threadId,
   `generationCount + 1`, `originType 'reflection'`, `activeObservations` = the Reflector's
   observations, `observationTokenCount` = `TokenCounter.countObservations` of them (the tokenx
   estimate: the caller passes it, `studio.engine.tokens.count_observations`), `totalTokensObserved`,
   `lastObservedAt` (re-serialised as a JS Date), `config` and `metadata` (re-serialised with
   JSON.stringify) and `observedTimezone` copied, `pendingMessageTokens` 0, every busy flag 0,
   `lastBufferedAtTokens` 0, `lastBufferedAtTime` / `activeObservationsPendingUpdate` NULL,
   `lastReflectionAt` = `createdAt` = `updatedAt` = now; every other column (buffered chunks,
   observedMessageIds, …) left to its default (NULL);
2. when the answer carried a current task or a suggested response, `patchThread`: the thread's
   `metadata.mastra.om` gets `currentTask` / `suggestedResponse` (the previous value when the
   answer has none), `threadTitle` as it was, and `extracted` (the previous object, or {}); every
   other key is kept, the metadata is written as JSONB and the thread's `updatedAt` = now. The
   Reflector's `<thread-title>` is not written: reflection has no thread-title extractor;
3. `setReflectingFlag(current.id, false)`: the previous row ends with `isReflecting` 0 and
   `updatedAt` = now.

Here all of that is ONE transaction (BEGIN IMMEDIATE), preceded inside the transaction by the
checks Mastra makes only within its own process: the latest generation must still be the one the
reflection was computed from, and no live process may be reflecting, observing or buffering it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from studio.common.jscompat import UNDEFINED, to_utf16
from studio.errors import StoreError, WriteRefused
from studio.store.flags import STALE_FLAG_AFTER_MS, flag_states
from studio.store.records import OM_BOOL_COLUMNS, OMRecord
from studio.store.schema import OBSERVATIONAL_MEMORY, THREADS
from studio.store.write.common import (
    generation_row,
    iso,
    js_date_round_trip,
    js_parse,
    json_value,
    latest_om_row,
    new_id,
    now_ms_or_clock,
    present_string,
    read_om_row,
    read_thread,
    stringify,
    thread_metadata,
    to_int,
    update_row,
)
from studio.store.write.protocol import STUDIO_METADATA_KEY, check_quiet, make_mark
from studio.store.write.transaction import write_transaction
from studio.store.write.tx import WriteTx

__all__ = [
    "STUDIO_METADATA_KEY",
    "UNCHANGED_MESSAGE",
    "check_reflection_changes",
    "commit_reflection",
    "reflection_changes_nothing",
    "revert_to_generation",
]

#: The refusal (reason "unchanged") of a reflection that would write a copy of the current generation.
UNCHANGED_MESSAGE = ("Nothing to condense: this reflection leaves the log, current task and suggested response as "
                     "they are; nothing was written.")


def reflection_changes_nothing(current_observations: str | None, om: dict, observations: str,
                               current_task: str | None, suggested_response: str | None) -> bool:
    """Return True when a reflection would write nothing new: a copy of the current generation.

    CURRENT_OBSERVATIONS: the current generation's activeObservations; OM: the thread's
    `metadata.mastra.om` ({} when the thread is gone: Mastra then leaves the metadata alone).
    OBSERVATIONS / CURRENT_TASK / SUGGESTED_RESPONSE: the reflection (None: keep the thread's value).
    Mastra itself writes such a generation anyway (`createReflectionGeneration` has no check); the
    studio does not, so a second rule-based reflect in a row leaves no duplicate generation.
    """
    if observations != (current_observations or ""):
        return False
    return all(value is None or om.get(key) == value
               for key, value in (("currentTask", current_task), ("suggestedResponse", suggested_response)))


def _om_of(metadata: dict) -> dict:
    mastra = metadata.get("mastra") if isinstance(metadata.get("mastra"), dict) else {}
    return mastra.get("om") if isinstance(mastra.get("om"), dict) else {}


def check_reflection_changes(path: str | os.PathLike[str], *, lookup_key: str, observations: str,
                             current_task: str | None = None, suggested_response: str | None = None,
                             thread_id: str | None = None, **_ignored: Any) -> None:
    """Raise WriteRefused("unchanged", UNCHANGED_MESSAGE) when committing this reflection to PATH would change nothing.

    Read-only (a look before the backup a write session takes; the write transaction checks again).
    Takes `commit_reflection`'s keyword arguments; a file the store cannot read is left to the write to report.
    """
    from studio.store import open_store

    if not isinstance(observations, str) or not isinstance(lookup_key, str):
        return
    try:
        with open_store(path) as store:
            current = store.om_current(lookup_key)
            if current is None:
                return
            tid = thread_id or current.thread_id
            thread = store.get_thread(tid) if tid else None
            om = thread.om_metadata if thread is not None else {}
            if reflection_changes_nothing(current.active_observations, om, observations,
                                          present_string(current_task, "current_task"),
                                          present_string(suggested_response, "suggested_response")):
                raise WriteRefused("unchanged", UNCHANGED_MESSAGE)
    except StoreError as exc:
        if isinstance(exc, WriteRefused):
            raise


def _check_lookup_key(lookup_key: Any) -> str:
    if not isinstance(lookup_key, str) or not lookup_key.startswith(("thread:", "resource:")) \
            or lookup_key.endswith(":"):
        raise WriteRefused("invalid", f"lookup_key must look like 'thread:<id>' or 'resource:<id>', not {lookup_key!r}")
    return lookup_key


def _check_studio_metadata(value: Any) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise WriteRefused("invalid", f"studio_metadata must be a dict, not {type(value).__name__}")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise WriteRefused("invalid", f"studio_metadata must hold JSON values only: {exc}") from exc
    return value


def _check_flags(latest: dict, now_ms: int, clear_stale_reflecting: bool) -> None:
    """Refuse when isReflecting is set (live, or stale and not cleared) or another busy flag is live."""
    rec = OMRecord(columns={k: (bool(v) if k in OM_BOOL_COLUMNS and v is not None else v) for k, v in latest.items()})
    generation = to_int(latest.get("generationCount"))
    minutes = STALE_FLAG_AFTER_MS // 60000
    for flag in flag_states(rec, now_ms):
        if not flag.set:
            continue
        age = "" if flag.age_ms is None else f" (the record was last updated {flag.age_ms // 1000} s ago)"
        if flag.name == "isReflecting":
            if not flag.stale:
                raise WriteRefused("reflecting", f"Another process is reflecting generation {generation} right "
                                                 f"now{age}; nothing was written. Try again when it has finished.")
            if not clear_stale_reflecting:
                raise WriteRefused("reflecting", f"isReflecting is set on generation {generation}, but it looks "
                                                 f"stale{age}: no update for more than {minutes} minutes, most likely "
                                                 "left by a process that stopped. Nothing was written; confirm to "
                                                 "clear the flag and reflect.")
        elif not flag.stale:
            raise WriteRefused("busy", f"Another process is busy with generation {generation} ({flag.name} is "
                                       f"set{age}); a new generation now could lose its work. Nothing was written; "
                                       "try again in a moment.")


def _row_metadata(latest: dict, studio: dict | None) -> str | None:
    """Return the new row's `metadata` column: the previous row's, with our `studio` key replaced or removed."""
    stored = latest.get("metadata")
    if not stored:
        return stringify({STUDIO_METADATA_KEY: studio}) if studio is not None else None
    parsed = js_parse(stored, "OM record metadata")
    if not isinstance(parsed, dict):
        if studio is not None:
            raise WriteRefused("invalid", "The OM record's metadata is not a JSON object; the studio mark cannot be "
                                          "added.")
        return stringify(parsed)
    out = {k: v for k, v in parsed.items() if k != STUDIO_METADATA_KEY}  # it described the previous row
    if studio is not None:
        out[STUDIO_METADATA_KEY] = studio
    elif not out and parsed:
        return None  # the previous row held only the studio's mark: this one has no metadata at all
    return stringify(out)


def _spread(value: Any) -> dict:
    """Return `{...value}` for a JSON value (objects copied, strings and arrays by index, others empty)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    if isinstance(value, str):
        return {str(i): ch for i, ch in enumerate(to_utf16(value))}
    return {}


def _thread_om_update(metadata: dict, current_task: str | None, suggested_response: str | None) -> dict:
    """Return the thread metadata Mastra's setThreadOMMetadata writes after a reflection."""
    mastra = metadata.get("mastra") if isinstance(metadata.get("mastra"), dict) else {}
    om = mastra.get("om") if isinstance(mastra.get("om"), dict) else {}

    def previous(key: str) -> Any:
        return om.get(key, UNDEFINED)

    new_om = dict(om)
    for key, value in (("currentTask", current_task if current_task is not None else previous("currentTask")),
                       ("suggestedResponse", suggested_response if suggested_response is not None
                        else previous("suggestedResponse")),
                       ("threadTitle", previous("threadTitle")),
                       ("extracted", _spread(om.get("extracted")))):
        if value is UNDEFINED:
            new_om.pop(key, None)  # `{...om, key: undefined}` is left out by JSON.stringify
        else:
            new_om[key] = value
    out = dict(metadata)
    out["mastra"] = {**mastra, "om": new_om}
    return out


def _insert_generation(tx: WriteTx, latest: dict, observations: str, now: str, studio: dict | None,
                       record_id: str | None = None, generation: int | None = None,
                       last_observed_at: Any = UNDEFINED, *, observation_tokens: int) -> str:
    """INSERT the next generation after LATEST as createReflectionGeneration does; return its id.

    OBSERVATION_TOKENS: Mastra's estimate of OBSERVATIONS (`observationTokenCount`), computed by the caller.

    GENERATION (default latest + 1) and LAST_OBSERVED_AT (default: LATEST's, re-serialised) are
    given by a repair, which numbers past every row and carries an overtaking cursor forward.
    """
    record_id = record_id or new_id()
    if tx.dialect == "mongodb":
        from studio.store.write.mongo_documents import reflection_document

        metadata = latest.get("metadata")
        if studio is not None or (isinstance(metadata, dict) and STUDIO_METADATA_KEY in metadata):
            text = _row_metadata(latest, studio)
            metadata = json.loads(text) if text is not None else None
        else:
            metadata = UNDEFINED   # Mastra's own: the stored document copied as it is
        current = tx.find_one(OBSERVATIONAL_MEMORY, {"id": latest["id"]})
        if generation is not None:   # a repair: LATEST is its template, totalTokensObserved the rows' maximum
            current = {**current, "totalTokensObserved": latest.get("totalTokensObserved")}
        tx.insert(OBSERVATIONAL_MEMORY, reflection_document(
            current, record_id=record_id, observations=observations,
            observation_tokens=observation_tokens, now=now, metadata=metadata, generation=generation,
            last_observed_at=last_observed_at))
        return record_id
    config = latest.get("config")
    parsed_config = js_parse(config, "OM record config") if config else {}
    thread_id = latest.get("threadId") or None
    resource_id = latest.get("resourceId")
    lookup_key = f"thread:{thread_id}" if thread_id else f"resource:{resource_id}"
    tx.insert(OBSERVATIONAL_MEMORY, {
        "id": record_id,
        "lookupKey": lookup_key,
        "scope": latest.get("scope"),
        "resourceId": resource_id,
        "threadId": thread_id,
        "activeObservations": observations,
        "activeObservationsPendingUpdate": None,
        "originType": "reflection",
        "config": stringify(parsed_config),
        "generationCount": to_int(latest.get("generationCount")) + 1 if generation is None else generation,
        "lastObservedAt": js_date_round_trip(latest.get("lastObservedAt") if last_observed_at is UNDEFINED
                                             else last_observed_at),
        "lastReflectionAt": now,
        "pendingMessageTokens": 0,
        "totalTokensObserved": to_int(latest.get("totalTokensObserved")),
        "observationTokenCount": observation_tokens,
        "isObserving": 0,
        "isReflecting": 0,
        "isBufferingObservation": 0,
        "isBufferingReflection": 0,
        "lastBufferedAtTokens": 0,
        "lastBufferedAtTime": None,
        "observedTimezone": latest.get("observedTimezone") or None,
        "metadata": _row_metadata(latest, studio),
        "createdAt": now,
        "updatedAt": now,
    })
    return record_id


def _commit(tx: WriteTx, *, lookup_key: str, expected_record_id: str, observations_of, count_observations,
            current_task: str | None,
            suggested_response: str | None, thread_id: str | None, clear_stale_reflecting: bool,
            studio: dict | None, now_ms: int, expected_active_observations: str | None, idle_ms: int = 0,
            kind: str = "reflection") -> dict:
    if not tx.schema.has_observational_memory:
        raise WriteRefused("not-found", f"{tx.location.display} has no Observational Memory table.")
    latest = latest_om_row(tx, lookup_key)
    if latest is None:
        raise WriteRefused("not-found", f"There is no Observational Memory record for {lookup_key}.")
    generation = to_int(latest.get("generationCount"))
    if latest["id"] != expected_record_id:
        raise WriteRefused("generation-changed",
                           f"The latest generation of {lookup_key} is now {generation} (record {latest['id']}), "
                           f"not the one this was based on (record {expected_record_id}); nothing was written. "
                           "Look at the new generation and try again.")
    if (expected_active_observations is not None
            and (latest.get("activeObservations") or "") != expected_active_observations):
        raise WriteRefused("generation-changed",
                           f"Observations were added to generation {generation} of {lookup_key} since it was read; "
                           "nothing was written. Look at them and try again.")
    _check_flags(latest, now_ms, clear_stale_reflecting)
    check_quiet(tx, latest, now_ms, idle_ms)
    observations, studio = observations_of(tx, latest, studio)
    if kind == "reflection" and observations == (latest.get("activeObservations") or ""):
        thread = read_thread(tx, thread_id) if thread_id else None
        om = _om_of(thread_metadata(thread)) if thread is not None else {}
        if reflection_changes_nothing(latest.get("activeObservations"), om, observations, current_task,
                                      suggested_response):
            raise WriteRefused("unchanged", UNCHANGED_MESSAGE)
    now = iso(now_ms)
    record_id = new_id()
    if studio is not None:  # the self-identifying mark (studio.store.write.protocol)
        studio = make_mark(kind, record_id, observations, now, latest, studio)
    record_id = _insert_generation(tx, latest, observations, now, studio, record_id,
                                   observation_tokens=count_observations(observations))
    update_row(tx, OBSERVATIONAL_MEMORY, latest, {"isReflecting": 0, "updatedAt": now})
    if current_task is not None or suggested_response is not None:
        thread = read_thread(tx, thread_id) if thread_id else None
        if thread is not None and not latest.get("threadId") and thread.get("resourceId") != latest.get("resourceId"):
            raise WriteRefused("invalid", f"Thread {thread_id!r} belongs to resource {thread.get('resourceId')!r}, "
                                          f"not to {latest.get('resourceId')!r} whose record this is.")
        if thread is not None:  # Mastra skips the metadata when the thread is gone
            metadata = _thread_om_update(thread_metadata(thread), current_task, suggested_response)
            values = {"metadata": json_value(tx, metadata), "updatedAt": now}
            if tx.dialect == "mongodb":   # patchThread backfills the title (`existing.title ?? ""`) for updateThread
                values = {"title": thread.get("title") if thread.get("title") is not None else "", **values}
            update_row(tx, THREADS, thread, values)
    return read_om_row(tx, record_id)


def _precheck_quiet(path: str | os.PathLike[str], lookup_key: str, now_ms: int, quiet_ms: int,
                    expected_record_id: str, expected_active_observations: str | None = None) -> None:
    """Refuse ("busy") before taking the write lock while the agent is active (read-only; checked again inside).

    Holding BEGIN IMMEDIATE only to refuse would delay the agent's own writes, which then land later
    than the timestamps they carry; a read-only look first keeps the agent's pace. When the record
    changed since it was read, nothing is said here: the transaction refuses with
    "generation-changed", which tells the user more.
    """
    if quiet_ms <= 0:
        return
    from studio.store import open_store
    from studio.store.write.protocol import read_activity

    try:
        with open_store(path) as store:
            current = store.om_current(lookup_key)
            if current is None or current.id != expected_record_id or (
                    expected_active_observations is not None
                    and (current.active_observations or "") != expected_active_observations):
                return
            activity = read_activity(store, current, now_ms, quiet_ms)
    except StoreError:
        return  # the write transaction says what is wrong with the file
    if activity.ago_ms is not None and activity.ago_ms < quiet_ms:
        raise WriteRefused("busy", activity.message() + " Nothing was written.")


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WriteRefused("invalid", f"{name} must be an int >= 0 (tokens), not {value!r}")
    return value


def _check_counter(value: Any) -> Callable[[str], int]:
    if not callable(value):
        raise WriteRefused("invalid", "count_observations must be a function (text -> tokens), such as "
                                      "studio.engine.tokens.count_observations")
    return value


def _check_ms(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WriteRefused("invalid", f"{name} must be an int >= 0 (ms), not {value!r}")
    return value


def _thread_for(lookup_key: str, thread_id: Any, needed: bool) -> str | None:
    if thread_id is not None and not isinstance(thread_id, str):
        raise WriteRefused("invalid", f"thread_id must be a string, not {type(thread_id).__name__}")
    if lookup_key.startswith("thread:"):
        own = lookup_key[len("thread:"):]
        if thread_id is not None and thread_id != own:
            raise WriteRefused("invalid", f"thread_id {thread_id!r} does not match lookup_key {lookup_key!r}")
        return own
    if needed and not thread_id:
        raise WriteRefused("invalid", "A resource-scope reflection needs thread_id: the thread whose metadata "
                                      "receives the current task and suggested response.")
    return thread_id


def commit_reflection(path: str | os.PathLike[str], *, lookup_key: str, expected_record_id: str, observations: str,
                      observation_tokens: int, current_task: str | None = None, suggested_response: str | None = None,
                      thread_title: str | None = None, thread_id: str | None = None,
                      clear_stale_reflecting: bool = False, studio_metadata: dict | None = None,
                      now_ms: int | None = None, expected_active_observations: str | None = None,
                      idle_ms: int = 0, busy_timeout_ms: int | None = None) -> dict:
    """Write a new OM generation for LOOKUP_KEY with OBSERVATIONS, as Mastra's manual reflection does.

    PATH: the database path or `file:` URL. OBSERVATION_TOKENS: Mastra's estimate of OBSERVATIONS
    (tokens; the new row's `observationTokenCount`), as the Reflector computed it
    (`studio.engine.tokens.count_observations`). EXPECTED_RECORD_ID: the id of the generation the
    reflection was computed from; EXPECTED_ACTIVE_OBSERVATIONS (optional): its activeObservations
    as read, so observations appended in place since then are noticed too. CURRENT_TASK /
    SUGGESTED_RESPONSE: the Reflector's sections (None or blank = keep the thread's previous
    value; when both are None the thread is not touched, as in Mastra). THREAD_ID: the thread
    whose metadata receives them (thread scope: taken from the lookup key; resource scope:
    required when either is given). THREAD_TITLE is accepted and not written: Mastra's reflection
    has no thread-title extractor. STUDIO_METADATA (a JSON-able dict) is stored under the new row's
    `metadata["studio"]` (the previous row's other keys are kept) with the protocol's
    self-identifying fields added (`recordId`, `observationsHash`, `committedAt`, `basedOn`; see
    `studio.store.write.protocol.make_mark`). NOW_MS: the write time (epoch ms).
    IDLE_MS: the quiet period (ms): refuse ("busy") when the record, its thread(s) or their
    messages were written by another program less than IDLE_MS ago (0 = no such check): a running
    Mastra agent does not re-read the record between reading it at the start of a turn and
    writing onto it, so a generation committed inside that window may be overtaken (see
    `studio.store.write.protocol`). BUSY_TIMEOUT_MS: how long it waits in all for another process's lock (ms).

    Returns the new row as read back ({column: value}; JSON columns as JSON text). Raises
    WriteRefused with reason "invalid", "not-found", "generation-changed", "reflecting" (live
    isReflecting, or stale and CLEAR_STALE_REFLECTING false), "busy" (write lock unavailable, or a
    live isObserving / isBuffering* flag), "unchanged" (OBSERVATIONS are the current generation's and
    the thread's current task / suggested response would stay as they are: a copy of the current
    generation is not written, see `reflection_changes_nothing`), and StoreError / SchemaError for unreadable files;
    nothing is written in any of those cases.
    """
    lookup_key = _check_lookup_key(lookup_key)
    if not isinstance(expected_record_id, str) or not expected_record_id:
        raise WriteRefused("invalid", "expected_record_id must be the id of the generation the reflection was based on")
    if not isinstance(observations, str) or not observations.strip():
        raise WriteRefused("invalid", "The reflection is empty: refusing to replace the observations with nothing.")
    tokens = _check_count(observation_tokens, "observation_tokens")
    if thread_title is not None and not isinstance(thread_title, str):
        raise WriteRefused("invalid", f"thread_title must be a string, not {type(thread_title).__name__}")
    if expected_active_observations is not None and not isinstance(expected_active_observations, str):
        raise WriteRefused("invalid", "expected_active_observations must be a string")
    task = present_string(current_task, "current_task")
    response = present_string(suggested_response, "suggested_response")
    tid = _thread_for(lookup_key, thread_id, task is not None or response is not None)
    studio = _check_studio_metadata(studio_metadata)
    idle = _check_ms(idle_ms, "idle_ms")
    now = now_ms_or_clock(now_ms)
    _precheck_quiet(path, lookup_key, now, idle, expected_record_id, expected_active_observations)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="reflect") as tx:
        return _commit(tx, lookup_key=lookup_key, expected_record_id=expected_record_id,
                       observations_of=lambda _tx, _latest, s: (observations, s),
                       count_observations=lambda _text: tokens, current_task=task,
                       suggested_response=response, thread_id=tid, clear_stale_reflecting=bool(clear_stale_reflecting),
                       studio=studio, now_ms=now, expected_active_observations=expected_active_observations,
                       idle_ms=idle)


def revert_to_generation(path: str | os.PathLike[str], *, lookup_key: str, generation_count: int,
                         expected_record_id: str, count_observations: Callable[[str], int], now_ms: int | None = None,
                         clear_stale_reflecting: bool = False, idle_ms: int = 0,
                         busy_timeout_ms: int | None = None) -> dict:
    """Undo reflections: write generation latest+1 whose activeObservations are GENERATION_COUNT's.

    The new row is written exactly as a reflection would write it (counters re-estimated,
    flags 0, see `commit_reflection`) and marked in its `metadata` as
    `{"studio": {"kind": "revert", "revertedFrom": N, "revertedFromRecordId": id}}`; the thread's
    metadata is not touched, and no row is changed except the previous one's `isReflecting` /
    `updatedAt` (history stays append-only). EXPECTED_RECORD_ID: the current generation's id.
    COUNT_OBSERVATIONS: Mastra's estimate of a log (text -> tokens; the engine's
    `studio.engine.tokens.count_observations`), applied to generation N's log as read in the transaction.

    Returns the new row ({column: value}). Raises WriteRefused ("invalid": N is not an int ≥ 0 or
    is the current generation; "not-found": no record or no generation N; "generation-changed",
    "reflecting", "busy" as in commit_reflection); nothing is written then.
    """
    lookup_key = _check_lookup_key(lookup_key)
    if isinstance(generation_count, bool) or not isinstance(generation_count, int) or generation_count < 0:
        raise WriteRefused("invalid", f"generation_count must be an int >= 0, not {generation_count!r}")
    if not isinstance(expected_record_id, str) or not expected_record_id:
        raise WriteRefused("invalid", "expected_record_id must be the id of the current generation")
    idle = _check_ms(idle_ms, "idle_ms")
    count = _check_counter(count_observations)
    now = now_ms_or_clock(now_ms)

    def observations_of(tx: WriteTx, latest: dict, _studio: Any) -> tuple[str, dict]:
        if to_int(latest.get("generationCount")) == generation_count:
            raise WriteRefused("invalid", f"Generation {generation_count} is already the current one of {lookup_key}.")
        row = generation_row(tx, lookup_key, generation_count)
        if row is None:
            raise WriteRefused("not-found", f"{lookup_key} has no generation {generation_count}.")
        text = row.get("activeObservations") or ""
        if not text.strip():
            raise WriteRefused("invalid",
                               f"Generation {generation_count} of {lookup_key} has no observations to restore.")
        return text, {"kind": "revert", "revertedFrom": generation_count, "revertedFromRecordId": row["id"]}

    _precheck_quiet(path, lookup_key, now, idle, expected_record_id)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="revert") as tx:
        return _commit(tx, lookup_key=lookup_key, expected_record_id=expected_record_id,
                       observations_of=observations_of, count_observations=count, current_task=None,
                       suggested_response=None,
                       thread_id=None, clear_stale_reflecting=bool(clear_stale_reflecting), studio=None,
                       now_ms=now, expected_active_observations=None, idle_ms=idle, kind="revert")

"""Commit a synchronous observation exactly as Mastra's `ObservationalMemory.observe()` writes one (no Qt).

Mirrors @mastra/memory 1.31.0 `observe()` with `SyncObservationStrategy.persist` and the libSQL
store (@mastra/libsql 1.23.1), thread scope. The writes, all in ONE BEGIN IMMEDIATE transaction:

1. the OM record's newest row is updated IN PLACE (`updateActiveObservations`; no new generation):
   `activeObservations` = old + `\\n\\n--- message boundary (<lastObservedAt>) ---\\n\\n` + the new
   observations (no boundary when the log was empty), `lastObservedAt` = the newest `createdAt`
   of the observed messages, `pendingMessageTokens` 0, `observationTokenCount` = tokens of the
   whole new log, `totalTokensObserved` += that same whole count, `observedMessageIds` = old ids +
   observed ids, `updatedAt` = now;
2. the thread: `metadata.mastra.om` = `{...om, suggestedResponse, currentTask, threadTitle,
   extracted, lastObservedMessageCursor}` (a missing section deletes its key), the title from
   `<thread-title>` (see `om_messages.new_thread_title`), `updatedAt`;
3. the markers `data-om-observation-start`, (`data-om-thread-update`,) `data-om-observation-end`
   appended to the thread's newest assistant message (whole-message upsert). The end marker's
   `extractedValues` are the answer's values of the record's inline extractors
   (`studio.common.om_settings.observer_extractors`: current-task, suggested-response, and
   thread-title when the record has `observation.threadTitle` on), in Mastra's order; the same
   values fill `mastra.om` (`om_messages.observed_thread_om`).

The protocol (`studio.store.write.protocol`): busy flags and the quiet period are checked before
(by the caller, `observation_window` reports the activity) and again inside the transaction; the
window and the record must be exactly as they were when the window was read ("generation-changed"
otherwise). No studio mark is written: the row stays Mastra's own row, updated in place exactly as
Mastra updates it, and a mark in its `metadata` would (a) be a column Mastra's write does not
change and (b) be copied by Mastra into every later generation. What a watch after the commit can
check instead is `observation_survived`: an overtaking turn that read the row before our commit
rewrites `activeObservations` from its own copy, which drops our appended text. The commit's time
goes to the studio's own-writes journal (`studio.store.write.own_writes`), so the next studio
write's quiet period does not take this one for the agent.

On MongoDB (@mastra/mongodb 1.19.0) the same steps write what MongoDBStore writes: `updateActiveObservations`'
`$set` (lastObservedAt a Date, observedMessageIds an array) and `$inc`, `patchThread` → `updateThread`
(`title ?? existing.title ?? ""`; a `mastra.om` key set to undefined stored null), `saveMessages`' upsert of the
markers' message; see docs/mongodb-backend.md §5.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from studio.common.jscompat import UNDEFINED, js_trim
from studio.common.om_settings import observer_extractors
from studio.errors import WriteRefused
from studio.store.backends.mongodb import iso_to_bson_date
from studio.store.records import Message, OMRecord, iso_to_ms
from studio.store.schema import MESSAGES, OBSERVATIONAL_MEMORY, THREADS
from studio.store.write.common import (
    iso,
    js_date_round_trip,
    js_parse,
    latest_om_row,
    new_id,
    now_ms_or_clock,
    read_om_row,
    read_thread,
    stringify,
    thread_metadata,
    to_int,
    update_row,
)
from studio.store.write.om_messages import (
    MESSAGE_COLUMNS,
    extracted_values,
    new_thread_title,
    newest_assistant_message,
    observed_thread_om,
    set_thread_om,
    thread_om,
    upsert_message,
)
from studio.store.write.own_writes import remember_write
from studio.store.write.protocol import check_quiet
from studio.store.write.reflection import _check_flags
from studio.store.write.transaction import write_transaction
from studio.store.write.tx import Jsonb, WriteTx

__all__ = ["ObservationWindow", "ObserverOutput", "commit_observation", "observation_survived"]


@dataclass(frozen=True)
class ObserverOutput:
    """The Observer's parsed answer: OBSERVATIONS (the `<observations>` list lines, no tag) and the optional
    CURRENT_TASK, SUGGESTED_RESPONSE, THREAD_TITLE sections (None: the answer had no such section).

    EXTRACTED: Mastra's `extractedValues` of the answer ({slug: value}, in Mastra's order), as
    `studio.engine.observer_parse` reads it with the record's extractors; None: the write builds
    them from the three sections and the record's extractors (`om_messages.extracted_values`).
    """

    observations: str
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    extracted: dict[str, Any] | None = None


class ObserveGate:
    """observe()'s threshold gate, the same in both scopes: the window's PENDING_MESSAGE_TOKENS (the
    record's stored value) + TOKENS (its messages, tokenx) against THRESHOLD (message tokens)."""

    pending_message_tokens: int
    tokens: int
    threshold: int

    @property
    def meets(self) -> bool:
        """observe()'s gate: pendingMessageTokens + tokens(window) >= threshold."""
        return self.pending_message_tokens + self.tokens >= self.threshold

    def gate_text(self) -> str:
        """The gate in words, every number named: "492 unobserved-message tokens, below the 2,000-token
        threshold"; a stored pendingMessageTokens is added by name ("435 tokens the record still counts as
        pending (pendingMessageTokens) + 642 unobserved-message tokens = 1,077, below …")."""
        total = self.pending_message_tokens + self.tokens
        where = "below" if not self.meets else "at or over"
        figures = f"{self.tokens:,} unobserved-message tokens"
        if self.pending_message_tokens:
            figures = (f"{self.pending_message_tokens:,} tokens the record still counts as pending "
                       f"(pendingMessageTokens) + {figures} = {total:,}")
        return f"{figures}, {where} the {self.threshold:,}-token threshold"


@dataclass(frozen=True)
class ObservationWindow(ObserveGate):
    """The unobserved message window of a thread as Mastra's observe() selects it, and its threshold gate.

    MESSAGES: Mastra message dicts (storage order); TOKENS: `countMessagesAsync` of them (tokenx);
    PENDING_MESSAGE_TOKENS: the record's stored value; THRESHOLD: the message-token threshold in force;
    MEETS: observe()'s own gate, PENDING_MESSAGE_TOKENS + TOKENS >= THRESHOLD. RECORD: the OM row read.
    Built by the engine (`studio.engine.observe_window.observation_window`), which also hands over
    the rules the write applies inside its transaction: SINCE, the storage cursor the messages were
    read from (None: all); SELECT(messages) -> the window (Mastra message dicts) of stored
    `Message`s, to check that the window is still the same; COUNT_OBSERVATIONS(text) -> tokens,
    Mastra's estimate of the new log (`observationTokenCount`).
    """

    thread_id: str
    lookup_key: str
    scope: str
    record: OMRecord
    messages: list[dict] = field(repr=False)
    tokens: int
    pending_message_tokens: int
    threshold: int
    message_tokens: Any
    observation_tokens: Any
    since: str | None = None
    select: Callable[[list[Message]], list[dict]] = field(default=None, repr=False, compare=False)
    count_observations: Callable[[str], int] = field(default=None, repr=False, compare=False)

    @property
    def message_ids(self) -> list[str]:
        """The ids of the window's messages, in order."""
        return [m["id"] for m in self.messages]

    def to_json(self) -> dict:
        """The window as JSON (CLI)."""
        return {"thread_id": self.thread_id, "lookup_key": self.lookup_key, "scope": self.scope,
                "record_id": self.record.id, "messages": len(self.messages), "message_ids": self.message_ids,
                "tokens": self.tokens, "pending_message_tokens": self.pending_message_tokens,
                "threshold": self.threshold, "meets": self.meets}


def _ids(value: Any) -> list:
    parsed = js_parse(value, "observedMessageIds") if value else None
    return list(parsed) if isinstance(parsed, list) else []


def record_unchanged(record: OMRecord, latest: dict) -> bool:
    """Return True when LATEST (the record's newest row, read inside the write transaction) is RECORD as
    the window read it: same id, activeObservations, lastObservedAt, observedMessageIds and updatedAt."""
    rec = record.columns
    return (latest["id"] == record.id
            and (latest.get("activeObservations") or "") == (rec.get("activeObservations") or "")
            and latest.get("lastObservedAt") == rec.get("lastObservedAt")
            and _ids(latest.get("observedMessageIds")) == list(record.observed_message_ids or [])
            and latest.get("updatedAt") == rec.get("updatedAt"))


def checked_latest_row(tx: WriteTx, window, now_ms: int, idle_ms: int,
                       check_unchanged: Callable[[WriteTx, Any, dict], None]) -> dict:
    """Return the newest row of WINDOW's record, checked inside the transaction as an observation write requires.

    Either scope: CHECK_UNCHANGED(tx, window, row) refuses a record (or messages, threads) changed
    since WINDOW was read, then the live busy flags and the quiet period IDLE_MS (ms) at NOW_MS.
    Raises WriteRefused: "not-found", "generation-changed", "busy".
    """
    latest = latest_om_row(tx, window.lookup_key)
    if latest is None:
        raise WriteRefused("not-found", f"There is no Observational Memory record for {window.lookup_key}.")
    check_unchanged(tx, window, latest)
    _check_flags(latest, now_ms, False)
    check_quiet(tx, latest, now_ms, idle_ms)
    return latest


def update_active_observations(tx: WriteTx, latest: dict, text: str, last_observed_at: str, observed_ids: list,
                               tokens: int, now: str) -> None:
    """Update the OM row LATEST in place as Mastra's store `updateActiveObservations` does (both scopes).

    activeObservations TEXT, lastObservedAt LAST_OBSERVED_AT, pendingMessageTokens 0,
    observationTokenCount TOKENS (the whole new log), totalTokensObserved += TOKENS,
    observedMessageIds OBSERVED_IDS, updatedAt NOW (ISO).
    """
    if tx.dialect == "mongodb":   # updateOne({id}, {$set: {…, observedMessageIds, updatedAt}, $inc: {total…}})
        update_row(tx, OBSERVATIONAL_MEMORY, latest, {
            "activeObservations": text, "lastObservedAt": last_observed_at, "pendingMessageTokens": 0,
            "observationTokenCount": tokens, "observedMessageIds": list(observed_ids), "updatedAt": now,
            "totalTokensObserved": to_int(latest.get("totalTokensObserved")) + tokens})
        return
    tx.update(OBSERVATIONAL_MEMORY, {
        "activeObservations": text, "lastObservedAt": last_observed_at, "pendingMessageTokens": 0,
        "observationTokenCount": tokens, "totalTokensObserved": to_int(latest.get("totalTokensObserved")) + tokens,
        "observedMessageIds": stringify(observed_ids), "updatedAt": now}, "id = ?", (latest["id"],))


def update_thread(tx: WriteTx, thread_id: str, metadata: dict, title: str | None, now: str) -> None:
    """Save thread THREAD_ID's new METADATA, and TITLE unless None (the `<thread-title>` rule), updatedAt NOW."""
    if tx.dialect == "mongodb":   # patchThread → updateThread: $set {title (`?? existing.title ?? ""`), metadata,
        thread = read_thread(tx, thread_id)   # updatedAt}
        if title is None:
            title = thread.get("title") if thread.get("title") is not None else ""
        update_row(tx, THREADS, thread, {"title": title, "metadata": metadata, "updatedAt": now})
        return
    values = {"metadata": Jsonb(stringify(metadata)), "updatedAt": now}
    if title is not None:
        values = {"title": title, **values}
    tx.update(THREADS, values, "id = ?", (thread_id,))


def _check_unchanged(tx: WriteTx, window: ObservationWindow, latest: dict) -> None:
    if not record_unchanged(window.record, latest):
        raise WriteRefused("generation-changed",
                           f"The Observational Memory of {window.lookup_key} changed since the window was read "
                           f"(record {latest['id']}, updated {latest.get('updatedAt')}); nothing was written. "
                           "Read the window again and retry.")
    cursor = window.since
    if tx.dialect == "mongodb":   # listMessages' find({thread_id, createdAt: {$gte}}).sort({createdAt: 1})
        where: dict = {"thread_id": window.thread_id}
        if cursor is not None:
            where["createdAt"] = {"$gte": iso_to_bson_date(cursor)}
        rows = tx.decoded(MESSAGES, where, [("createdAt", 1)])
    else:
        tail, params = "WHERE thread_id = ?", [window.thread_id]
        if cursor is not None:
            tail, params = tail + ' AND "createdAt" >= ?', [*params, cursor]
        # ties in createdAt in the order the window was read in (the store's message_order): rowid on a file,
        # id on PostgreSQL; without it PostgreSQL may return tied rows in another order and refuse the write
        rows = tx.select(MESSAGES, tail + f' ORDER BY "createdAt" ASC, {tx.insertion_tie} ASC', params,
                         wanted=MESSAGE_COLUMNS)
    raw = [Message(id=r["id"], thread_id=r["thread_id"], role=r["role"], content=js_parse(r["content"], "content")
                   if isinstance(r["content"], str) and r["content"][:1] in "{[" else r["content"],
                   created_at=r["createdAt"], resource_id=r.get("resourceId"), type=r.get("type")) for r in rows]
    now_window = window.select(raw)
    if [m["id"] for m in now_window] != window.message_ids:
        raise WriteRefused("generation-changed",
                           f"Messages of thread {window.thread_id!r} changed since the window was read; nothing "
                           "was written. Read the window again and retry.")


def _marker_config(window: ObservationWindow) -> dict:
    config = {"messageTokens": window.message_tokens, "observationTokens": window.observation_tokens,
              "scope": window.scope}
    return {k: v for k, v in config.items() if v is not UNDEFINED}


def _commit(tx: WriteTx, window: ObservationWindow, output: ObserverOutput, observations: str, now_ms: int,
            idle_ms: int) -> dict:
    latest = checked_latest_row(tx, window, now_ms, idle_ms, _check_unchanged)
    now = iso(now_ms)
    newest = max(window.messages, key=lambda m: iso_to_ms(m.get("createdAt")) or 0)
    last_observed_at = js_date_round_trip(newest.get("createdAt"))
    old = latest.get("activeObservations") or ""
    active = f"{old}\n\n--- message boundary ({last_observed_at}) ---\n\n{observations}" if old else observations
    update_active_observations(tx, latest, active, last_observed_at,
                               _ids(latest.get("observedMessageIds")) + window.message_ids,
                               window.count_observations(active), now)

    thread = read_thread(tx, window.thread_id)
    cycle = new_id()
    task = js_trim(output.current_task) if output.current_task else None
    response = js_trim(output.suggested_response) if output.suggested_response else None
    title_text = js_trim(output.thread_title) if output.thread_title else None
    old_title = thread.get("title") if thread else None   # the marker's oldTitle: Mastra's `thread.title?.trim()`
    old_title = js_trim(old_title) if isinstance(old_title, str) else old_title
    new_title = None
    extractors = observer_extractors(window.record.config)
    values = extracted_values(output, extractors)
    if thread is not None:
        metadata = thread_metadata(thread)
        new_meta = set_thread_om(metadata, {
            **observed_thread_om(output, extractors, values, thread_om(metadata)),
            "lastObservedMessageCursor": {"createdAt": last_observed_at, "id": newest["id"]}},
            undefined_as_null=tx.dialect == "mongodb")
        new_title = new_thread_title(thread, metadata, title_text)
        update_thread(tx, window.thread_id, new_meta, new_title, now)

    target = newest_assistant_message(tx, window.thread_id)
    if target is not None:
        parts = [{"type": "data-om-observation-start", "data": {
            "cycleId": cycle, "operationType": "observation", "startedAt": now, "tokensToObserve": window.tokens,
            "recordId": latest["id"], "threadId": window.thread_id, "threadIds": [window.thread_id],
            "config": _marker_config(window)}}]
        if new_title is not None:
            parts.append({"type": "data-om-thread-update", "data": {
                "cycleId": cycle, "threadId": window.thread_id, "oldTitle": old_title, "newTitle": new_title,
                "timestamp": now}})
        end = {"cycleId": cycle, "operationType": "observation", "completedAt": now, "durationMs": 0,
               "tokensObserved": window.tokens, "observationTokens": window.count_observations(observations),
               "observations": observations, "currentTask": task, "suggestedResponse": response,
               "extractedValues": values or None, "recordId": latest["id"], "threadId": window.thread_id}
        parts.append({"type": "data-om-observation-end", "data": {k: v for k, v in end.items() if v is not None}})
        target["content"]["parts"] = list(target["content"]["parts"]) + parts
        upsert_message(tx, target, now)
    return read_om_row(tx, latest["id"])


def commit_observation(path: str | os.PathLike[str], window: ObservationWindow, output: ObserverOutput, *,
                       force: bool = False, idle_ms: int = 0, now_ms: int | None = None,
                       busy_timeout_ms: int | None = None) -> dict:
    """Write OUTPUT as the observation of WINDOW (`studio.engine.observe_window.observation_window`), as
    Mastra's observe() writes it.

    FORCE: write although WINDOW does not meet observe()'s gate (Mastra would not observe yet; the
    reference script's `--force`). IDLE_MS: the protocol's quiet period (ms; 0 = no time check).
    NOW_MS: the write time (epoch ms). Returns the updated OM row ({column: value}).
    Raises WriteRefused: "invalid" (empty observations or window, gate not met without FORCE),
    "not-found", "generation-changed" (record or messages changed since WINDOW was read), "busy"
    (live flag, quiet period, lock); the file is left byte-identical then.
    """
    if not isinstance(output, ObserverOutput):
        raise WriteRefused("invalid", "output must be an ObserverOutput")
    observations = js_trim(output.observations or "")
    if not observations:
        raise WriteRefused("invalid", "The Observer's answer has no observations; nothing was written.")
    if not window.messages:
        raise WriteRefused("invalid", f"Thread {window.thread_id!r} has no unobserved messages; nothing to observe.")
    if not (callable(window.select) and callable(window.count_observations)):
        raise WriteRefused("invalid", "The window carries no window rule or token estimator: read it with "
                                      "studio.engine.observe_window.observation_window.")
    return gated_commit(path, window, force, now_ms, busy_timeout_ms,
                        lambda tx, now: _commit(tx, window, output, observations, now, idle_ms))


def gated_commit(path, window, force: bool, now_ms: int | None, busy_timeout_ms: int | None, commit):
    """Apply observe()'s threshold gate to WINDOW, then run COMMIT(tx, now_ms) in one write transaction.

    WINDOW has `meets`, `pending_message_tokens`, `tokens` and `threshold` (either scope's window).
    Raises WriteRefused("invalid") when the gate is not met and not FORCE; returns COMMIT's result.
    """
    if not window.meets and not force:
        raise WriteRefused("invalid", f"The window holds {window.gate_text()}: Mastra would not observe yet; "
                                      "nothing was written. Force it to observe anyway.")
    now = now_ms_or_clock(now_ms)
    with write_transaction(path, busy_timeout_ms=busy_timeout_ms, label="observe") as tx:
        result = commit(tx, now)
    remember_write(tx.location, now)  # no mark on Mastra's row: the quiet period knows this time as the studio's
    return result


def observation_survived(path: str | os.PathLike[str], record_id: str, written: str) -> bool:
    """Return True while the OM row RECORD_ID (read-only) still starts with WRITTEN (its text as committed).

    A later observation that read the committed row appends to it (still True); an overtaking
    Mastra turn that read the row before the commit rewrites activeObservations from its own copy,
    which drops the committed text (False). A reflection writes a new row and leaves this one.
    """
    from studio.store import open_store

    with open_store(path) as store:
        row = store.om_record(record_id)
    return row is not None and (row.active_observations or "").startswith(written)

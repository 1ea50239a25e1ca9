"""Commit a resource-scope observation exactly as Mastra's observe() writes one (no Qt).

Mirrors @mastra/memory 1.31.0 `ResourceScopedObservationStrategy` (prepare / process / persist /
markers) with the libSQL store, as `observe()` runs it for thread X of a resource-scope record:

- which threads: every thread of the resource contributes its non-system messages created after
  its own `metadata.mastra.om.lastObservedAt` (+1 ms); thread X's list is merged (by id) with the
  turn's window (every message of the resource after the record's `lastObservedAt`, filtered as
  getUnobservedMessages does), so other threads' new messages are observed under X. Threads are
  taken largest first (tokenx `countMessagesAsync`) until the running sum reaches messageTokens,
  then ordered by their oldest message;
- the log: each observed thread's section `<thread id="T">\\n…\\n</thread>` is merged into an
  existing section of that thread holding the same `Date:` line, else appended after a boundary
  at the thread's newest createdAt; `lastObservedAt` = the newest of all observed messages;
  `observedMessageIds` = old ids + new ones (unique, in order); the token columns as in thread scope;
- each observed thread: `metadata.mastra.om` = `{...om, lastObservedAt, suggestedResponse,
  currentTask, threadTitle, extracted, lastObservedMessageCursor}`, the title rule, and the
  observation-start / thread-update / -end markers on its newest assistant message.

The per-thread Observer answers come in as {thread id: ObserverOutput}; a thread without one gets
an empty section, as Mastra's callMultiThread does. The protocol is the thread-scope write's
(`studio.store.write.observation`).
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from typing import Any

from studio.engine import tokens
from studio.engine.jscompat import UNDEFINED, js_trim
from studio.engine.settings import dynamic_threshold, max_threshold, resolve_settings
from studio.errors import WriteRefused
from studio.store.records import OMRecord, iso_to_ms, ms_to_iso
from studio.store.schema import OBSERVATIONAL_MEMORY, THREADS
from studio.store.write.common import (
    iso, js_date_round_trip, latest_om_row, new_id, read_om_row, read_thread, stringify,
    thread_metadata, to_int,
)
from studio.store.write.observation import ObserverOutput, _config, _ids, _window, gated_commit, thread_and_record
from studio.store.write.om_messages import new_thread_title, newest_assistant_message, set_thread_om, upsert_message
from studio.store.write.protocol import check_quiet
from studio.store.write.reflection import _check_flags
from studio.store.write.transaction import Jsonb, WriteTx

__all__ = ["ResourceObservationWindow", "resource_observation_window", "commit_resource_observation"]

_THREAD_TAG = re.compile(r"</?thread\b[^>]{0,1024}>", re.I)
_DATE = re.compile(r"Date:\s*([A-Za-z]+\s+\d+,\s+\d+)")


@dataclass(frozen=True)
class ResourceObservationWindow:
    """What a resource-scope observe() for THREAD_ID would observe.

    THREADS: [(thread id, messages, tokens)] of the threads picked, in Mastra's order (oldest
    message first); TOKENS / PENDING_MESSAGE_TOKENS / THRESHOLD: observe()'s gate over the turn's
    window (the resource's messages after the record's lastObservedAt).
    """

    thread_id: str
    lookup_key: str
    record: OMRecord
    threads: list[tuple[str, list[dict], int]] = field(repr=False)
    window_ids: list[str]
    tokens: int
    pending_message_tokens: int
    threshold: int
    marker_config: dict
    snapshot: dict = field(repr=False)

    @property
    def meets(self) -> bool:
        """observe()'s gate: pendingMessageTokens + tokens(window) >= threshold."""
        return self.pending_message_tokens + self.tokens >= self.threshold

    @property
    def message_ids(self) -> list[str]:
        """The ids of every message observed, thread by thread."""
        return [m["id"] for _, msgs, _ in self.threads for m in msgs]

    def to_json(self) -> dict:
        """The window as JSON (CLI)."""
        return {"thread_id": self.thread_id, "lookup_key": self.lookup_key, "scope": "resource",
                "record_id": self.record.id, "threads": [{"thread_id": t, "messages": len(m), "tokens": n}
                                                         for t, m, n in self.threads],
                "messages": len(self.message_ids), "message_ids": self.message_ids, "tokens": self.tokens,
                "pending_message_tokens": self.pending_message_tokens, "threshold": self.threshold,
                "meets": self.meets}


def _om(metadata: Any) -> dict:
    mastra = metadata.get("mastra") if isinstance(metadata, dict) else None
    om = mastra.get("om") if isinstance(mastra, dict) else None
    return om if isinstance(om, dict) else {}


def resource_observation_window(path: str | os.PathLike[str], thread_id: str) -> ResourceObservationWindow:
    """Read (read-only) what observe() for THREAD_ID of a resource-scope record would observe.

    Raises WriteRefused("not-found") without the thread or record, ("invalid") for a thread-scope record.
    """
    from studio.store.memory_store import MemoryStore
    from studio.engine.unobserved import storage_cursor

    with MemoryStore.open(path) as store:
        thread, key, record = thread_and_record(store, thread_id)
        if not key.startswith("resource:"):
            raise WriteRefused("invalid", f"{key} is not a resource-scope record.")
        resource_id = record.resource_id
        window = _window(store.list_resource_messages(resource_id, since=storage_cursor(record.last_observed_at)), record)
        by_thread: dict[str, list[dict]] = {}
        snapshot = {}
        for t in store.list_threads(resource_id):
            since_ms = iso_to_ms(_om(t.metadata).get("lastObservedAt"))
            since = ms_to_iso(since_ms + 1) if since_ms is not None else None
            msgs = [m.as_mastra() for m in store.list_messages(t.id, since=since)]
            msgs = [m for m in msgs if m["role"] != "system"]
            snapshot[t.id] = (t.updated_at, len(msgs), msgs[-1]["id"] if msgs else None)
            if msgs:
                by_thread[t.id] = msgs
    if window:
        merged = {m["id"]: m for m in by_thread.get(thread_id, [])}
        for m in window:
            merged[m["id"]] = m
        by_thread[thread_id] = list(merged.values())
    config = _config(record.config)
    settings = resolve_settings(config, "resource")
    counted = {tid: tokens.count_messages_for_status(copy.deepcopy(msgs), model=settings.counter_model)
               for tid, msgs in by_thread.items()}
    threshold = max_threshold(settings.message_tokens)
    picked, total = [], 0
    for tid in sorted(by_thread, key=lambda t: -counted[t]):  # stable, as Array#sort
        if total >= threshold:
            break
        picked.append(tid)
        total += counted[tid]

    def oldest(tid: str) -> int:
        return min((iso_to_ms(m.get("createdAt")) or 0) for m in by_thread[tid])
    order = sorted(picked, key=oldest)
    gate_tokens = tokens.count_messages_for_status(copy.deepcopy(window), model=settings.counter_model)
    return ResourceObservationWindow(
        thread_id=thread_id, lookup_key=key, record=record,
        threads=[(tid, by_thread[tid], counted[tid]) for tid in order], window_ids=[m["id"] for m in window],
        tokens=gate_tokens, pending_message_tokens=to_int(record.columns.get("pendingMessageTokens")),
        threshold=dynamic_threshold(settings.message_tokens, record.observation_token_count),
        marker_config={"messageTokens": threshold, "observationTokens": max_threshold(settings.reflection_tokens),
                       "scope": "resource"},
        snapshot=snapshot)


def _boundary(at: str) -> str:
    return f"\n\n--- message boundary ({at}) ---\n\n"


def replace_or_append_section(existing: str, section: str, last_observed_at: str) -> str:
    """Merge SECTION (`<thread id="T">…</thread>`) into EXISTING as Mastra's replaceOrAppendThreadSection does."""
    if not existing:
        return section
    thread_match = re.search(r'<thread id="([^"]+)">', section)
    date_match = _DATE.search(section)
    if thread_match and date_match:
        open_tag, close = f'<thread id="{thread_match.group(1)}">', "</thread>"
        date = date_match.group(1)
        start = existing.find(open_tag)
        if start != -1:
            close_at = existing.find(close, start)
            if close_at != -1:
                end = close_at + len(close)
                old = existing[start:end]
                if f"Date: {date}" in old or f"Date:{date}" in old:
                    line_end = section.find("\n", section.find("Date:"))
                    new_close = section.rfind(close)
                    if line_end != -1 and new_close != -1:
                        content = js_trim(section[line_end + 1:new_close])
                        if content:
                            merged = f"{old[:-len(close)].rstrip()}\n{content}\n{close}"
                            return existing[:start] + merged + existing[end:]
    return existing + _boundary(last_observed_at) + section


def _newest(msgs: list[dict]) -> dict:
    return max(msgs, key=lambda m: iso_to_ms(m.get("createdAt")) or 0)


def _check_unchanged(tx: WriteTx, window: ResourceObservationWindow, latest: dict) -> None:
    rec = window.record.columns
    same = (latest["id"] == window.record.id
            and (latest.get("activeObservations") or "") == (rec.get("activeObservations") or "")
            and latest.get("lastObservedAt") == rec.get("lastObservedAt")
            and _ids(latest.get("observedMessageIds")) == list(window.record.observed_message_ids or [])
            and latest.get("updatedAt") == rec.get("updatedAt"))
    threads = {r["id"]: r["updatedAt"] for r in tx.select(THREADS, 'WHERE "resourceId" = ?', (latest.get("resourceId"),),
                                                          wanted=["id", "updatedAt"])}
    same = same and threads == {t: s[0] for t, s in window.snapshot.items()}
    if not same:
        raise WriteRefused("generation-changed",
                           f"The Observational Memory or the threads of {window.lookup_key} changed since the window "
                           "was read; nothing was written. Read the window again and retry.")


def _commit(tx: WriteTx, window: ResourceObservationWindow, outputs: dict[str, ObserverOutput], now_ms: int,
            idle_ms: int) -> dict:
    latest = latest_om_row(tx, window.lookup_key)
    if latest is None:
        raise WriteRefused("not-found", f"There is no Observational Memory record for {window.lookup_key}.")
    _check_unchanged(tx, window, latest)
    _check_flags(latest, now_ms, False)
    check_quiet(tx, latest, now_ms, idle_ms)
    now, cycle = iso(now_ms), new_id()
    text = latest.get("activeObservations") or ""
    cycle_tokens, updates = 0, []
    for tid, msgs, _ in window.threads:
        out = outputs.get(tid) or ObserverOutput("")
        obs = js_trim(out.observations or "")
        cycle_tokens += tokens.count_observations(obs)
        at = js_date_round_trip(_newest(msgs).get("createdAt"))
        section = f'<thread id="{tid}">\n{js_trim(_THREAD_TAG.sub("", obs))}\n</thread>'
        text = replace_or_append_section(text, section, at)
        updates.append((tid, msgs, out, obs, at))
    all_msgs = [m for _, msgs, _ in window.threads for m in msgs]
    last_observed_at = js_date_round_trip(_newest(all_msgs).get("createdAt"))
    ids = list(dict.fromkeys(_ids(latest.get("observedMessageIds")) + [m["id"] for m in all_msgs]))
    whole = tokens.count_observations(text)
    tx.update(OBSERVATIONAL_MEMORY, {
        "activeObservations": text, "lastObservedAt": last_observed_at, "pendingMessageTokens": 0,
        "observationTokenCount": whole, "totalTokensObserved": to_int(latest.get("totalTokensObserved")) + whole,
        "observedMessageIds": stringify(ids), "updatedAt": now}, "id = ?", (latest["id"],))

    thread_ids = [t for t, _, _ in window.threads]
    markers: dict[str, list[dict]] = {t: [] for t in thread_ids}
    for tid, msgs, n in window.threads:
        markers[tid].append({"type": "data-om-observation-start", "data": {
            "cycleId": cycle, "operationType": "observation", "startedAt": now, "tokensToObserve": n,
            "recordId": latest["id"], "threadId": tid, "threadIds": thread_ids, "config": window.marker_config}})
    for tid, msgs, out, obs, at in updates:
        thread = read_thread(tx, tid)
        if thread is None:
            continue
        metadata = thread_metadata(thread)
        task = js_trim(out.current_task) if out.current_task else None
        response = js_trim(out.suggested_response) if out.suggested_response else None
        title = js_trim(out.thread_title) if out.thread_title else None
        newest = _newest(msgs)
        new_meta = set_thread_om(metadata, {
            "lastObservedAt": at, "suggestedResponse": response or UNDEFINED, "currentTask": task or UNDEFINED,
            "threadTitle": title or UNDEFINED, "extracted": dict(_om(metadata).get("extracted") or {})
            if isinstance(_om(metadata).get("extracted"), dict) else {},
            "lastObservedMessageCursor": {"createdAt": js_date_round_trip(newest.get("createdAt")), "id": newest["id"]}})
        new_title = new_thread_title(thread, metadata, title)
        values = {"metadata": Jsonb(stringify(new_meta)), "updatedAt": now}
        if new_title is not None:
            values = {"title": new_title, **values}
            old_title = js_trim(thread["title"]) if isinstance(thread.get("title"), str) else thread.get("title")
            markers[tid].append({"type": "data-om-thread-update", "data": {
                "cycleId": cycle, "threadId": tid, "oldTitle": old_title, "newTitle": new_title, "timestamp": now}})
        tx.update(THREADS, values, "id = ?", (tid,))
    for tid, msgs, out, obs, at in updates:
        extracted = {k: v for k, v in (("current-task", js_trim(out.current_task) if out.current_task else None),
                                       ("suggested-response", js_trim(out.suggested_response)
                                        if out.suggested_response else None)) if v}
        end = {"cycleId": cycle, "operationType": "observation", "completedAt": now, "durationMs": 0,
               "tokensObserved": dict((t, n) for t, _, n in window.threads)[tid], "observationTokens": cycle_tokens,
               "observations": obs, "currentTask": extracted.get("current-task"),
               "suggestedResponse": extracted.get("suggested-response"), "extractedValues": extracted or None,
               "recordId": latest["id"], "threadId": tid}
        markers[tid].append({"type": "data-om-observation-end", "data": {k: v for k, v in end.items() if v is not None}})
    for tid in thread_ids:
        target = newest_assistant_message(tx, tid)
        if target is not None:
            target["content"]["parts"] = list(target["content"]["parts"]) + markers[tid]
            upsert_message(tx, target, now)
    return read_om_row(tx, latest["id"])


def commit_resource_observation(path: str | os.PathLike[str], window: ResourceObservationWindow,
                                outputs: dict[str, ObserverOutput], *, force: bool = False, idle_ms: int = 0,
                                now_ms: int | None = None, busy_timeout_ms: int | None = None) -> dict:
    """Write OUTPUTS ({thread id: ObserverOutput}) as the resource-scope observation of WINDOW.

    FORCE, IDLE_MS, NOW_MS as in `commit_observation`. Returns the updated OM row. Raises
    WriteRefused: "invalid" (no thread to observe, gate not met without FORCE; sections for
    threads not observed are ignored, as Mastra ignores them), "not-found", "generation-changed", "busy"; the file is unchanged then.
    """
    if not isinstance(outputs, dict) or not all(isinstance(v, ObserverOutput) for v in outputs.values()):
        raise WriteRefused("invalid", "outputs must map thread ids to ObserverOutput")
    observed = {t for t, _, _ in window.threads}
    if not observed:
        raise WriteRefused("invalid", f"No thread of {window.lookup_key} has unobserved messages; nothing to observe.")
    return gated_commit(path, window, force, now_ms, busy_timeout_ms,
                        lambda tx, now: _commit(tx, window, outputs, now, idle_ms))

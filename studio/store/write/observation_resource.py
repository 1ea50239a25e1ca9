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

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from studio.common.jscompat import js_trim
from studio.common.om_settings import observer_extractors
from studio.errors import WriteRefused
from studio.store.records import OMRecord, iso_to_ms
from studio.store.schema import THREADS
from studio.store.write.common import iso, js_date_round_trip, new_id, read_om_row, read_thread, thread_metadata
from studio.store.write.observation import (
    ObserveGate,
    ObserverOutput,
    _ids,
    checked_latest_row,
    gated_commit,
    record_unchanged,
    update_active_observations,
    update_thread,
)
from studio.store.write.om_messages import (
    extracted_values,
    new_thread_title,
    newest_assistant_message,
    observed_thread_om,
    set_thread_om,
    thread_om,
    upsert_message,
)
from studio.store.write.tx import WriteTx

__all__ = ["ResourceObservationWindow", "commit_resource_observation", "replace_or_append_section"]

_THREAD_TAG = re.compile(r"</?thread\b[^>]{0,1024}>", re.I)
_DATE = re.compile(r"Date:\s*([A-Za-z]+\s+\d+,\s+\d+)")


@dataclass(frozen=True)
class ResourceObservationWindow(ObserveGate):
    """What a resource-scope observe() for THREAD_ID would observe.

    THREADS: [(thread id, messages, tokens)] of the threads picked, in Mastra's order (oldest
    message first); TOKENS / PENDING_MESSAGE_TOKENS / THRESHOLD: observe()'s gate over the turn's
    window (the resource's messages after the record's lastObservedAt). Built by the engine
    (`studio.engine.observe_window.resource_observation_window`), with COUNT_OBSERVATIONS(text) ->
    tokens, Mastra's estimate the write applies to the new log inside its transaction.
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
    count_observations: Callable[[str], int] = field(default=None, repr=False, compare=False)

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
    same = record_unchanged(window.record, latest)
    if tx.dialect == "mongodb":
        rows = tx.decoded(THREADS, {"resourceId": latest.get("resourceId")})
    else:
        rows = tx.select(THREADS, 'WHERE "resourceId" = ?', (latest.get("resourceId"),), wanted=["id", "updatedAt"])
    threads = {r["id"]: r["updatedAt"] for r in rows}
    same = same and threads == {t: s[0] for t, s in window.snapshot.items()}
    if not same:
        raise WriteRefused("generation-changed",
                           f"The Observational Memory or the threads of {window.lookup_key} changed since the window "
                           "was read; nothing was written. Read the window again and retry.")


def _commit(tx: WriteTx, window: ResourceObservationWindow, outputs: dict[str, ObserverOutput], now_ms: int,
            idle_ms: int) -> dict:
    latest = checked_latest_row(tx, window, now_ms, idle_ms, _check_unchanged)
    now, cycle = iso(now_ms), new_id()
    text = latest.get("activeObservations") or ""
    cycle_tokens, updates = 0, []
    for tid, msgs, _ in window.threads:
        out = outputs.get(tid) or ObserverOutput("")
        obs = js_trim(out.observations or "")
        cycle_tokens += window.count_observations(obs)
        at = js_date_round_trip(_newest(msgs).get("createdAt"))
        section = f'<thread id="{tid}">\n{js_trim(_THREAD_TAG.sub("", obs))}\n</thread>'
        text = replace_or_append_section(text, section, at)
        updates.append((tid, msgs, out, obs, at))
    all_msgs = [m for _, msgs, _ in window.threads for m in msgs]
    last_observed_at = js_date_round_trip(_newest(all_msgs).get("createdAt"))
    ids = list(dict.fromkeys(_ids(latest.get("observedMessageIds")) + [m["id"] for m in all_msgs]))
    update_active_observations(tx, latest, text, last_observed_at, ids, window.count_observations(text), now)

    thread_ids = [t for t, _, _ in window.threads]
    markers: dict[str, list[dict]] = {t: [] for t in thread_ids}
    for tid, _msgs, n in window.threads:
        markers[tid].append({"type": "data-om-observation-start", "data": {
            "cycleId": cycle, "operationType": "observation", "startedAt": now, "tokensToObserve": n,
            "recordId": latest["id"], "threadId": tid, "threadIds": thread_ids, "config": window.marker_config}})
    extractors = observer_extractors(window.record.config)
    values = {tid: extracted_values(out, extractors) for tid, _, out, _, _ in updates}
    for tid, msgs, out, _obs, at in updates:
        thread = read_thread(tx, tid)
        if thread is None:
            continue
        metadata = thread_metadata(thread)
        title = js_trim(out.thread_title) if out.thread_title else None
        newest = _newest(msgs)
        new_meta = set_thread_om(metadata, {
            "lastObservedAt": at, **observed_thread_om(out, extractors, values[tid], thread_om(metadata)),
            "lastObservedMessageCursor": {"createdAt": js_date_round_trip(newest.get("createdAt")),
                                          "id": newest["id"]}}, undefined_as_null=tx.dialect == "mongodb")
        new_title = new_thread_title(thread, metadata, title)
        update_thread(tx, tid, new_meta, new_title, now)
        if new_title is not None:
            old_title = js_trim(thread["title"]) if isinstance(thread.get("title"), str) else thread.get("title")
            markers[tid].append({"type": "data-om-thread-update", "data": {
                "cycleId": cycle, "threadId": tid, "oldTitle": old_title, "newTitle": new_title, "timestamp": now}})
    tokens_observed = {t: n for t, _, n in window.threads}
    for tid, _msgs, out, obs, _at in updates:
        end = {"cycleId": cycle, "operationType": "observation", "completedAt": now, "durationMs": 0,
               "tokensObserved": tokens_observed[tid], "observationTokens": cycle_tokens,
               "observations": obs, "currentTask": js_trim(out.current_task) if out.current_task else None,
               "suggestedResponse": js_trim(out.suggested_response) if out.suggested_response else None,
               "extractedValues": values[tid] or None, "recordId": latest["id"], "threadId": tid}
        markers[tid].append({"type": "data-om-observation-end",
                             "data": {k: v for k, v in end.items() if v is not None}})
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

    FORCE, IDLE_MS, NOW_MS as in `commit_observation`. Returns the updated OM row. Raises WriteRefused:
    "invalid" (no thread to observe, gate not met without FORCE; sections for threads not observed are
    ignored, as Mastra ignores them), "not-found", "generation-changed", "busy"; the file is unchanged then.
    """
    if not isinstance(outputs, dict) or not all(isinstance(v, ObserverOutput) for v in outputs.values()):
        raise WriteRefused("invalid", "outputs must map thread ids to ObserverOutput")
    observed = {t for t, _, _ in window.threads}
    if not observed:
        raise WriteRefused("invalid", f"No thread of {window.lookup_key} has unobserved messages; nothing to observe.")
    if not callable(window.count_observations):
        raise WriteRefused("invalid", "The window carries no token estimator: read it with "
                                      "studio.engine.observe_window.resource_observation_window.")
    return gated_commit(path, window, force, now_ms, busy_timeout_ms,
                        lambda tx, now: _commit(tx, window, outputs, now, idle_ms))

"""Doctor checks on one thread's stored messages.

Rules and thresholds (each also in docs/doctor.md with the Mastra report it comes from):

* message-over-threshold (#16523): an unobserved message (as Mastra's getStatus loads them:
  createdAt ≥ lastObservedAt + 1 ms, then its unobserved rules and observedMessageIds) whose own
  estimate (`count_message_for_status`, tokens) is ≥ the record's observation threshold
  (`observation.messageTokens`, top of a range).
* uncountable-message: an unobserved message (the same window) on which Mastra's own token count
  (`count_message_for_status`) throws — a bad % escape in an attachment URL, a payload that is not
  text, metadata it cannot write its estimate into (`studio.engine.count_guards`): Mastra's getStatus,
  and so every turn of the thread, fails there.
* oversized-tool-result (#20930, #13301): a tool-invocation result whose estimate (tokenx of its
  JSON) is ≥ 50% (OVERSIZED_SHARE) of the thread's observation threshold (30,000 without OM),
  or a file part carrying ≥ 100,000 (INLINE_BINARY_CHARS) characters of inline base64 data.
* duplicate-messages (#13089): consecutive messages of one role in one thread (no message of that
  role with other content between them) whose stored content is identical once Mastra's per-part
  times are left out, created within 60 s (DUPLICATE_WINDOW_MS) of the first; one finding per run.
* timestamp-ties (#3735, PR #17598, #24237): messages of one thread sharing one createdAt
  string (one millisecond); one finding per thread, listing the tied messages.
* stale-thread-updatedat (#17932): the thread's updatedAt is more than 1 s (UPDATED_AT_TOLERANCE_MS)
  earlier than its newest message's createdAt. Mastra's own saves leave it 1–3 ms earlier (the
  seven real fixtures), so smaller gaps are not reported.
* status-only-message (#18869, #16491): a message whose parts are all `data-om-*` parts.
* context-message-persisted (#19730): a user message whose text starts with `<client-context`.
* orphan-tool-result (#15244): a tool call (state call / partial-call) in an observed message
  whose result (same toolCallId) sits in an unobserved message; or a result part with no
  arguments whose call appears nowhere in the thread.
* malformed-json: a message whose content is not valid JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from studio.common.durations import human_duration
from studio.common.om_settings import OMSettings, max_threshold, resolve_settings
from studio.engine import tokens
from studio.engine.doctor.messages import BOUND_SLACK, StoredMessage
from studio.engine.doctor.model import Finding, finding
from studio.engine.status import counted_key
from studio.engine.unobserved import storage_cursor, unobserved_messages
from studio.errors import UncountableMessage
from studio.store.records import OMRecord, Thread, iso_to_ms

DUPLICATE_WINDOW_MS = 60_000
UPDATED_AT_TOLERANCE_MS = 1000
OVERSIZED_SHARE = 0.5
INLINE_BINARY_CHARS = 100_000
DEFAULT_MESSAGE_TOKENS = 30_000
CONTEXT_PREFIXES = ("<client-context",)
CALL_STATES = {"call", "partial-call"}
RESULT_STATES = {"result", "output-available"}
MAX_IDS = 50


def _where(thread: Thread) -> dict:
    return {"thread_id": thread.id, "resource_id": thread.resource_id}


#: '"tool-invocation"', '"type":"file"' or '"type":"image"' in a stored content (one scan for the three): the parts
#: the size checks look at.
_SIZED_PART = re.compile(r'"(?:tool-invocation"|type":"(?:file|image)")')
#: Characters of two contents compared first by `same_content` (most contents differ within them).
QUICK_PREFIX = 128
#: A numeric `createdAt` field of a content's JSON (Mastra's per-part time, epoch ms).
_PART_TIME = re.compile(r'"createdAt":\s*-?\d+(?:\.\d+)?')


def same_content(a: StoredMessage, b: StoredMessage, timeless: dict[int, str] | None = None) -> bool:
    """Return True when A and B store one content, Mastra's per-part times left out.

    Mastra stamps a part with its own time (`createdAt`, epoch ms, also under
    `providerMetadata.mastra`): a message saved twice a moment apart differs in those numbers only.
    Byte-identical contents are the same; otherwise every numeric `"createdAt"` field is left out of
    both texts before comparing them (a regex over the stored text: no JSON is parsed). TIMELESS
    caches those texts by id(message) across calls.
    """
    if a.raw == b.raw:
        return True
    # the first QUICK_PREFIX characters differ and no "createdAt" starts among them: they differ before either
    # text's first one (the rule below), found without scanning both texts for it
    if (a.raw[:QUICK_PREFIX] != b.raw[:QUICK_PREFIX] and a.raw.find('"createdAt"', 0, QUICK_PREFIX + 10) < 0
            and b.raw.find('"createdAt"', 0, QUICK_PREFIX + 10) < 0):
        return False
    at_a, at_b = a.raw.find('"createdAt"'), b.raw.find('"createdAt"')
    if at_a < 0 or at_b < 0:
        return False
    # no time is left out before a text's first "createdAt": texts that differ there differ without them
    head = min(at_a, at_b)
    if a.raw[:head] != b.raw[:head]:
        return False
    cache = {} if timeless is None else timeless
    texts = []
    for msg in (a, b):
        text = cache.get(id(msg))
        if text is None:
            text = cache[id(msg)] = _PART_TIME.sub("", msg.raw)
        texts.append(text)
    return texts[0] == texts[1]


def check_duplicates(thread: Thread, messages: list[StoredMessage]) -> list[Finding]:
    """Return duplicate-messages findings: one message stored again (mastra #13089).

    MESSAGES in storage order. A run is consecutive messages of one role (messages of other roles
    may sit between them, as an agent's steps do) with `same_content` (stored content, per-part
    times left out), each created within DUPLICATE_WINDOW_MS of the run's first. Another message of
    the same role with other content ends the run: a user who says "yes" again after saying
    something else repeated words, Mastra did not save twice. One finding per run of 2 or more.
    """
    runs: list[list[StoredMessage]] = []
    # role -> the members of its open run; a run whose first createdAt does not parse takes no member
    # (times are parsed only for messages of one content: most never are)
    open_run: dict[str, list[StoredMessage]] = {}
    timeless: dict[int, str] = {}
    for msg in messages:
        if not msg.raw:
            continue
        current = open_run.get(msg.role)
        if current is not None and same_content(current[0], msg, timeless):
            first, ms = current[0].created_ms, msg.created_ms
            if first is not None and ms is not None and 0 <= ms - first <= DUPLICATE_WINDOW_MS:
                current.append(msg)
                continue
        if current is not None and len(current) > 1:
            runs.append(current)
        open_run[msg.role] = [msg]
    runs += [members for members in open_run.values() if len(members) > 1]
    out = []
    for run in sorted(runs, key=lambda r: (r[0].created_ms or 0, r[0].id)):
        role = run[0].role
        span = (run[-1].created_ms or 0) - (run[0].created_ms or 0)
        preview = " ".join(run[0].message.text.split())[:80]
        out.append(finding("duplicate-messages",
                           f"{role} message stored {len(run)}× within {human_duration(span)}: {preview!r}",
                           message_ids=[m.id for m in run][:MAX_IDS],
                           evidence={"role": role, "count": len(run), "span_ms": span,
                                     "window_ms": DUPLICATE_WINDOW_MS,
                                     "created_at": [m.created_at for m in run][:MAX_IDS]},
                           **_where(thread)))
    return out


def check_ties(thread: Thread, messages: list[StoredMessage]) -> list[Finding]:
    """Return one timestamp-ties finding when messages of THREAD share a createdAt millisecond."""
    by_time: dict[str, list[str]] = {}
    for msg in messages:
        if msg.created_at is not None:
            by_time.setdefault(str(msg.created_at), []).append(msg.id)
    tied = {t: ids for t, ids in by_time.items() if len(ids) > 1}
    if not tied:
        return []
    ids = [m for t in sorted(tied) for m in tied[t]]
    return [finding("timestamp-ties", f"{len(ids)} messages share {len(tied)} createdAt value(s): their order "
                    "and paging are not stable", message_ids=ids[:MAX_IDS],
                    evidence={"tied_groups": len(tied), "tied_messages": len(ids),
                              "groups": [{"created_at": t, "message_ids": tied[t]} for t in sorted(tied)][:MAX_IDS]},
                    **_where(thread))]


def check_updated_at(thread: Thread, messages: list[StoredMessage]) -> list[Finding]:
    """Return stale-thread-updatedat when THREAD.updatedAt is over UPDATED_AT_TOLERANCE_MS older than its newest
    message."""
    updated = iso_to_ms(thread.updated_at)
    if updated is None:
        return []
    newest = _newest(messages)
    if newest is None:
        return []
    behind = newest.created_ms - updated
    if behind <= UPDATED_AT_TOLERANCE_MS:
        return []
    return [finding("stale-thread-updatedat",
                    f"Thread updatedAt is {human_duration(behind)} older than its newest message",
                    message_ids=[newest.id],
                    evidence={"updated_at": thread.updated_at, "newest_message_at": newest.created_at,
                              "behind_ms": behind, "tolerance_ms": UPDATED_AT_TOLERANCE_MS}, **_where(thread))]


def _is_js_iso(value: Any) -> bool:
    """Return True when VALUE has the shape of JavaScript's `toISOString()`: `YYYY-MM-DDTHH:MM:SS.mmmZ`."""
    return (isinstance(value, str) and len(value) == 24 and value[10] == "T" and value[23] == "Z"
            and value[4] == value[7] == "-" and value[13] == value[16] == ":" and value[19] == ".")


def _newest(messages: list[StoredMessage]) -> StoredMessage | None:
    """Return the first message with the latest createdAt (epoch ms), None when no createdAt parses.

    When every createdAt is written as `toISOString()` writes it (what Mastra stores), the latest
    string is the latest time and only it is converted; otherwise every time is converted.
    """
    if messages and all(_is_js_iso(m.created_at) for m in messages):
        latest = max(messages, key=lambda m: m.created_at)
        if latest.created_ms is not None:   # a valid date: equal strings are equal times, later strings later
            return latest
    dated = [m for m in messages if m.created_ms is not None]
    return max(dated, key=lambda m: m.created_ms) if dated else None


def _part_type(part: Any) -> str:
    return part.get("type", "") if isinstance(part, dict) and isinstance(part.get("type"), str) else ""


def _check_tool_part(thread: Thread, msg: StoredMessage, index: int, part: dict, message_tokens: int) -> Finding | None:
    inv = part.get("toolInvocation") if isinstance(part.get("toolInvocation"), dict) else {}
    if inv.get("state") not in RESULT_STATES or "result" not in inv:
        return None
    result = inv.get("result")
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    if 2 * len(text) < OVERSIZED_SHARE * message_tokens:   # tokenx: at most one token per UTF-16 unit
        return None
    est = tokens.estimate_text(text)
    if est < OVERSIZED_SHARE * message_tokens:
        return None
    return finding("oversized-tool-result",
                   f"Tool result of {inv.get('toolName')!s} is {est:,} tokens, "
                   f"{est / message_tokens:.0%} of the {message_tokens:,}-token message window",
                   message_ids=[msg.id],
                   evidence={"part_index": index, "tool_name": inv.get("toolName"),
                             "tool_call_id": inv.get("toolCallId"), "tokens": est, "chars": len(text),
                             "message_tokens": message_tokens}, **_where(thread))


def _may_open_context(raw: str) -> bool:
    """Return False when stored content RAW proves its text cannot start with `<client-context` (any case).

    Such a text holds `<` followed by `c` or `C`; in the stored JSON each is there as itself or as a
    `\\u00..` escape (no other character lower-cases to either), so RAW holds `<c`, `<C` or `\\u00`.
    (A content that is not JSON is its own text.) Substring scans instead of lower-casing RAW.
    """
    # a one-character test runs at memory speed: the two-character ones only when it passes
    return ("<" in raw and ("<c" in raw or "<C" in raw)) or ("\\" in raw and "\\u00" in raw)


def check_parts(thread: Thread, messages: list[StoredMessage], message_tokens: int) -> list[Finding]:
    """Return status-only-message, context-message-persisted, oversized-tool-result and malformed-json findings.

    Only messages whose raw content could match are parsed.
    """
    out = []
    # '"type":"text"' usually sits near the start of a content: looked for first
    status_only = [m for m in messages if '"type":"text"' not in m.raw and "data-om-" in m.raw and m.message.parts
                   and all(_part_type(p).startswith("data-om-") for p in m.message.parts)]
    if status_only:
        kinds = sorted({_part_type(p) for m in status_only for p in m.message.parts})
        out.append(finding("status-only-message", f"{len(status_only)} stored message(s) hold only OM status parts "
                           f"({', '.join(kinds)})", message_ids=[m.id for m in status_only][:MAX_IDS],
                           evidence={"count": len(status_only), "part_types": kinds}, **_where(thread)))
    size_floor = min(OVERSIZED_SHARE * message_tokens / 2, INLINE_BINARY_CHARS)
    for msg in messages:
        if msg.role == "user" and _may_open_context(msg.raw) and "client-context" in msg.raw.lower() \
                and msg.message.text.lstrip().lower().startswith(CONTEXT_PREFIXES):
            out.append(finding("context-message-persisted", "A user message holds ephemeral client context: "
                               + " ".join(msg.message.text.split())[:80], message_ids=[msg.id],
                               evidence={"chars": len(msg.message.text)}, **_where(thread)))
        if msg.invalid_json:
            error = msg.message.content_error or "SQLite json_valid() rejects it"
            out.append(finding("malformed-json", f"Message content is not valid JSON ({error})",
                               severity="warning", message_ids=[msg.id],
                               evidence={"table": "mastra_messages", "column": "content", "error": error},
                               **_where(thread)))
        if len(msg.raw) < size_floor or not _SIZED_PART.search(msg.raw):
            continue
        for index, part in enumerate(msg.message.parts):
            kind = _part_type(part)
            if kind == "tool-invocation":
                found = _check_tool_part(thread, msg, index, part, message_tokens)
                if found is not None:
                    out.append(found)
            elif kind in ("file", "image"):
                data = part.get("data") if kind == "file" else part.get("image")
                if isinstance(data, str) and len(data) >= INLINE_BINARY_CHARS and not data.startswith(("http://", "https://")):
                    out.append(finding("oversized-tool-result",
                                       f"A {part.get('mimeType') or kind} part carries {len(data):,} characters of "
                                       "inline base64 data", message_ids=[msg.id],
                                       evidence={"part_index": index, "chars": len(data),
                                                 "mime_type": part.get("mimeType"),
                                                 "limit_chars": INLINE_BINARY_CHARS}, **_where(thread)))
    return out


def _tool_parts(msg: StoredMessage):
    if "tool-invocation" not in msg.raw:
        return
    for part in msg.message.parts:
        if _part_type(part) == "tool-invocation" and isinstance(part.get("toolInvocation"), dict):
            yield part["toolInvocation"]


def _below(stored: StoredMessage, threshold: int) -> bool:
    """Return True when STORED's bounds put its estimate under THRESHOLD (tokens) without counting it."""
    raw = stored.raw
    return ((2 * len(raw) + BOUND_SLACK < threshold and '"type":"file"' not in raw and '"type":"image"' not in raw)
            or stored.estimate_bound() < threshold)


def check_window(thread: Thread, messages: list[StoredMessage], record: OMRecord | None,
                 counted: dict[tuple, int] | None = None, *, settings: OMSettings | None = None) -> list[Finding]:
    """Return message-over-threshold, uncountable-message and orphan-tool-result findings (they need the
    record's window).

    COUNTED: the counts the statuses of the same snapshot made (`status_from_rows`' COUNTED): a
    message of the window counted there under the same counter model is not counted again. SETTINGS:
    `resolve_settings` of RECORD when already resolved. Mastra's
    rule decides each message's place in the window from that message alone (`unobserved_messages`),
    so it is applied only to the messages whose place can change a finding: one with a tool part
    (orphan-tool-result), one not counted there (counted here: uncountable-message) and one counted
    at or over the threshold whose size bound does not put it under (message-over-threshold). A
    counted message under the threshold, without a tool part, gives no finding in or out of the window.
    """
    out: list[Finding] = []
    unobserved_ids: set[str] = set()
    tooled = [msg for msg in messages if "tool-invocation" in msg.raw]   # the others have no tool part
    tooled_ids = {msg.id for msg in tooled}
    if record is not None:
        by_id = {m.id: m for m in messages}
        settings = resolve_settings(record.config, record.scope) if settings is None else settings
        threshold = max_threshold(settings.message_tokens)
        model = repr(settings.counter_model)
        cursor = storage_cursor(record.last_observed_at)   # what Mastra's getStatus loads: createdAt >= cursor

        def matters(m: StoredMessage) -> bool:   # see the docstring: whether m is in the window can change a finding
            est = counted.get(counted_key(m.thread_id, m.id, model)) if counted else None
            return (est is None or m.id in tooled_ids
                    or bool(threshold and est >= threshold and not _below(m, threshold)))

        loaded = [m.mastra(light=True) for m in messages
                  if (cursor is None or (m.created_at is not None and str(m.created_at) >= cursor)) and matters(m)]
        window = unobserved_messages(loaded, record.last_observed_at, record.observed_message_ids)
        unobserved_ids = {m["id"] for m in window}
        for light in window:
            stored = by_id[light["id"]]
            est = counted.get(counted_key(stored.thread_id, stored.id, model)) if counted else None
            if est is None:
                full = stored.mastra() if not light["content"] else light
                try:   # counted even below the threshold: Mastra's count of it may throw
                    est = tokens.count_message_for_status(full, model=settings.counter_model)
                except UncountableMessage as exc:
                    out.append(finding("uncountable-message", exc.sentence(), message_ids=[stored.id],
                                       evidence={"reason": exc.reason, "mastra_error": exc.mastra_error,
                                                 "created_at": stored.created_at},
                                       record_id=record.id, lookup_key=record.lookup_key,
                                       generation=record.generation_count, **_where(thread)))
                    continue
            if threshold and est >= threshold and not _below(stored, threshold):
                out.append(finding("message-over-threshold",
                                   f"An unobserved {stored.role} message alone is {est:,} tokens, over the "
                                   f"{threshold:,}-token observation threshold",
                                   message_ids=[stored.id],
                                   evidence={"tokens": est, "threshold": threshold, "created_at": stored.created_at},
                                   record_id=record.id, lookup_key=record.lookup_key,
                                   generation=record.generation_count, **_where(thread)))
    calls: dict[str, list[StoredMessage]] = {}
    for msg in tooled:
        for inv in _tool_parts(msg):
            if inv.get("state") in CALL_STATES or "args" in inv:
                calls.setdefault(str(inv.get("toolCallId")), []).append(msg)
    for msg in tooled:
        for inv in _tool_parts(msg):
            call_id = str(inv.get("toolCallId"))
            if inv.get("state") not in RESULT_STATES:
                continue
            holders = calls.get(call_id, [])
            if not holders:
                out.append(finding("orphan-tool-result", f"Tool result {call_id} of {inv.get('toolName')!s} has no "
                                   "call in this thread", message_ids=[msg.id],
                                   evidence={"tool_call_id": call_id, "tool_name": inv.get("toolName")},
                                   **_where(thread)))
                continue
            if record is None or msg.id not in unobserved_ids:
                continue
            observed_calls = [h for h in holders if h.id != msg.id and h.id not in unobserved_ids]
            if observed_calls:
                out.append(finding("orphan-tool-result", f"Tool call {call_id} of {inv.get('toolName')!s} is "
                                   "observed while its result is still in the message window",
                                   message_ids=[observed_calls[0].id, msg.id],
                                   evidence={"tool_call_id": call_id, "tool_name": inv.get("toolName"),
                                             "call_message_id": observed_calls[0].id, "result_message_id": msg.id},
                                   record_id=record.id, lookup_key=record.lookup_key,
                                   generation=record.generation_count, **_where(thread)))
    return out


def check_thread_messages(thread: Thread, messages: list[StoredMessage], record: OMRecord | None,
                          counted: dict[tuple, int] | None = None) -> list[Finding]:
    """Return every message-level finding of THREAD (messages in storage order; RECORD its current OM row;
    COUNTED as `check_window` takes it)."""
    message_tokens = DEFAULT_MESSAGE_TOKENS
    settings = None
    if record is not None:
        settings = resolve_settings(record.config, record.scope)
        message_tokens = max_threshold(settings.message_tokens) or message_tokens
    return (check_duplicates(thread, messages) + check_ties(thread, messages) + check_updated_at(thread, messages)
            + check_parts(thread, messages, message_tokens)
            + check_window(thread, messages, record, counted, settings=settings))

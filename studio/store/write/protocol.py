"""The OM write protocol: a studio write that a running Mastra agent cannot silently overtake (no Qt).

Why: Mastra coordinates observation and reflection inside one process only. A running turn keeps
the OM record it read at its start and later writes onto that record's id (observations appended
in place, `lastObservedAt` / `pendingMessageTokens` moved, or a reflection inserted as
`generationCount + 1` of its copy). A generation another program commits in between is then
overtaken: lines land on a row that is no longer read, or two rows share one generationCount.

The protocol every OM write of the studio follows (reflect, revert, repair; later observation and
activation writes call the same pieces):

1. before the expensive part (the LLM call) and again inside the write transaction, refuse
   (`WriteRefused("busy")`) while any busy flag of the record is live or while the record, its
   thread(s) or their messages were written within a quiet period (`DEFAULT_QUIET_MS`);
   `read_activity` / `wait_for_quiet` let a caller show "the agent is active" and wait;
2. the new row carries a self-identifying mark, `metadata.studio = {..., "recordId": <its own id>,
   "observationsHash", "committedAt", "basedOn": {recordId, observationsLength, observationsHash,
   lastObservedAt, generationCount}}`. Mastra's createReflectionGeneration copies `metadata` into
   its next generation unchanged, so a copied mark names another row's id: `studio_mark(row)`
   accepts a mark only on the row it names, which makes the studio's record of its writes reliable;
3. after the commit, `watch_for_overtaking` polls the record for `watch_window_ms` (derived from
   the thread's stored turn timings) and `find_overtaking_writes` reports what overtook it;
   `studio.store.write.repair.repair_overtaken_writes` then writes a NEW generation carrying the
   overtaking observations and cursor forward (never editing Mastra's rows), or reverts to
   Mastra's version when the user prefers.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from studio.common.durations import human_duration
from studio.errors import WriteRefused
from studio.store.records import iso_to_ms
from studio.store.write.own_writes import own_write_times

__all__ = [
    "DEFAULT_QUIET_MS",
    "MAX_WATCH_MS",
    "MIN_WATCH_MS",
    "STUDIO_METADATA_KEY",
    "AgentActivity",
    "OvertakingWrite",
    "check_quiet",
    "find_overtaking_writes",
    "history_reader",
    "make_mark",
    "observations_hash",
    "read_activity",
    "store_activity",
    "store_turn_ms",
    "studio_mark",
    "turn_duration_ms",
    "unrepaired",
    "wait_for_quiet",
    "watch_for_overtaking",
    "watch_window_ms",
]

#: The key of the OM row's `metadata` object under which the studio marks the rows it wrote.
STUDIO_METADATA_KEY = "studio"
#: Default quiet period (ms): no write to the record, thread(s) or messages for this long before a write.
DEFAULT_QUIET_MS = 30_000
#: Bounds of the watch window after a commit (ms).
MIN_WATCH_MS, MAX_WATCH_MS = 10_000, 600_000


def observations_hash(text: str | None) -> str:
    """Return the first 16 hex digits of SHA-256 of TEXT's UTF-8 bytes (None counts as "")."""
    return hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _get(row: Any, name: str) -> Any:
    columns = getattr(row, "columns", row)
    return columns.get(name) if isinstance(columns, dict) else None


def _metadata(row: Any) -> dict:
    value = _get(row, "metadata")
    if isinstance(value, (str, bytes, bytearray)):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def make_mark(kind: str, record_id: str, observations: str, committed_at: str, based_on: dict,
              extra: dict | None = None) -> dict:
    """Return the `metadata.studio` object of a row the studio writes (see the module docstring).

    KIND: "reflection", "revert" or "repair" (kept when EXTRA already names one); BASED_ON: the
    row the write was computed from, as read inside the write transaction (its text is recorded
    by length and hash, so text Mastra appends to it later can be told apart).
    """
    mark = dict(extra or {})
    mark.setdefault("kind", kind)
    base_text = _get(based_on, "activeObservations") or ""
    mark.update({
        "recordId": record_id,
        "observationsHash": observations_hash(observations),
        "committedAt": committed_at,
        "basedOn": {"recordId": _get(based_on, "id"), "generationCount": _int(_get(based_on, "generationCount")),
                    "observationsLength": len(base_text), "observationsHash": observations_hash(base_text),
                    "lastObservedAt": _get(based_on, "lastObservedAt")},
    })
    return mark


def studio_mark(row: Any) -> dict | None:
    """Return ROW's studio mark when the studio wrote ROW, else None.

    ROW: an OMRecord or a row dict (metadata parsed or JSON text). A mark Mastra copied into its
    own next generation names another row's id and is not accepted; older marks without a
    `recordId` (written before this protocol) are not accepted either.
    """
    mark = _metadata(row).get(STUDIO_METADATA_KEY)
    if isinstance(mark, dict) and mark.get("recordId") and mark.get("recordId") == _get(row, "id"):
        return mark
    return None


# -- 1. the quiet period ---------------------------------------------------------------------------

@dataclass(frozen=True)
class AgentActivity:
    """How recently an agent wrote a record's conversation: LAST_WRITE_MS (epoch ms) and AGO_MS before NOW_MS."""

    now_ms: int
    last_write_ms: int | None
    live_flags: tuple[str, ...]
    quiet_ms: int
    what: str = ""

    @property
    def ago_ms(self) -> int | None:
        """Milliseconds since the last write by another program (None: no timestamp found)."""
        return None if self.last_write_ms is None else max(0, self.now_ms - self.last_write_ms)

    @property
    def active(self) -> bool:
        """True while a busy flag is live or the last write is younger than the quiet period."""
        return bool(self.live_flags) or (self.ago_ms is not None and self.ago_ms < self.quiet_ms)

    @property
    def wait_ms(self) -> int:
        """Milliseconds until the quiet period has passed (0 when not active on time alone)."""
        return 0 if self.ago_ms is None else max(0, self.quiet_ms - self.ago_ms)

    def message(self) -> str:
        """A sentence for the user: why a write now is unsafe, or that the conversation is quiet."""
        if self.live_flags:
            return (f"The agent is active: {', '.join(self.live_flags)} is set on this record. "
                    "Wait for it to finish, or force the write.")
        if self.active:
            return (f"The agent is active: {self.what or 'this conversation'} was written "
                    f"{self.ago_ms / 1000:.1f} s ago by another program, not the studio (quiet period "
                    f"{self.quiet_ms / 1000:g} s). A turn in progress could overtake a new generation; wait until "
                    "it is quiet, or force the write.")
        if self.ago_ms is None:
            return "No write time is stored for this conversation."
        return f"Quiet for {human_duration(self.ago_ms)} (quiet period {self.quiet_ms / 1000:g} s)."


def _live_flags(latest: Any, now_ms: int) -> tuple[str, ...]:
    from studio.store.flags import STALE_FLAG_AFTER_MS

    updated = iso_to_ms(_get(latest, "updatedAt"))
    live = updated is not None and now_ms - updated < STALE_FLAG_AFTER_MS
    names = ("isObserving", "isReflecting", "isBufferingObservation", "isBufferingReflection")
    return tuple(n for n in names if _get(latest, n) and live)


def read_activity(source: Any, latest: Any, now_ms: int, quiet_ms: int = DEFAULT_QUIET_MS) -> AgentActivity:
    """Return when the conversation of LATEST (the current OM row) was last written by someone else.

    SOURCE: a read-only store (`MemoryStore`, any backend) or an open write transaction (`WriteTx`):
    both have `location` and `select_rows(table, tail, params, wanted)` giving times as Mastra reads them (ISO strings;
    on PostgreSQL the `"<col>Z"` twins), so the same check runs on every backend. Looked at:
    `updatedAt` of every row of the record's lookupKey, the thread's (thread scope) or the
    resource's threads' (resource scope) `updatedAt`, and their messages' newest `createdAt`.
    Timestamps equal to a commit of the studio (the `committedAt` of any valid studio mark in the
    record's history: a studio write stamps its new row, the row it replaced and the thread with
    that one time) are the studio's own and are skipped, so a chain of studio writes (reflect,
    then revert, then reflect again) does not read as the agent; any other time is another
    program's write and is named in `what` (e.g. "generation 2 of its observational memory").
    The studio's unmarked writes (observe, activate, deleting messages) are recognised by the
    times they recorded (`studio.store.write.own_writes`, looked up by SOURCE's `location`).
    Live busy flags (set and updated within STALE_FLAG_AFTER_MS) are reported too. Mirrors
    nothing in Mastra: Mastra never looks.
    """
    key = _get(latest, "lookupKey") or ""
    om_rows, thread_rows, newest = _conversation_rows(source, latest, key)
    rows = om_rows
    own = {iso_to_ms(m.get("committedAt")) for m in (studio_mark(r) for r in [latest, *rows]) if m}
    own |= own_write_times(source.location)  # observe, activate, message deletes: no mark
    own.discard(None)
    stamps: list[tuple[Any, str]] = []
    for row in rows:
        generation = _int(row.get("generationCount"))
        stamps.append((row.get("updatedAt"), f"generation {generation} of its observational memory"))
    for row in thread_rows:
        stamps.append((row.get("updatedAt"), "the thread"))
    for row in newest:
        stamps.append((row.get("createdAt"), "a message"))
    best, what = None, ""
    for value, label in stamps:
        ms = iso_to_ms(value)
        if ms is None or ms in own:
            continue
        if best is None or ms > best:
            best, what = ms, label
    return AgentActivity(now_ms=now_ms, last_write_ms=best, live_flags=_live_flags(latest, now_ms),
                         quiet_ms=quiet_ms, what=what)


def check_quiet(source: Any, latest: Any, now_ms: int, quiet_ms: int) -> AgentActivity:
    """Raise WriteRefused("busy") with AgentActivity.message() while LATEST's conversation is active.

    SOURCE: the open write transaction (or a store), as for `read_activity`.
    QUIET_MS 0 skips the time check (busy flags are checked by the write itself). Returns the activity.
    """
    activity = read_activity(source, latest, now_ms, quiet_ms)
    if quiet_ms > 0 and activity.ago_ms is not None and activity.ago_ms < quiet_ms:
        raise WriteRefused("busy", activity.message() + " Nothing was written.")
    return activity


def wait_for_quiet(probe: Callable[[], AgentActivity], timeout_s: float, *,
                   cancelled: Callable[[], bool] = lambda: False, sleep: Callable[[float], None] = time.sleep,
                   poll_s: float = 0.5) -> AgentActivity:
    """Call PROBE until it reports no activity or TIMEOUT_S (s) have passed; return the last activity.

    PROBE reads the activity afresh (e.g. `lambda: store_activity(path, key, quiet_ms)`; None, as
    store_activity returns without a record, ends the wait); the wait stops early when CANCELLED()
    is true. Never raises on its own.
    """
    deadline = time.monotonic() + max(0.0, timeout_s)
    activity = probe()
    while activity is not None and activity.active and not cancelled():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sleep(min(left, max(poll_s, 0.01), max(activity.wait_ms / 1000, 0.01) if not activity.live_flags else poll_s))
        activity = probe()
    return activity


# -- 3. watching and detecting ------------------------------------------------------------------------

def turn_duration_ms(messages: Iterable[tuple[str, Any]], last: int = 20) -> int | None:
    """Return the longest of the LAST turns in MESSAGES [(role, createdAt)] (ms), or None.

    A turn runs from a user message to the last non-user message before the next user message
    (createdAt as stored: Mastra stamps a message when it saves it).
    """
    turns: list[int] = []
    start = end = None
    for role, created in messages:
        ms = iso_to_ms(created)
        if ms is None:
            continue
        if role == "user":
            if start is not None and end is not None:
                turns.append(end - start)
            start, end = ms, None
        elif start is not None:
            end = ms
    if start is not None and end is not None:
        turns.append(end - start)
    turns = [t for t in turns[-last:] if t >= 0]
    return max(turns) if turns else None


def watch_window_ms(turn_ms: int | None) -> int:
    """Return how long to watch a record after a commit: 2 turns + 5 s, within [MIN_WATCH_MS, MAX_WATCH_MS].

    A turn that read the record just before the commit writes onto it at the latest one turn
    later (its observation runs after its messages are saved, hence the margin).
    """
    if turn_ms is None:
        return MIN_WATCH_MS
    return int(min(MAX_WATCH_MS, max(MIN_WATCH_MS, 2 * turn_ms + 5000)))


@dataclass(frozen=True)
class OvertakingWrite:
    """One write by another program that overtook a studio write (or a fork of the history).

    KIND: "superseded-row-written" (observations appended to / cursor moved on the row a studio
    generation replaced), "fork" (another row with the same generationCount as a studio
    generation), "duplicate-generation" (two rows share a generationCount, no studio row involved).
    RECORD_ID / GENERATION: the overtaking row; OVERTAKEN_RECORD_ID: the studio row it overtook.
    ADDED_TEXT: observation text on RECORD_ID that no later generation carries (appended since
    the studio recorded it; a fork row's lines not in the text the studio write was based on).
    CURSOR / CURSOR_BEFORE: its lastObservedAt now and as recorded. REPAIRED: a later studio
    generation recorded RECORD_ID in the state it has now: a repair carried it forward, or the
    studio's next reflection / revert was computed from it (`basedOn`).
    """

    kind: str
    lookup_key: str
    record_id: str
    generation: int
    overtaken_record_id: str | None
    added_text: str = ""
    cursor: Any = None
    cursor_before: Any = None
    repaired: bool = False
    observations_length: int = 0
    observations_hash: str = ""

    @property
    def added_lines(self) -> list[str]:
        """The non-blank observation lines of ADDED_TEXT (message-boundary markers left out)."""
        return [ln for ln in self.added_text.splitlines() if ln.strip() and not ln.startswith("--- message boundary")]

    def describe(self) -> str:
        """One sentence for the user."""
        if self.kind == "superseded-row-written":
            what = f"{len(self.added_lines)} observation line(s)" if self.added_lines else "its observation cursor"
            return (f"A running agent wrote {what} onto generation {self.generation} (record {self.record_id}) after "
                    f"the studio's generation replaced it; those are not read any more.")
        if self.kind == "fork":
            return (f"A running agent wrote a second generation {self.generation} (record {self.record_id}) beside the "
                    f"studio's (record {self.overtaken_record_id}): the history forked.")
        return f"Two rows hold generation {self.generation} (record {self.record_id} is one of them)."

    def to_json(self) -> dict:
        """The finding as JSON (CLI `overtaken` entries, doctor)."""
        return {"kind": self.kind, "record_id": self.record_id, "generation": self.generation,
                "overtaken_record_id": self.overtaken_record_id, "added_lines": self.added_lines,
                "cursor": self.cursor, "cursor_before": self.cursor_before, "repaired": self.repaired,
                "message": self.describe()}


def _accounted(record_id: str, marks: list[dict]) -> list[tuple[int, str, Any]]:
    """Return [(length, hash, cursor)] the studio recorded for RECORD_ID (basedOn of its writes, repairs)."""
    out = []
    for mark in marks:
        entries = [mark.get("basedOn"), *(mark.get("repairs") or [])]
        for entry in entries:
            if isinstance(entry, dict) and entry.get("recordId") == record_id:
                out.append((_int(entry.get("observationsLength")), str(entry.get("observationsHash") or ""),
                            entry.get("lastObservedAt")))
    return out


def _later(a: Any, b: Any) -> bool:
    ma, mb = iso_to_ms(a), iso_to_ms(b)
    return ma is not None and (mb is None or ma > mb)


def find_overtaking_writes(history: Iterable[Any]) -> list[OvertakingWrite]:
    """Return the writes that overtook studio writes in HISTORY (one lookupKey's rows, any order).

    HISTORY: OMRecords or row dicts, every generation of one record. Rules (see the module
    docstring): for each row the studio wrote (valid `studio_mark`), its `basedOn` row is
    "superseded-row-written" when its text grew past the recorded length or its lastObservedAt
    moved past the recorded cursor; every other row with the studio row's generationCount is a
    "fork". Rows sharing a generationCount with no studio row involved are "duplicate-generation"
    (e.g. concurrent initialisation, mastra #22188). A finding is `repaired` when a later studio
    generation recorded the row in its current state (`repairs` of a "repair" mark, or the
    `basedOn` of a studio write computed from it). Pure: reads
    nothing but HISTORY. Used by the watch after a commit (`watch_for_overtaking`, run by the
    studio's Reflect now and Revert dialogs and the CLI's `--watch`, through
    `studio.app.write_protocol`) and by `repair.repair_overtaken_writes`. The doctor's
    `superseded-write` check is a different rule
    (`studio.engine.doctor.supersede.find_superseded_writes`): it judges any writer by timestamps
    alone, where this one needs the studio's marks and so knows exactly what a repair carried.
    """
    rows = list(history)
    by_id = {_get(r, "id"): r for r in rows}
    marks = [m for m in (studio_mark(r) for r in rows) if m is not None]
    by_generation: dict[int, list[Any]] = {}
    for r in rows:
        by_generation.setdefault(_int(_get(r, "generationCount")), []).append(r)
    out: list[OvertakingWrite] = []
    seen: set[str] = set()

    def unaccounted(row: Any, base_text: str) -> tuple[str, Any, bool, int, str]:
        text = _get(row, "activeObservations") or ""
        cursor = _get(row, "lastObservedAt")
        records = _accounted(_get(row, "id"), marks)
        start, cursor_before = 0, None
        for length, digest, recorded_cursor in records:
            if length <= len(text) and observations_hash(text[:length]) == digest and length >= start:
                start, cursor_before = length, recorded_cursor
        repaired = any(length == len(text) and digest == observations_hash(text) and not _later(cursor, rc)
                       for length, digest, rc in records)
        added = text[start:]
        if base_text:
            base = {ln.strip() for ln in base_text.splitlines()}
            added = "\n".join(ln for ln in added.splitlines() if ln.strip() not in base)
        return added, cursor_before, repaired, len(text), observations_hash(text)

    for r in rows:
        mark = studio_mark(r)
        if mark is None:
            continue
        key = _get(r, "lookupKey") or ""
        based = mark.get("basedOn") if isinstance(mark.get("basedOn"), dict) else {}
        pred = by_id.get(based.get("recordId"))
        base_text = ""
        if pred is not None:
            ptext = _get(pred, "activeObservations") or ""
            length = _int(based.get("observationsLength"))
            if length <= len(ptext) and observations_hash(ptext[:length]) == based.get("observationsHash"):
                base_text = ptext[:length]
            grew = len(ptext) != length or observations_hash(ptext) != based.get("observationsHash")
            moved = _later(_get(pred, "lastObservedAt"), based.get("lastObservedAt"))
            if (grew or moved) and _get(pred, "id") not in seen:
                added, before, repaired, n, h = unaccounted(pred, "")
                if added.strip() or moved:
                    seen.add(_get(pred, "id"))
                    out.append(OvertakingWrite("superseded-row-written", key, _get(pred, "id"),
                                               _int(_get(pred, "generationCount")), _get(r, "id"), added,
                                               _get(pred, "lastObservedAt"), before or based.get("lastObservedAt"),
                                               repaired, n, h))
        for other in by_generation.get(_int(_get(r, "generationCount")), []):
            oid = _get(other, "id")
            if oid == _get(r, "id") or oid in seen or studio_mark(other) is not None:
                continue
            seen.add(oid)
            added, before, repaired, n, h = unaccounted(other, base_text)
            out.append(OvertakingWrite("fork", key, oid, _int(_get(other, "generationCount")), _get(r, "id"), added,
                                       _get(other, "lastObservedAt"), before, repaired, n, h))
    for generation, group in sorted(by_generation.items()):
        if len(group) < 2:
            continue
        if any(studio_mark(g) is not None for g in group):
            continue
        for other in sorted(group, key=lambda g: str(_get(g, "createdAt") or ""))[1:]:  # the first one stays
            oid = _get(other, "id")
            if oid in seen:
                continue
            seen.add(oid)
            out.append(OvertakingWrite("duplicate-generation", _get(other, "lookupKey") or "", oid, generation, None,
                                       repaired=False))
    return out


def unrepaired(findings: Iterable[OvertakingWrite]) -> list[OvertakingWrite]:
    """Return the FINDINGS a repair could still carry forward (not repaired; not a plain duplicate)."""
    return [f for f in findings if not f.repaired and f.kind != "duplicate-generation"]


def watch_for_overtaking(read_history: Callable[[], list[Any]], window_ms: int, *, poll_ms: int = 500,
                         cancelled: Callable[[], bool] = lambda: False,
                         sleep: Callable[[float], None] = time.sleep) -> list[OvertakingWrite]:
    """Poll READ_HISTORY() for WINDOW_MS (ms); return the unrepaired overtaking writes as soon as any appear.

    READ_HISTORY returns every row of the record (read-only). Returns [] when the window passed
    quietly or CANCELLED() became true.
    """
    deadline = time.monotonic() + window_ms / 1000
    while True:
        found = unrepaired(find_overtaking_writes(read_history()))
        if found or cancelled() or time.monotonic() >= deadline:
            return found
        sleep(min(poll_ms / 1000, max(0.0, deadline - time.monotonic())))


def history_reader(path: str | os.PathLike[str], lookup_key: str) -> Callable[[], list[Any]]:
    """Return a function reading every OM row of LOOKUP_KEY in PATH read-only (a new connection each call)."""
    def read() -> list[Any]:
        from studio.store import open_store

        with open_store(path) as store:
            return store.om_history(lookup_key)
    return read


def _conversation_rows(source: Any, latest: Any, key: str) -> tuple[list[dict], list[dict], list[dict]]:
    """The rows `read_activity` looks at: KEY's generations, the record's thread(s), their newest message.

    SQL stores: `select_rows` tails; MongoDB (a store or a write transaction): `decoded` finds, the threads'
    ids first and then their messages (`thread_id: {$in}`), sorted by createdAt.
    """
    if source.dialect == "mongodb":
        om = source.decoded("mastra_observational_memory", {"lookupKey": key})
        if _get(latest, "threadId"):
            match = {"id": _get(latest, "threadId")}
        else:
            match = {"resourceId": _get(latest, "resourceId")}
        threads = source.decoded("mastra_threads", match)
        ids = [t.get("id") for t in threads]
        newest = source.decoded("mastra_messages", {"thread_id": {"$in": ids}}, [("createdAt", -1)],
                                limit=1) if ids else []
        return om, threads, newest
    om = source.select_rows("mastra_observational_memory", 'WHERE "lookupKey" = ?', (key,),
                            ["id", "generationCount", "updatedAt", "metadata"])
    threads_where, params = _threads_of(latest)
    threads = source.select_rows("mastra_threads", f"WHERE {threads_where}", params, ["updatedAt"])
    newest = source.select_rows("mastra_messages", f'WHERE thread_id IN (SELECT id FROM mastra_threads WHERE '
                                f'{threads_where}) ORDER BY "createdAt" DESC LIMIT 1', params, ["createdAt"])
    return om, threads, newest


def _threads_of(latest: Any) -> tuple[str, tuple]:
    if _get(latest, "threadId"):
        return "id = ?", (_get(latest, "threadId"),)
    return '"resourceId" = ?', (_get(latest, "resourceId"),)


def store_activity(path: str | os.PathLike[str], lookup_key: str, quiet_ms: int = DEFAULT_QUIET_MS,
                   now_ms: int | None = None, *, in_place: bool = False) -> AgentActivity | None:
    """Return the AgentActivity of LOOKUP_KEY's conversation in PATH (read-only), or None without a record.

    Raises WriteRefused("invalid") first for a write not built on the store (`transaction.MONGODB_WRITES`;
    IN_PLACE: observe or activate, else a new generation): every OM write starts here.
    """
    from studio.store import open_store
    from studio.store.write.transaction import refuse_read_only_store

    refuse_read_only_store(path, "observe" if in_place else "reflect")

    with open_store(path) as store:
        current = store.om_current(lookup_key)
        if current is None:
            return None
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return read_activity(store, current, now, quiet_ms)


def store_turn_ms(path: str | os.PathLike[str], lookup_key: str, last: int = 200) -> int | None:
    """Return the longest recent turn (ms) of LOOKUP_KEY's thread(s) in PATH from the LAST stored messages, or None."""
    from studio.store import open_store

    with open_store(path) as store:
        current = store.om_current(lookup_key)
        if current is None:
            return None
        if store.dialect == "mongodb":   # the threads' ids first, then their newest messages
            match = {"id": current.thread_id} if current.thread_id else {"resourceId": current.resource_id}
            ids = [t.get("id") for t in store.decoded("mastra_threads", match)]
            rows = store.decoded("mastra_messages", {"thread_id": {"$in": ids}}, [("createdAt", -1)],
                                 limit=last) if ids else []
        else:
            where, params = _threads_of(current)
            rows = store.select_rows("mastra_messages", 'WHERE thread_id IN (SELECT id FROM mastra_threads WHERE '
                                     f'{where}) ORDER BY "createdAt" DESC LIMIT ?', (*params, last),
                                     ["role", "createdAt"])
    return turn_duration_ms(reversed([(r["role"], r["createdAt"]) for r in rows]))

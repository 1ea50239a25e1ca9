"""Doctor checks on Observational Memory records (one lookup key's generations at a time).

Rules and thresholds (each also in docs/doctor.md with the Mastra report it comes from):

* reflection-not-compressing (#14110): a reflection generation is *unproductive* when the log it
  started with (its text before the first `--- message boundary` line: the Reflector's output,
  counted with Mastra's observation estimate) is ≥ the record's reflection threshold (config
  `reflection.observationTokens`, the top of a range), or > 90% (BARELY_SMALLER) of the previous
  generation's observationTokenCount. ≥ 3 (NOT_COMPRESSING_RUN) consecutive unproductive
  reflections give one finding per run.
* empty-generation (PR #22074): a reflection generation whose log is empty (whitespace only)
  while the generation before it had a non-empty log.
* degenerate-repetition (PR #22072, #24354): a generation's log that Mastra's own
  detectDegenerateRepetition rejects (`reflector_parse.detect_degenerate_repetition`, a port).
* duplicate-generation (#22188): two or more rows with one lookupKey and one generationCount.
* superseded-write: see `supersede.find_superseded_writes`. A superseded row whose late writes a
  studio repair generation already carried forward, in the row's present state
  (`find_overtaking_writes` marks it `repaired`), is reported as info: nothing is lost any more.
  Written to again after the repair, it is an error again.
* lost-high-priority: see `lost_priority.find_lost_high_priority`.
* stale-flag (PR #22210): on the current generation, a busy flag set while the row has not been
  updated for ≥ 10 minutes (`status.flag_states`, STALE_FLAG_AFTER_MS).
* orphan-record (#16621): thread scope: the row's thread does not exist; resource scope: no
  thread and no mastra_resources row has its resourceId.
* prompt-leak (#22195): the current log, its buffered chunks (observations, currentTask,
  suggestedContinuation), or a governed thread's currentTask / suggestedResponse hold a phrase of
  Mastra's Observer/Reflector/context instructions (`prompt_leak.find_leaks`: phrase hashes).
* duplicate-buffered-chunk (PR #23019): two buffered chunks of the current row with one cycleId,
  or sharing a message id.
* foreign-observed-ids (PR #19917): observedMessageIds, bufferedMessageIds or a chunk's
  messageIds name a message of another thread (another resource in resource scope): warning;
  ids of messages that exist nowhere are reported as info (deleted since).
* malformed-json: a JSON column of any generation that does not parse.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from studio.common.durations import human_duration
from studio.common.om_settings import max_threshold, resolve_settings
from studio.engine.doctor.lost_priority import CLOSEST_SHOWN, find_lost_high_priority
from studio.engine.doctor.model import Finding, finding, repeats, spans
from studio.engine.doctor.prompt_leak import find_leaks
from studio.engine.doctor.supersede import find_superseded_writes
from studio.engine.events import split_segments
from studio.engine.observations import classify
from studio.engine.reflector_parse import detect_degenerate_repetition
from studio.engine.status import flag_states
from studio.engine.tokens import count_observations
from studio.store.records import OMRecord, Thread
from studio.store.write.protocol import find_overtaking_writes

#: A reflection that keeps more than this share of the previous generation's tokens "barely" compressed.
BARELY_SMALLER = 0.9
#: Consecutive unproductive reflections that make a finding.
NOT_COMPRESSING_RUN = 3
#: At most this many ids are listed in one finding's message_ids.
MAX_IDS = 50


def _where(rec: OMRecord) -> dict:
    """Return the finding location fields of record REC."""
    thread_id = rec.thread_id
    if thread_id is None and rec.lookup_key.startswith("thread:"):
        thread_id = rec.lookup_key[len("thread:"):]
    return {"thread_id": thread_id, "resource_id": rec.resource_id, "record_id": rec.id,
            "lookup_key": rec.lookup_key, "generation": rec.generation_count}


def check_not_compressing(gens: list[OMRecord]) -> list[Finding]:
    """Return reflection-not-compressing findings for one key's generations (ascending generationCount)."""
    out, run = [], []
    prev = None

    def flush() -> None:
        if len(run) >= NOT_COMPRESSING_RUN:
            last = run[-1]["record"]
            out.append(finding(
                "reflection-not-compressing",
                f"{len(run)} reflections in a row (generations {run[0]['generation']}–{run[-1]['generation']}) "
                "left the log above the reflection threshold or barely smaller",
                evidence={"run": [{k: v for k, v in r.items() if k != "record"} for r in run],
                          "barely_smaller": BARELY_SMALLER, "min_run": NOT_COMPRESSING_RUN},
                **_where(last)))
        run.clear()

    for rec in gens:
        if rec.origin_type == "reflection" and prev is not None:
            threshold = max_threshold(resolve_settings(rec.config, rec.scope).reflection_tokens)
            segments = split_segments(rec)
            tokens = count_observations(segments[0].text) if segments else 0
            before = prev.observation_token_count
            over = tokens >= threshold
            barely = before > 0 and tokens > BARELY_SMALLER * before
            if over or barely:
                run.append({"record": rec, "generation": rec.generation_count, "record_id": rec.id,
                            "reflected_tokens": tokens, "final_tokens": rec.observation_token_count,
                            "previous_tokens": before, "reflection_threshold": threshold,
                            "above_threshold": over, "barely_smaller": barely})
            else:
                flush()
        else:
            flush()
        prev = rec
    flush()
    return out


def check_generations(gens: list[OMRecord]) -> list[Finding]:
    """Return the history checks of ONE lookup key: empty, degenerate, duplicate, superseded, lost 🔴."""
    gens = sorted(gens, key=lambda r: (r.generation_count, r.created_at or "", r.id))
    out = check_not_compressing(gens)
    prev = None
    degenerate: list[OMRecord] = []
    malformed: dict[str, list[tuple[OMRecord, str]]] = {}
    for rec in gens:
        text = rec.active_observations
        if (rec.origin_type == "reflection" and prev is not None and not text.strip()
                and prev.active_observations.strip()):
            out.append(finding("empty-generation",
                               f"Generation {rec.generation_count} has an empty log after generation "
                               f"{prev.generation_count}'s {prev.observation_token_count:,} tokens: memory wiped",
                               evidence={"previous_generation": prev.generation_count, "previous_record_id": prev.id,
                                         "previous_tokens": prev.observation_token_count},
                               **_where(rec)))
        if text and detect_degenerate_repetition(text):
            degenerate.append(rec)
        for column, error in sorted(rec.json_errors.items()):
            malformed.setdefault(column, []).append((rec, error))
        prev = rec
    if degenerate:   # a reflection loop copies a degenerate log forward: one finding, every generation named
        last = degenerate[-1]
        out.append(finding("degenerate-repetition",
                           f"{repeats([r.generation_count for r in degenerate]).capitalize()}: the log is what "
                           "Mastra's degenerate-repetition detector rejects (a model stuck repeating itself)",
                           evidence={"generations": [r.generation_count for r in degenerate],
                                     "record_ids": [r.id for r in degenerate],
                                     "chars": len(last.active_observations),
                                     "lines": last.active_observations.count("\n") + 1,
                                     "tokens": last.observation_token_count},
                           **_where(last)))
    for column, bad in sorted(malformed.items()):
        last, error = bad[-1]
        out.append(finding("malformed-json", f"OM column {column} is not valid JSON in "
                           f"{repeats([r.generation_count for r, _ in bad])} ({error})",
                           evidence={"table": "mastra_observational_memory", "column": column, "error": error,
                                     "generations": [r.generation_count for r, _ in bad]},
                           **_where(last)))
    by_count: dict[int, list[OMRecord]] = {}
    for rec in gens:
        by_count.setdefault(rec.generation_count, []).append(rec)
    for count, rows in sorted(by_count.items()):
        if len(rows) > 1:
            out.append(finding("duplicate-generation",
                               f"{len(rows)} records share generation {count} of {rows[0].lookup_key}",
                               evidence={"record_ids": [r.id for r in rows],
                                         "created_at": [r.created_at for r in rows]},
                               **_where(rows[-1])))
    superseded = find_superseded_writes(gens)
    carried = {w.record_id for w in find_overtaking_writes(gens)
               if w.kind == "superseded-row-written" and w.repaired} if superseded else set()
    for sw in superseded:
        reasons = {"updated-after": f"updated {human_duration(sw.late_by_ms or 0)} after its successor was created",
                   "cursor-ahead": "its observation cursor is ahead of its successor's"}
        why = " and ".join(reasons[r] for r in sw.reasons)
        head = (f"Generation {sw.record.generation_count} was written after generation "
                f"{sw.successor.generation_count} replaced it ({why})")
        if sw.record.id in carried:
            out.append(finding("superseded-write", f"{head}: a studio repair generation already carries those writes",
                               severity="info", fix="Nothing to do; the doctor reports it again if the agent writes "
                               "onto this generation once more", evidence={**sw.to_json(), "repaired": True},
                               **_where(sw.record)))
            continue
        out.append(finding("superseded-write", f"{head}: those writes are not read",
                           evidence={**sw.to_json(), "repaired": False}, **_where(sw.record)))
    lost_lines = find_lost_high_priority(gens)
    if lost_lines:
        out.append(_lost_finding(lost_lines))
    return out


def _lost_finding(lost_lines: list) -> Finding:
    """Return the one lost-high-priority finding of a lookup key's LOST_LINES (generation, line order).

    The summary starts with the first lost observation's own text (what tells one thread's finding
    from another's in a list); the evidence lists every line with its closest later line, quoted
    only when its similarity is at least CLOSEST_SHOWN (0.5).
    """
    first = lost_lines[0]
    lines = []
    for lost in lost_lines:
        shown = lost.closest is not None and lost.similarity >= CLOSEST_SHOWN
        lines.append({"line": lost.line, "generation": lost.generation, "line_number": lost.line_number,
                      "record_id": lost.record.id, "similarity": lost.similarity,
                      "closest_line": lost.closest if shown else None,
                      "closest_generation": lost.closest_generation if shown else None,
                      "missing": list(lost.missing) if shown else []})
    head = classify(first.line).text
    gens = sorted({lost.generation for lost in lost_lines})
    where = f"generation {gens[0]}" if len(gens) == 1 else f"generations {spans(gens)}"
    what = (f"a high-priority observation of {where}" if len(lost_lines) == 1 else
            f"and {len(lost_lines) - 1} more high-priority observations of {where}")
    if lines[0]["closest_line"]:
        closest = (f"its closest later line (generation {first.closest_generation}, similarity "
                   f"{first.similarity:.2f}) lacks {', '.join(first.missing) or 'nothing named'}")
    else:
        closest = "no later line is alike"
    return finding("lost-high-priority",
                   f"{head} — {what} that no later generation keeps; {closest}",
                   evidence={"count": len(lost_lines), "generations": gens, "lines": lines,
                             "line": first.line},
                   **_where(first.record))


def check_prompt_leak(rec: OMRecord, threads: list[Thread]) -> list[Finding]:
    """Return prompt-leak findings of the current generation REC and THREADS (the threads it governs).

    Looked at: REC's log, each buffered chunk's `observations`, `currentTask` and
    `suggestedContinuation`, and each thread's `metadata.mastra.om.currentTask` / `suggestedResponse`
    (`prompt_leak.find_leaks`). One finding for the record's own columns, one per leaking thread
    (its thread_id set, so a resource-scope leak lands on the thread that shows it).
    """
    own = {"activeObservations": rec.active_observations}
    for i, chunk in enumerate(rec.buffered_chunks):
        for key in ("observations", "currentTask", "suggestedContinuation"):
            own[f"bufferedObservationChunks[{i}].{key}"] = chunk.get(key)
    places = [(_where(rec), own)]
    for thread in sorted(threads, key=lambda t: t.id):
        om = thread.om_metadata
        texts = {f"thread.metadata.mastra.om.{key}": om.get(key) for key in ("currentTask", "suggestedResponse")}
        places.append(({**_where(rec), "thread_id": thread.id}, texts))
    out = []
    for where, texts in places:
        leaks = {src: found for src, found in ((s, find_leaks(t if isinstance(t, str) else None))
                                                for s, t in texts.items()) if found}
        if leaks:
            out.append(finding("prompt-leak", "Mastra's own instructions are stored as memory in "
                               + ", ".join(sorted(leaks)),
                               evidence={"sources": {src: [{"phrase": leak.phrase, "excerpt": leak.excerpt}
                                                           for leak in found] for src, found in leaks.items()}},
                               **where))
    return out


def check_current(rec: OMRecord, thread_of_message: Callable[[str], str | None],
                  governed_threads: set[str], *, now_ms: int | None = None) -> list[Finding]:
    """Return the checks on the current generation REC: stale flags, chunks, foreign ids.

    THREAD_OF_MESSAGE maps a message id to its thread id (None: no such message);
    GOVERNED_THREADS are the threads this record governs (its thread, or its resource's threads).
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    where = _where(rec)
    out = []
    for flag in flag_states(rec, now_ms):
        if flag.set and flag.stale:
            age = "unknown" if flag.age_ms is None else human_duration(flag.age_ms)
            out.append(finding("stale-flag", f"{flag.name} is set on generation {rec.generation_count} "
                               f"with no activity for {age}: a dead process's lock",
                               evidence={"flag": flag.name, "age_ms": flag.age_ms, "updated_at": rec.updated_at},
                               **where))
    chunks = rec.buffered_chunks
    seen_cycles: dict[str, int] = {}
    seen_ids: dict[str, int] = {}
    for i, chunk in enumerate(chunks):
        reasons, shared = [], []
        cycle = chunk.get("cycleId")
        if isinstance(cycle, str) and cycle in seen_cycles:
            reasons.append(f"cycle {cycle} already stored as chunk {seen_cycles[cycle]}")
        ids = [m for m in chunk.get("messageIds") or [] if isinstance(m, str)]
        shared = [m for m in ids if m in seen_ids]
        if shared:
            reasons.append(f"{len(shared)} message id(s) already in chunk {seen_ids[shared[0]]}")
        if reasons:
            out.append(finding("duplicate-buffered-chunk", f"Buffered chunk {i} duplicates an earlier one: "
                               + "; ".join(reasons), message_ids=shared[:MAX_IDS],
                               evidence={"chunk_index": i, "chunk_id": chunk.get("id"), "cycle_id": cycle,
                                         "shared_message_ids": len(shared)}, **where))
        if isinstance(cycle, str):
            seen_cycles.setdefault(cycle, i)
        for m in ids:
            seen_ids.setdefault(m, i)
    named: dict[str, list[str]] = {"observedMessageIds": rec.observed_message_ids}
    buffered = rec.get("bufferedMessageIds")
    named["bufferedMessageIds"] = buffered if isinstance(buffered, list) else []
    for i, chunk in enumerate(chunks):
        named[f"bufferedObservationChunks[{i}].messageIds"] = chunk.get("messageIds") or []
    foreign: dict[str, list[str]] = {}
    missing: dict[str, list[str]] = {}
    for column, ids in named.items():
        for mid in ids:
            if not isinstance(mid, str):
                continue
            owner = thread_of_message(mid)
            if owner is None:
                missing.setdefault(column, []).append(mid)
            elif owner not in governed_threads:
                foreign.setdefault(column, []).append(mid)
    if foreign:
        ids = [m for col in sorted(foreign) for m in foreign[col]]
        out.append(finding("foreign-observed-ids", f"{len(ids)} id(s) in {', '.join(sorted(foreign))} name messages "
                           "of another thread", message_ids=ids[:MAX_IDS],
                           evidence={"columns": {c: len(v) for c, v in foreign.items()},
                                     "owner_threads": sorted({thread_of_message(m) or "" for m in ids})[:MAX_IDS]},
                           **where))
    if missing:
        ids = [m for col in sorted(missing) for m in missing[col]]
        out.append(finding("foreign-observed-ids", f"{len(ids)} id(s) in {', '.join(sorted(missing))} name messages "
                           "that no longer exist (deleted since they were observed)", severity="info",
                           fix="Nothing to do: Mastra skips ids it cannot find", message_ids=ids[:MAX_IDS],
                           evidence={"columns": {c: len(v) for c, v in missing.items()}}, **where))
    return out


def check_orphan(rec: OMRecord, thread_exists: Callable[[str], bool],
                 resource_exists: Callable[[str], bool]) -> Finding | None:
    """Return an orphan-record finding when REC's thread (thread scope) or resource (resource scope) is gone."""
    where = _where(rec)
    if rec.scope == "resource":
        if rec.resource_id is None or resource_exists(rec.resource_id):
            return None
        return finding("orphan-record", f"OM record of resource {rec.resource_id}, which has no thread and no "
                       "resources row", evidence={"scope": "resource"}, **where)
    thread_id = where["thread_id"]
    if thread_id is None or thread_exists(thread_id):
        return None
    return finding("orphan-record", f"OM record of thread {thread_id}, which no longer exists",
                   evidence={"scope": "thread"}, **where)

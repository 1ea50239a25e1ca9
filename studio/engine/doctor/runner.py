"""Run the Memory doctor over a database (or one thread), batch by batch.

`run_doctor(store)` is the whole run (the CLI); the studio runs the same work as a chain of short
tasks so other reads interleave: `plan_batches(store)` splits the threads into batches, and
`run_batch(store, plan, index)` checks one batch and returns its findings (batch 0 also carries
the database-wide checks: schema, resources, orphan and resource-scope OM records).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from studio.engine.doctor.message_checks import check_thread_messages
from studio.engine.doctor.messages import StoredMessage, load_messages
from studio.engine.doctor.model import CHECKS, DoctorReport, Finding
from studio.engine.doctor.om_checks import check_current, check_generations, check_orphan, check_prompt_leak
from studio.engine.doctor.schema_checks import (
    check_resource_json,
    check_schema,
    check_thread_json,
    check_timestamp_twins,
)
from studio.errors import EngineError
from studio.store.memory_store import MemoryStore
from studio.store.records import OMRecord, Thread

#: Threads per batch: small enough that the studio's database worker is never held for long.
BATCH_THREADS = 100
#: Message ids resolved to their thread per query.
ID_CHUNK = 500


@dataclass
class DoctorPlan:
    """What one doctor run covers: the threads in batches and the OM lookup keys.

    `batches` lists thread ids; `keys` maps every lookup key to its scope/resource/thread;
    `thread_ids` / `thread_resources` say which threads exist; `now_ms` is the clock every
    batch uses (stale flags).
    """

    batches: list[list[str]]
    threads: dict[str, Thread]
    keys: dict[str, dict]
    now_ms: int
    single_thread: str | None = None
    message_threads: dict[str, str | None] = field(default_factory=dict)

    @property
    def thread_count(self) -> int:
        """Return the number of threads the run checks."""
        return sum(len(b) for b in self.batches)


def plan_batches(store: MemoryStore, thread_id: str | None = None, *, batch_threads: int | None = None,
                 now_ms: int | None = None) -> DoctorPlan:
    """Return the plan of a run over every thread of STORE, or only THREAD_ID, BATCH_THREADS per batch.

    Raises EngineError when THREAD_ID names no thread.
    """
    batch_threads = batch_threads or BATCH_THREADS
    threads = store.list_threads()
    by_id = {t.id: t for t in threads}
    if thread_id is not None:
        if thread_id not in by_id:
            raise EngineError(f"No thread {thread_id!r} in {store.location.display}")
        ids = [thread_id]
    else:
        ids = [t.id for t in threads]
    keys = {k["lookupKey"]: k for k in store.om_lookup_keys()}
    batches = [ids[i:i + batch_threads] for i in range(0, len(ids), batch_threads)] or [[]]
    return DoctorPlan(batches=batches, threads=by_id, keys=keys,
                      now_ms=int(time.time() * 1000) if now_ms is None else now_ms, single_thread=thread_id)


def _resolve_message_threads(store: MemoryStore, plan: DoctorPlan, ids: set[str]) -> None:
    """Fill PLAN.message_threads for IDS (message id -> thread id, None when no such message)."""
    todo = [i for i in ids if i not in plan.message_threads]
    found = store.message_threads(todo, chunk=ID_CHUNK)
    for mid in todo:
        plan.message_threads[mid] = found.get(mid)


def referenced_ids(rec: OMRecord) -> set[str]:
    """Return the message ids REC names: observedMessageIds, bufferedMessageIds and its chunks' messageIds."""
    ids = {i for i in rec.observed_message_ids if isinstance(i, str)}
    buffered = rec.get("bufferedMessageIds")
    if isinstance(buffered, list):
        ids |= {i for i in buffered if isinstance(i, str)}
    for chunk in rec.buffered_chunks:
        ids |= {i for i in chunk.get("messageIds") or [] if isinstance(i, str)}
    return ids


def _histories(store: MemoryStore, keys: list[str]) -> dict[str, list[OMRecord]]:
    """Return {lookupKey: its generations, newest first} for KEYS, ID_CHUNK keys per query."""
    return store.om_histories(keys, chunk=ID_CHUNK)


def _check_key(store: MemoryStore, plan: DoctorPlan, key: str,
               history: list[OMRecord] | None = None) -> tuple[list[Finding], int, OMRecord | None]:
    """Return (findings, rows read, current record) for lookup KEY (HISTORY: its rows, when already read)."""
    history = store.om_history(key) if history is None else history
    if not history:
        return [], 0, None
    current = history[0]
    out = check_generations(history)
    orphan = check_orphan(current, lambda t: t in plan.threads,
                          lambda r: any(t.resource_id == r for t in plan.threads.values())
                          or store.get_resource(r) is not None)
    if orphan is not None:   # nothing reads an orphaned record: its flags and ids do not matter
        out.append(orphan)
        return out, len(history), current
    if current.scope == "resource":
        governed = {t.id for t in plan.threads.values() if t.resource_id == current.resource_id}
        thread = None
    else:
        thread = plan.threads.get(current.thread_id or key[len("thread:"):])
        governed = {thread.id} if thread is not None else set()
    _resolve_message_threads(store, plan, referenced_ids(current))
    out += check_current(current, plan.message_threads.get, governed, now_ms=plan.now_ms)
    shown = governed if plan.single_thread is None else governed & {plan.single_thread}
    out += check_prompt_leak(current, [plan.threads[t] for t in sorted(shown)])
    return out, len(history), current


def run_batch(store: MemoryStore, plan: DoctorPlan, index: int, cancel: threading.Event | None = None, *,
              store_wide: bool | None = None, histories: dict[str, list[OMRecord]] | None = None,
              messages: dict[str, list[StoredMessage]] | None = None,
              counted: dict[tuple, int] | None = None) -> tuple[list[Finding], dict[str, int]]:
    """Check batch INDEX of PLAN; return (findings, counts {"threads", "records", "messages", "lookup_keys"}).

    Batch 0 also runs the database-wide checks (STORE_WIDE: True / False overrides, whatever the
    index). HISTORIES (`store.om_histories` of the batch's thread and resource keys) and MESSAGES
    (`load_messages` of the batch's threads): rows the caller read already; COUNTED: the message
    counts the statuses of the same snapshot made (`status_from_rows`), not made again. Stops early
    (partial result) when CANCEL is set.
    """
    findings: list[Finding] = []
    counts = {"threads": 0, "records": 0, "messages": 0, "lookup_keys": 0}
    currents: dict[str, OMRecord | None] = {}
    wanted = [k for t in plan.batches[index] for k in (f"thread:{t}", f"resource:{plan.threads[t].resource_id}")
              if k in plan.keys]
    prefetched = _histories(store, list(dict.fromkeys(wanted))) if histories is None else histories

    def key_once(key: str) -> OMRecord | None:
        if key not in currents:
            found, rows, current = _check_key(store, plan, key, prefetched.get(key)) if key in plan.keys \
                else ([], 0, None)
            findings.extend(found)
            counts["records"] += rows
            counts["lookup_keys"] += 1 if rows else 0
            currents[key] = current
        return currents[key]

    if (index == 0) if store_wide is None else store_wide:
        if store.dialect in DIALECT_ONLY["schema-drift"]:
            findings.extend(check_schema(store.schema.tables))
        twins = check_timestamp_twins(store.timestamp_twin_mismatches())
        findings.extend(f for f in twins if plan.single_thread is None or f.thread_id == plan.single_thread)
        if plan.single_thread is None:
            for key in plan.keys:   # keys no batch reaches: resource scope, and threads that no longer exist
                scope_key = key.split(":", 1)
                if scope_key[0] != "thread" or scope_key[-1] not in plan.threads:
                    key_once(key)
            for rid in sorted({k.get("resourceId") for k in plan.keys.values() if k.get("resourceId")}):
                resource = store.get_resource(rid)
                if resource is not None:
                    findings.extend(check_resource_json(resource))
    loaded = load_messages(store, plan.batches[index]) if messages is None else messages
    for thread_id in plan.batches[index]:
        if cancel is not None and cancel.is_set():
            break
        thread = plan.threads[thread_id]
        record = key_once(f"thread:{thread.id}")
        if record is None:
            record = key_once(f"resource:{thread.resource_id}")
        messages = loaded.get(thread_id, [])
        findings.extend(check_thread_json(thread))
        findings.extend(check_thread_messages(thread, messages, record, counted))
        counts["threads"] += 1
        counts["messages"] += len(messages)
    return findings, counts


#: Checks that only stores of those dialects can fail (the others apply to every store).
DIALECT_ONLY = {"timestamp-twin-mismatch": ("postgresql",),
                # a MongoDB collection has no columns to drift: every document carries its own fields
                "schema-drift": ("sqlite", "postgresql")}


def applies(check, store: MemoryStore) -> bool:
    """Return True when CHECK (a model.Check) can fire on STORE: not pending, and of STORE's dialect if it has one."""
    return not check.pending and store.dialect in DIALECT_ONLY.get(check.id, (store.dialect,))


def run_doctor(store: MemoryStore, thread_id: str | None = None, *,
               progress: Callable[[int, int, list[Finding]], None] | None = None,
               cancel: threading.Event | None = None, now_ms: int | None = None) -> DoctorReport:
    """Run every check on STORE (or on THREAD_ID only) and return the DoctorReport.

    PROGRESS(threads done, threads total, findings of the batch) is called after each batch.
    Raises EngineError for an unknown THREAD_ID; StoreError when reading fails.
    """
    plan = plan_batches(store, thread_id, now_ms=now_ms)
    report = DoctorReport(checked={"threads": 0, "records": 0, "messages": 0, "lookup_keys": 0})
    done = 0
    for index in range(len(plan.batches)):
        if cancel is not None and cancel.is_set():
            break
        found, counts = run_batch(store, plan, index, cancel)
        report.findings.extend(found)
        for k, v in counts.items():
            report.checked[k] += v
        done += len(plan.batches[index])
        if progress is not None:
            progress(done, plan.thread_count, found)
    report.checked["checks"] = sum(1 for c in CHECKS.values() if applies(c, store))
    return report

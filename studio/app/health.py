"""The memory doctor for both faces (no Qt): `memory-studio doctor`'s document and the studio's health scan.

The scan's loaders run on the database worker or in the helper process, batch by batch; its plan
(every thread and lookup key of the file) is built once per process and store and kept here, so
a batch sent to the helper process carries only its index, not the whole plan.
"""

from __future__ import annotations

import time

from studio.app.failures import BadInput
from studio.app.loads import require_store
from studio.engine.doctor import plan_batches, run_batch
from studio.engine.doctor.runner import DoctorPlan
from studio.store.memory_store import MemoryStore

#: (id of the store, scan round) -> the plan that round's batches follow (one entry: the newest round).
_plans: dict[tuple[int, int], DoctorPlan] = {}


def _plan(store: MemoryStore, round_: int) -> DoctorPlan:
    key = (id(store), round_)
    plan = _plans.get(key)
    if plan is None:
        _plans.clear()
        plan = _plans[key] = _smallest_first(store, plan_batches(store))
    return plan


def _smallest_first(store: MemoryStore, plan: DoctorPlan) -> DoctorPlan:
    """Reorder PLAN's batches so the threads with the fewest messages are checked first.

    The scan shares the database worker (or the helper) with what the user opens; a 20,000-message
    thread checked early would hold it for seconds, so it goes last.
    """
    counts = store.message_counts()
    size = max((len(b) for b in plan.batches), default=0) or 1
    ids = sorted((i for b in plan.batches for i in b), key=lambda i: counts.get(i, 0))
    plan.batches = [ids[i:i + size] for i in range(0, len(ids), size)] or [[]]
    return plan


def load_scan_plan(store: MemoryStore | None, round_: int) -> tuple[int, int]:
    """Plan scan ROUND_ of STORE; return (threads to check, batches). Raises StoreError without a database."""
    plan = _plan(require_store(store), round_)
    return plan.thread_count, len(plan.batches)


def load_scan_batch(store: MemoryStore | None, round_: int, index: int) -> tuple[list[dict], dict[str, int]]:
    """Check batch INDEX of scan ROUND_; return (findings as `Finding.to_json()` dicts, counts).

    Raises StoreError without a database. A process that has not planned ROUND_ yet plans it first.
    """
    findings, counts = run_batch(require_store(store), _plan(require_store(store), round_), index)
    return [f.to_json() for f in findings], counts


def doctor_document(store: MemoryStore, thread_id: str | None = None) -> dict:
    """Return the `doctor --json` document of STORE (only THREAD_ID when given).

    `{"findings": [...], "checked": {...}}` (studio.engine.doctor; docs/doctor.md).

    Raises BadInput for an unknown thread, StoreError on a failed read.
    """
    from studio.engine.doctor import run_doctor

    if thread_id is not None and store.get_thread(thread_id) is None:
        raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
    return run_doctor(store, thread_id).to_json()


def load_thread_findings(store: MemoryStore | None, thread_ids: list[str]) -> list[dict]:
    """Return the doctor's findings (`Finding.to_json()` dicts) of THREAD_IDS only: what a live refresh changed.

    The same per-thread checks as a batch of the full scan (`run_batch`): the thread's JSON and
    messages, and its OM record (thread scope, else its resource's) with the generations' checks.
    Reads those threads, the threads of their resources (a resource-scope record's governed threads)
    and their lookup keys only; the database-wide checks (schema, timestamp twins, resources' JSON)
    stay the full scan's. Findings that name no thread are left out (the full scan keeps them).
    Raises StoreError without a database or on a failed read.
    """
    store = require_store(store)
    ids = list(dict.fromkeys(thread_ids))
    threads = {t.id: t for t in _threads_of(store, "id", ids)}
    resources = sorted({t.resource_id for t in threads.values() if t.resource_id})
    threads.update({t.id: t for t in _threads_of(store, '"resourceId"', resources)})
    wanted = [f"thread:{t}" for t in ids] + [f"resource:{r}" for r in resources]
    keys = {k: {"lookupKey": k} for k, gens in store.om_histories(wanted).items() if gens}
    batch = [t for t in ids if t in threads]
    plan = DoctorPlan(batches=[[], batch], threads=threads, keys=keys, now_ms=int(time.time() * 1000))
    findings, _counts = run_batch(store, plan, 1)
    return [f.to_json() for f in findings if f.thread_id in set(batch)]


def _threads_of(store: MemoryStore, column: str, values: list[str], chunk: int = 400):
    out = []
    for i in range(0, len(values), chunk):
        part = values[i:i + chunk]
        out += store.select_threads(f"WHERE {column} IN ({', '.join('?' * len(part))})", part)
    return out

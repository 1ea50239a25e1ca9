"""Watch the thread list of a window while a database opens: what each column showed at every model change.

Shared by the two-step listing tests on a local file (tests/ui) and on PostgreSQL / sqld (tests/server).
The expected values come from Mastra's oracle: a thread's message count is the number of messages
Mastra lists for it, its last activity the later of its updatedAt and its newest message's createdAt
(first principles of the Last activity column: `studio.app.listing.last_activity`).
"""

from __future__ import annotations

from studio.app import text as fmt
from studio.app.listing import STALE_UPDATED_AT_MS
from studio.store.records import iso_to_ms, ms_to_iso
from studio.ui.models.roles import ID_ROLE
from studio.ui.models.threads import STALE_MARK, ThreadColumn


def record_steps(window) -> list[tuple[bool, dict[str, tuple[str, str]]]]:
    """Record (counted, {thread id: (Messages text, Last activity text)}) at every reset, layout or data change."""
    model = window.thread_model
    seen: list[tuple[bool, dict[str, tuple[str, str]]]] = []

    def snapshot(*_args) -> None:
        rows = {}
        for r in range(model.rowCount()):
            tid = model.index(r, ThreadColumn.TITLE).data(ID_ROLE)
            rows[tid] = (model.index(r, ThreadColumn.MESSAGES).data(),
                         model.index(r, ThreadColumn.LAST_ACTIVITY).data())
        if rows:
            seen.append((model.counted, rows))

    for signal in (model.modelReset, model.layoutChanged, model.dataChanged, model.rowsInserted):
        signal.connect(snapshot)
    return seen


def expected_cells(oracle: dict) -> dict[str, tuple[str, str]]:
    """Return {thread id: (Messages text, Last activity text)} as Mastra's ORACLE makes them."""
    out = {}
    for resource in oracle["resources"].values():
        for t in resource["threads"]:
            messages = oracle["threads"].get(t["id"], {}).get("messages", [])
            updated = iso_to_ms(t["updatedAt"]) or 0
            newest = max((iso_to_ms(m["createdAt"]) or 0 for m in messages), default=0)
            shown = fmt.short_time(ms_to_iso(max(updated, newest)))
            if newest - updated > STALE_UPDATED_AT_MS:
                shown = f"{shown} {STALE_MARK}"
            out[t["id"]] = (f"{len(messages):,}", shown)
    return out


def step_problems(seen, oracle: dict) -> list[str]:
    """Return what was wrong in SEEN: a first step missing, a count or time shown before it was known, or wrong
    after."""
    want = expected_cells(oracle)
    problems = []
    if not seen or seen[0][0]:
        problems.append("the first thing shown already had the counts (no first step)")
    if not any(counted for counted, _ in seen):
        problems.append("the counts never came")
    for counted, rows in seen:
        for tid, cells in rows.items():
            if tid not in want:
                continue   # an orphan OM record's stand-in: not a Mastra thread
            if not counted and cells != (fmt.ELLIPSIS, fmt.ELLIPSIS):
                problems.append(f"{tid}: {cells} shown before the counts were read")
            if counted and cells != want[tid]:
                problems.append(f"{tid}: {cells} shown, Mastra: {want[tid]}")
    return sorted(set(problems))

"""superseded-write tells Mastra's own reflect-after-observe from a write that overtook a reflection.

Real Mastra (`mastra-observe.mjs --reflect`, under the corpus's virtual clock so its times follow call
order) observes a thread and, the log now above `reflection.observationTokens`, reflects right after,
in thread scope (support) and resource scope (resource). Mastra's reflection inside a turn gets the
record as it was before that observation, so the new generation S keeps the previous cursor while the
observed generation G has the new one: G.lastObservedAt > S.lastObservedAt, the signal the earlier
rule fired on. The doctor must stay silent there, and fire once G is written after S existed (what
a running turn that read G at its start does: here G's update made 5 s after S's creation).
"""

from __future__ import annotations

import sqlite3

import pytest

from studio.engine.doctor import find_superseded_writes, run_doctor
from studio.store import open_store
from studio.store.records import iso_to_ms, ms_to_iso
from tests.conftest import copy_fixture
from tests.interop.conftest import run_node

REFLECTION = "<observations>\nDate: Dec 5, 2026\n* 🔴 (09:00) User is migrating the billing service.\n</observations>\n"


def observer_answer(thread_ids: list[str] | None) -> str:
    """Return an Observer answer big enough to push the log over the reflection threshold (our own text).

    THREAD_IDS: resource scope (one `<thread>` block each, as the multi-thread Observer answers); None: thread scope.
    """
    def lines(tag: str) -> str:
        return "\n".join(f"* 🟡 (09:{i:02d}) In {tag} the user described step {i} of the migration of service "
                         f"{i * 7 + len(tag)}." for i in range(40))
    if thread_ids is None:
        return f"<observations>\nDate: Dec 5, 2026\n{lines('this thread')}\n</observations>\n"
    blocks = "".join(f'<thread id="{t}">\nDate: Dec 5, 2026\n{lines(t)}\n</thread>\n' for t in thread_ids)
    return f"<observations>\n{blocks}</observations>\n"


def history(path) -> dict[str, list]:
    """Return {lookupKey: its generations, newest first} of the file at PATH."""
    with open_store(path) as store:
        return {k["lookupKey"]: store.om_history(k["lookupKey"]) for k in store.om_lookup_keys()}


@pytest.mark.parametrize(("name", "thread_id", "blocks"), [("support", "support-1", None),
                                                          ("resource", "res-a", ["res-a", "res-b", "res-c"])])
def test_mastras_reflect_after_observe_is_no_superseded_write_and_an_overtaking_write_is(
        mastra_corpus, tmp_path, name, thread_id, blocks):
    path = copy_fixture(name, tmp_path / "db")
    (tmp_path / "observer.txt").write_text(observer_answer(blocks), encoding="utf-8")
    (tmp_path / "reflector.txt").write_text(REFLECTION, encoding="utf-8")
    out = run_node(mastra_corpus, "mastra-observe.mjs", str(path), thread_id, str(tmp_path / "observer.txt"),
                   "--reflect", str(tmp_path / "reflector.txt"), clock=True)
    assert out["observed"] and out["reflected"], out.get("notes")
    key = out["row"]["lookupKey"]
    rows = history(path)[key]
    successor, observed = rows[0], rows[1]       # newest first: S (Mastra's reflection), G (observed, then reflected)
    assert successor.generation_count == observed.generation_count + 1 and observed.id == out["row"]["id"]
    # What the earlier rule fired on: G's cursor is ahead of S's (S got the record as it was before the observation).
    assert iso_to_ms(observed.last_observed_at) > iso_to_ms(successor.last_observed_at)
    assert find_superseded_writes(rows) == []
    with open_store(path) as store:
        assert [f for f in run_doctor(store).findings if f.check == "superseded-write"] == []

    # A running turn that read G at its start observes onto it 5 s after S was created.
    late = ms_to_iso(iso_to_ms(successor.created_at) + 5000)
    conn = sqlite3.connect(str(path))
    try:
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = "activeObservations" || ?, '
                     '"updatedAt" = ? WHERE id = ?',
                     ("\n* 🟡 (09:59) User asked for a refund.", late, observed.id))
        conn.commit()
    finally:
        conn.close()
    found = find_superseded_writes(history(path)[key])
    assert [(w.record.id, w.successor.id, w.late_by_ms, w.reasons) for w in found] == \
        [(observed.id, successor.id, 5000, ["updated-after", "cursor-ahead"])]

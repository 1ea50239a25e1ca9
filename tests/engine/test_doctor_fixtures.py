"""The doctor on every real fixture: the exact set of findings, each derived here from first principles.

What Mastra really left in these files (written by @mastra/memory 1.31.0 through gen.mjs):
* timestamp ties: the scripted model answers instantly, so messages often share a millisecond
  (mastra-corpus README); every thread with such a tie gets one `timestamp-ties` finding;
* lost 🔴 lines: gen.mjs's scripted Reflector keeps some observation lines word for word and drops
  the rest; each line carries a unique `Obs A.B:` id, so a 🔴 line is lost exactly when its id is in
  no later generation;
* nothing else: no empty, degenerate, duplicate or superseded generation, no stale flag (all clear),
  no orphan, no duplicate message, no status-only or context message, no oversized part, every JSON
  column parses, the schema is @mastra/libsql 1.23.1's.
"""

from __future__ import annotations

import re

import libsql
import pytest

from studio.engine.doctor import find_superseded_writes, run_doctor
from studio.engine.observations import Priority, parse_log
from studio.store.memory_store import MemoryStore
from tests.conftest import FIXTURE_NAMES


def expected(path) -> set[tuple]:
    out = set()
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        rows = conn.execute('SELECT thread_id, "createdAt", id FROM mastra_messages').fetchall()
    finally:
        conn.close()
    groups: dict[tuple, list] = {}
    for thread_id, created, mid in rows:
        groups.setdefault((thread_id, created), []).append(mid)
    tied: dict[str, list] = {}
    for (thread_id, _created), ids in groups.items():
        if len(ids) > 1:
            tied.setdefault(thread_id, []).extend(ids)
    for thread_id, ids in tied.items():
        out.add(("timestamp-ties", thread_id, None, tuple(sorted(ids))))
    with MemoryStore.open(path) as store:
        for k in store.om_lookup_keys():
            history = store.om_history(k["lookupKey"])
            for rec in history:
                later = [r for r in history if r.generation_count > rec.generation_count]
                ids = set(re.findall(r"Obs \d+\.\d+:", " ".join(r.active_observations for r in later)))
                for ln in parse_log(rec.active_observations).lines:
                    m = re.search(r"Obs \d+\.\d+:", ln.text)
                    if later and ln.kind == "observation" and ln.priority is Priority.HIGH and m and m.group(0) not in ids:
                        out.add(("lost-high-priority", rec.thread_id, rec.generation_count, ln.raw.strip()))
    return out


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_doctor_finds_exactly_what_mastra_left_in_each_fixture(fixture_db, name):
    path = fixture_db(name)
    with MemoryStore.open(path) as store:
        report = run_doctor(store).to_json()
        for k in store.om_lookup_keys():
            assert find_superseded_writes(store.om_history(k["lookupKey"])) == []
        n_threads, n_messages = len(store.list_threads()), sum(store.message_counts().values())
    got = set()
    for f in report["findings"]:
        if f["check"] == "timestamp-ties":
            got.add((f["check"], f["thread_id"], None, tuple(sorted(f["message_ids"]))))
        elif f["check"] == "lost-high-priority":
            got.add((f["check"], f["thread_id"], f["generation"], f["evidence"]["line"]))
        else:
            got.add((f["check"], f["thread_id"], f["generation"], f["summary"]))
    assert got == expected(path)
    assert len(got) == len(report["findings"])
    assert report["checked"]["threads"] == n_threads and report["checked"]["messages"] == n_messages


def test_doctor_on_one_thread_reports_only_that_thread(fixture_db):
    path = fixture_db("support")
    with MemoryStore.open(path) as store:
        everything = run_doctor(store).to_json()["findings"]
        one = run_doctor(store, "support-5").to_json()
    assert one["checked"]["threads"] == 1
    assert one["findings"] == [f for f in everything if f["thread_id"] == "support-5"]
    assert one["findings"]

"""The doctor on every real fixture: the set of findings, each derived here from the raw rows.

What Mastra really left in these files (written by @mastra/memory 1.31.0 through gen.mjs):
* timestamp ties: the scripted model answers instantly, so messages often share a millisecond
  (mastra-corpus README); every thread with such a tie gets one `timestamp-ties` finding;
* lost 🔴 lines: gen.mjs's scripted Reflector keeps a 🔴 line with probability 0.6, word for word,
  drops the others and never rewords one (mastra-corpus README, "The scripted model"). So a 🔴 line
  that no later generation holds word for word was really dropped (tests/mastra_facts.py
  `dropped_high_priority`): every `lost-high-priority` finding must be one of those (no false alarm);
  and a dropped `User asked about TOPIC: QUESTION` line whose topic and question no later 🔴 line
  asks again (`dropped_without_trace`) must be reported. Between the two the check's similarity rule
  decides: the corpus writes every such line in one template (a dozen topics, a few questions), so a
  dropped line often shares its question with a kept line about another topic and the rule takes it
  for kept. Those are not asserted either way here;
* nothing else: no empty, degenerate, duplicate or superseded generation, no stale flag (all clear),
  no orphan, no duplicate message, no status-only or context message, no oversized part, every JSON
  column parses, the schema is @mastra/libsql 1.23.1's.
"""

from __future__ import annotations

import libsql
import pytest

from studio.engine.doctor import find_superseded_writes, run_doctor
from studio.store import open_store
from tests.conftest import FIXTURE_NAMES, load_oracle
from tests.mastra_facts import dropped_high_priority, dropped_without_trace, lookup_keys, timestamp_ties


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_doctor_finds_exactly_what_mastra_left_in_each_fixture(fixture_db, name):
    path = fixture_db(name)
    with open_store(path) as store:
        report = run_doctor(store).to_json()
        for k in store.om_lookup_keys():
            assert find_superseded_writes(store.om_history(k["lookupKey"])) == []
        n_threads, n_messages = len(store.list_threads()), sum(store.message_counts().values())
    findings = report["findings"]
    ties = {(f["thread_id"], tuple(sorted(f["message_ids"]))) for f in findings if f["check"] == "timestamp-ties"}
    assert ties == {(thread_id, tuple(ids)) for thread_id, ids in timestamp_ties(path).items()}
    lost_findings = [f for f in findings if f["check"] == "lost-high-priority"]
    lost = {(f["lookup_key"], ln["generation"], ln["line"]) for f in lost_findings for ln in f["evidence"]["lines"]}
    assert len({f["lookup_key"] for f in lost_findings}) == len(lost_findings)   # one finding per thread
    dropped = {(k, g, line) for k in lookup_keys(path) for g, line in dropped_high_priority(path, k)}
    untraced = {(k, g, line) for k in lookup_keys(path) for g, line in dropped_without_trace(path, k)}
    assert lost <= dropped, lost - dropped          # each reported line really is gone
    assert untraced <= lost, untraced - lost        # a fact nothing later mentions is reported
    assert [f for f in findings if f["check"] not in ("timestamp-ties", "lost-high-priority")] == []
    assert len(ties) + len(lost_findings) == len(findings)
    assert report["checked"]["threads"] == n_threads and report["checked"]["messages"] == n_messages


def test_doctor_on_one_thread_reports_only_that_thread(fixture_db):
    path = fixture_db("support")
    # A thread without findings gets one (two of its messages made to share a millisecond, as Mastra
    # leaves them), so that the thread asked and the others both have findings.
    threads = load_oracle("support")["threads"]    # Mastra's own listing of each thread's messages
    quiet = sorted(t for t, v in threads.items() if len(v["messages"]) >= 2 and t not in timestamp_ties(path))
    assert quiet, "every thread of support.db with two messages has a timestamp tie already"
    thread_id = quiet[0]
    conn = libsql.connect(str(path))
    (first, created), (second, _) = conn.execute(
        'SELECT id, "createdAt" FROM mastra_messages WHERE thread_id = ? ORDER BY "createdAt" LIMIT 2',
        (thread_id,)).fetchall()
    conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = ?', (created, second))
    conn.commit()
    conn.close()
    with open_store(path) as store:
        everything = run_doctor(store).to_json()["findings"]
        one = run_doctor(store, thread_id).to_json()
    assert one["checked"]["threads"] == 1
    assert one["findings"] == [f for f in everything if f["thread_id"] == thread_id]
    assert [(f["check"], sorted(f["message_ids"])) for f in one["findings"]] == \
        [("timestamp-ties", sorted([first, second]))]
    assert [f for f in everything if f["thread_id"] != thread_id]   # the filter had something to leave out

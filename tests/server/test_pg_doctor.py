"""timestamp-twin-mismatch on PostgreSQL: silent on what Mastra wrote, one error per row another writer left.

The test database is a copy of a real Mastra schema (`copy.mjs`, the corpus's `cp` of server stores),
edited the way a writer that knows only the plain columns leaves it: an OM row whose `lastObservedAt`
was cleared while its twin kept the old cursor, and a message whose `createdAt` was moved while its
twin kept the insert time. Mastra reads only the twin for OM times and the twin first for messages
(@mastra/pg parseOMRow / normalizeMessageRow), so both rows make Mastra read a time nobody meant.
"""

from __future__ import annotations

import subprocess

import psycopg

from studio.engine.doctor import run_doctor
from studio.store import open_store


def _doctor(target: str, check: str) -> list[dict]:
    with open_store(target) as store:
        return [f for f in run_doctor(store).to_json()["findings"] if f["check"] == check]


def test_twins_written_by_mastra_agree(pg_corpus):
    with open_store(pg_corpus.target("support")) as store:
        # every check of the catalogue (23) runs on PostgreSQL; libSQL files skip this one (22)
        assert run_doctor(store).to_json()["checked"]["checks"] == 23
    for scenario in pg_corpus.oracles:
        assert _doctor(pg_corpus.target(scenario), "timestamp-twin-mismatch") == [], scenario


def test_a_twin_left_behind_is_found(pg_corpus):
    done = subprocess.run(["node", "copy.mjs", "support", "twins", "--store", "pg", "--url", pg_corpus.url],
                          cwd=pg_corpus.corpus, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with psycopg.connect(pg_corpus.url, autocommit=True, options="-c search_path=twins") as conn:
        # the current generation of the first thread (by lookupKey) that Mastra has observed: a cursor to clear
        found = conn.execute(
            'SELECT id, "threadId" FROM mastra_observational_memory r WHERE "lookupKey" LIKE %s '
            'AND "lastObservedAt" IS NOT NULL AND "generationCount" = (SELECT max("generationCount") '
            'FROM mastra_observational_memory WHERE "lookupKey" = r."lookupKey") ORDER BY "lookupKey" LIMIT 1',
            ("thread:%",)).fetchone()
        assert found, "no thread-scope OM record of the pg support schema has an observation cursor"
        record_id, thread_id = found
        conn.execute('UPDATE mastra_observational_memory SET "lastObservedAt" = NULL WHERE id = %s', (record_id,))
        message_id = conn.execute('SELECT id FROM mastra_messages WHERE thread_id = %s ORDER BY "createdAt" LIMIT 1',
                                  ("support-3",)).fetchone()[0]
        conn.execute('UPDATE mastra_messages SET "createdAt" = "createdAt" - interval \'1 hour\' WHERE id = %s',
                     (message_id,))
    found = sorted(_doctor(f"{pg_corpus.url}?schema=twins", "timestamp-twin-mismatch"),
                   key=lambda f: f["evidence"]["table"])
    assert [(f["evidence"]["table"], f["evidence"]["column"], f["severity"]) for f in found] == [
        ("mastra_messages", "createdAt", "error"), ("mastra_observational_memory", "lastObservedAt", "error")]
    message, record = found
    assert message["message_ids"] == [message_id] and message["thread_id"] == "support-3"
    assert record["record_id"] == record_id and record["thread_id"] == thread_id
    assert record["evidence"]["value"] is None and record["evidence"]["twin"]
    # the other threads of the copy are the negative controls: nothing else fires
    with open_store(f"{pg_corpus.url}?schema=twins") as store:
        assert len(store.timestamp_twin_mismatches()) == 2


def _results_and_batches(target: str) -> tuple[dict, dict]:
    from studio.app.statuses import iter_thread_statuses
    from studio.app.thread_results import compute_thread_results

    with open_store(target) as store, store.snapshot():
        threads = store.list_threads()
        results = compute_thread_results(store, [t.id for t in threads])
        batches = {s.thread_id: s for s in iter_thread_statuses(store, threads, on_error=lambda _t, _e: None)}
    return {t: r.status for t, r in results.items() if r.status is not None}, batches


def test_an_opens_statuses_from_the_checks_rows_are_the_status_batches_on_postgresql(pg_corpus):
    """The statuses of an open take their unobserved messages from the rows the checks read, each flagged with
    PostgreSQL's own comparison (the twin first): the status batches' statuses (which read their messages
    themselves) on every scenario Mastra wrote, and with a message moved before the observation cursor in
    its plain column only while its twin (what Mastra compares) kept its time."""
    for scenario in pg_corpus.oracles:
        results, batches = _results_and_batches(pg_corpus.target(scenario))
        assert results == batches, scenario
    done = subprocess.run(["node", "copy.mjs", "support", "twins_results", "--store", "pg", "--url", pg_corpus.url],
                          cwd=pg_corpus.corpus, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with psycopg.connect(pg_corpus.url, autocommit=True, options="-c search_path=twins_results") as conn:
        last = conn.execute('SELECT id FROM mastra_messages WHERE thread_id = %s ORDER BY "createdAt" DESC LIMIT 1',
                            ("support-5",)).fetchone()[0]
        conn.execute('UPDATE mastra_messages SET "createdAt" = "createdAt" - interval \'1 day\' WHERE id = %s',
                     (last,))
    results, batches = _results_and_batches(pg_corpus.target("twins_results"))
    assert results == batches and "support-5" in results

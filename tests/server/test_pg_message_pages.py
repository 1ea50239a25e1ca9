"""Pages of messages and threads on PostgreSQL equal real @mastra/pg's, also where the stored `createdAt`
and its TIMESTAMPTZ twin disagree on the order (issue 28's one-statement pages).

MemoryPG.listMessages picks a page by the stored `"createdAt"` column (`ORDER BY "createdAt" …, "id" …`),
returns each message's twin (`createdAtZ || createdAt`) and counts with a scalar subquery in the
same statement; the studio reads the page and its count in one statement too
(`MemoryStore.select_messages_counted`), and so a page of threads (`select_threads_counted`,
where MemoryPG.listThreads sends two: every page, the whole list, no page, one past the end, no
match). A scratch copy of a corpus schema written by real Mastra
gets its twins reversed on one thread (the twin order is then the opposite of the stored order),
and Mastra itself (the benchmark's warm worker, `benchmarks/vs_mastra_worker.mjs`) answers each call.
"""

from __future__ import annotations

import psycopg
import pytest

from benchmarks.vs_mastra import StudioSide, _canonical, mastra_worker
from tests.server.test_pg_statements import _copy_schema

SCRATCH = "pages_reversed"


@pytest.fixture(scope="module")
def reversed_schema(pg_corpus):
    """A copy of the `history` scenario, its longest thread's twins reversed: (URL, thread id, messages)."""
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        _copy_schema(conn, "history", SCRATCH, 0)
        thread_id, count = conn.execute(
            f'SELECT thread_id, COUNT(*) FROM "{SCRATCH}".mastra_messages GROUP BY thread_id '
            "ORDER BY COUNT(*) DESC, thread_id LIMIT 1").fetchone()
        # twin = (first + last) - stored: the newest stored message gets the oldest twin
        conn.execute(
            f'UPDATE "{SCRATCH}".mastra_messages SET "createdAtZ" = b.lo + (b.hi - ("createdAt" AT TIME ZONE \'UTC\')) '
            f'FROM (SELECT min("createdAt" AT TIME ZONE \'UTC\') AS lo, max("createdAt" AT TIME ZONE \'UTC\') AS hi '
            f'FROM "{SCRATCH}".mastra_messages WHERE thread_id = %s) AS b WHERE thread_id = %s', (thread_id, thread_id))
    try:
        yield f"{pg_corpus.url}?schema={SCRATCH}", thread_id, count
    finally:
        with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{SCRATCH}" CASCADE')


def test_pages_and_totals_equal_mastra_when_twins_reverse_the_order(reversed_schema):
    url, thread_id, count = reversed_schema
    assert count >= 6  # pages of 3 that are neither the first nor the last exist
    mastra = mastra_worker(url)
    studio = StudioSide(url)
    try:
        calls = [("listMessages", {"threadId": thread_id, "perPage": 3, "page": p}) for p in range(count // 3 + 2)]
        threads = studio.run("listThreads", 1, {})["out"]["total"]
        assert threads >= 3
        calls += [("listThreads", {"perPage": 2, "page": p}) for p in range(threads // 2 + 2)]
        calls += [("listThreads", {}), ("listThreads", {"perPage": 0}), ("listThreads", {"metadata": {"nothing": 1}})]
        calls += [("recall", {"threadId": thread_id, "perPage": 4}),
                  ("recall", {"threadId": thread_id, "perPage": False}),
                  ("listMessages", {"threadId": thread_id, "perPage": count + 5, "page": 3})]  # past the end
        for op, args in calls:
            theirs, ours = mastra.ask(op, 1, args)["out"], studio.run(op, 1, args)["out"]
            assert _canonical(ours) == _canonical(theirs), (op, args)
        # the case is the one meant: the first page by stored createdAt is not the first by twin
        first = studio.run("listMessages", 1, {"threadId": thread_id, "perPage": 3, "page": 0})["out"]
        with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
            by = {order: [r[0] for r in conn.execute(
                f'SELECT id FROM "{SCRATCH}".mastra_messages WHERE thread_id = %s ORDER BY {order}, id LIMIT 3',
                (thread_id,))] for order in ('"createdAt"', '"createdAtZ"')}
        assert first["total"] == count and sorted(first["ids"]) == sorted(by['"createdAt"'])
        assert set(by['"createdAt"']) != set(by['"createdAtZ"'])
    finally:
        mastra.close()
        studio.store.close()

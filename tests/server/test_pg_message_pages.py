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

import contextlib

import psycopg
import pytest

from benchmarks.vs_mastra import StudioSide, _canonical, mastra_worker
from tests.server.test_pg_statements import _copy_schema

SCRATCH = "pages_reversed"


@contextlib.contextmanager
def _longest_thread_copy(pg_corpus, schema: str, change):
    """Yield (URL, thread id, messages) of a copy SCHEMA of the `history` scenario whose longest thread was then
    changed by CHANGE(connection, thread id); the copy is dropped after."""
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        _copy_schema(conn, "history", schema, 0)
        thread_id, count = conn.execute(
            f'SELECT thread_id, COUNT(*) FROM "{schema}".mastra_messages GROUP BY thread_id '
            "ORDER BY COUNT(*) DESC, thread_id LIMIT 1").fetchone()
        change(conn, thread_id)
    try:
        yield f"{pg_corpus.url}?schema={schema}", thread_id, count
    finally:
        with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextlib.contextmanager
def _both_sides(url: str):
    """Yield (Mastra's warm worker, the studio's side) on URL, both closed after."""
    mastra = mastra_worker(url)
    studio = StudioSide(url)
    try:
        yield mastra, studio
    finally:
        mastra.close()
        studio.store.close()


def _assert_each_equals_mastra(mastra, studio, calls: list[tuple[str, dict]]) -> None:
    """Ask both sides each (call, arguments) of CALLS; their canonical outputs must be equal."""
    for op, args in calls:
        theirs, ours = mastra.ask(op, 1, args)["out"], studio.run(op, 1, args)["out"]
        assert _canonical(ours) == _canonical(theirs), (op, args)


def _reverse_twins(conn, thread_id: str) -> None:
    """twin = (first + last) - stored: the newest stored message of THREAD_ID gets the oldest twin."""
    conn.execute(
        f'UPDATE "{SCRATCH}".mastra_messages SET "createdAtZ" = b.lo + (b.hi - ("createdAt" AT TIME ZONE \'UTC\')) '
        f'FROM (SELECT min("createdAt" AT TIME ZONE \'UTC\') AS lo, max("createdAt" AT TIME ZONE \'UTC\') AS hi '
        f'FROM "{SCRATCH}".mastra_messages WHERE thread_id = %s) AS b WHERE thread_id = %s', (thread_id, thread_id))


@pytest.fixture(scope="module")
def reversed_schema(pg_corpus):
    """A copy of the `history` scenario, its longest thread's twins reversed: (URL, thread id, messages)."""
    with _longest_thread_copy(pg_corpus, SCRATCH, _reverse_twins) as made:
        yield made


def test_pages_and_totals_equal_mastra_when_twins_reverse_the_order(reversed_schema):
    url, thread_id, count = reversed_schema
    assert count >= 6  # pages of 3 that are neither the first nor the last exist
    with _both_sides(url) as (mastra, studio):
        calls = [("listMessages", {"threadId": thread_id, "perPage": 3, "page": p}) for p in range(count // 3 + 2)]
        threads = studio.run("listThreads", 1, {})["out"]["total"]
        assert threads >= 3
        calls += [("listThreads", {"perPage": 2, "page": p}) for p in range(threads // 2 + 2)]
        calls += [("listThreads", {}), ("listThreads", {"perPage": 0}), ("listThreads", {"metadata": {"nothing": 1}})]
        calls += [("recall", {"threadId": thread_id, "perPage": 4}),
                  ("recall", {"threadId": thread_id, "perPage": False}),
                  ("listMessages", {"threadId": thread_id, "perPage": count + 5, "page": 3})]  # past the end
        _assert_each_equals_mastra(mastra, studio, calls)
        # the case is the one meant: the first page by stored createdAt is not the first by twin
        first = studio.run("listMessages", 1, {"threadId": thread_id, "perPage": 3, "page": 0})["out"]
        with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
            by = {order: [r[0] for r in conn.execute(
                f'SELECT id FROM "{SCRATCH}".mastra_messages WHERE thread_id = %s ORDER BY {order}, id LIMIT 3',
                (thread_id,))] for order in ('"createdAt"', '"createdAtZ"')}
        assert first["total"] == count and sorted(first["ids"]) == sorted(by['"createdAt"'])
        assert set(by['"createdAt"']) != set(by['"createdAtZ"'])


TIED = "pages_tied"


def _tie_in_threes(conn, thread_id: str) -> None:
    """Give THREAD_ID's messages, in threes, one `createdAt` (and twin): the first of each three's."""
    conn.execute(
        f'UPDATE "{TIED}".mastra_messages AS m SET "createdAt" = g.t, "createdAtZ" = g.t AT TIME ZONE \'UTC\' '
        f'FROM (SELECT id, min("createdAt") OVER (PARTITION BY (n - 1) / 3) AS t FROM '
        f'(SELECT id, "createdAt", row_number() OVER (ORDER BY "createdAt", id DESC) AS n '
        f'FROM "{TIED}".mastra_messages WHERE thread_id = %s) AS r) AS g WHERE m.id = g.id', (thread_id,))


@pytest.fixture(scope="module")
def tied_schema(pg_corpus):
    """A copy of the `history` scenario whose longest thread has its messages in threes of one `createdAt`
    (and twin): pages then start and end inside runs of ties, which MemoryPG orders by id. (URL, thread, count)."""
    with _longest_thread_copy(pg_corpus, TIED, _tie_in_threes) as made:
        yield made


def test_pages_inside_runs_of_equal_created_at_equal_mastra(tied_schema):
    url, thread_id, count = tied_schema
    assert count >= 9
    with _both_sides(url) as (mastra, studio):
        calls = [("listMessages", {"threadId": thread_id, "perPage": size, "page": p})
                 for size in (2, 4) for p in range(count // size + 2)]
        calls += [("recall", {"threadId": thread_id, "perPage": size, "page": p})   # newest first: walked down
                  for size in (2, 5) for p in range(count // size + 2)]
        _assert_each_equals_mastra(mastra, studio, calls)
        with psycopg.connect(url.split("?")[0], autocommit=True) as conn:   # the case is the one meant
            runs = conn.execute(f'SELECT COUNT(*) FROM "{TIED}".mastra_messages WHERE thread_id = %s '
                                'GROUP BY "createdAt" HAVING COUNT(*) = 3', (thread_id,)).fetchall()
        assert len(runs) == count // 3


def _table_rows_read(plan: dict) -> int:
    """Rows the plan's scans of mastra_messages read from the table (index-only scans read none)."""
    own = plan.get("Actual Rows", 0) * plan.get("Actual Loops", 1) if (
        plan.get("Relation Name") == "mastra_messages" and plan["Node Type"] != "Index Only Scan") else 0
    return own + sum(_table_rows_read(p) for p in plan.get("Plans", ()))


def _record_statements(studio: StudioSide) -> list[tuple[str, tuple]]:
    """Make STUDIO's PostgreSQL backend note every statement it runs (SQL, params); return the list it fills."""
    sent: list[tuple[str, tuple]] = []
    run = studio.store.backend._run
    studio.store.backend._run = lambda sql, params: (sent.append((sql, params)), run(sql, params))[1]
    return sent


def test_a_far_page_reads_only_its_rows_from_the_table(tied_schema):
    """The skipped rows of a page are counted on the (thread_id, createdAt) index: the table gives the page's
    rows and those tied with its first, where MemoryPG's statement reads every skipped row."""
    from studio.store.backends.pg import _qmarks
    from studio.store.history import list_messages, recall

    url, thread_id, count = tied_schema
    studio = StudioSide(url)
    sent = _record_statements(studio)
    try:
        far = list_messages(studio.store, thread_id, per_page=2, page=count // 2 - 1)
        newest_far = recall(studio.store, thread_id, per_page=2, page=count // 2 - 1)
        assert far.total == newest_far.total == count and len(far.messages) == len(newest_far.messages) == 2
    finally:
        studio.store.close()
    assert len(sent) == 2   # one statement a page
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'SET search_path = "{TIED}"')
        conn.execute("SET enable_seqscan = off")   # a small table: the plan Mastra's indexes give a large one
        conn.execute("SET enable_bitmapscan = off")
        for sql, params in sent:
            plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + _qmarks(sql), params).fetchone()[0][0]["Plan"]
            assert _table_rows_read(plan) <= 2 + 3, sql   # the page, the rest of its first run of ties, one to stop


def test_listed_threads_metadata_of_every_json_kind_as_each_thread_reads_it_alone(pg_corpus):
    """The threads of listThreads (made from psycopg's rows as fetched, whole or paged): each one's metadata (and
    error) is the one its own read gives (getThreadById), for NULL, JSON null, a JSON string, a number, an array,
    and a value nested deeper than Python's parser goes (its error kept with its thread alone)."""
    from studio.store.history import get_thread_by_id, list_threads

    scratch = "meta_kinds"
    kinds = ["NULL", "'null'::jsonb", "'\"{}\"'::jsonb", "'3.5'::jsonb", "'[1, \"a\", {\"b\": null}]'::jsonb",
             "('{\"k\": ' || repeat('[', 1500) || repeat(']', 1500) || '}')::jsonb"]
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        _copy_schema(conn, "history", scratch, 2)   # its 3 threads and 2 copies of each
        ids = [r[0] for r in conn.execute(f'SELECT id FROM "{scratch}".mastra_threads ORDER BY id').fetchall()]
        assert len(ids) >= len(kinds)
        for thread_id, kind in zip(ids[:len(kinds)], kinds, strict=True):
            conn.execute(f'UPDATE "{scratch}".mastra_threads SET metadata = {kind} WHERE id = %s', (thread_id,))
    studio = StudioSide(f"{pg_corpus.url}?schema={scratch}")
    try:
        for deep in (True, False):
            if not deep:   # the list without the deep value
                with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
                    conn.execute(f'UPDATE "{scratch}".mastra_threads SET metadata = NULL WHERE metadata::text '
                                 "LIKE '%[[[%'")
            listed = list_threads(studio.store, per_page=False).threads
            listed += list_threads(studio.store, per_page=2, page=1).threads
            assert len(listed) == len(ids) + 2
            for thread in listed:
                alone = get_thread_by_id(studio.store, thread.id)
                assert (thread.metadata, thread.metadata_error) == (alone.metadata, alone.metadata_error), thread.id
                assert thread == alone
            assert {t.id for t in listed if t.metadata_error} == ({ids[len(kinds) - 1]} if deep else set())
    finally:
        studio.store.close()
        with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{scratch}" CASCADE')


REMEMBERED = "pages_remembered"


def _copy_message(conn, schema: str, source_id: str, new_id: str, later: str) -> None:
    """Insert a copy of message SOURCE_ID as NEW_ID, its createdAt (and twin) LATER (an interval) than the source's."""
    conn.execute(f'CREATE TEMP TABLE one AS SELECT * FROM "{schema}".mastra_messages WHERE id = %s', (source_id,))
    conn.execute('UPDATE one SET id = %s, "createdAt" = "createdAt" + %s::interval, '
                 '"createdAtZ" = "createdAtZ" + %s::interval', (new_id, later, later))
    conn.execute(f'INSERT INTO "{schema}".mastra_messages SELECT * FROM one')
    conn.execute("DROP TABLE one")


@pytest.fixture
def remembered_schema(pg_corpus):
    """A copy of the `history` scenario (written to by the test): (URL, longest thread, its messages)."""
    with _longest_thread_copy(pg_corpus, REMEMBERED, lambda conn, thread_id: None) as made:
        yield made


def _thread_pages(thread_id: str, count: int) -> list[tuple[str, dict]]:
    """The calls that read THREAD_ID's count: first and far pages both ways, the last page, one past the end."""
    return [("recall", {"threadId": thread_id, "perPage": 2}),
            ("recall", {"threadId": thread_id, "perPage": 2, "page": 2}),
            ("listMessages", {"threadId": thread_id, "perPage": 2, "page": 0}),
            ("listMessages", {"threadId": thread_id, "perPage": 2, "page": 2}),
            ("listMessages", {"threadId": thread_id, "perPage": 2, "page": (count + 1) // 2}),
            ("listMessages", {"threadId": thread_id, "perPage": 2, "page": count})]


def test_a_count_read_before_a_commit_is_read_again_after_it(remembered_schema):
    """A page's count is remembered with the server's snapshot and read again once any transaction committed
    (SnapshotTotals): after an insert into the thread, deletes in it and a write elsewhere, every page and total
    (first and far pages, newest first or oldest first, the last, one past the end) equals Mastra's."""
    url, thread_id, count = remembered_schema
    assert count >= 6
    with _both_sides(url) as (mastra, studio), psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        _assert_each_equals_mastra(mastra, studio, _thread_pages(thread_id, count))
        ids = [r[0] for r in conn.execute(f'SELECT id FROM "{REMEMBERED}".mastra_messages WHERE thread_id = %s '
                                          'ORDER BY "createdAt", id', (thread_id,))]
        _copy_message(conn, REMEMBERED, ids[-1], "remembered-newest", "1 hour")
        newest = studio.run("recall", 1, {"threadId": thread_id, "perPage": 2})["out"]
        assert newest["total"] == count + 1 and newest["ids"][-1] == "remembered-newest"
        _assert_each_equals_mastra(mastra, studio, _thread_pages(thread_id, count + 1))
        conn.execute(f'DELETE FROM "{REMEMBERED}".mastra_messages WHERE id = ANY(%s)', (ids[:3],))
        assert studio.run("listMessages", 1, {"threadId": thread_id, "perPage": 2, "page": 2})["out"]["total"] \
            == count - 2
        _assert_each_equals_mastra(mastra, studio, _thread_pages(thread_id, count - 2))
        conn.execute(f'UPDATE "{REMEMBERED}".mastra_messages SET content = content WHERE thread_id <> %s',
                     (thread_id,))   # a commit elsewhere: the snapshot moves, the counts stay
        _assert_each_equals_mastra(mastra, studio, _thread_pages(thread_id, count - 2))


def _plans(store, sent: list[tuple[str, tuple]]) -> list[dict]:
    """EXPLAIN (ANALYZE) of each statement SENT, run on STORE's own session (inside its load: the same snapshot)."""
    return [store.backend.rows("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)[0][0][0]["Plan"]
            for sql, params in sent]


def _whole_thread_counts(plan: dict) -> list[int]:
    """The loops of each aggregate in PLAN whose scan reads the thread without a createdAt bound (its whole count)."""
    own = []
    if plan["Node Type"] == "Aggregate":
        scan = next(p for p in plan["Plans"] if p["Parent Relationship"] == "Outer")
        cond = scan.get("Index Cond", "") + scan.get("Recheck Cond", "") + scan.get("Filter", "")
        if "createdAt" not in cond:
            own.append(plan.get("Actual Loops", 0))
    return own + [n for p in plan.get("Plans", ()) for n in _whole_thread_counts(p)]


def test_inside_a_load_the_thread_is_counted_once_and_a_commit_shows_after_it(remembered_schema):
    """Inside one load (one REPEATABLE READ snapshot) the first page counts the thread and the next pages do not
    (their count subqueries never run, first or far page); a message committed meanwhile is not in the load's
    totals, and is in the next read's."""
    from studio.store.history import list_messages, recall

    url, thread_id, count = remembered_schema
    studio = StudioSide(url)
    sent = _record_statements(studio)
    try:
        with studio.store.snapshot(), psycopg.connect(url.split("?")[0], autocommit=True) as conn:
            assert recall(studio.store, thread_id, per_page=2).total == count
            last = conn.execute(f'SELECT id FROM "{REMEMBERED}".mastra_messages WHERE thread_id = %s '
                                'ORDER BY "createdAt" DESC, id DESC LIMIT 1', (thread_id,)).fetchone()[0]
            _copy_message(conn, REMEMBERED, last, "remembered-during-load", "1 hour")
            first = len(sent)
            pages = [recall(studio.store, thread_id, per_page=2), recall(studio.store, thread_id, per_page=2, page=2),
                     list_messages(studio.store, thread_id, per_page=2, page=0),
                     list_messages(studio.store, thread_id, per_page=2, page=2)]
            assert [p.total for p in pages] == [count] * 4
            assert "remembered-during-load" not in pages[0].message_ids
            later = sent[first:]
            assert len(later) == 4   # one statement a page
            counts = [_whole_thread_counts(plan) for plan in _plans(studio.store, later)]
            assert counts == [[0]] * 4, counts   # each statement's whole-thread count: never executed
        after = recall(studio.store, thread_id, per_page=2)
        assert after.total == count + 1 and after.message_ids[-1] == "remembered-during-load"
        assert list_messages(studio.store, thread_id, per_page=2, page=2).total == count + 1
    finally:
        studio.store.close()

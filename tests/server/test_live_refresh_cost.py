"""A live refresh after an agent's append costs what the append wrote, on PostgreSQL and on a libSQL server.

The studio beside an agent refreshes after every saveMessages (the message upsert, then the thread's
updatedAt). Here, after each of a few appends to one thread of the `support` fixture (written by real
Mastra; PostgreSQL: the corpus's schema copied with Mastra's copy, sqld: a fresh server holding the
fixture's rows): `rows_since` asks the store in a fixed number of statements whatever the number of tables
(PostgreSQL 2: xmin and counts, the owners of the rows past xmin; sqld 2 round trips: the aggregates of the
tables, the rows written), the refresh reads no wider than those rows, names that one thread only, reads the
same rows each time, and hands on the listing's positions (no pass over the rows); on sqld a whole refresh is
at most 6 round trips once its statements' widths are known (the snapshot's BEGIN travels with its first
statement; then the rows written, the threads re-read, their message counts, the ROLLBACK).
"""

from __future__ import annotations

import random

from benchmarks.copy_to_server import copy_to_libsql
from studio.app.live import load_live_listing, refresh_live_listing
from studio.store import open_store
from studio.store.live_changes import rows_since
from tests.conftest import copy_fixture
from tests.live_writes import MastraWrites, PgSql, SqldSql
from tests.server.pg_rows import copy_schema

APPENDS = 4


def _appends_cost(store, sql) -> list[tuple]:
    """APPENDS saveMessages to the newest thread, each followed by one refresh; per append: (statements of
    rows_since, rows read, wider reads, threads changed, positions handed on, the refresh's round trips on sqld)."""
    writes = MastraWrites(sql, random.Random(5))
    thread = sql.query('SELECT id, "resourceId" FROM mastra_threads ORDER BY "createdAt" DESC, id LIMIT 1')[0]
    writes.a_thread = lambda: thread
    live = load_live_listing(store)
    out = []
    backend = store.backend
    for _ in range(APPENDS):
        writes.save_message()
        calls = []
        plain = type(backend).rows
        backend.rows = lambda sql_, params=(), _plain=plain, _calls=calls: _calls.append(sql_) or _plain(backend, sql_,
                                                                                                 params)
        try:
            with store.snapshot():
                assert rows_since(store, live.marks) is not None
        finally:
            del backend.rows
        traffic = getattr(backend, "traffic", None)
        before = traffic.requests if traffic is not None else 0
        refresh = refresh_live_listing(store, live)
        trips = traffic.requests - before if traffic is not None else None
        changed = refresh.changes.threads | refresh.changes.threads_created
        out.append((len(calls), refresh.rows_read, refresh.wider, changed, refresh.live.derived is not None, trips))
        assert changed == {thread[0]}, refresh.changes
        live = refresh.live
    return out


def _assert_proportional(cost: list[tuple], statements: int) -> None:
    assert [c[0] for c in cost] == [statements] * APPENDS, cost
    assert all(c[2] == [] for c in cost), cost                       # no wider read
    assert len({c[1] for c in cost}) == 1 and cost[0][1] <= 12, cost   # the same few rows after each append
    assert all(c[4] for c in cost), cost                              # positions handed on


def _cost_on(target: str, sql) -> list[tuple]:
    """`_appends_cost` of the store at TARGET, its appends written through SQL (closed after)."""
    try:
        with open_store(target) as store:
            return _appends_cost(store, sql)
    finally:
        sql.close()


def test_refresh_after_an_append_on_postgresql(pg_corpus):
    target = copy_schema(pg_corpus, "support", "live_cost")
    _assert_proportional(_cost_on(target, PgSql(pg_corpus.url, "live_cost")), 2)


def test_refresh_after_an_append_on_a_libsql_server(sqld_corpus, tmp_path):
    url = sqld_corpus.start("live-cost")
    copy_to_libsql(copy_fixture("support", tmp_path), url)
    cost = _cost_on(url, SqldSql(url))
    _assert_proportional(cost, 2)
    assert all(c[5] <= 6 for c in cost[1:]), cost   # after the first refresh has learnt its statements' widths

"""On PostgreSQL too, `inspect` sends as many statements for 3N threads as for N (issue 13: one batch
per kind of row; over a network each statement is a round trip).

From first principles: a schema written by real @mastra/pg (N threads) is copied into two scratch
schemas (same tables, `LIKE … INCLUDING ALL`): one as it is, one with two more copies of every
thread, its messages, resources and OM generations under suffixed ids, each copy in its own
resource. Every original thread then sees exactly the rows it saw; its status must not change.
"""

from __future__ import annotations

import psycopg
import pytest

from benchmarks.query_count import counting_statements, inspect_path

TABLES = ("mastra_threads", "mastra_messages", "mastra_resources", "mastra_observational_memory")
RENAMED = {
    "mastra_threads": {"id": "id || %(s)s", "resourceId": '"resourceId" || %(s)s'},
    "mastra_messages": {"id": "id || %(s)s", "thread_id": "thread_id || %(s)s", "resourceId": '"resourceId" || %(s)s'},
    "mastra_resources": {"id": "id || %(s)s"},
    "mastra_observational_memory": {
        "id": "id || %(s)s", "threadId": '"threadId" || %(s)s', "resourceId": '"resourceId" || %(s)s',
        "lookupKey": "CASE WHEN \"lookupKey\" LIKE 'thread:%%' THEN 'thread:' || \"threadId\" || %(s)s "
                     "ELSE 'resource:' || \"resourceId\" || %(s)s END"},
}


def _copy_schema(conn, source: str, target: str, copies: int) -> None:
    conn.execute(f'DROP SCHEMA IF EXISTS "{target}" CASCADE')
    conn.execute(f'CREATE SCHEMA "{target}"')
    for table in TABLES:
        cols = [r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position", (source, table))]
        if not cols:
            continue
        conn.execute(f'CREATE TABLE "{target}".{table} (LIKE "{source}".{table} INCLUDING ALL)')
        names = ", ".join(f'"{c}"' for c in cols)
        conn.execute(f'INSERT INTO "{target}".{table} ({names}) SELECT {names} FROM "{source}".{table}')
        for k in range(1, copies + 1):
            select = ", ".join(RENAMED[table].get(c, f'"{c}"') for c in cols)
            conn.execute(f'INSERT INTO "{target}".{table} ({names}) SELECT {select} FROM "{source}".{table}',
                         {"s": f"~c{k}"})


@pytest.mark.parametrize("scenario", ["support", "resource"])
def test_inspect_statements_on_postgresql_do_not_grow_with_threads(pg_corpus, scenario):
    one, three = f"stmt_{scenario}_1", f"stmt_{scenario}_3"
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        _copy_schema(conn, scenario, one, 0)
        _copy_schema(conn, scenario, three, 2)
    try:
        with counting_statements() as count1:
            doc1 = inspect_path(f"{pg_corpus.url}?schema={one}")
        with counting_statements() as count3:
            doc3 = inspect_path(f"{pg_corpus.url}?schema={three}")
    finally:
        with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{one}" CASCADE')
            conn.execute(f'DROP SCHEMA IF EXISTS "{three}" CASCADE')
    assert len(doc3["threads"]) == 3 * len(doc1["threads"]) > 0
    assert len(doc3["observational_memory"]) == 3 * len(doc1["observational_memory"]) > 0
    assert count3.statements == count1.statements
    by_key3 = {om["lookup_key"]: om for om in doc3["observational_memory"]}
    for om in doc1["observational_memory"]:
        assert by_key3[om["lookup_key"]]["status"] == om["status"]
        assert om["status"], om["lookup_key"]  # every key governs a thread: there were statuses to compare

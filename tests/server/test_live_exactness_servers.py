"""A live refresh equals a fresh load after every write of long random sequences of Mastra's writes, on
PostgreSQL and on a libSQL server (sqld): the check of tests/app/test_live_exactness.py on the servers.

PostgreSQL: a copy of the corpus's `support` schema (written by real Mastra, copied with Mastra's own
copy), written with psycopg as @mastra/pg writes (TIMESTAMPTZ twins included); the refresh finds the
rows written through their `xmin`. sqld: a fresh server holding the `support` fixture's rows, written
over Hrana; the refresh finds them as on a file (rowid, updatedAt, counts). Fixed seeds.
"""

from __future__ import annotations

import random
import shutil

import pytest

from benchmarks.copy_to_server import copy_to_libsql
from studio.store import open_store
from tests.app.test_live_exactness import check_sequence
from tests.conftest import FIXTURES
from tests.live_writes import MastraWrites, PgSql, SqldSql
from tests.server.pg_rows import copy_schema

STEPS = 80


def _assert_every_write(made: dict) -> None:
    assert set(MastraWrites.WEIGHTS) <= set(made), made
    assert made["everything"] == 0, made


@pytest.mark.parametrize("seed", [1, 2])
def test_live_refresh_equals_a_fresh_load_on_postgresql(pg_corpus, seed):
    schema = f"live_exact_{seed}"
    target = copy_schema(pg_corpus, "support", schema)
    rng = random.Random(seed)
    sql = PgSql(pg_corpus.url, schema)
    try:
        with open_store(target) as store:
            made = check_sequence(store, MastraWrites(sql, rng), STEPS, rng)
    finally:
        sql.close()
    _assert_every_write(made)


@pytest.mark.parametrize("seed", [1, 2])
def test_live_refresh_equals_a_fresh_load_on_a_libsql_server(sqld_corpus, tmp_path, seed):
    for ext in ("", "-wal", "-shm"):
        src = FIXTURES / f"support.db{ext}"
        if src.exists():
            shutil.copyfile(src, tmp_path / f"support.db{ext}")
    url = sqld_corpus.start(f"live-exact-{seed}")
    copy_to_libsql(tmp_path / "support.db", url)
    rng = random.Random(seed)
    sql = SqldSql(url)
    try:
        with open_store(url) as store:
            made = check_sequence(store, MastraWrites(sql, rng), STEPS, rng)
    finally:
        sql.close()
    _assert_every_write(made)

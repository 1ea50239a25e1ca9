"""A refused write on PostgreSQL writes nothing: `pg_dump --data-only` of the schema is byte-identical.

Refusals checked: another session holds the current OM row's lock (Mastra's setReflectingFlag /
observe updates hold it for their transaction) for longer than the write bound (9 s) — exit 3;
the agent is active (a live isObserving flag as Mastra's setObservingFlag leaves it; a thread
written a moment ago, inside the quiet period) — exit 3. No row backup is left behind either.
"""

from __future__ import annotations

import json
import time

import psycopg

from studio.cli import main
from studio.store import open_store
from studio.store.write.tx import WRITE_LOCK_WAIT_MS
from tests.server.pg_rows import copy_schema, pg_dump_schema

SCHEMA = "wrefused"


def _reflect(target: str, *extra: str) -> int:
    return main(["reflect", target, "--thread", "support-1", "--strategy", "rule-based", "--yes", "--json",
                 "--watch", "0", *extra])


def _current(target: str) -> str:
    with open_store(target) as store:
        return store.om_current(store.lookup_key_for_thread(store.get_thread("support-1"))).id


def test_refused_writes_leave_the_schema_byte_identical(pg_corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    backups = tmp_path / "data" / "memory-studio" / "backups"
    target = copy_schema(pg_corpus, "support", SCHEMA)
    record_id = _current(target)
    before = pg_dump_schema(pg_corpus.url, SCHEMA)
    assert f"INSERT INTO {SCHEMA}.mastra_observational_memory" in before

    # 1. another session holds the current OM row locked for longer than the write bound
    holder = psycopg.connect(pg_corpus.url)
    try:
        holder.execute(f'SELECT id FROM {SCHEMA}.mastra_observational_memory WHERE id = %s FOR UPDATE', (record_id,))
        started = time.monotonic()
        code = _reflect(target, "--quiet-period", "0")
        waited = time.monotonic() - started
        err = capsys.readouterr().err
    finally:
        holder.rollback()
        holder.close()
    assert code == 3, err
    assert "locked by another process" in err and "wrote nothing" in err
    assert waited >= WRITE_LOCK_WAIT_MS / 1000 * 0.9   # it did wait for the lock (bounded by the 9 s lock_timeout)
    assert pg_dump_schema(pg_corpus.url, SCHEMA) == before
    assert not backups.exists() or list(backups.iterdir()) == []

    # 2. the agent is observing: isObserving set and updated just now, as Mastra's setObservingFlag leaves it
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute(f'UPDATE {SCHEMA}.mastra_observational_memory SET "isObserving" = true, "updatedAt" = '
                     f'(NOW() AT TIME ZONE \'UTC\'), "updatedAtZ" = NOW() WHERE id = %s', (record_id,))
    flagged = pg_dump_schema(pg_corpus.url, SCHEMA)
    assert _reflect(target, "--force") == 3
    assert "isObserving" in capsys.readouterr().err
    assert pg_dump_schema(pg_corpus.url, SCHEMA) == flagged

    # 3. the thread was written a moment ago (inside the 30 s quiet period)
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute(f'UPDATE {SCHEMA}.mastra_observational_memory SET "isObserving" = false WHERE id = %s',
                     (record_id,))
        conn.execute(f'UPDATE {SCHEMA}.mastra_threads SET "updatedAt" = (NOW() AT TIME ZONE \'UTC\'), '
                     f'"updatedAtZ" = NOW() WHERE id = %s', ("support-1",))
    active = pg_dump_schema(pg_corpus.url, SCHEMA)
    assert _reflect(target) == 3
    out = capsys.readouterr()
    assert "agent is active" in out.err
    assert json.loads(out.out)["refused"] == "agent-active"
    assert pg_dump_schema(pg_corpus.url, SCHEMA) == active
    assert not backups.exists() or list(backups.iterdir()) == []

    # the same write goes through once the user forces it past the quiet period (and is then backed up)
    assert _reflect(target, "--force") == 0
    assert len(list(backups.iterdir())) == 1

"""Server writes under faults (issue 22): the connection cut at random points of a write, COMMIT's answer lost,
the server dead, locks held — every write is whole or absent, and its outcome is reported truly.

A small store of our own on a throwaway PostgreSQL and on throwaway sqld servers (started with the corpus's
`servers.sh`, no Mastra corpus needed: a clone writes the same rows on any Mastra memory), reached through
`tests/server/fault_proxy.FaultProxy`, which cuts every connection at a random chunk of the write (before
or after forwarding it) or right after forwarding COMMIT. Each kill runs `memory-studio clone` in-process
with a fresh `--new-id` and compares what it reported with what the server holds, read directly:

* no partial write: the new thread is there with all the source's messages, or neither is;
* no misreported outcome: a clone that is there exited 0, or 5 with JSON `outcome` "written" and its
  backup kept (and `undo` removes it); a clone that is not there exited neither 0 nor "written" (3/6, or 5
  "not-written"), and left no backup unless the outcome was "unknown" (6, the server stayed dead);
* no hang: a dead server ends the write within the resolve wait (shortened here to keep the suite short).

The kill points are drawn at random (seed printed on failure; FAULT_SEED=N repeats a run) among the chunks
a clean write sends (counted once), and every fourth kill is the COMMIT-sent-answer-lost point.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

from studio.cli import main as cli_main
from tests.interop.conftest import install_corpus
from tests.server.fault_proxy import Fault, FaultProxy
from tests.server.sqld import pipeline

KILLS_PER_STORE = 40
#: The resolve wait of a write whose server stays dead, shortened (the product waits 15 s).
RESOLVE_WAIT_S = 1.0
SOURCE_MESSAGES = 3
SEED = int(os.environ.get("FAULT_SEED") or random.SystemRandom().randrange(1 << 30))


# -- servers ------------------------------------------------------------------------------------------

def _servers_sh(*args: str, cwd: Path) -> str:
    done = subprocess.run(["bash", "servers.sh", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"servers.sh {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def pg_server():
    """A throwaway PostgreSQL on 127.0.0.1 (no corpus), stopped at the end of the module; its URL."""
    corpus = install_corpus()
    folder = Path(tempfile.mkdtemp(prefix="memory-studio-faults-pg-"))
    folder.chmod(0o755)   # the server runs as `postgres` when the tests run as root
    try:
        url = _servers_sh("pg", "start", str(folder), cwd=corpus)
        assert "@127.0.0.1:" in url, url
        yield url
    finally:
        subprocess.run(["bash", "servers.sh", "pg", "stop", str(folder)], cwd=corpus, capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


#: sqld servers used in turn: a kill that leaves a write's transaction open on the server holds its
#: write lock until sqld's 5 s transaction timeout, so the next kill goes to another server.
SQLD_POOL = 12


@pytest.fixture(scope="module")
def sqld_servers():
    """SQLD_POOL throwaway sqld on 127.0.0.1, stopped at the end of the module; their URLs."""
    corpus = install_corpus()
    folder = Path(tempfile.mkdtemp(prefix="memory-studio-faults-sqld-"))
    try:
        names = [f"fault{i}" for i in range(SQLD_POOL)]
        line = _servers_sh("sqld", "start", str(folder), ",".join(names), cwd=corpus)
        urls = [item.split("=", 1)[1] for item in line.split(",")]
        assert all(u.startswith("http://127.0.0.1:") for u in urls), line
        yield urls
    finally:
        subprocess.run(["bash", "servers.sh", "sqld", "stop", str(folder)], cwd=corpus, capture_output=True,
                       timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


# -- the small stores ------------------------------------------------------------------------------------

PG_SCHEMA = "faults"
PG_TABLES = [
    'CREATE TABLE mastra_threads (id TEXT PRIMARY KEY, "resourceId" TEXT NOT NULL, title TEXT, metadata TEXT, '
    '"createdAt" TIMESTAMP NOT NULL, "createdAtZ" TIMESTAMPTZ DEFAULT NOW(), "updatedAt" TIMESTAMP NOT NULL, '
    '"updatedAtZ" TIMESTAMPTZ DEFAULT NOW())',
    'CREATE TABLE mastra_messages (id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, content TEXT NOT NULL, '
    'role TEXT NOT NULL, type TEXT NOT NULL, "createdAt" TIMESTAMP NOT NULL, "createdAtZ" TIMESTAMPTZ DEFAULT NOW(), '
    '"resourceId" TEXT)',
]


def _make_pg_store(url: str) -> str:
    """Schema `faults` with Mastra's two required tables (as @mastra/pg declares them), thread t1 and its messages."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {PG_SCHEMA}")
        conn.execute(f"SET search_path = {PG_SCHEMA}")
        for sql in PG_TABLES:
            conn.execute(sql)
        conn.execute("INSERT INTO mastra_threads VALUES ('t1', 'r1', 'one', '{}', '2026-01-01 00:00:00', "
                     "'2026-01-01 00:00:00Z', '2026-01-01 00:00:00', '2026-01-01 00:00:00Z')")
        for n in range(SOURCE_MESSAGES):
            conn.execute("INSERT INTO mastra_messages VALUES (%s, 't1', %s, 'user', 'v2', %s, %s, 'r1')",
                         (f"m{n}", json.dumps({"format": 2, "parts": [{"type": "text", "text": f"hello {n}"}]}),
                          f"2026-01-01 00:00:0{n + 1}", f"2026-01-01 00:00:0{n + 1}Z"))
    return url


def _make_sqld_store(url: str) -> str:
    pipeline(url, [
        'CREATE TABLE IF NOT EXISTS mastra_threads (id TEXT PRIMARY KEY, "resourceId" TEXT, title TEXT, '
        'metadata TEXT, "createdAt" TEXT, "updatedAt" TEXT)',
        'CREATE TABLE IF NOT EXISTS mastra_messages (id TEXT PRIMARY KEY, thread_id TEXT, content TEXT, role TEXT, '
        'type TEXT, "createdAt" TEXT, "resourceId" TEXT)',
        "INSERT OR IGNORE INTO mastra_threads VALUES ('t1', 'r1', 'one', '{}', '2026-01-01T00:00:00.000Z', "
        "'2026-01-01T00:00:00.000Z')",
        *(f"INSERT OR IGNORE INTO mastra_messages VALUES ('m{n}', 't1', "
          f"'{{\"format\":2,\"parts\":[{{\"type\":\"text\",\"text\":\"hello {n}\"}}]}}', 'user', 'v2', "
          f"'2026-01-01T00:00:0{n + 1}.000Z', 'r1')" for n in range(SOURCE_MESSAGES))])
    return url


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def _via(url: str, proxy: FaultProxy) -> str:
    """URL with its port replaced by the proxy's."""
    return url.replace(f":{_port(url)}", f":{proxy.port}", 1)


def _pg_truth(url: str, thread_id: str) -> tuple[bool, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET search_path = {PG_SCHEMA}")
        thread = conn.execute("SELECT count(*) FROM mastra_threads WHERE id = %s", (thread_id,)).fetchone()[0]
        messages = conn.execute("SELECT count(*) FROM mastra_messages WHERE thread_id = %s", (thread_id,)).fetchone()[0]
    return bool(thread), messages


def _sqld_truth(url: str, thread_id: str) -> tuple[bool, int]:
    results = pipeline(url, [f"SELECT count(*) FROM mastra_threads WHERE id = '{thread_id}'",
                             f"SELECT count(*) FROM mastra_messages WHERE thread_id = '{thread_id}'"])
    return (int(results[0]["rows"][0][0]["value"]) > 0, int(results[1]["rows"][0][0]["value"]))


# -- one kill ----------------------------------------------------------------------------------------------

def _clone(target: str, new_id: str, capsys) -> tuple[int, dict | None, str]:
    """Run `memory-studio clone TARGET --thread t1 --new-id NEW_ID --yes` in-process; (exit, JSON or None, stderr)."""
    capsys.readouterr()
    code = cli_main(["clone", target, "--thread", "t1", "--new-id", new_id, "--yes"])
    out, err = capsys.readouterr()
    try:
        doc = json.loads(out) if out.strip() else None
    except ValueError:
        doc = None
    return code, doc, err


def _backups_of(new_id: str, data: Path) -> list[Path]:
    """Row backup files that hold a row of the clone NEW_ID (its inserted thread)."""
    folder = data / "memory-studio" / "backups"
    return [p for p in folder.glob("*.json") if f'"{new_id}"' in p.read_text(encoding="utf-8")] \
        if folder.is_dir() else []


def _check_kill(label: str, code: int, doc: dict | None, err: str, truth: tuple[bool, int], backups: list[Path],
                fault: Fault) -> str:
    """Assert the kill's report matches the server's truth; return the outcome ("written", "not-written", "unknown")."""
    there, messages = truth
    where = f"{label} seed={SEED} fault={fault} exit={code} json={doc} stderr={err.strip()[:400]!r}"
    assert messages == (SOURCE_MESSAGES if there else 0), f"partial write: thread={there} messages={messages}; {where}"
    assert "Traceback" not in err, where
    if there:
        if code == 6:   # the server stayed dead after COMMIT was sent: unknown, said so, backup kept
            assert fault.dead and doc is not None and doc["outcome"] == "unknown", where
            assert "unknown" in err and "nothing was written" not in err.lower(), where
            assert len(backups) == 1, where
            return "unknown"
        assert code in (0, 5), f"a committed clone reported as not written: {where}"
        if code == 5:
            assert doc is not None and doc["outcome"] == "written" and doc["found_after_reconnecting"], where
            assert "IS written" in err and "nothing was written" not in err.lower(), where
        assert len(backups) == 1, f"a committed clone lost its backup: {backups}; {where}"
        return "written"
    assert code not in (0, 1, 2), f"a clone that is not there: {where}"
    if code == 5:
        assert doc is not None and doc["outcome"] == "not-written", where
        assert not backups, f"backup left for a write found not written: {where}"
        return "not-written"
    if code == 6:
        assert doc is not None and doc["outcome"] in ("not-written", "unknown"), where
        if doc["outcome"] == "unknown":
            assert fault.dead, f"unknown outcome although the server came back: {where}"
            assert len(backups) == 1, where
            return "unknown"
        assert not backups, where
        return "not-written"
    assert code == 3, where
    assert not backups, where
    return "not-written"


def _draw(rng: random.Random, chunks: int, i: int) -> Fault:
    """The I-th kill: every fourth at COMMIT sent (answer lost), the others at a random chunk, before or after it;
    one in eight leaves the server dead."""
    dead = rng.random() < 0.125
    if i % 4 == 0:   # half of them give the server time to finish the COMMIT before the cut
        return Fault(on_commit=True, dead=dead, hold_s=0.3 if i % 8 == 0 else 0.0)
    return Fault(at=rng.randint(1, chunks), before=rng.random() < 0.5, dead=dead)


def _run_kills(store: str, targets: list[str], truth_of, tmp_path, capsys, monkeypatch) -> dict:
    """KILLS_PER_STORE kills of clones on TARGETS (used in turn); return the tally of outcomes."""
    import studio.store.write.outcome as outcome

    monkeypatch.setattr(outcome, "RESOLVE_WAIT_S", RESOLVE_WAIT_S)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    proxies = [FaultProxy(_port(t)) for t in targets]
    rng = random.Random(SEED)
    tally: dict[str, int] = {}
    try:
        # a clean clone through the proxy counts the chunks a write sends (the range the kills are drawn in)
        proxies[0].arm(None)
        code, _, err = _clone(_via(targets[0], proxies[0]), "clean-0", capsys)
        assert code == 0, err
        chunks = proxies[0].chunks
        assert chunks >= 5, chunks
        for i in range(KILLS_PER_STORE):
            proxy, target = proxies[i % len(proxies)], targets[i % len(targets)]
            fault = _draw(rng, chunks, i)
            new_id = f"{store}-kill-{i}"
            proxy.arm(fault)
            started = time.monotonic()
            code, doc, err = _clone(_via(target, proxy), new_id, capsys)
            took = time.monotonic() - started
            proxy.revive()
            proxy.arm(None)
            truth = truth_of(target, new_id)
            found = _check_kill(f"{store} kill {i}", code, doc, err, truth, _backups_of(new_id, tmp_path / "data"),
                                fault)
            # no hang: the lock wait (9 s) and the resolve wait bound every write, whatever the fault
            assert took < 9 + 5 + RESOLVE_WAIT_S + 10, f"{store} kill {i} took {took:.1f} s (seed={SEED}, {fault})"
            key = f"{found}{'-found-after-reconnecting' if code == 5 else ''}"
            if code == 5 and doc["outcome"] == "written":
                # the committed write's undo works: the backup it kept restores the store
                capsys.readouterr()
                assert cli_main(["undo", _via(target, proxy), "--yes", "--json"]) == 0, capsys.readouterr().err
                capsys.readouterr()
                assert truth_of(target, new_id) == (False, 0)
            if found == "unknown":
                # the server is back: the kept backup undoes the write if it happened, and says it never did if not
                capsys.readouterr()
                undone = cli_main(["undo", _via(target, proxy), "--backup", doc["backup"], "--yes"])
                said = capsys.readouterr().err
                if truth[0]:
                    assert undone == 0, said
                    assert truth_of(target, new_id) == (False, 0)
                else:
                    assert undone == 2 and "never happened" in said, said
                key = f"unknown-{'written' if truth[0] else 'not-written'}"
            tally[key] = tally.get(key, 0) + 1
    finally:
        for proxy in proxies:
            proxy.close()
    print(f"{store}: {KILLS_PER_STORE} kills, seed {SEED}: {tally}")
    return tally


def test_forty_random_kills_of_postgresql_writes_leave_no_partial_write_and_no_misreported_outcome(
        pg_server, tmp_path, capsys, monkeypatch):
    url = _make_pg_store(pg_server)
    target = f"{url}?schema={PG_SCHEMA}"

    def truth(t: str, new_id: str) -> tuple[bool, int]:
        return _pg_truth(url, new_id)
    tally = _run_kills("pg", [target], truth, tmp_path, capsys, monkeypatch)
    # the kills reached every kind of outcome that matters: written and not, and COMMIT's lost answer resolved
    assert tally.get("written", 0) + tally.get("written-found-after-reconnecting", 0) > 0, tally
    assert tally.get("written-found-after-reconnecting", 0) > 0, tally
    assert tally.get("not-written", 0) > 0, tally


def test_forty_random_kills_of_sqld_writes_leave_no_partial_write_and_no_misreported_outcome(
        sqld_servers, tmp_path, capsys, monkeypatch):
    targets = [_make_sqld_store(u) for u in sqld_servers]
    tally = _run_kills("sqld", targets, _sqld_truth, tmp_path, capsys, monkeypatch)
    assert tally.get("written", 0) + tally.get("written-found-after-reconnecting", 0) > 0, tally
    assert tally.get("not-written", 0) > 0, tally


# -- the old bugs, one by one -----------------------------------------------------------------------------

def test_a_committed_write_whose_answer_is_lost_is_reported_written_and_can_be_undone(pg_server, tmp_path, capsys,
                                                                                      monkeypatch):
    """Issue 22 item 1: the COMMIT reaches the server, the answer does not reach the studio."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = _make_pg_store(pg_server)
    proxy = FaultProxy(_port(url))
    try:
        proxy.arm(Fault(on_commit=True))
        code, doc, err = _clone(_via(f"{url}?schema={PG_SCHEMA}", proxy), "lost-answer", capsys)
        assert proxy.fired
        assert _pg_truth(url, "lost-answer") == (True, SOURCE_MESSAGES)
        assert code == 5, err
        assert doc["outcome"] == "written" and doc["found_after_reconnecting"] is True
        assert Path(doc["backup"]).is_file()
        assert "Nothing was written" not in err
        # the backup names the store as the write reached it (the proxy's port): undo through the same URL
        assert cli_main(["undo", _via(f"{url}?schema={PG_SCHEMA}", proxy), "--yes"]) == 0
        assert _pg_truth(url, "lost-answer") == (False, 0)
    finally:
        proxy.close()


def test_a_dead_server_has_its_own_exit_code_and_a_write_on_it_writes_nothing(pg_server, sqld_servers, tmp_path,
                                                                              capsys, monkeypatch):
    """Issue 22 item 9: a dead server is not "bad input" (2): exit 6, for reads and writes."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for url in (_make_pg_store(pg_server) + f"?schema={PG_SCHEMA}", _make_sqld_store(sqld_servers[0])):
        proxy = FaultProxy(_port(url))
        dead = _via(url, proxy)
        proxy.close()   # nothing listens on its port any more
        code, doc, err = _clone(dead, "never", capsys)
        assert code == 6, err
        assert doc["outcome"] == "not-written" and doc["backup"] is None
        capsys.readouterr()
        assert cli_main(["threads", dead]) == 6
        assert "Traceback" not in capsys.readouterr().err


def test_a_backup_left_by_a_write_killed_before_commit_does_not_block_undo_of_the_write_before(
        pg_server, tmp_path, capsys, monkeypatch):
    """Issue 22 item 8: a real clone, then one killed before COMMIT (its backup left as a killed process leaves it):
    undo sets the second aside (its write never happened) and undoes the first."""
    import studio.store.write.backends.pg as pg_backend

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = _make_pg_store(pg_server)
    target = f"{url}?schema={PG_SCHEMA}"
    assert _clone(target, "real", capsys)[0] == 0

    class Killed(BaseException):
        """The process dies right after saving the backup, before COMMIT (no cleanup runs in a killed process)."""

    real = pg_backend.row_backup_before_commit
    frozen = []   # the backup's context, kept open as a killed process leaves it (never closed, never cleaned up)

    def killed_before_commit(*args, **kwargs):
        context = real(*args, **kwargs)
        context.__enter__()   # the backup is saved
        frozen.append(context)
        raise Killed()
    monkeypatch.setattr(pg_backend, "row_backup_before_commit", killed_before_commit)
    with pytest.raises(Killed):
        cli_main(["clone", target, "--thread", "t1", "--new-id", "interrupted", "--yes"])
    monkeypatch.setattr(pg_backend, "row_backup_before_commit", real)
    assert _pg_truth(url, "interrupted") == (False, 0)
    assert len(_backups_of("interrupted", tmp_path / "data")) == 1
    capsys.readouterr()
    assert cli_main(["undo", target, "--yes", "--json"]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["operation"] == "clone" and result["deleted"] == 1 + SOURCE_MESSAGES
    assert _pg_truth(url, "real") == (False, 0)


def test_a_libsql_write_whose_server_dies_mid_write_ends_and_never_spins(sqld_servers, tmp_path, capsys,
                                                                         monkeypatch):
    """Issue 22 item 5: the connection dies on INSERT INTO; the write ends with a sentence (a loop over a cause
    chain that names itself never ends), in a thread the test can wait for."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = _make_sqld_store(sqld_servers[1])
    proxy = FaultProxy(_port(url))
    results = []
    try:
        proxy.arm(Fault(at=3, before=True, dead=True))
        worker = threading.Thread(target=lambda: results.append(_clone(_via(url, proxy), "spin", capsys)),
                                  daemon=True)
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), "the write never ended"
        code, doc, err = results[0]
        assert code == 6 and doc["outcome"] == "not-written", err
    finally:
        proxy.close()
    assert _sqld_truth(url, "spin") == (False, 0)


def test_cause_chains_that_loop_are_walked_once():
    """The walk of an error's causes ends on an error made its own cause (issue 22's 100 % CPU spin)."""
    import httpx

    from studio.app.failures import exit_code_for
    from studio.errors import StoreError, cause_chain
    from studio.store.hrana import _reason

    error = StoreError("gone")
    error.__cause__ = error
    inner = httpx.ConnectError("refused")
    inner.__context__ = error
    assert cause_chain(inner) == [inner, error]
    assert _reason(inner) == "gone"
    assert exit_code_for(error) == 2


# -- held locks: one deadline for the whole write (issue 22 item 6) ------------------------------------------

class _Holder:
    """Another session of the server holding a lock until `release()` (or SAFETY_S, so that a bug cannot hang)."""

    SAFETY_S = 60.0

    def __init__(self, url: str, sqls: list[tuple[str, tuple]]):
        self.conn = psycopg.connect(url, autocommit=False)
        self.conn.execute(f"SET search_path = {PG_SCHEMA}")
        for sql, params in sqls:
            self.conn.execute(sql, params)
        self.released = threading.Event()
        self._timer = threading.Timer(self.SAFETY_S, self.release)
        self._timer.start()

    def release(self) -> None:
        if not self.released.is_set():
            self.released.set()
            self.conn.rollback()
            self.conn.close()
        self._timer.cancel()


def test_a_table_lock_refuses_a_postgresql_write_at_the_deadline_not_after_the_statement_timeout(
        pg_server, tmp_path, capsys, monkeypatch):
    """`LOCK TABLE … IN ACCESS EXCLUSIVE MODE` held by another session: the clone is refused (exit 3, nothing written,
    no backup) while the lock is still held — it did not wait for the lock's release nor for a statement timeout."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = _make_pg_store(pg_server)
    target = f"{url}?schema={PG_SCHEMA}"
    for table in ("mastra_messages", "mastra_threads"):
        holder = _Holder(url, [(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE", ())])
        try:
            code, _, err = _clone(target, f"locked-{table}", capsys)
            still_held = not holder.released.is_set()
        finally:
            holder.release()
        assert still_held, "the write waited for the lock's release"
        assert code == 3, err
        assert "locked by another process" in err
        assert _pg_truth(url, f"locked-{table}") == (False, 0)
        assert not _backups_of(f"locked-{table}", tmp_path / "data")


def test_successive_row_locks_share_one_deadline(pg_server, tmp_path, capsys, monkeypatch):
    """Three row locks, each released LAG s after the one before, each shorter than the write's bound but together
    longer: PostgreSQL's lock_timeout alone would wait for each in turn and write; one deadline refuses the write."""
    from studio.errors import WriteRefused
    from studio.store.write.undo import undo_write

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = _make_pg_store(pg_server)
    target = f"{url}?schema={PG_SCHEMA}"
    assert _clone(target, "row-locked", capsys)[0] == 0
    bound_ms, lag_s = 1_500, 1.0
    # the undo of that clone locks its thread row, then its messages (FOR UPDATE, one statement per row)
    with psycopg.connect(url, autocommit=True) as conn:
        messages = [r[0] for r in conn.execute(f"SELECT id FROM {PG_SCHEMA}.mastra_messages "
                                               "WHERE thread_id = 'row-locked' ORDER BY \"createdAt\"")]
    ids = ["row-locked", *messages[:2]]
    tables = ["mastra_threads", "mastra_messages", "mastra_messages"]
    holders = [_Holder(url, [(f"SELECT 1 FROM {t} WHERE id = %s FOR UPDATE", (i,))]) for t, i in zip(tables, ids,
                                                                                                       strict=True)]
    timers = [threading.Timer(lag_s * (n + 1), h.release) for n, h in enumerate(holders)]
    for timer in timers:
        timer.start()
    try:
        with pytest.raises(WriteRefused) as refused:
            undo_write(target, busy_timeout_ms=bound_ms)
        still_held = not holders[-1].released.is_set()
    finally:
        for timer in timers:
            timer.cancel()
        for holder in holders:
            holder.release()
    assert refused.value.reason == "busy"
    assert still_held, "the write waited for every lock in turn"
    assert _pg_truth(url, "row-locked") == (True, SOURCE_MESSAGES)   # nothing undone


def test_a_read_under_a_table_lock_says_locked_at_the_bound(pg_server, tmp_path, capsys, monkeypatch):
    """A command reading a table another session locks (ACCESS EXCLUSIVE) ends with "locked" (exit 3) while the lock
    is still held: it did not wait for the 60 s statement timeout to end as "bad input" (exit 2)."""
    url = _make_pg_store(pg_server)
    holder = _Holder(url, [("LOCK TABLE mastra_threads IN ACCESS EXCLUSIVE MODE", ())])
    try:
        capsys.readouterr()
        code = cli_main(["threads", f"{url}?schema={PG_SCHEMA}"])
        still_held = not holder.released.is_set()
    finally:
        holder.release()
    err = capsys.readouterr().err
    assert still_held
    assert code == 3, err
    assert "lock timeout" in err

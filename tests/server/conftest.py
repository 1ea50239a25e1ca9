"""Real database servers for the server-store tests: a throwaway PostgreSQL on 127.0.0.1 with a corpus
written by real Mastra (`@mastra/pg`) and the oracle Mastra recorded for each scenario.

`pg_corpus` (session-scoped) starts PostgreSQL with the corpus's `servers.sh pg start` in a temporary
folder (initdb, trust auth, TCP on 127.0.0.1 only), runs `gen.mjs --store pg` (one schema per
scenario) and `oracle.mjs` for each scenario, and stops the server at the end of the session. A
missing server binary, node or npm fails the tests: they never skip (`.ci/run` installs PostgreSQL).
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

SCENARIOS = ["support", "buffered", "resource", "collab", "tools", "history"]
GEN_TIMEOUT_S = 300


@dataclass
class PgCorpus:
    """A running PostgreSQL holding Mastra's corpus: URL of the server, oracles by scenario."""

    url: str
    corpus: Path
    oracles: dict[str, dict]

    def target(self, scenario: str) -> str:
        """The studio's URL of SCENARIO's schema (Mastra's PostgresStore `schemaName`)."""
        return f"{self.url}?schema={scenario}"


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
        oracles = {}
        for scenario in SCENARIOS:
            path = out / f"{scenario}.oracle.json"
            _run(["node", "oracle.mjs", scenario, str(path), "--store", "pg", "--url", url], corpus, GEN_TIMEOUT_S)
            oracles[scenario] = json.loads(path.read_text(encoding="utf-8"))
        yield PgCorpus(url=url, corpus=corpus, oracles=oracles)
    finally:
        subprocess.run(["bash", "servers.sh", "pg", "stop", str(servers)], cwd=corpus, capture_output=True,
                       timeout=120)
        shutil.rmtree(servers, ignore_errors=True)


@pytest.fixture(autouse=True)
def _private_data_folder(tmp_path, monkeypatch):
    """Row backups of PostgreSQL writes go to $XDG_DATA_HOME: a private folder per test, never the user's home."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

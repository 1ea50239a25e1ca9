"""Real Mastra for the interop tests: one installed copy of ../shared/mastra-corpus per package-lock.

`mastra_corpus` (session-scoped) copies the corpus (scripts + package.json + package-lock.json)
into a cache folder keyed by the hash of those files (~/.cache/memory-studio, or
$MEMORY_STUDIO_CACHE, or the temp folder when the home folder is not writable) and runs `npm ci`
there once; later runs reuse it. The tests fail, not skip, when node or npm is missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import libsql
import pytest

from tests.conftest import SHARED

CORPUS_SRC = SHARED / "mastra-corpus"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
NODE_TIMEOUT_S = 120


def _corpus_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in CORPUS_SRC.iterdir() if p.is_file()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _cache_root() -> Path:
    for candidate in (os.environ.get("MEMORY_STUDIO_CACHE"), Path.home() / ".cache" / "memory-studio",
                      Path(tempfile.gettempdir()) / "memory-studio-cache"):
        if not candidate:
            continue
        root = Path(candidate)
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = root / f".probe-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
            return root
        except OSError:
            continue
    raise RuntimeError("no writable cache folder for the Mastra corpus")


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def mastra_corpus() -> Path:
    """Return a folder holding the Mastra corpus scripts with `npm ci` done (shared by the session)."""
    return install_corpus()


def install_corpus() -> Path:
    """Return the cached, `npm ci`-ed Mastra corpus with our scripts beside it (fails the test if impossible).

    Also used outside pytest by the scripts that regenerate expected data (tests/interop/regenerate.py).
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.fail("The interop tests run real Mastra and need node (>= 20) and npm on PATH "
                    f"(found node={node}, npm={npm}). Install them (Debian: apt-get install nodejs npm).")
    if not (CORPUS_SRC / "package-lock.json").exists():
        pytest.fail(f"{CORPUS_SRC} is missing: is ../shared beside the repository (or MEMORY_STUDIO_SHARED set)?")
    root = _cache_root()
    dest = root / f"mastra-corpus-{_corpus_hash()}"
    marker = dest / ".npm-ci-done"
    with _locked(root / f"{dest.name}.lock"):
        if not marker.exists():
            work = root / f"{dest.name}.tmp-{os.getpid()}"
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(CORPUS_SRC, work)
            for path in [work, *work.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work,
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                shutil.rmtree(work, ignore_errors=True)
                pytest.fail(f"npm ci failed in a copy of {CORPUS_SRC}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
            (work / ".npm-ci-done").write_text(done.stdout)
            shutil.rmtree(dest, ignore_errors=True)
            work.rename(dest)
        for script in SCRIPTS.glob("*.mjs"):  # our own helpers must sit beside node_modules to import Mastra
            shutil.copyfile(script, dest / script.name)
    return dest


def run_node(corpus: Path, script: str, *args: str, check: bool = True, clock: bool = False) -> dict:
    """Run `node SCRIPT ARGS` in CORPUS and return the JSON it prints (last JSON document of stdout).

    CLOCK runs it under the corpus's virtual clock (`node --import ./clock.mjs`, its README): every Date
    reading advances 1 ms from 2026-11-01, so timestamps follow call order instead of the wall clock and
    two runs of one seed write the same rows and prompt log whatever the machine's load. Without it the
    instant scripted model puts a reply and the next input in one millisecond now and then (Mastra merges
    such replies), which is what made prompt-log comparisons depend on generation timing.
    Raises AssertionError (with node's output) when node fails and CHECK is set."""
    # stdout goes to a file: the scripts end with process.exit(), which cuts output to a pipe at 128 KiB
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as out:
        command = ["node", *(["--import", "./clock.mjs"] if clock else []), script, *map(str, args)]
        done = subprocess.run(command, cwd=corpus, stdout=out, stderr=subprocess.PIPE,
                              text=True, timeout=NODE_TIMEOUT_S)
        out.seek(0)
        done.stdout = out.read()
    lines = done.stdout.splitlines()
    if not (check and done.returncode != 0):
        for i, line in enumerate(lines):
            if line.startswith("{"):
                try:
                    return json.loads("\n".join(lines[i:]))
                except ValueError:
                    continue
    raise AssertionError(f"node {script} {' '.join(map(str, args))} failed ({done.returncode}):\n"
                         f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def dump_tables(path: Path) -> dict[str, dict[str, dict]]:
    """Return {table: {id: {column: value}}} for every mastra_* table (read-only; JSONB as 'jsonb:' + text)."""
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        out: dict[str, dict[str, dict]] = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                     "AND name GLOB 'mastra_*'").fetchall():
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")').fetchall()]
            select = ", ".join(f"CASE WHEN typeof(\"{c}\") = 'blob' THEN 'jsonb:' || json(\"{c}\") ELSE \"{c}\" END"
                               for c in cols)
            rows = conn.execute(f'SELECT {select} FROM "{table}"').fetchall()
            out[table] = {str(r[0]): dict(zip(cols, r, strict=True)) for r in rows}
        return out
    finally:
        conn.close()


def changes(before: dict, after: dict) -> tuple[dict, dict, list]:
    """Return ({table: [added rows]}, {(table, id, column): new value}, [(table, id) removed])."""
    added, changed = {}, {}
    for table, rows in after.items():
        for key, row in rows.items():
            old = before.get(table, {}).get(key)
            if old is None:
                added.setdefault(table, []).append(row)
            else:
                changed.update({(table, key, col): val for col, val in row.items() if old.get(col) != val})
    removed = [(t, k) for t, rows in before.items() for k in rows if k not in after.get(t, {})]
    return added, changed, removed


def file_state(path: Path) -> tuple:
    """Return (sha256 of the main file, sha256 of the -wal or None): what must not change on a refusal."""
    wal = Path(str(path) + "-wal")
    return (hashlib.sha256(path.read_bytes()).hexdigest(),
            hashlib.sha256(wal.read_bytes()).hexdigest() if wal.exists() else None)

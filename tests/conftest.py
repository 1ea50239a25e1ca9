"""Shared test fixtures: private copies of the real Mastra fixture databases and their oracles."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

#: Fixtures every test directory may ask for by name, without importing them: `fake_llm` (a local fake
#: model server, no host but loopback reachable), `memory_keyring` and `no_keyring` (the OS keyring
#: replaced for one test).
pytest_plugins = ["tests.fake_llm", "tests.fake_keyring"]

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MEMORY_STUDIO_SHARED", REPO.parent / "shared"))
FIXTURES = SHARED / "fixtures" / "mastra"
FIXTURE_NAMES = ["support", "buffered", "resource", "collab", "tools", "history", "live/support"]


def pytest_configure(config):
    """Stop the run at once, with one sentence, when the real Mastra fixtures are not where the tests read them.

    Several test modules read an oracle at import; without this a fresh clone outside the project's
    folder got a FileNotFoundError traceback per module and a collection that stopped part way.
    """
    if not FIXTURES.is_dir():
        raise pytest.UsageError(f"{FIXTURES} is missing: the tests read the real Mastra fixtures there; put the "
                                "project's shared/ folder beside the repository or set MEMORY_STUDIO_SHARED to it")


@pytest.fixture(autouse=True)
def _private_data_folder(tmp_path, monkeypatch):
    """Row backups (every write saves one) and own-writes.json go to $XDG_DATA_HOME, the result cache
    (studio.app.result_cache) to $MEMORY_STUDIO_CACHE_DIR: private folders per test, never the user's home."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(tmp_path / "cache"))


def copy_fixture(name: str, dest_dir: Path) -> Path:
    """Copy fixture NAME (db, -wal, -shm) into DEST_DIR, writable; return the copy's db path."""
    src = FIXTURES / f"{name}.db"
    if not src.exists():
        raise FileNotFoundError(f"fixture {src} is missing: is ../shared beside the repository?")
    dest_dir.mkdir(parents=True, exist_ok=True)
    dst = dest_dir / f"{name.replace('/', '_')}.db"
    for ext in ("", "-wal", "-shm"):
        s = Path(str(src) + ext)
        if s.exists():
            d = Path(str(dst) + ext)
            shutil.copyfile(s, d)
            d.chmod(0o644)
    return dst


def make_plain_sqlite(path: Path) -> Path:
    """Write a valid SQLite database at PATH with one table and no Mastra tables; return PATH."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    return path


def damage_table_root(path: Path, table: str = "mastra_messages") -> Path:
    """Damage the root page of TABLE in the database copy at PATH, as a torn disk write would; return PATH.

    The copy's -wal is checkpointed into it first (its own copy: the fixture is never touched), then
    the first bytes of the table's root page (an interior page on every fixture) are overwritten with
    a leaf-page header claiming 65,535 free bytes: SQLite still opens the file and reads every other
    table and index, but a read of a row through that page reports "database disk image is malformed".
    """
    import sqlite3
    import struct

    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    finally:
        conn.close()
    with open(path, "r+b") as f:
        page_size = struct.unpack(">H", f.read(18)[16:18])[0]
        page_size = 65536 if page_size == 1 else page_size
        f.seek((root - 1) * page_size)
        assert f.read(1) == b"\x05", "expected an interior table page at the root"
        f.seek((root - 1) * page_size)
        f.write(b"\x0d\xff\xff\x00")
    return path


def load_oracle(name: str) -> dict:
    """Return the parsed `<name>.oracle.json` Mastra wrote for fixture NAME."""
    return json.loads((FIXTURES / f"{name}.oracle.json").read_text(encoding="utf-8"))


@pytest.fixture
def fixture_db(tmp_path):
    """Factory: fixture_db("support") -> Path of a private copy of that fixture."""

    def make(name: str) -> Path:
        return copy_fixture(name, tmp_path / "fx")

    return make

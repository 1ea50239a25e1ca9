"""Bad files get a sentence that names the problem and what to do, fast: never a hang or a driver message.

Each case builds the bad file from a real fixture copy; the expected words come from the problem
itself (the file that is wrong and the remedy), not from SQLite's generic error.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from studio.errors import StoreError
from studio.store import open_store
from tests.conftest import FIXTURES, REPO

HANG_LIMIT = 60  # s: a command that has not answered by then is hung (a FIFO blocks forever)


def run_cli(*args: str, user: int | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    return subprocess.run([*prefix, sys.executable, "-m", "studio", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=HANG_LIMIT)


def open_error(path) -> str:
    with pytest.raises(StoreError) as info, open_store(path) as store:
        store.list_threads(with_counts=True)
        for key in store.om_lookup_keys():
            store.om_history(key["lookupKey"])
    return str(info.value)


def test_a_fifo_named_memory_db_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "memory.db"
    os.mkfifo(fifo)
    done = run_cli("inspect", str(fifo))  # before: blocked in open() until the timeout
    assert done.returncode == 2
    assert "named pipe (FIFO)" in done.stderr and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_fifo_beside_the_database_is_refused(fixture_db):
    path = fixture_db("support")
    Path(str(path) + "-wal").unlink()
    os.mkfifo(str(path) + "-wal")
    message = open_error(path)
    assert "support.db-wal" in message and "named pipe (FIFO)" in message and "Move it away" in message


def test_a_symlink_loop_is_named_as_such(tmp_path):
    a, b = tmp_path / "memory.db", tmp_path / "other.db"
    a.symlink_to(b)
    b.symlink_to(a)
    message = open_error(a)
    assert "symbolic link that loops" in message and "point the link at the real memory.db" in message
    assert "No such file" not in message


def hot_journal_copy(tmp_path) -> Path:
    """A rollback-journal database whose writer died mid-transaction (its -journal is hot)."""
    path = tmp_path / "memory.db"
    shutil.copyfile(FIXTURES / "history.db", path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
    script = ("import os, sqlite3, sys\n"
              "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
              "c.execute('PRAGMA cache_size = 1')\n"
              "c.execute('BEGIN')\n"
              "c.execute(\"UPDATE mastra_messages SET content = content || ' '\")\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)
    assert Path(str(path) + "-journal").stat().st_size > 0
    return path


def test_a_hot_rollback_journal_is_explained(tmp_path):
    path = hot_journal_copy(tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    message = open_error(path)
    assert "memory.db-journal" in message and "did not finish" in message and "roll" in message
    assert "readonly database" not in message
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # the studio rolled nothing back itself


def foreign_wal(tmp_path, page_size: int) -> Path:
    """A fixture copy with the -wal of another database (pages of PAGE_SIZE bytes) beside it."""
    other = tmp_path / "other" / "other.db"
    other.parent.mkdir()
    conn = sqlite3.connect(other)
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    conn.commit()
    path = tmp_path / "memory.db"
    shutil.copyfile(FIXTURES / "collab.db", path)
    shutil.copyfile(str(other) + "-wal", str(path) + "-wal")  # copied while the other app has it open
    conn.close()
    return path


@pytest.mark.parametrize("page_size", [1024, 4096])
def test_the_wal_of_another_database_is_named(tmp_path, page_size):
    path = foreign_wal(tmp_path, page_size)
    message = open_error(path)
    assert "memory.db-wal" in message and "move" in message.lower()
    assert "disk I/O error" not in message
    if page_size == 1024:  # collab.db's pages are 4096 bytes: the -wal cannot be its own
        assert "belongs to another database" in message and "1,024" in message


def test_a_read_only_folder_that_cannot_hold_the_shm_is_explained():
    """As an unprivileged user (root may write anywhere): -wal with rows, no -shm, folder read-only."""
    base = Path(tempfile.mkdtemp(prefix="studio-ro-"))
    try:
        base.chmod(0o755)
        folder = base / "ro"
        folder.mkdir()
        for ext in ("", "-wal"):
            shutil.copyfile(str(FIXTURES / "live" / "support.db") + ext, str(folder / "memory.db") + ext)
            (folder / ("memory.db" + ext)).chmod(0o644)
        folder.chmod(0o555)
        done = run_cli("inspect", str(folder / "memory.db"), user=65534 if os.geteuid() == 0 else None)
        assert done.returncode == 4, done.stderr  # the documented I/O exit: a read-only folder
        assert "memory.db-shm" in done.stderr and "read-only" in done.stderr and "Copy memory.db and memory.db-wal" \
            in done.stderr
        assert "unable to open database file" not in done.stderr
        assert not (folder / "memory.db-shm").exists()
    finally:
        (base / "ro").chmod(0o755)
        shutil.rmtree(base)


def test_blobs_in_text_and_integer_columns_are_read_not_crashed_on(fixture_db):
    path = fixture_db("support")
    with sqlite3.connect(path) as conn:
        thread_id = conn.execute("SELECT thread_id FROM mastra_messages GROUP BY thread_id "
                                 "ORDER BY COUNT(*) DESC LIMIT 1").fetchone()[0]
        conn.execute("UPDATE mastra_threads SET \"createdAt\" = X'32303236', \"updatedAt\" = X'00FF'")
        conn.execute("UPDATE mastra_messages SET \"createdAt\" = X'3132' WHERE rowid % 2 = 0")
        conn.execute("UPDATE mastra_observational_memory SET \"generationCount\" = X'00FF', "
                     "\"pendingMessageTokens\" = X'3132'")
    for args in (["inspect", str(path)], ["timeline", str(path), "--thread", thread_id],
                 ["whatif", str(path), "--thread", thread_id], ["tokens", str(path), thread_id]):
        done = run_cli(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert "unexpected error" not in done.stderr and "Traceback" not in done.stderr
    with open_store(path) as store:
        thread = store.get_thread(thread_id)
        assert thread.created_at == "2026"          # the blob's bytes, read as the text they spell
        assert thread.updated_at == "\x00\ufffd"    # 0xFF is not UTF-8
        record = store.om_current(f"thread:{thread_id}") or next(iter(store.om_current_all().values()))
        assert record.generation_count == 0         # not a number: the default, as get_int documents

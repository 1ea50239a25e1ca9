"""Backups under concurrency, kills and the frozen app: unique names, no leftover partial file, the
backup child started through our own entry point when `sys.executable` is the app (PyInstaller).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from studio.store import open_store
from studio.store.write import file_backup as backup_module
from studio.store.write.file_backup import backup_database, child_command, remove_stale_partials
from studio.store.writes import WriteSession

ROOT = Path(__file__).resolve().parents[2]
NAME = r"memory\.backup-\d{8}T\d{6}Z(-\d+)?\.db"


def partials(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".partial" in p.name)


def test_a_name_taken_while_the_copy_runs_gets_the_next_number(fixture_db, monkeypatch):
    # Another process (same second) links the name this backup chose, between the copy and the link.
    path = fixture_db("support")
    real_link, taken = os.link, []

    def link(src, dst):
        if not taken:
            Path(dst).write_bytes(b"the other process's backup")
            taken.append(Path(dst))
        return real_link(src, dst)

    monkeypatch.setattr(backup_module.os, "link", link)
    made = backup_database(path)
    assert taken and made != taken[0] and made.name == taken[0].name.replace(".db", "-2.db")
    assert taken[0].read_bytes() == b"the other process's backup"  # never overwritten
    with open_store(made) as store:
        assert store.get_thread("support-1") is not None
    assert partials(path.parent) == []


def test_concurrent_backups_all_succeed_with_distinct_names(fixture_db, tmp_path):
    path = fixture_db("support")
    n = 4
    barrier, made, errors = threading.Barrier(n), [], []

    def one(folder):
        barrier.wait()
        try:
            made.append(WriteSession(backup_dir=folder, full_backup=True).copy_once(path))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(tmp_path,)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(made)) == n and all(p.parent == tmp_path and p.exists() for p in made)
    assert partials(tmp_path) == []


def _big_database(path: Path, megabytes: int) -> None:
    """A SQLite file of MEGABYTES of random blobs: its backup takes long enough to kill the parent during it."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE mastra_blobs (b BLOB)")
    con.executemany("INSERT INTO mastra_blobs VALUES (randomblob(1048576))", [()] * megabytes)
    con.commit()
    con.close()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the backup child")
def test_killing_the_studio_during_a_backup_leaves_no_partial_file(tmp_path):
    path = tmp_path / "memory.db"
    _big_database(path, 300)
    code = f"from studio.store.write.file_backup import backup_database; backup_database({str(path)!r})"
    parent = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)})
    child = None
    deadline = time.monotonic() + 120  # a bound on the wait, not a speed assertion
    while time.monotonic() < deadline and not (child and partials(tmp_path)):
        child = child or next(iter(_children(parent.pid)), None)
        time.sleep(0.005)
    assert child is not None and partials(tmp_path), "the backup child never started its copy"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    while time.monotonic() < deadline and _running(child):
        time.sleep(0.05)
    assert not _running(child)
    assert partials(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]  # no backup either: nobody asked for it


def test_partials_of_dead_processes_are_removed_by_the_next_backup(fixture_db):
    path = fixture_db("support")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    stale = path.parent / f".memory.backup.db.partial-{dead_pid}-12345"
    stale_journal = path.parent / f".memory.backup.db.partial-{dead_pid}-12345-journal"
    live = path.parent / f".memory.backup.db.partial-{os.getppid()}-1"
    for p in (stale, stale_journal, live):
        p.write_bytes(b"x")
    made = backup_database(path)
    assert not stale.exists() and not stale_journal.exists()
    assert live.exists()  # its process still runs: maybe still copying
    assert made.exists()
    assert remove_stale_partials(path.parent) == []


@pytest.fixture
def frozen_app(tmp_path, monkeypatch):
    """Make this process look like the PyInstaller app: sys.frozen, and sys.executable runs our entry point."""
    app = tmp_path / "memory-studio"
    app.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m studio \"$@\"\n")
    app.chmod(0o755)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(app))
    return app


def test_the_frozen_app_backs_up_through_its_own_entry_point(fixture_db, frozen_app):
    path = fixture_db("support")
    assert child_command(["a", "b", "0", "1", "9"])[:3] == [str(frozen_app), "--studio-child", "backup"]
    made = backup_database(path)
    with open_store(made) as store, open_store(path) as original:
        assert store.message_counts() == original.message_counts()
    assert partials(path.parent) == []


def test_the_frozen_app_child_reports_like_the_python_child(fixture_db, tmp_path):
    path = fixture_db("support")
    out = tmp_path / "copy.db"
    done = subprocess.run([sys.executable, "-m", "studio", "--studio-child", "backup", str(path), str(out), "0",
                           str(os.getpid()), "9"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["integrity"] == ["ok"]
    with open_store(path) as store:
        assert report["counts"]["mastra_threads"] == len(store.list_threads())

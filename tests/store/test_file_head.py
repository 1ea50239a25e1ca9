"""Reading a database's header never drops this process's SQLite locks on it (studio.store.file_head).

POSIX drops every advisory lock a process holds on a file when any descriptor of that file is closed in that
process. The test holds a WAL read lock through a real SQLite connection, reads the header the way the studio
does, and asks another process (a writer that closes its connection) whether it could take the file for itself:
a writer that finds nobody else there checkpoints and deletes the -wal on close. With the lock kept, the -wal
stays and the reader still sees the writer's later commits."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

from studio.app.result_cache import file_stamp
from studio.store.connection import check_file, is_quiescent_wal
from studio.store.file_head import read_head
from studio.store.target import parse_target
from studio.ui.watcher import file_problem

WRITER = r"""
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("INSERT INTO t VALUES (?)", (sys.argv[2],))
c.close()
"""


def _make(path) -> None:
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=wal")
    c.execute("CREATE TABLE t (v TEXT)")
    c.close()


def _write(path, value: str) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(path), value], check=True, timeout=60)


def test_reading_the_header_keeps_the_readers_lock_so_a_closing_writer_leaves_the_wal(tmp_path):
    path = tmp_path / "memory.db"
    _make(path)
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (0,)   # connected: holds its WAL lock
        _write(path, "first")
        assert os.path.exists(f"{path}-wal")   # another connection is open: the writer left the -wal
        # every way the studio looks at the file's first bytes, in this process, beside the open connection
        check_file(parse_target(str(path)))
        assert not is_quiescent_wal(path)
        assert file_problem(str(path)) is None
        assert file_stamp(path) is not None
        assert read_head(path, 16) == b"SQLite format 3\x00"
        _write(path, "second")
        assert os.path.exists(f"{path}-wal")   # the reader's lock survived: the writer still was not alone
        assert reader.execute("SELECT v FROM t ORDER BY rowid").fetchall() == [("first",), ("second",)]
        _write(path, "third")
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (3,)
    finally:
        reader.close()


def test_a_plain_open_and_close_would_have_dropped_the_lock(tmp_path):
    """The hazard itself, so the test above cannot pass for another reason: the same steps with a plain
    open()/close() of the file let the closing writer delete the -wal."""
    path = tmp_path / "memory.db"
    _make(path)
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (0,)
        _write(path, "first")
        assert os.path.exists(f"{path}-wal")
        with open(path, "rb") as fh:
            fh.read(16)
        _write(path, "second")
        assert not os.path.exists(f"{path}-wal")
    finally:
        reader.close()


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "memory.db"
    os.mkfifo(fifo)
    try:
        read_head(fifo, 16)
    except OSError as exc:
        assert "not a regular file" in str(exc)
    else:
        raise AssertionError("a FIFO was read")

"""A read never reports a healthy file as corrupt while an app opens, commits and closes it in a loop.

Between two sessions of such an app the WAL file is quiescent (no -wal), so the store opens it
immutable (no locks, no files created). The app's next session checkpoints into the main file when
it closes; an immutable reader that overlaps it can see a torn file and SQLite reports it as
malformed. The store verifies each immutable read against the file and reads again when the file
changed. First principles: the file is healthy throughout (every writer transaction commits and
`PRAGMA integrity_check` says ok at the end), so any failed read is a false error.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from studio.errors import StoreError
from studio.store import open_store

READS = 1000
SCRATCH_MESSAGES = 10   # messages per writer session
IDLE_SECONDS = 0.02     # the writer's pause between sessions

WRITER = r"""
import os, sqlite3, sys, time
path, stop = sys.argv[1], sys.argv[2]
n = 0
while not os.path.exists(stop):
    conn = sqlite3.connect(path, timeout=30)
    conn.execute("PRAGMA cache_size = 50")
    with conn:  # a turn: the app's previous scratch messages go, new ones (B-tree pages split, freed) come
        thread, resource = conn.execute('SELECT id, "resourceId" FROM mastra_threads ORDER BY id LIMIT 1').fetchone()
        conn.execute("DELETE FROM mastra_messages WHERE id LIKE 'writer-%'")
        for k in range(int(sys.argv[3])):
            text = ('{"format":2,"parts":[{"type":"text","text":"%s"}]}' % (str(n) * (500 + 97 * k))[:6000])
            conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                         "VALUES (?, ?, ?, 'user', 'v2', ?, ?)",
                         (f"writer-{n}-{k}", thread, text, "2030-01-01T00:00:%02d.000Z" % (k % 60), resource))
        conn.execute('UPDATE mastra_threads SET "updatedAt" = ?', ("2026-01-01T00:00:%02d.000Z" % (n % 60),))
    conn.close()  # the last connection checkpoints into the main file and deletes the -wal
    n += 1
    time.sleep(float(sys.argv[4]))  # the app idles between turns: the file is quiescent then
print(n)
"""


def test_no_false_corruption_errors_beside_a_writer_loop(fixture_db, tmp_path):
    path = fixture_db("support")
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(stop), str(SCRATCH_MESSAGES),
                               str(IDLE_SECONDS)], stdout=subprocess.PIPE, text=True)
    errors: list[str] = []
    immutable_reads = 0
    try:
        for _ in range(READS):
            try:
                with open_store(path) as store:
                    immutable_reads += store.backend.immutable
                    threads = store.list_threads(with_counts=True)
                    store.list_messages(threads[0].id)
                    store.om_current_all()
                    assert len(threads) == 6
            except StoreError as exc:
                errors.append(str(exc))
            time.sleep(0.005)  # separate runs (the CLI): no reader keeps the -wal alive in between
    finally:
        stop.touch()
        commits = int(writer.communicate(timeout=60)[0].strip() or 0)
    assert writer.returncode == 0
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # the race was exercised: the writer committed throughout and many reads found the file quiescent
    assert commits > 50 and immutable_reads >= 20, (commits, immutable_reads)
    assert errors == [], f"{len(errors)} false errors in {READS} reads: {errors[:3]}"


def writer_session(path, stop) -> None:
    """Run exactly one session of WRITER (open, 40 scratch messages in, half the others out, commit,
    checkpoint into the main file, close)."""
    script = WRITER.replace("while not os.path.exists(stop):", "for _ in range(1):").replace(
        "WHERE id LIKE 'writer-%'", "WHERE id LIKE 'writer-%' OR rowid % 2 = 0")
    subprocess.run([sys.executable, "-c", script, str(path), str(stop), "40", "0"], check=True, capture_output=True)


class WriteDuringRead:
    """A connection whose first statement is interrupted by a whole writer session (between its
    execute and its fetchall): the statement started on the old file and finishes on the new one."""

    def __init__(self, conn, write):
        self._conn, self._write = conn, write

    def execute(self, *args):
        cursor = self._conn.execute(*args)
        write, self._write = self._write, None
        if write is None:
            return cursor
        real_fetchall = cursor.fetchall

        class Cursor:
            description = cursor.description

            def fetchall(self):
                write()
                return real_fetchall()

        return Cursor()

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_a_writer_session_in_the_middle_of_an_immutable_read_is_not_reported_as_corrupt(fixture_db, tmp_path):
    """Expected: the rows a fresh connection reads once the writer is done (the file is healthy)."""
    path = fixture_db("support")
    Path(str(path) + "-wal").unlink()  # nobody has the file open: quiescent
    conn = sqlite3.connect(path)
    thread_id = conn.execute("SELECT thread_id FROM mastra_messages GROUP BY thread_id "
                             "ORDER BY COUNT(*) DESC LIMIT 1").fetchone()[0]
    conn.close()
    with open_store(path) as store:
        assert store.backend.immutable
        store.backend.conn = WriteDuringRead(store.backend.conn, lambda: writer_session(path, tmp_path / "stop"))
        ours = [m.id for m in store.list_messages(thread_id)]
    conn = sqlite3.connect(path)
    truth = [r[0] for r in conn.execute('SELECT id FROM mastra_messages WHERE thread_id = ? ORDER BY "createdAt"',
                                        (thread_id,))]
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert sum(1 for m in truth if m.startswith("writer-")) == 40
    assert ours == truth

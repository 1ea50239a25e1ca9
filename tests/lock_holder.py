"""Another process holding a SQLite file's lock, for the lock-wait tests of the store and the studio.

The holder is a separate process using Python's sqlite3 (another SQLite library than the studio's
libSQL: POSIX locks are per process, so an in-process holder of another library would not be seen,
and closing its file would drop our locks). It holds the lock until `release`, so a test decides
when the wait ends: no timing.

KIND says which file and which lock:
* "rollback-journal": the file in journal_mode DELETE, the holder in BEGIN EXCLUSIVE (an agent in the
  middle of a write: no other process may read or write);
* "wal": the file in WAL mode, the holder in BEGIN IMMEDIATE (an agent's write transaction: readers go
  on, another writer waits);
* "reader": the file in journal_mode DELETE, the holder in a read transaction (a SHARED lock: a write
  may begin, but its COMMIT waits until the reader lets go).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

__all__ = ["KINDS", "copy_for", "hold_lock", "release"]

KINDS = ("rollback-journal", "wal", "reader")

_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
kind = sys.argv[2]
if kind == "reader":
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
else:
    conn.execute("BEGIN EXCLUSIVE" if kind == "rollback-journal" else "BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def copy_for(fixture_db, kind: str, name: str = "support") -> Path:
    """A private copy of fixture NAME in the journal mode KIND needs (WAL for "wal", DELETE otherwise)."""
    path = fixture_db(name)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        mode = "wal" if kind == "wal" else "delete"
        assert conn.execute(f"PRAGMA journal_mode={mode}").fetchone()[0] == mode
    finally:
        conn.close()
    return path


def hold_lock(path, kind: str = "rollback-journal") -> subprocess.Popen:
    """Start another process that holds PATH's lock of KIND (see the module) until `release`; return it
    once the lock is held."""
    assert kind in KINDS, kind
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(path), kind], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def release(holder: subprocess.Popen) -> None:
    """Let HOLDER roll back and exit (waits for it)."""
    if holder.poll() is None:
        holder.stdin.write("\n")
        holder.stdin.flush()
    holder.wait(timeout=60)
    holder.stdin.close()
    holder.stdout.close()

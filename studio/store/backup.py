"""Back up a memory.db with SQLite's online backup, verified before it is handed back.

The copy is made by SQLite's backup API (`sqlite3.Connection.backup`, all pages in one step, so
it is one consistent snapshot even while a Mastra app writes the file; rows that live only in the
-wal are included). It runs in a SUBPROCESS: the studio itself reads with libSQL, and two SQLite
libraries in one process would each hold their own POSIX locks on the same file, and closing
either could silently drop the other's locks. The source is opened read-only (immutable when no
process has it open, see `studio.store.connection.is_quiescent_wal`), so the user's main file and
-wal are never changed by a backup. (`VACUUM INTO` was not used: it rebuilds the file instead of
copying its pages, and libSQL exposes no backup API.)

The copy is written under a temporary name, checked with `PRAGMA integrity_check`, and only then
renamed to its final name; an existing file is never overwritten.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from studio.errors import StoreError
from studio.store.connection import check_file, is_quiescent_wal, parse_location
from studio.store.write.transaction import WRITE_LOCK_WAIT_MS  # the one lock-wait bound of every write

__all__ = ["backup_database", "default_backup_path", "BACKUP_TIMEOUT_S"]

#: Longest a backup may take before it is abandoned (s): ~1 GB databases copy in seconds.
BACKUP_TIMEOUT_S = 1800

_SCRIPT = r"""
import json, sqlite3, sys, urllib.parse
src, dst, immutable, lock_wait_s = sys.argv[1], sys.argv[2], sys.argv[3] == "1", float(sys.argv[4])
uri = "file:" + urllib.parse.quote(src, safe="/:~-._ ") + "?mode=ro" + ("&immutable=1" if immutable else "")
source = sqlite3.connect(uri, uri=True, timeout=lock_wait_s)
target = sqlite3.connect(dst)
try:
    source.backup(target)
finally:
    source.close()
check = [r[0] for r in target.execute("PRAGMA integrity_check").fetchall()]
tables = [r[0] for r in target.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'mastra_*'").fetchall()]
counts = {t: target.execute('SELECT count(*) FROM "%s"' % t.replace('"', '""')).fetchone()[0] for t in tables}
target.close()
print(json.dumps({"integrity": check, "counts": counts}))
"""


def default_backup_path(path: Path, now: datetime | None = None) -> Path:
    """Return `<dir>/<stem>.backup-<UTC YYYYmmddTHHMMSSZ>.db` beside PATH, numbered (-2, -3…) if taken."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    base = path.with_name(f"{path.stem}.backup-{stamp}")
    candidate, n = Path(f"{base}.db"), 1
    while candidate.exists():
        n += 1
        candidate = Path(f"{base}-{n}.db")
    return candidate


def backup_database(path: str | os.PathLike[str], dest: str | os.PathLike[str] | None = None) -> Path:
    """Copy the database at PATH (path or `file:` URL) to DEST with SQLite's online backup; return DEST.

    DEST defaults to `default_backup_path(PATH)` (beside the file). The copy is verified with
    `PRAGMA integrity_check` before it gets its final name. Raises StoreError when PATH is not a
    readable SQLite file, DEST already exists or its folder is not writable, or the backup or its
    verification fails (no partial file is left behind). The source's main file and -wal are not
    changed.
    """
    location = parse_location(path)
    check_file(location)
    source = location.path.resolve()
    target = Path(dest).expanduser() if dest is not None else default_backup_path(source)
    if target.exists():
        raise StoreError(f"Will not overwrite {target}: choose another backup file name.")
    if not target.parent.is_dir():
        raise StoreError(f"Cannot write the backup: {target.parent} is not a folder.")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}-{time.monotonic_ns()}")
    immutable = "1" if is_quiescent_wal(source) else "0"
    try:
        try:
            done = subprocess.run([sys.executable, "-I", "-c", _SCRIPT, str(source), str(partial), immutable,
                                   str(WRITE_LOCK_WAIT_MS / 1000)],
                                  capture_output=True, text=True, timeout=BACKUP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise StoreError(f"Backing up {source} failed: {exc}") from exc
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
            raise StoreError(f"Backing up {source} failed: {last}")
        try:
            report = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as exc:
            raise StoreError(f"Backing up {source} failed: the backup process gave no report") from exc
        if report.get("integrity") != ["ok"]:
            raise StoreError(f"The backup of {source} failed its integrity check: {'; '.join(report.get('integrity', []))[:500]}")
        try:
            os.link(partial, target)  # like a rename, but fails instead of replacing a file made meanwhile
        except FileExistsError as exc:
            raise StoreError(f"Will not overwrite {target}: it appeared while the backup was made.") from exc
        except OSError:
            if target.exists():
                raise StoreError(f"Will not overwrite {target}: it appeared while the backup was made.")
            os.replace(partial, target)
        return target
    finally:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm"), Path(f"{partial}-journal")):
            try:
                leftover.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                pass

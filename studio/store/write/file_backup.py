"""Back up a memory.db with SQLite's online backup, verified before it is handed back.

The copy is made by SQLite's backup API (`sqlite3.Connection.backup`, all pages in one step, so
it is one consistent snapshot even while a Mastra app writes the file; rows that live only in the
-wal are included). It runs in a SUBPROCESS: the studio itself reads with libSQL, and two SQLite
libraries in one process would each hold their own POSIX locks on the same file, and closing
either could silently drop the other's locks. The source is opened read-only (immutable when no
process has it open, see `studio.store.connection.is_quiescent_wal`), so the user's main file and
-wal are never changed by a backup. (`VACUUM INTO` was not used: it rebuilds the file instead of
copying its pages, and libSQL exposes no backup API.)

The copy is written under a hidden temporary name beside its destination
(`.NAME.partial-PID-N`), checked with `PRAGMA integrity_check`, and only then linked to its
final name; an existing file is never overwritten. Backup names are unique: when another process
takes the chosen name meanwhile (two writes in the same second), the next free number is used.
No partial file outlives its backup: the child removes it when it fails, is interrupted, or sees
that the studio process that started it has gone (checked after the copy and after the check),
and every
backup first removes the partial files of processes that no longer run.

In the PyInstaller app `sys.executable` is the app itself, so the child is started as
`memory-studio --studio-child backup …` (see `studio.paths.CHILD_FLAG`) instead of `python -I -c`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

from studio.errors import StoreError
from studio.store.connection import (
    check_file,
    is_quiescent_wal,
    long_path_refusal,
    read_only_folder_refusal,
    too_long_for_sqlite,
)
from studio.store.target import file_target
from studio.store.write.tx import WRITE_LOCK_WAIT_MS  # the one lock-wait bound of every write

__all__ = [
    "BACKUP_TIMEOUT_S",
    "backup_database",
    "child_command",
    "default_backup_path",
    "remove_stale_partials",
    "run_child",
]

#: Longest a backup may take before it is abandoned (s): ~1 GB databases copy in seconds.
BACKUP_TIMEOUT_S = 1800

#: The child's program (stdlib only: it runs with `python -I`). argv: SRC DST IMMUTABLE PARENT_PID LOCK_WAIT_S.
_SCRIPT = r"""
import json, os, signal, sqlite3, sys, urllib.parse
src, dst, immutable, parent = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
lock_wait_s = float(sys.argv[5])

def _stop(signum, frame):
    raise SystemExit(128 + signum)

for name in ("SIGTERM", "SIGHUP"):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), _stop)

def _check_parent():
    if os.getppid() != parent:
        raise SystemExit("the studio process that asked for this backup has gone")

try:
    quoted = urllib.parse.quote(os.fsencode(src), safe="/:~-._ ")  # a name's bytes, UTF-8 or not
    uri = "file:" + quoted + "?mode=ro" + ("&immutable=1" if immutable else "")
    source = sqlite3.connect(uri, uri=True, timeout=lock_wait_s)
    target = sqlite3.connect(dst)
    try:
        source.backup(target)  # one step: one consistent snapshot
    finally:
        source.close()
    _check_parent()
    try:
        check = [r[0] for r in target.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.OperationalError as exc:
        # a libSQL vector index (libsql_vector_idx, LibSQLVector's ANN) cannot be checked without libSQL's
        # functions: check every table whose indexes stdlib SQLite can read, table by table
        if "unknown function" not in str(exc):
            raise
        vector = {r[0] for r in target.execute(
            "SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND sql LIKE '%libsql_vector_idx%'")}
        check = []
        for (name,) in target.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if name not in vector and not name.endswith("_shadow"):
                check += [r[0] for r in target.execute(
                    'PRAGMA integrity_check("%s")' % name.replace('"', '""')).fetchall() if r[0] != "ok"]
        check = check or ["ok"]
    tables = [r[0] for r in target.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'mastra_*'").fetchall()]
    counts = {t: target.execute('SELECT count(*) FROM "%s"' % t.replace('"', '""')).fetchone()[0] for t in tables}
    target.close()
    _check_parent()
except BaseException:
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(dst + suffix)
        except OSError:
            pass
    raise
print(json.dumps({"integrity": check, "counts": counts}))
"""


def child_command(args: list[str]) -> list[str]:
    """Return the command that runs the backup child with ARGS (SRC DST IMMUTABLE PARENT_PID LOCK_WAIT_S).

    A Python interpreter runs `_SCRIPT` isolated (`-I`); the frozen app (sys.frozen) runs itself
    with `studio.paths.CHILD_FLAG backup`, which executes the same script (`run_child`).
    """
    if getattr(sys, "frozen", False):
        from studio.paths import CHILD_FLAG

        return [sys.executable, CHILD_FLAG, "backup", *args]
    return [sys.executable, "-I", "-c", _SCRIPT, *args]


def run_child(args: list[str]) -> int:
    """Run the backup child in this process with ARGS (the frozen app's `--studio-child backup`); return 0."""
    sys.argv = ["backup", *args]
    exec(compile(_SCRIPT, "<memory-studio backup>", "exec"), {"__name__": "__main__"})
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


_PARTIAL_NAME = re.compile(r"\..+\.partial-(\d+)-\d+(-wal|-shm|-journal)?")


def remove_stale_partials(folder: Path) -> list[Path]:
    """Remove FOLDER's partial backup files (`.NAME.partial-PID-N`) whose PID no longer runs; return them.

    They are left only when both the studio and its backup child were killed at once.
    """
    removed = []
    try:
        names = [p for p in folder.iterdir() if _PARTIAL_NAME.fullmatch(p.name)]
    except OSError:
        return removed
    for leftover in names:
        pid = int(_PARTIAL_NAME.fullmatch(leftover.name).group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            leftover.unlink()
            removed.append(leftover)
        except OSError:
            pass
    return removed


def default_backup_path(path: Path, now: datetime | None = None) -> Path:
    """Return `<dir>/<stem>.backup-<UTC YYYYmmddTHHMMSSZ>.db` beside PATH, numbered (-2, -3…) if taken."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = path.with_name(f"{path.stem}.backup-{stamp}")
    candidate, n = Path(f"{base}.db"), 1
    while candidate.exists():
        n += 1
        candidate = Path(f"{base}-{n}.db")
    return candidate


def backup_database(path: str | os.PathLike[str], dest: str | os.PathLike[str] | None = None, *,
                    folder: str | os.PathLike[str] | None = None) -> Path:
    """Copy the database at PATH (path or `file:` URL) to DEST with SQLite's online backup; return the copy's path.

    Without DEST the copy gets a unique name (`default_backup_path`, numbered when another process
    takes the name meanwhile) in FOLDER, by default beside PATH. The copy is verified with
    `PRAGMA integrity_check` before it gets its final name. Raises StoreError when PATH is not a
    readable SQLite file, the DEST file already exists or the folder does not exist, or the backup
    or its verification fails (no partial file is left behind). The source's main file and -wal
    are not changed.
    """
    location = file_target(path)
    check_file(location)
    if too_long_for_sqlite(location.path):
        raise StoreError(long_path_refusal(location.path))
    source = location.path.resolve()
    folder = Path(folder).expanduser() if folder is not None else source.parent
    target: Path | None = None  # None: a name chosen in FOLDER when the copy is ready
    if dest is not None:
        target = Path(dest).expanduser()
        folder = target.parent
        if target.exists():
            raise StoreError(f"Will not overwrite {target}: choose another backup file name.")
    if not folder.is_dir():
        raise StoreError(f"Cannot write the backup: {folder} is not a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(read_only_folder_refusal(source, folder))
    remove_stale_partials(folder)
    hidden = (target.name if target is not None else f"{source.stem}.backup.db")
    partial = folder / f".{hidden}.partial-{os.getpid()}-{time.monotonic_ns()}"
    immutable = "1" if is_quiescent_wal(source) else "0"
    try:
        try:
            done = subprocess.run(child_command([str(source), str(partial), immutable, str(os.getpid()),
                                                 str(WRITE_LOCK_WAIT_MS / 1000)]),
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
            problems = "; ".join(report.get("integrity", []))[:500]
            raise StoreError(f"The backup of {source} failed its integrity check: {problems}")
        if target is not None:
            if not _claim(partial, target):
                raise StoreError(f"Will not overwrite {target}: it appeared while the backup was made.")
            return target
        for _ in range(MAX_NAME_TRIES):
            candidate = default_backup_path(folder / source.name)
            if _claim(partial, candidate):
                return candidate
        raise StoreError(f"Cannot name the backup of {source}: {MAX_NAME_TRIES} names in {folder} were taken "
                         "meanwhile.")
    finally:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm"), Path(f"{partial}-journal")):
            with suppress(OSError):
                leftover.unlink()


#: How many numbered names an automatic backup name tries when other processes take them meanwhile.
MAX_NAME_TRIES = 1000


def _claim(partial: Path, target: Path) -> bool:
    """Give PARTIAL the name TARGET unless a file of that name exists (atomic where links work); False if taken."""
    try:
        os.link(partial, target)  # like a rename, but fails instead of replacing a file made meanwhile
        return True
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links
        if target.exists():
            return False
        os.replace(partial, target)
        return True

"""Read a database file's first bytes without ever closing a descriptor of it (no Qt).

SQLite's locks on a file are POSIX advisory locks, and POSIX drops every lock a process holds on a file
when *any* descriptor of that file is closed in that process: a plain `open(path).read(16); close()` of
the database, in a process whose SQLite connection has it open, silently releases that connection's
locks (SQLite's "how to corrupt a database", §2.2). A running agent that then closes its last connection
finds nobody else there, checkpoints and deletes the -wal and resets the -shm, and the studio's
connection goes on reading a WAL index that no longer exists: it never sees another commit (found beside
a live agent: the second agent session's commits never showed).

`read_head` reads through one descriptor per file (device and inode) kept open for the life of the
process (`os.pread`), so checking a header, a stamp or whether a WAL file is quiescent never closes one.
A file replaced at the same path gets a descriptor of its own; the old one stays open until the file has
no name left (deleted): from PRUNE_AT kept files on, those are closed, and past MAX_KEPT the least recently
read file's (a process reading that many files, such as a test run, must not exhaust its descriptors).
"""

from __future__ import annotations

import errno
import os
import stat
import threading

__all__ = ["read_head"]

_LOCK = threading.Lock()
#: (st_dev, st_ino) → the descriptor kept open for that file.
_KEPT: dict[tuple[int, int], int] = {}
#: Descriptors opened in a race for a file already kept: never closed either.
_SPARE: list[int] = []
#: With this many files kept, those deleted since (no name left: nobody can open them again) are let go.
PRUNE_AT = 64
#: At most this many descriptors are kept: past it the least recently read file's is closed (a session of the
#: studio reads a handful of files; a process that reads thousands, a test run, must not run out of them).
MAX_KEPT = 256


def read_head(path: str | os.PathLike[str] | bytes, size: int) -> bytes:
    """Return the first SIZE bytes of the regular file at PATH (fewer when it is shorter), reading through a
    descriptor this process keeps open for that file (see the module docstring).

    Never blocks on a FIFO or a device (opened O_NONBLOCK, refused when not a regular file). Raises OSError
    (missing, unreadable, or not a regular file: errno EINVAL).
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", os.fsdecode(path))
    with _LOCK:
        fd = _KEPT.pop((st.st_dev, st.st_ino), None)
        if fd is not None:
            _KEPT[(st.st_dev, st.st_ino)] = fd   # the most recently read last
        else:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):   # replaced by a FIFO between the stat and the open:
                os.close(fd)                       # not a database, so no lock of SQLite's lives on it
                raise OSError(errno.EINVAL, "not a regular file", os.fsdecode(path))
            key = (opened.st_dev, opened.st_ino)
            if len(_KEPT) >= PRUNE_AT:
                _prune()
            while len(_KEPT) >= MAX_KEPT:   # the least recently read file's descriptor goes
                os.close(_KEPT.pop(next(iter(_KEPT))))
            if key in _KEPT:   # the path named another file at the stat, one already kept: keep both open
                _SPARE.append(fd)
                fd = _KEPT[key]
            else:
                _KEPT[key] = fd
    return os.pread(fd, size, 0)


def _prune() -> None:
    """Close the kept descriptors of files that no longer have a name (deleted): no new connection can reach such
    a file, so the locks a close drops guard nothing another process could still take."""
    for key, fd in list(_KEPT.items()):
        try:
            gone = os.fstat(fd).st_nlink == 0
        except OSError:
            gone = True
        if gone:
            del _KEPT[key]
            os.close(fd)

"""Open a Mastra memory.db read-only (or, on request, for one write) through libSQL.

Why libSQL and not the stdlib: Mastra writes `jsonb` columns as SQLite JSONB blobs, which only
SQLite >= 3.45 can decode; Python 3.11's stdlib sqlite3 here is 3.40. The `libsql` package embeds
SQLite 3.45.1. Why `mode=ro`: a read-write open of a WAL database checkpoints the WAL into the main
file and deletes -wal/-shm on close, changing the user's files; a read-only open reads the same
rows (including those that live only in the -wal) and leaves the main file and -wal untouched.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import libsql

from studio.errors import StoreError

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 5000


@dataclass(frozen=True)
class Location:
    """Where a database lives: a local file path (remote libSQL URLs are not supported yet)."""

    path: Path

    @property
    def display(self) -> str:
        """Return the path as the user should see it."""
        return str(self.path)


def parse_location(target: str | os.PathLike[str]) -> Location:
    """Turn a path or `file:` URL into a Location.

    Accepts `memory.db`, `/abs/memory.db`, `file:memory.db`, `file:///abs/memory.db` (query
    strings such as `?mode=ro` are ignored: the studio decides the mode). Raises StoreError for
    remote URLs (`libsql://`, `http(s)://`, `ws(s)://`), which this version cannot open.
    """
    text = os.fspath(target)
    lowered = text.lower()
    for scheme in ("libsql://", "http://", "https://", "ws://", "wss://"):
        if lowered.startswith(scheme):
            raise StoreError(f"Remote libSQL databases are not supported yet: {text!r}. Open a local memory.db file.")
    if lowered.startswith("file:"):
        parsed = urllib.parse.urlparse(text)
        raw = parsed.path if parsed.netloc in ("", "localhost") else f"//{parsed.netloc}{parsed.path}"
        if not raw:  # file:relative.db puts the path in .path too, but guard anyway
            raw = text[5:].split("?", 1)[0]
        text = urllib.parse.unquote(raw)
    return Location(Path(text).expanduser())


def check_file(location: Location) -> None:
    """Raise StoreError unless LOCATION is an existing, readable, non-empty SQLite file."""
    path = location.path
    if not path.exists():
        raise StoreError(f"No such file: {path}")
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a memory.db file")
    try:
        with open(path, "rb") as fh:
            header = fh.read(len(SQLITE_MAGIC))
    except PermissionError as exc:
        raise StoreError(f"Cannot read {path}: permission denied") from exc
    except OSError as exc:
        raise StoreError(f"Cannot read {path}: {exc.strerror or exc}") from exc
    if not header:
        raise StoreError(f"{path} is empty (0 bytes): not a Mastra memory database")
    if header != SQLITE_MAGIC:
        raise StoreError(f"{path} is not a SQLite database (its first bytes are not the SQLite header)")


def _uri(path: Path, mode: str, immutable: bool = False) -> str:
    quoted = urllib.parse.quote(str(path.resolve()), safe="/:~-._ ")
    return f"file:{quoted}?mode={mode}" + ("&immutable=1" if immutable else "")


def is_quiescent_wal(path: Path) -> bool:
    """Return True for a WAL-mode database that no process has open (no -wal file beside it).

    SQLite keeps the -wal file while any connection is open, so its absence means the main file
    is complete. A read-only open would still create empty -wal/-shm files; opening such a file
    as immutable reads it without creating anything. When a writer appears later, the -wal
    appears too, and the studio reopens the database normally.
    """
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return False
    is_wal = len(header) >= 20 and header[18] == 2 and header[19] == 2
    return is_wal and not Path(str(path) + "-wal").exists()


def file_identity(path: Path) -> tuple | None:
    """Return (device, inode) of PATH, or None if it cannot be read: changes when the file is replaced."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def file_signature(path: Path) -> tuple:
    """Return what tells whether a database changed on disk: (size, mtime ns) of the file and its -wal."""
    sig = []
    for p in (path, Path(str(path) + "-wal")):
        try:
            st = p.stat()
            sig.append((st.st_size, st.st_mtime_ns))
        except OSError:
            sig.append(None)
    return tuple(sig)


def connect(location: Location, *, writable: bool = False):
    """Open a libSQL connection to LOCATION: read-only unless WRITABLE.

    Returns a DB-API-like `libsql.Connection`; `connection_is_immutable(conn)` tells whether it
    was opened as immutable (a quiescent WAL file, see `is_quiescent_wal`). Sets a busy timeout of BUSY_TIMEOUT_MS (ms) so
    that a short write by another process (a running Mastra app) is waited for rather than failed.
    Never changes the journal mode. Raises StoreError if the file cannot be opened.
    """
    check_file(location)
    try:
        immutable = not writable and is_quiescent_wal(location.path)
        conn = libsql.connect(_uri(location.path, "rw" if writable else "ro", immutable))
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    except Exception as exc:  # libsql raises ValueError for most SQLite errors
        raise StoreError(f"Cannot open {location.display}: {describe_sqlite_error(exc)}") from exc
    return conn, immutable


def describe_sqlite_error(exc: BaseException) -> str:
    """Return a user-facing sentence for a libSQL/SQLite error."""
    text = str(exc)
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return (
            "the database is locked by another process that is writing to it "
            f"(waited {BUSY_TIMEOUT_MS // 1000} s); try again when it has finished"
        )
    if "not a database" in lowered or "file is encrypted" in lowered:
        return "the file is not a SQLite database (or is encrypted)"
    if "malformed" in lowered and "json" not in lowered:
        return "the database file is corrupt (SQLite reports it as malformed)"
    return text or exc.__class__.__name__

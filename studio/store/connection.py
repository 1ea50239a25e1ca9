"""Open a Mastra memory.db read-only (or, on request, for one write) through libSQL: file checks, SQLite's sentences.

Why libSQL and not the stdlib: Mastra writes `jsonb` columns as SQLite JSONB blobs, which only
SQLite >= 3.45 can decode; Python 3.11's stdlib sqlite3 here is 3.40. The `libsql` package embeds
SQLite 3.45.1. Why `mode=ro`: a read-write open of a WAL database checkpoints the WAL into the main
file and deletes -wal/-shm on close, changing the user's files; a read-only open reads the same
rows (including those that live only in the -wal) and leaves the main file and -wal untouched.
"""

from __future__ import annotations

import errno
import os
import stat
import urllib.parse
from pathlib import Path

import libsql

from studio.errors import StoreError
from studio.store.cells import is_driver_panic
from studio.store.file_head import read_head
from studio.store.target import display_path, elide_middle

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from studio.store.target import Target

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 5000


FILE_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)
SIDE_FILES = ("-wal", "-shm", "-journal")


def _kind(mode: int) -> str:
    return next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")


def check_file(location: Target) -> None:
    """Raise StoreError unless LOCATION is an existing, readable, non-empty SQLite file.

    Refuses, with a sentence naming the problem and what to do: a missing file, a symbolic link
    that loops or dangles, anything that is not a regular file (a FIFO would block every read
    forever), a -wal/-shm/-journal beside it that is not a regular file, an unreadable file, and
    a file without the SQLite header. Opens nothing that could block (the header is read with
    O_NONBLOCK, after the file was seen to be regular).
    """
    path = location.path
    shown = display_path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(f"{shown} is a symbolic link that loops back on itself (a link to a link … to "
                             "itself), so there is no file to open: point the link at the real memory.db, "
                             "or open the memory.db file itself") from exc
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            if os.path.islink(path):
                raise StoreError(f"{shown} is a symbolic link to {display_path(os.readlink(path))!r}, which does "
                                 "not exist: point the link at the real memory.db, or open that file itself") from exc
            raise StoreError(f"No such file: {shown}") from exc
        if exc.errno == errno.EACCES:
            raise StoreError(f"Cannot read {shown}: permission denied (a folder on the way is not "
                             "accessible to you); open a copy or ask for read access") from exc
        raise StoreError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{shown} is a directory, not a memory.db file")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{shown} is {_kind(st.st_mode)}, not a regular file: a memory.db is always a regular "
                         "file, and reading this one could wait forever. Open the memory.db file itself")
    for ext in SIDE_FILES:
        side = Path(str(path) + ext)
        try:
            side_st = os.stat(side)
        except OSError:
            continue
        if not stat.S_ISREG(side_st.st_mode):
            raise StoreError(f"{display_path(side.name)} beside {display_path(path.name)} is {_kind(side_st.st_mode)}, "
                             "not a regular file: "
                             "SQLite would wait on it forever or fail. Move it away (SQLite recreates it), or "
                             "copy the database alone to another folder and open the copy")
    try:   # never open and close the file itself: that would drop this process's SQLite locks on it
        header = read_head(path, len(SQLITE_MAGIC))
    except PermissionError as exc:
        raise StoreError(f"Cannot read {shown}: permission denied") from exc
    except OSError as exc:
        raise StoreError(f"Cannot read {shown}: {exc.strerror or exc}") from exc
    if not header:
        raise StoreError(f"{shown} is empty (0 bytes): not a Mastra memory database")
    if header != SQLITE_MAGIC:
        raise StoreError(f"{shown} is not a SQLite database (its first bytes are not the SQLite header)")


def file_uri(path: Path, mode: str, immutable: bool = False) -> str:
    """Return the SQLite URI that opens PATH (made absolute, symlinks resolved) in MODE ("ro", "rw").

    Linux file names are bytes: the path's bytes (`os.fsencode`, so a name that is not UTF-8, read
    from the command line as surrogate escapes, names the same file) are percent-encoded, and
    SQLite decodes them back to those bytes. IMMUTABLE adds `immutable=1` (no locks, no -wal/-shm).
    """
    quoted = urllib.parse.quote(os.fsencode(path.resolve()), safe="/:~-._ ")
    return f"file:{quoted}?mode={mode}" + ("&immutable=1" if immutable else "")


_uri = file_uri


def immutable_uri(path: Path) -> str:
    """Return the URI that opens PATH read-only and immutable (no locks, no -wal/-shm read or created)."""
    return _uri(path, "ro", immutable=True)


def is_quiescent_wal(path: Path) -> bool:
    """Return True for a WAL-mode database that no process has open (no -wal file beside it).

    SQLite keeps the -wal file while any connection is open, so its absence means the main file
    is complete. A read-only open would still create empty -wal/-shm files; opening such a file
    as immutable reads it without creating anything. When a writer appears later, the -wal
    appears too, and the studio reopens the database normally.
    """
    try:
        header = read_head(path, 20)
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
    """Return what tells whether a database changed on disk.

    (inode, size, mtime ns, ctime ns) of the file and of its -wal (None when absent). A writer that
    opens, commits, checkpoints and closes changes the main file's mtime/ctime when it checkpoints,
    and the -wal entry while it has the file open.
    """
    name = os.fspath(path)  # os.stat of the names: no Path made per check (checked around every read)
    sig = []
    for p in (name, name + "-wal"):
        try:
            st = os.stat(p)
            sig.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        except OSError:
            sig.append(None)
    return tuple(sig)


def connect(location: Target, *, writable: bool = False, allow_immutable: bool = True):
    """Open a libSQL connection to LOCATION: read-only unless WRITABLE.

    Returns (conn, immutable, signature): a DB-API-like `libsql.Connection`; whether it was opened
    as immutable (a quiescent WAL file, see `is_quiescent_wal`; never when ALLOW_IMMUTABLE is
    False); and `file_signature` taken *before* the quiescence check, so that a caller can verify
    after each read that no writer touched the file meanwhile (an immutable connection takes no
    locks and would read a checkpoint half-written). A WRITABLE connection sets a busy timeout of
    BUSY_TIMEOUT_MS (ms) so that a short write by another process (a running Mastra app) is waited for
    rather than failed; a read-only one fails at once on a locked file (`busy_timeout = 0`) and its reads
    wait in Python instead (`studio.store.lock_wait.patiently`: SQLite's wait would hold the GIL).
    Never changes the journal mode. Raises StoreError if the file cannot be opened.
    """
    check_file(location)
    signature = file_signature(location.path)
    if too_long_for_sqlite(location.path):
        if writable:
            raise StoreError(long_path_refusal(location.path))
        conn = _connect_snapshot(location)
        after = file_signature(location.path)
        # the snapshot's link and unlink change the file's ctime (its link count), nothing else: unless a
        # writer changed its size or mtime meanwhile (then the caller sees the change and reopens), the
        # signature after the snapshot is the one later reads compare with
        same = [s and s[:3] for s in signature] == [s and s[:3] for s in after]
        return conn, True, after if same else signature
    try:
        immutable = allow_immutable and not writable and is_quiescent_wal(location.path)
        conn = libsql.connect(_uri(location.path, "rw" if writable else "ro", immutable))
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS if writable else 0}")
    except BaseException as exc:  # libsql raises ValueError for most SQLite errors, a panic for a few
        if not isinstance(exc, Exception) and not is_driver_panic(exc):
            raise
        raise StoreError(f"Cannot open {location.display}: {describe_sqlite_error(exc, location.path)}") from exc
    return conn, immutable, signature


#: The longest absolute path (bytes, symlinks resolved) SQLite's unix VFS opens: its MAX_PATHNAME (512)
#: less room for the "-journal" suffix it appends. Measured with libSQL's SQLite 3.45.1: 504 opens, 505 fails.
SQLITE_MAX_PATH_BYTES = 504


def too_long_for_sqlite(path: Path) -> bool:
    """Return True when PATH (made absolute, symlinks resolved) is longer than SQLite can open by name.

    Linux allows paths of 4,095 bytes; SQLite refuses any longer than SQLITE_MAX_PATH_BYTES with
    "unable to open database file" (error 14), and resolves symbolic links before it measures, so
    a shorter link or a /proc/self/fd path does not help.
    """
    try:
        resolved = path.resolve()
    except OSError:
        return False
    return len(os.fsencode(resolved)) > SQLITE_MAX_PATH_BYTES


def long_path_refusal(path: Path) -> str:
    """The sentence a write to a file whose path SQLite cannot open gets (nothing is written)."""
    length = len(os.fsencode(path.resolve()))
    return (f"SQLite cannot write a file whose full path is longer than {SQLITE_MAX_PATH_BYTES} bytes (this one is "
            f"{length:,}: {elide_middle(display_path(path))}). The studio reads it, but writes only where SQLite "
            "can lock it and its -wal by name: move the folder to a shorter path (or give it a shorter name) and "
            "write there. Nothing was written")


def read_only_folder_refusal(path: Path, folder: Path) -> str:
    """The sentence a write gets when FOLDER (PATH's, or the backup's) is read-only for this user (exit 4).

    SQLite writes a journal (-journal or -wal) beside the file, and the backup is made there too,
    so a writable file in a read-only folder cannot be written either. Nothing is written.
    """
    return (f"Cannot write {display_path(path.name)}: its folder {elide_middle(display_path(folder))} is read-only "
            "for you (permission denied), and the backup before the write and SQLite's journal are both made "
            "there. Ask for write access to the folder, or copy the file into a writable folder and write the "
            "copy. Nothing was written")


def _connect_snapshot(location: Target):
    """Open LOCATION (a path too long for SQLite, see `too_long_for_sqlite`) through a short private name.

    The database is linked (a hard link: no bytes copied; a copy when the link is refused, e.g. on
    another file system) into a new private folder under the system's temporary folder; when a
    non-empty -wal lies beside it, the file and its -wal are copied instead and the copy's WAL is
    checkpointed into it, so that the snapshot holds every committed row. The snapshot is opened
    immutable and read once, then its name is removed (the open connection keeps the file): the
    caller checks the original's `file_signature` after each read, as for any immutable
    connection, and reopens when it changed. Raises StoreError when no snapshot can be made.
    """
    import shutil
    import tempfile

    path = location.path.resolve()
    folder = tempfile.mkdtemp(prefix="memory-studio-")
    alias = Path(folder) / "memory.db"
    try:
        if has_nonempty_wal(path):
            shutil.copyfile(path, alias)
            shutil.copyfile(_side(path, "-wal"), _side(alias, "-wal"))
            merge = libsql.connect(file_uri(alias, "rw"))
            try:
                merge.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                merge.execute("PRAGMA journal_mode = DELETE").fetchall()   # the private copy only
            finally:
                merge.close()
        else:
            try:
                os.link(path, alias)
            except OSError:
                shutil.copyfile(path, alias)
        conn = libsql.connect(file_uri(alias, "ro", immutable=True))
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()   # the file is open before its name goes
        return conn
    except BaseException as exc:
        if not isinstance(exc, Exception) and not is_driver_panic(exc):
            raise
        raise StoreError(f"Cannot open {elide_middle(location.display)}: its path is longer than SQLite opens "
                         f"({SQLITE_MAX_PATH_BYTES} bytes) and a private snapshot of it could not be made in "
                         f"{folder}: {describe_sqlite_error(exc)}") from exc
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _page_sizes(path: Path) -> tuple[int | None, int | None]:
    """Return (page size in the database header, page size in its -wal header), None when unreadable."""
    def read(p: Path, n: int) -> bytes:
        try:
            with open(p, "rb") as fh:
                return fh.read(n)
        except OSError:
            return b""

    import struct

    head, wal = read(path, 100), read(Path(str(path) + "-wal"), 32)
    db_size = None
    if len(head) >= 18:
        raw = struct.unpack(">H", head[16:18])[0]
        db_size = 65536 if raw == 1 else raw
    wal_size = None
    if len(wal) >= 12 and struct.unpack(">I", wal[:4])[0] in (0x377F0682, 0x377F0683):
        wal_size = struct.unpack(">I", wal[8:12])[0]
    return db_size, wal_size


def wal_page_size_mismatch(path: Path) -> str | None:
    """Return "its pages are N bytes, this database's are M" when PATH's -wal has another page size, else None."""
    db_size, wal_size = _page_sizes(path)
    if db_size and wal_size and db_size != wal_size:
        return f"its pages are {wal_size:,} bytes, this database's are {db_size:,}"
    return None


def _side(path: Path, ext: str) -> Path:
    return Path(str(path) + ext)


def _nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def foreign_wal_sentence(path: Path, evidence: str) -> str:
    """Return the sentence for a -wal beside PATH that belongs to another database (EVIDENCE: why we know)."""
    wal, shm = display_path(_side(path, "-wal").name), display_path(_side(path, "-shm").name)
    return (f"the {wal} beside it belongs to another database ({evidence}). Move {wal} and {shm} "
            f"away (keep them) and open {display_path(path.name)} again; if you copied the database, copy its own "
            "-wal and -shm with it")


def has_nonempty_wal(path: Path) -> bool:
    """Return True when a -wal file with content lies beside PATH."""
    return _nonempty(_side(path, "-wal"))


def _file_hint(text: str, path: Path) -> str | None:
    """Return a sentence for errors whose cause lies in the files beside PATH, or None."""
    name, shown = display_path(path.name), display_path(path)
    wal, shm, journal = _side(path, "-wal"), _side(path, "-shm"), _side(path, "-journal")
    wal_name, shm_name = display_path(wal.name), display_path(shm.name)
    if "readonly database" in text and _nonempty(journal):
        return (f"a write to it did not finish (a crash or a kill) and left its rollback journal "
                f"{display_path(journal.name)} beside it; SQLite must roll that write back before the file can be "
                "read, which a read-only "
                f"open may not do. Let the app that writes it (Mastra) open it once, or run "
                f"`sqlite3 {shown} \"PRAGMA quick_check\"` — either rolls the journal back — then open it again")
    if ("disk i/o error" in text or "malformed" in text) and _nonempty(wal):
        mismatch = wal_page_size_mismatch(path)
        if mismatch:
            return foreign_wal_sentence(path, mismatch)
        return (f"the database reads as damaged together with its {wal_name}. If that -wal (or {shm_name}) was "
                f"copied from another database or from another moment, move both away (keep them) and open "
                f"{name} again; otherwise the file is corrupt: open a backup")
    if "unable to open database file" in text:
        folder = path.parent
        if _nonempty(wal) and not shm.exists() and not os.access(folder, os.W_OK):
            return (f"to read its {wal_name}, SQLite must create {shm_name} beside it, but the folder "
                    f"{display_path(folder)} is read-only. Copy {name} and {wal_name} together into a writable "
                    "folder and open the "
                    "copy, or open it where you may write")
        if not os.access(folder, os.W_OK):
            return (f"SQLite could not open it in the read-only folder {display_path(folder)}. Copy {name} (with its "
                    "-wal) into a writable folder and open the copy")
    return None


def is_damage(exc: BaseException) -> bool:
    """Return True when EXC says the file itself is damaged where it was read: SQLite's "database disk image is
    malformed" (SQLITE_CORRUPT, not a JSON function's "malformed JSON") or a driver panic on a stored value."""
    lowered = str(exc).lower()
    return is_driver_panic(exc) or ("malformed" in lowered and "json" not in lowered)


def describe_sqlite_error(exc: BaseException, path: Path | None = None) -> str:
    """Return a user-facing sentence for a libSQL/SQLite error (PATH: the database, for file hints).

    With PATH, errors caused by the files beside the database (a hot rollback journal, a -wal of
    another database, a read-only folder that cannot hold the -shm) name that file and what to do.
    A driver panic (text that is not UTF-8 where the driver expected it) gets its own sentence.
    """
    text = str(exc)
    lowered = text.lower()
    if is_driver_panic(exc):
        return ("the libSQL driver failed on a stored value it could not convert (bytes that are not valid "
                "UTF-8); the file is damaged there: open a backup, or report the file")
    if "locked" in lowered or "busy" in lowered:
        return (
            "the database is locked by another process that is writing to it "
            f"(waited {BUSY_TIMEOUT_MS // 1000} s); try again when it has finished"
        )
    if path is not None:
        hint = _file_hint(lowered, path)
        if hint:
            return hint
    if "not a database" in lowered or "file is encrypted" in lowered:
        return "the file is not a SQLite database (or is encrypted)"
    if "malformed" in lowered and "json" not in lowered:
        return "the database file is corrupt (SQLite reports it as malformed): open a backup, or a copy Mastra wrote"
    if "disk i/o error" in lowered:
        return "SQLite could not read the file (disk I/O error): check the disk, or copy the file and open the copy"
    return text or exc.__class__.__name__

"""Row backups of writes: a local JSON file of every row one write changed, for "Undo last write".

Copying a database before each write is not what a user wants (a server database is no file; a
724 MB file copied per reflection), so every write of the studio — to a file
(`studio.store.write.backends.sqlite`), PostgreSQL (`backends.pg`) or a libSQL server
(`backends.libsql_remote`) — saves, before its COMMIT, the rows it touches
(`row_backup_before_commit`; where to: the context's `BackupSink`, which a `WriteSession` routes):

    {"format": "memory-studio-row-backup", "version": 1, "operation": "reflect" | "revert" | "clone" |
     "delete-messages" | "clear-thread" | "repair" | "observe" | "activate" | "undo", "created_at": ISO UTC,
     "target": the URL with its password redacted, "identity": {host, port, dbname, user, schema},
     "columns": {table: {column: PostgreSQL type}},
     "rows": [{"table", "id", "before": {column: exact text} | null (inserted by the write),
               "after": {column: exact text} | null (deleted by the write)}],
     "inserted": [[table, id], ...], "undone": null | {"at", "by"}, + "undoes" (an undo's own backup),
     + "never_written": {"found_at"} (set by an undo that found every row as before the write)}

On a file `identity` is {"file": its real path} and files are named `file_<name>_<digest>-…json`; the
images are those of a libSQL server. On a libSQL server `identity` is {"libsql": base URL}, `columns`
the declared SQLite types, and each
image holds the values as SQLite stores them (a blob as {"blob": base64}) plus `_rowid_`; files are
named `libsql_<host>_<port>-<UTC time>-<operation>.json`. On PostgreSQL, values are PostgreSQL's text
form of each column (TIMESTAMPTZ in UTC, JSONB normalised, booleans `true`/`false`), so a restore writes
back exactly what was there. Files live in the user's data
folder, `$XDG_DATA_HOME/memory-studio/backups/` (default `~/.local/share/memory-studio/backups/`),
folder 0700 and files 0600 (they hold conversation text), named
`<user>@<host>_<port>_<db>_<schema>-<UTC time>-<operation>.json` (never a password).
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import tempfile
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from studio.errors import StoreError, StoreNotice, WriteRefused
from studio.store.target import FILE, MONGODB, Target, parse_target
from studio.store.write.private_folder import check_own_file, check_private_folder, ensure_private_folder, unsafe_reason

__all__ = [
    "BACKUP_FORMAT",
    "BackupSink",
    "backup_location",
    "backup_root",
    "backup_sink",
    "current_backup_sink",
    "data_root",
    "list_row_backups",
    "load_row_backup",
    "mark_never_written",
    "mark_undone",
    "row_backup_before_commit",
    "save_row_backup",
    "target_identity",
    "target_slug",
    "write_json_atomically",
]

BACKUP_FORMAT = "memory-studio-row-backup"
_UNSAFE = re.compile(r"[^A-Za-z0-9@._-]+")


def data_root() -> Path:
    """Return the studio's data folder: `$XDG_DATA_HOME/memory-studio` (default ~/.local/share/memory-studio)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "memory-studio"


def backup_root() -> Path:
    """Return the folder of row backups: `$XDG_DATA_HOME/memory-studio/backups` (default ~/.local/share/…)."""
    return data_root() / "backups"


def backup_location(target: str | os.PathLike[str]) -> Target:
    """The parsed TARGET whose row backups are looked for (a file, a PostgreSQL or libSQL server URL).

    Raises StoreError for a malformed URL.
    """
    return parse_target(target)


# -- where the backups of this context's writes go ---------------------------------------------------

@dataclass
class BackupSink:
    """Where the row backups of server writes (PostgreSQL, libSQL server) go and the files made.

    FOLDER: None for the user's data folder.
    """

    folder: Path | None = None
    made: list[Path] = field(default_factory=list)
    #: Extra fields for the next backup's JSON (an undo names the backup it undoes).
    extra: dict = field(default_factory=dict)


_SINK: contextvars.ContextVar[BackupSink | None] = contextvars.ContextVar("memory_studio_pg_backup_sink", default=None)


@contextmanager
def backup_sink(sink: BackupSink) -> Iterator[BackupSink]:
    """Route the row backups of the server writes made inside the block to SINK (WriteSession uses it)."""
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


def current_backup_sink() -> BackupSink | None:
    """The BackupSink routing this context's row backups (None: the user's data folder)."""
    return _SINK.get()


@contextmanager
def row_backup_before_commit(location: Target, journal: list[dict], schema, *, label: str) -> Iterator[Path | None]:
    """Save JOURNAL (a server transaction's `journal()`) as a backup file, then run the block (its COMMIT).

    Yields the file's path (None for an empty journal: nothing is saved). The file goes where this
    context's BackupSink says (default `backup_root()`), with the sink's extra fields. When the block
    raises (the COMMIT failed), the file is deleted (it would describe a write that did not happen),
    except when the outcome says the write may be there: `OutcomeFoundAfterReconnect` with
    `written` (kept and added to the sink's `made`, undo works) or `ServerUnreachable` with outcome
    "unknown" (kept: undo tells later). When the block succeeds, the file is added to the sink's
    `made`. Raises StoreError when the file cannot be saved: the caller rolls back.
    """
    from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable

    sink = _SINK.get()
    made = None
    if journal:
        made = save_row_backup(location, journal, schema, label=label,
                               folder=sink.folder if sink is not None else None,
                               extra=sink.extra if sink is not None else None)
    try:
        yield made
    except OutcomeFoundAfterReconnect as exc:
        if made is not None and exc.written and sink is not None:
            sink.made.append(made)
        elif made is not None and not exc.written:
            made.unlink(missing_ok=True)
        raise
    except ServerUnreachable as exc:
        if made is not None and exc.outcome != "unknown":
            made.unlink(missing_ok=True)
        raise
    except BaseException:
        if made is not None:
            made.unlink(missing_ok=True)
        raise
    if made is not None and sink is not None:
        sink.made.append(made)


# -- the backup files ---------------------------------------------------------------------------------

def target_identity(location: Target) -> dict:
    """Return what names a store's backups (never a password or token).

    A file: {"file": its real path}; PostgreSQL: {host, port, dbname, user, schema}; a libSQL server:
    {"libsql": its base URL `http(s)://host[:port][/path]`, token-free}.
    """
    if location.kind == FILE:
        return {"file": os.path.realpath(location.path)}
    if location.conninfo is None:
        return {"libsql": location.base_url}
    parts = urllib.parse.urlsplit(location.conninfo)
    if location.kind == MONGODB:   # the hosts as written (a replica set's seed list, or an SRV name) and dbName
        hosts = parts.netloc.rpartition("@")[2]
        return {"mongodb": f"{parts.scheme}://{hosts}", "dbname": location.schema,
                "user": urllib.parse.unquote(parts.username or "")}
    query = dict(urllib.parse.parse_qsl(parts.query))
    host = parts.hostname or query.get("host") or os.environ.get("PGHOST") or "localhost"
    return {"host": host, "port": parts.port or int(query.get("port") or os.environ.get("PGPORT") or 5432),
            "dbname": (parts.path or "/").lstrip("/") or query.get("dbname") or os.environ.get("PGDATABASE") or "",
            "user": urllib.parse.unquote(parts.username or "") or query.get("user") or os.environ.get("PGUSER") or "",
            "schema": location.schema}


def target_slug(identity: dict) -> str:
    """Return the file-name prefix of a target's backups: `user@host_port_db_schema` (PostgreSQL),
    `libsql_host_port[_path]` (libSQL server) or `file_NAME_DIGEST` (a file); safe characters only."""
    if "file" in identity:   # the file's name and a digest of its full path (two memory.db never share one)
        import hashlib

        path = identity["file"]
        digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return _UNSAFE.sub("-", f"file_{os.path.basename(path)}_{digest}")
    if "mongodb" in identity:
        return _UNSAFE.sub("-", f"{identity['user']}@{identity['mongodb'].split('://', 1)[1]}_{identity['dbname']}")
    if "libsql" in identity:
        parts = urllib.parse.urlsplit(identity["libsql"])
        text = f"libsql_{parts.hostname}_{parts.port or (443 if parts.scheme == 'https' else 80)}{parts.path}"
        return _UNSAFE.sub("-", text)
    text = f"{identity['user']}@{identity['host']}_{identity['port']}_{identity['dbname']}_{identity['schema']}"
    return _UNSAFE.sub("-", text)


def write_json_atomically(path: Path, document: dict) -> None:
    """Write DOCUMENT as JSON to PATH through a private temporary file renamed over it (folder 0700,
    file 0600, synced first): a reader sees the old file or the new one, never part of one. The JSON is
    ASCII (`\\uXXXX` escapes): a file name that is not UTF-8 (a surrogate-escaped str) is kept exactly and
    json.load gives it back. Raises OSError, and WriteRefused when the folder is not the user's private folder
    (`private_folder`)."""
    ensure_private_folder(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, ensure_ascii=True, separators=(",", ":"))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_row_backup(location: Target, journal: list[dict], schema, *, label: str, folder: Path | None = None,
                    extra: dict | None = None) -> Path:
    """Save JOURNAL (PgWriteTx.journal()) of a write to LOCATION as a new backup file; return its path.

    FOLDER: default `backup_root()`. Raises StoreError when the file cannot be written (the write
    is then rolled back by its transaction).
    """
    identity = target_identity(location)
    now = datetime.now(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%S.%f") + "Z"
    tables = sorted({r["table"] for r in journal})
    document: dict[str, Any] = {
        "format": BACKUP_FORMAT, "version": 1, "operation": label,
        "created_at": now.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "target": location.display, "identity": identity,
        "columns": {t: dict(schema.types.get(t, {})) for t in tables},
        "rows": journal, "inserted": [[r["table"], r["id"]] for r in journal if r["before"] is None],
        "undone": None,
    }
    document.update(extra or {})
    folder = Path(folder) if folder is not None else backup_root()
    path = folder / f"{target_slug(identity)}-{stamp}-{_UNSAFE.sub('-', label)}.json"
    try:
        write_json_atomically(path, document)
    except WriteRefused:
        raise
    except OSError as exc:
        raise StoreError(f"Cannot save the backup of this write to {folder} ({exc.strerror or exc}); "
                         "nothing was written.") from exc
    return path


def load_row_backup(path: str | os.PathLike[str]) -> dict:
    """Read a row backup file; StoreError when it is missing, not JSON or not a studio row backup.

    WriteRefused ("invalid") when the file or its folder is not the user's and private (`private_folder`):
    a backup another local user could have written is never read.
    """
    check_private_folder(Path(path).parent)
    check_own_file(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise StoreError(f"There is no backup file {path}") from exc
    except (OSError, ValueError) as exc:
        raise StoreError(f"Cannot read the backup {path}: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") != BACKUP_FORMAT or not isinstance(
            document.get("rows"), list):
        raise StoreError(f"{path} is not a Memory Studio row backup")
    return document


def list_row_backups(location: Target, folder: Path | None = None) -> list[tuple[Path, dict]]:
    """Return [(path, document)] of LOCATION's backups in FOLDER (default backup_root()), newest first.

    WriteRefused ("invalid") when FOLDER is not the user's private folder; a file in it that is not the
    user's, or writable by others, is left out and said (a StoreNotice warning naming how many).
    """
    identity = target_identity(location)
    folder = Path(folder) if folder is not None else backup_root()
    check_private_folder(folder)
    out = []
    foreign = []
    for path in folder.glob(f"{target_slug(identity)}-*.json") if folder.is_dir() else []:
        if unsafe_reason(path, folder=False):
            foreign.append(path)
            continue
        try:
            document = load_row_backup(path)
        except StoreError:
            continue
        if document.get("identity") == identity:
            out.append((path, document))
    if foreign:
        import warnings

        warnings.warn(StoreNotice(f"{len(foreign)} file(s) in {folder} look like backups of this store but belong to "
                                  "another user or can be written by others (e.g. "
                                  f"{foreign[0].name}); they were left out and are never restored"), stacklevel=2)
    out.sort(key=lambda item: str(item[1].get("created_at")), reverse=True)
    return out


def mark_never_written(path: Path, document: dict) -> None:
    """Record in the backup at PATH that its write never happened (found by an undo: every row as before it).

    Such a backup is left by a write stopped before its COMMIT took effect (the process killed, or the
    server lost after COMMIT was sent); `undo` passes over it to the write before.
    """
    document = dict(document)
    document["never_written"] = {"found_at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00",
                                                                                                            "Z")}
    write_json_atomically(Path(path), document)


def mark_undone(path: Path, document: dict, by: Path | None) -> None:
    """Record in the backup at PATH that it was undone (now, by the undo's own backup BY)."""
    document = dict(document)
    document["undone"] = {"at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                          "by": str(by) if by is not None else None}
    write_json_atomically(Path(path), document)

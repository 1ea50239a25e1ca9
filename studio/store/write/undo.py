"""Undo a write of the studio (a file, PostgreSQL, a libSQL server) from its row backup (`write.row_backup`).

`undo_write(target)` restores the rows the last write changed, exactly as they were before it: rows
it inserted are deleted, rows it updated get every column (twins included) back, rows it deleted are
inserted again. It is one write transaction (`write_transaction`) that first locks every row concerned
(`FOR UPDATE`) and refuses, writing nothing, when any of them changed since the write (a running
agent wrote onto it, or another write came after): an undo never overwrites someone else's work.
The undo saves its own row backup (`"undoes": <file>`), and the undone backup is marked `undone`.
"""

from __future__ import annotations

import os
from pathlib import Path

from studio.errors import WriteRefused
from studio.store.write.row_backup import (
    BackupSink,
    backup_location,
    backup_root,
    backup_sink,
    list_row_backups,
    load_row_backup,
    mark_undone,
    target_identity,
)
from studio.store.write.transaction import write_transaction

__all__ = ["describe_backup", "pick_backup", "undo_write"]

#: At most this many changed rows are named in a refusal.
_NAMED = 5


def pick_backup(target: str, backup: str | os.PathLike[str] | None = None,
                folder: str | os.PathLike[str] | None = None) -> tuple[Path, dict]:
    """Return (path, document) of the backup to undo: BACKUP, or TARGET's newest write not undone yet.

    FOLDER: where backups are (default `row_backup.backup_root()`). Raises WriteRefused ("invalid":
    a backup of another store, or not safe to read; "conflict": already undone; "not-found": no backup) and
    StoreError (unreadable file).
    """
    location = backup_location(target)
    if backup is None:
        found = [(p, d) for p, d in list_row_backups(location, Path(folder) if folder else None)
                 if not d.get("undone") and d.get("operation") != "undo"]
        if not found:
            raise WriteRefused("not-found", f"No backup of a studio write to {location.display} is left to undo in "
                                            f"{folder or backup_root()}.")
        return found[0]
    path = Path(backup)
    document = load_row_backup(path)
    if document.get("identity") != target_identity(location):
        raise WriteRefused("invalid", f"{path} is the backup of a write to {document.get('target')}, not to "
                                      f"{location.display}; nothing was written.")
    if document.get("undone"):
        raise WriteRefused("conflict", f"The write in {path} was already undone at {document['undone'].get('at')}; "
                                       "nothing was written.")
    return path, document


def describe_backup(document: dict) -> str:
    """One sentence saying what undoing the backup DOCUMENT does.

    E.g. "Undo the clear-thread of 2026-12-03 07:43:59 UTC: put back 10 deleted rows and restore 1 changed row."
    """
    rows = document.get("rows") or []
    inserted = sum(1 for r in rows if r.get("before") is None)
    deleted = sum(1 for r in rows if r.get("after") is None)
    changed = len(rows) - inserted - deleted

    def n(count: int, what: str) -> str:
        return f"{count:,} {what} row{'s' if count != 1 else ''}"
    parts = [p for c, p in ((deleted, f"put back {n(deleted, 'deleted')}"),
                            (inserted, f"delete {n(inserted, 'inserted')}"),
                            (changed, f"restore {n(changed, 'changed')}")) if c]
    when = str(document.get("created_at") or "")[:19].replace("T", " ")
    what = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else "nothing to restore"
    return f"Undo the {document.get('operation')} of {when} UTC: {what}."


def _describe(row: dict) -> str:
    return f"{row['table']} row {row['id']}"


def undo_write(target: str, backup: str | os.PathLike[str] | None = None, *,
               folder: str | os.PathLike[str] | None = None, busy_timeout_ms: int | None = None) -> dict:
    """Restore the rows of one studio write to TARGET (a file, a PostgreSQL or libSQL server URL) from its row backup.

    One transaction (a file or a libSQL server: one BEGIN IMMEDIATE; rows re-inserted with their rowid).

    BACKUP: the backup file (default: TARGET's newest backup not undone, see `pick_backup`).
    FOLDER: where backups are read and the undo's own backup is saved (default the data folder).
    Returns {"undone": True, "backup", "operation", "created_at", "deleted" (rows the write had
    inserted), "restored" (rows it had updated), "reinserted" (rows it had deleted), "undo_backup"}.
    Raises WriteRefused ("generation-changed": a row changed since the write; "conflict": already
    undone; "busy": a
    lock held longer than the write bound; "invalid", "not-found") and StoreError; nothing is
    written then.
    """
    path, document = pick_backup(target, backup, folder)
    rows = document["rows"]
    counts = {"deleted": 0, "restored": 0, "reinserted": 0}
    sink = BackupSink(folder=Path(folder) if folder else None, extra={"undoes": str(path)})
    with backup_sink(sink), write_transaction(target, busy_timeout_ms=busy_timeout_ms, label="undo") as tx:
        changed = []
        for row in rows:
            current = tx.canonical_rows(row["table"], "id = ?", (row["id"],))
            if (current[0] if current else None) != row["after"]:
                changed.append(row)
        if changed:
            named = ", ".join(_describe(r) for r in changed[:_NAMED])
            more = f" and {len(changed) - _NAMED} more" if len(changed) > _NAMED else ""
            raise WriteRefused("generation-changed",
                               f"{len(changed)} row(s) changed since the {document.get('operation')} of "
                               f"{document.get('created_at')} ({named}{more}): undoing it now would overwrite that. "
                               "Nothing was written.")
        for row in rows:
            if row["before"] is None:
                counts["deleted"] += tx.delete(row["table"], "id = ?", (row["id"],))
        for row in rows:
            if row["before"] is None:
                continue
            if row["after"] is None:
                tx.insert(row["table"], row["before"], raw=True)
                counts["reinserted"] += 1
            else:
                counts["restored"] += tx.update(row["table"], row["before"], "id = ?", (row["id"],), raw=True)
    made = sink.made[-1] if sink.made else None
    mark_undone(path, document, made)
    return {"undone": True, "backup": str(path), "operation": document.get("operation"),
            "created_at": document.get("created_at"), **counts, "undo_backup": str(made) if made else None}

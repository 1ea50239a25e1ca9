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
from studio.store.write.outcome import journal_outcome
from studio.store.write.row_backup import (
    BackupSink,
    backup_location,
    backup_root,
    backup_sink,
    list_row_backups,
    load_row_backup,
    mark_never_written,
    mark_undone,
    target_identity,
)
from studio.store.write.transaction import write_transaction

__all__ = ["candidate_backups", "describe_backup", "pick_backup", "set_aside_never_written", "undo_write"]

#: At most this many changed rows are named in a refusal.
_NAMED = 5


def pick_backup(target: str, backup: str | os.PathLike[str] | None = None,
                folder: str | os.PathLike[str] | None = None, *, set_aside: bool = True) -> tuple[Path, dict]:
    """Return (path, document) of the backup to undo: BACKUP, or TARGET's newest write not undone yet.

    FOLDER: where backups are (default `row_backup.backup_root()`), listed once. SET_ASIDE: first set
    aside the backups of writes that never happened (`set_aside_never_written`, one read of the store).
    Raises WriteRefused ("invalid": a backup of another store, or not safe to read; "conflict": already
    undone; "not-found": no backup) and StoreError (unreadable file).
    """
    location = backup_location(target)
    if backup is None:
        found = candidate_backups(target, folder)
        if set_aside:
            aside = set(set_aside_never_written(target, folder, candidates=found))
            found = [(p, d) for p, d in found if p not in aside]
        return _newest(found, location.display, folder)
    path = Path(backup)
    document = load_row_backup(path)
    if document.get("identity") != target_identity(location):
        raise WriteRefused("invalid", f"{path} is the backup of a write to {document.get('target')}, not to "
                                      f"{location.display}; nothing was written.")
    if document.get("undone"):
        raise WriteRefused("conflict", f"The write in {path} was already undone at {document['undone'].get('at')}; "
                                       "nothing was written.")
    return path, document


def _newest(found: list[tuple[Path, dict]], display: str, folder) -> tuple[Path, dict]:
    """The first of FOUND (newest first); WriteRefused ("not-found") when there is none."""
    if not found:
        raise WriteRefused("not-found", f"No backup of a studio write to {display} is left to undo in "
                                        f"{folder or backup_root()}.")
    return found[0]


def candidate_backups(target: str, folder: str | os.PathLike[str] | None = None) -> list[tuple[Path, dict]]:
    """[(path, document)] of TARGET's backups an undo may restore, newest first: not undone, not an undo's own,
    not set aside as the backup of a write that never happened (`never_written`). One listing of FOLDER."""
    location = backup_location(target)
    return [(p, d) for p, d in list_row_backups(location, Path(folder) if folder else None)
            if not d.get("undone") and not d.get("never_written") and d.get("operation") != "undo"]


def set_aside_never_written(target: str, folder: str | os.PathLike[str] | None = None, *,
                            candidates: list[tuple[Path, dict]] | None = None) -> list[Path]:
    """Mark `never_written` the newest backups of TARGET whose write never happened; return their paths.

    CANDIDATES: `candidate_backups(target, folder)` when the caller has listed them already (the folder
    is then not read again). A write killed before its COMMIT (or lost with the server after COMMIT
    was sent and never resolved) leaves its row backup behind; it would otherwise be the "last write" an
    undo offers, and refuse with rows "changed since" a write that never took place. The rows of each
    backup, newest first, are read inside one write transaction that changes nothing (locked, so a
    write still running is waited for); the walk stops at the first backup whose write did happen. A
    server that cannot be read leaves every backup as it is ([]): the undo itself then says why.
    """
    from studio.errors import StoreError

    if candidates is None:
        candidates = candidate_backups(target, folder)
    found: list[tuple[Path, dict]] = []
    if not candidates:
        return []
    try:
        with write_transaction(target, label="undo-check") as tx:
            for path, document in candidates:
                if not _changed_rows(tx, document["rows"]) or not _never_written(tx, document["rows"]):
                    break
                found.append((path, document))
    except StoreError:
        return []
    for path, document in found:
        mark_never_written(path, document)
    return [path for path, _ in found]


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
    if backup is None:   # the folder is listed once: the newest backup first, then older ones
        candidates = candidate_backups(target, folder)
        path, document = _newest(candidates, backup_location(target).display, folder)
    else:
        path, document = pick_backup(target, backup, folder, set_aside=False)
        candidates = [(path, document)]
    # a backup whose write never happened is set aside and the one before it undone
    never_written: list[tuple[Path, dict]] = []
    counts = {"deleted": 0, "restored": 0, "reinserted": 0}
    sink = BackupSink(folder=Path(folder) if folder else None, extra={"undoes": str(path)})
    try:
        with backup_sink(sink), write_transaction(target, busy_timeout_ms=busy_timeout_ms, label="undo") as tx:
            for path, document in candidates:
                changed = _changed_rows(tx, document["rows"])
                if not changed or not _never_written(tx, document["rows"]):
                    break
                never_written.append((path, document))
                if backup is not None:
                    raise WriteRefused("not-found", f"The write in {path} never happened (the studio stopped or lost "
                                                    "the server before its COMMIT took effect: every row is as it was "
                                                    "before it), so there is nothing to undo. Nothing was written.")
            else:
                raise WriteRefused("not-found", f"No write of the studio to {document.get('target')} is left to "
                                                f"undo: the {len(never_written)} backup(s) left belong to writes that "
                                                "never happened (stopped before their COMMIT). Nothing was written.")
            sink.extra["undoes"] = str(path)
            _restore(tx, document, changed, counts)
    finally:
        for skipped, doc in never_written:
            mark_never_written(skipped, doc)
    made = sink.made[-1] if sink.made else None
    mark_undone(path, document, made)
    return {"undone": True, "backup": str(path), "operation": document.get("operation"),
            "created_at": document.get("created_at"), **counts, "undo_backup": str(made) if made else None,
            "skipped_never_written": [str(p) for p, _ in never_written]}


def _where(tx, table: str) -> str:
    """The condition naming one row of TABLE by its journal key (`id`, or a vector index's `vector_id`)."""
    return f'"{tx.key_column(table) or "id"}" = ?'


def _current(tx, table: str, row_id: str) -> dict | None:
    if tx.dialect == "mongodb":   # the document as canonical Extended JSON (types and field order)
        from studio.store.write.backends.mongodb import canonical

        return canonical(tx.find_one(table, {"id": row_id}))
    found = tx.canonical_rows(table, _where(tx, table), (row_id,))
    return found[0] if found else None


def _differs(tx, image: dict | None, other: dict | None) -> bool:
    """True when two row images differ (on MongoDB the field order counts too: a document is ordered)."""
    if tx.dialect == "mongodb":
        from studio.store.write.backends.mongodb import same

        return not same(image, other)
    return image != other


def _changed_rows(tx, rows: list[dict]) -> list[dict]:
    """The rows of a backup that are no longer as its write left them (locked: FOR UPDATE where it applies)."""
    return [row for row in rows if _differs(tx, _current(tx, row["table"], row["id"]), row["after"])]


def _never_written(tx, rows: list[dict]) -> bool:
    """True when every row of a backup is as it was BEFORE its write: the write never took effect."""
    return journal_outcome(rows, lambda table, row_id: _current(tx, table, row_id)) == "not-written"


def _restore(tx, document: dict, changed: list[dict], counts: dict) -> None:
    """Put back the rows of DOCUMENT into COUNTS' tallies; WriteRefused when CHANGED names rows changed since."""
    rows = document["rows"]
    if changed:
        named = ", ".join(_describe(r) for r in changed[:_NAMED])
        more = f" and {len(changed) - _NAMED} more" if len(changed) > _NAMED else ""
        raise WriteRefused("generation-changed",
                           f"{len(changed)} row(s) changed since the {document.get('operation')} of "
                           f"{document.get('created_at')} ({named}{more}): undoing it now would overwrite that. "
                           "Nothing was written.")
    if tx.dialect == "mongodb":   # each document put back as its image (one transaction, or compare-and-set steps)
        for row in rows:
            tx.replace(row["table"], row["id"], tx.find_one(row["table"], {"id": row["id"]}), row["before"])
            kind = "deleted" if row["before"] is None else "reinserted" if row["after"] is None else "restored"
            counts[kind] += 1
        return
    for row in rows:
        if row["before"] is None:
            counts["deleted"] += tx.delete(row["table"], _where(tx, row["table"]), (row["id"],))
    for row in rows:
        if row["before"] is None:
            continue
        if row["after"] is None:
            tx.insert(row["table"], row["before"], raw=True)
            counts["reinserted"] += 1
        else:
            counts["restored"] += tx.update(row["table"], row["before"], _where(tx, row["table"]), (row["id"],),
                                            raw=True)

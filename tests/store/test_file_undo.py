"""Row backups on files (issue 21, item 5): every write saves the rows it changes before its COMMIT, and
`undo_write(PATH)` restores them exactly, or refuses when a concurrent writer changed them since.

Expected values from first principles: after a write and its undo, every row of every Mastra table
(rowid and every column as SQLite stores it, JSONB blobs included) equals what it was before the
write, read with the standard library's sqlite3 on private copies of the real Mastra fixtures.
"""

from __future__ import annotations

import sqlite3

import pytest

from studio.engine.tokens import count_observations
from studio.errors import WriteRefused
from studio.store import open_store
from studio.store.write.row_backup import backup_root, load_row_backup
from studio.store.write.undo import undo_write
from studio.store.writes import WriteSession


def all_rows(path) -> dict:
    """Every row of every Mastra table of PATH (rowid first), as SQLite stores it."""
    out = {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'mastra%'"):
            out[table] = sorted(conn.execute(f'SELECT rowid, * FROM "{table}"').fetchall(), key=repr)
    return out


def _reflect(session, path):
    with open_store(path) as store:
        rec = store.om_current("thread:support-1")
    text = "* 🔴 undo me\n* 🟡 and me"
    return session.commit_reflection(path, lookup_key="thread:support-1", expected_record_id=rec.id,
                                     observations=text, observation_tokens=count_observations(text))


def _delete_two(session, path):
    with open_store(path) as store:
        ids = [m.id for m in store.list_messages("support-4")][:2]
    return session.delete_messages(path, ids)


WRITES = {
    "reflect": _reflect,
    "delete-messages": _delete_two,
    "clear-thread": lambda session, path: session.clear_thread(path, "support-3"),
    "clone": lambda session, path: session.clone_thread(path, "support-2", new_thread_id="copy"),
}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("fixture", ["support", "live/support"])
def test_undo_puts_back_exactly_the_rows_there_were(fixture_db, fixture, write):
    path = fixture_db(fixture)
    before = all_rows(path)
    session = WriteSession()
    WRITES[write](session, path)
    after = all_rows(path)
    assert after != before
    backup = session.backup_for(path)
    document = load_row_backup(backup)
    assert backup.parent == backup_root() and document["identity"] == {"file": str(path.resolve())}
    assert [p.name for p in path.parent.iterdir() if "backup" in p.name] == []     # no copy of the file
    result = session.undo_write(path)
    assert result["backup"] == str(backup) and all_rows(path) == before
    assert load_row_backup(backup)["undone"]["by"] == result["undo_backup"]


def test_undo_refuses_when_a_concurrent_writer_changed_the_rows(fixture_db):
    path = fixture_db("live/support")
    session = WriteSession()
    session.clear_thread(path, "support-3")
    # the agent writes onto a row the clear touched (the thread's updatedAt), as Mastra does on its next turn
    with sqlite3.connect(path) as conn:
        conn.execute("""UPDATE mastra_threads SET "updatedAt" = '2030-01-01T00:00:00.000Z' WHERE id = 'support-3'""")
    changed = all_rows(path)
    with pytest.raises(WriteRefused) as refused:
        undo_write(str(path))
    assert refused.value.reason == "generation-changed" and "mastra_threads row support-3" in str(refused.value)
    assert all_rows(path) == changed


def test_a_refused_write_leaves_no_row_backup(fixture_db):
    path = fixture_db("support")
    session = WriteSession()
    with pytest.raises(WriteRefused):
        session.clone_thread(path, "support-1", new_thread_id="support-2")
    assert session.backup_for(path) is None and not (backup_root().exists() and list(backup_root().iterdir()))


def test_undo_lists_the_backups_folder_once(fixture_db, monkeypatch, capsys):
    """Picking the write to undo reads the backups folder once, however many backups it holds (the CLI's pick and
    restore, the studio's pick, `undo_write` without a backup named); the newest write is the one undone."""
    import json

    from studio.cli import main
    from studio.store.write import undo

    path = fixture_db("support")
    before = all_rows(path)
    session = WriteSession()
    for write in ("delete-messages", "clear-thread", "clone"):
        WRITES[write](session, path)
    listings = []
    real = undo.list_row_backups
    monkeypatch.setattr(undo, "list_row_backups", lambda *a, **k: listings.append(a) or real(*a, **k))

    newest = session.backup_for(path)
    assert undo.pick_backup(str(path))[0] == newest and len(listings) == 1
    assert main(["undo", str(path), "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backup"] == str(newest) and len(listings) == 2
    assert undo_write(str(path))["operation"] == "clear-thread" and len(listings) == 3
    assert undo_write(str(path))["operation"] == "delete-messages" and len(listings) == 4
    assert all_rows(path) == before

"""Online backups of real fixtures, and the write session's backup-before-the-first-write rule."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from studio.engine.tokens import count_observations
from studio.errors import StoreError, WriteRefused
from studio.store import open_store
from studio.store.write.file_backup import backup_database
from studio.store.write.row_backup import load_row_backup
from studio.store.writes import DESTRUCTIVE_WRITES, WriteSession
from tests.conftest import FIXTURE_NAMES


def state(path: Path) -> tuple:
    wal = Path(str(path) + "-wal")
    return (hashlib.sha256(path.read_bytes()).hexdigest(),
            hashlib.sha256(wal.read_bytes()).hexdigest() if wal.exists() else None, wal.exists())


def counts(path: Path) -> dict:
    with open_store(path) as store:
        out = {"messages": store.message_counts(), "threads": [t.id for t in store.list_threads()]}
        out["om"] = {k["lookupKey"]: [r.id for r in store.om_history(k["lookupKey"])] for k in store.om_lookup_keys()}
        return out


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_backup_is_a_complete_verified_copy_and_leaves_the_source_alone(fixture_db, name):
    path = fixture_db(name)
    before = state(path)
    backup = backup_database(path)
    assert state(path) == before
    assert backup.parent == path.parent
    assert re.fullmatch(rf"{re.escape(path.stem)}\.backup-\d{{8}}T\d{{6}}Z\.db", backup.name)
    assert counts(backup) == counts(path)  # rows that live only in the -wal are in the copy too
    assert not Path(f"{backup}-wal").exists() or Path(f"{backup}-wal").stat().st_size == 0
    assert sorted(p.name for p in path.parent.iterdir() if ".partial" in p.name) == []


def test_backup_never_overwrites_and_numbers_same_second_names(fixture_db, tmp_path):
    path = fixture_db("support")
    first, second = backup_database(path), backup_database(path)
    assert first != second and first.exists() and second.exists()
    dest = tmp_path / "mine.db"
    dest.write_bytes(b"precious")
    with pytest.raises(StoreError, match="overwrite"):
        backup_database(path, dest)
    assert dest.read_bytes() == b"precious"
    with pytest.raises(StoreError, match="not a folder"):
        backup_database(path, tmp_path / "missing-dir" / "b.db")
    with pytest.raises(StoreError):
        backup_database(tmp_path / "nope.db")


def test_full_backup_copies_the_file_once_and_every_write_saves_its_rows(fixture_db):
    path = fixture_db("support")
    made = []

    def spy(src, dest=None):
        made.append(src)
        return backup_database(src, dest)

    session = WriteSession(backup=spy, full_backup=True)
    assert session.backup_for(path) is None and session.copy_for(path) is None
    with open_store(path) as store:
        ids = [m.id for m in store.list_messages("support-4")]
        messages_before = store.message_count("support-4")
    assert session.delete_messages(path, ids) == messages_before
    copy, rows = session.copy_for(path), session.backup_for(path)
    assert copy is not None and len(made) == 1
    assert rows.suffix == ".json" and len(load_row_backup(rows)["rows"]) > messages_before   # + the thread's row
    with open_store(copy) as store:  # taken before the delete
        assert store.message_count("support-4") == messages_before
    session.clear_thread(path, "support-3")
    clone = session.clone_thread(path, "support-2")
    with open_store(path) as store:
        rec = store.om_current("thread:support-1")
    session.commit_reflection(path, lookup_key="thread:support-1", expected_record_id=rec.id, observations="* 🔴 x",
                              observation_tokens=count_observations("* 🔴 x"))
    session.update_thread(path, "support-2", title="Renamed")
    session.update_working_memory(path, thread_id="support-2", scope="resource", text="# notes")
    session.delete_thread(path, "support-meta")
    assert len(made) == 1 and session.copy_for(path) == copy
    assert session.backups == {path.resolve(): session.backup_for(path)} and session.backup_for(path) != rows
    with open_store(copy) as store:
        assert store.get_thread(clone["thread"]["id"]) is None and store.message_count("support-3") == 18
    # another file gets its own copy; a new session copies again
    other = fixture_db("history")
    session.clear_thread(other, "hist-2")
    assert len(made) == 2
    WriteSession(backup=spy, full_backup=True).clear_thread(path, "support-5")
    assert len(made) == 3
    assert set(DESTRUCTIVE_WRITES) == {"commit_reflection", "revert_to_generation", "clone_thread",
                                       "delete_messages", "clear_thread", "delete_thread", "update_thread",
                                       "update_working_memory"}


def test_without_full_backup_no_file_is_copied(fixture_db):
    path = fixture_db("support")
    session = WriteSession()
    session.clear_thread(path, "support-3")
    assert [p.name for p in path.parent.iterdir() if "backup" in p.name] == []
    assert session.copy_for(path) is None and session.backup_for(path).suffix == ".json"


def test_session_backup_dir_and_failed_backup_means_no_write(fixture_db, tmp_path):
    path = fixture_db("support")
    session = WriteSession(backup_dir=tmp_path / "backups-missing" / "x.db", full_backup=True)
    (tmp_path / "backups-missing").write_text("a file, not a folder")
    before = state(path)
    with pytest.raises(StoreError):
        session.clear_thread(path, "support-3")
    assert state(path) == before and session.backup_for(path) is None and session.copy_for(path) is None
    (tmp_path / "backups").mkdir(mode=0o700)
    session = WriteSession(backup_dir=tmp_path / "backups", full_backup=True)
    session.clear_thread(path, "support-3")
    copies = [p for p in (tmp_path / "backups").iterdir() if p.name.startswith("support.backup-")]
    assert copies == [session.copy_for(path)] and session.backup_for(path).parent == tmp_path / "backups"


def test_session_refused_write_leaves_the_file_unchanged_and_no_backup(fixture_db):
    path = fixture_db("live/support")
    session = WriteSession(full_backup=True)
    before = state(path)
    with pytest.raises(WriteRefused):
        session.clone_thread(path, "support-1", new_thread_id="support-2")
    with pytest.raises(WriteRefused):
        session.delete_messages(path, [""])
    assert state(path) == before
    # a refused write leaves neither its row backup nor the whole-file copy it made
    assert session.backup_for(path) is None and session.copy_for(path) is None
    assert [p.name for p in path.parent.iterdir() if "backup" in p.name] == []


@pytest.mark.parametrize(("source", "new_id", "message"), [
    ("nope", None, "There is no thread 'nope' to clone."),
    ("support-1", "support-2", "A thread with id 'support-2' already exists; choose another id."),
])
def test_a_clone_refused_for_its_ids_takes_no_backup(fixture_db, source, new_id, message):
    # The studio's Clone dialog and `clone` said "Nothing was written" and left a full copy of the file
    # (NAME.backup-….db) beside it: the ids are checked on a read-only open before the backup now.
    path = fixture_db("support")
    session = WriteSession()
    before = state(path)
    with pytest.raises(WriteRefused, match=re.escape(message)):
        session.clone_thread(path, source, new_thread_id=new_id)
    assert state(path) == before and session.backup_for(path) is None
    assert not list(path.parent.glob("*backup*"))

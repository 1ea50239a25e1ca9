"""Backup folders are private and a backup another user could have written is never restored (issue 22, item 3).

The tests run as root in CI's container (they `chown` a planted file to `nobody`, uid 65534, to
play the other local user); every check is the studio's own (`studio.store.write.private_folder`).
"""

from __future__ import annotations

import json
import os
import stat
import warnings

import pytest

from studio.errors import StoreNotice, WriteRefused
from studio.store.target import parse_target
from studio.store.write import row_backup
from studio.store.write.undo import pick_backup

TARGET = "postgresql://ann@127.0.0.1:5432/mem?schema=agent"
OTHER_UID = 65534   # nobody


class _Schema:
    def __init__(self):
        self.types = {"mastra_threads": {"id": "text", "title": "text"}}


JOURNAL = [{"table": "mastra_threads", "id": "t1", "before": {"id": "t1", "title": "old"},
            "after": {"id": "t1", "title": "new"}}]


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    return tmp_path / "share"


def test_folders_are_made_0700_whatever_the_umask(data_home):
    old = os.umask(0)
    try:
        made = row_backup.save_row_backup(parse_target(TARGET), JOURNAL, _Schema(), label="reflect")
    finally:
        os.umask(old)
    # every folder the studio made (share/, memory-studio/, backups/) is private; the file 0600
    for folder in (data_home, data_home / "memory-studio", data_home / "memory-studio" / "backups"):
        assert _mode(folder) == 0o700, folder
    assert _mode(made) == 0o600
    assert pick_backup(TARGET)[0] == made


def test_a_folder_others_can_write_is_refused_for_saving_and_for_undo(data_home):
    folder = data_home / "memory-studio" / "backups"
    folder.mkdir(parents=True)
    made = row_backup.save_row_backup(parse_target(TARGET), JOURNAL, _Schema(), label="reflect")
    os.chmod(folder, 0o777)
    with pytest.raises(WriteRefused, match=r"can be written by other users \(mode 0777\).*chmod 700") as refused:
        row_backup.save_row_backup(parse_target(TARGET), JOURNAL, _Schema(), label="reflect")
    assert refused.value.reason == "invalid"
    with pytest.raises(WriteRefused, match="neither keeps backups there nor restores from it"):
        pick_backup(TARGET)
    with pytest.raises(WriteRefused, match="can be written by other users"):
        pick_backup(TARGET, made)
    os.chown(folder, OTHER_UID, OTHER_UID)
    os.chmod(folder, 0o700)
    with pytest.raises(WriteRefused, match=f"belongs to another user \\(uid {OTHER_UID}\\)"):
        pick_backup(TARGET)


@pytest.mark.parametrize("plant", ["other owner", "writable by others", "symlink"])
def test_a_planted_backup_is_never_picked_and_is_said(data_home, tmp_path, plant):
    own = row_backup.save_row_backup(parse_target(TARGET), JOURNAL, _Schema(), label="reflect")
    document = json.loads(own.read_text(encoding="utf-8"))
    document["created_at"] = "2999-01-01T00:00:00.000000Z"     # newer than ours: it would be picked first
    document["rows"][0]["before"]["title"] = "planted"
    planted = own.with_name(own.name.replace("-reflect", "-zzz-reflect"))
    if plant == "symlink":
        outside = tmp_path / "elsewhere.json"
        outside.write_text(json.dumps(document), encoding="utf-8")
        planted.symlink_to(outside)
    else:
        planted.write_text(json.dumps(document), encoding="utf-8")
        if plant == "other owner":
            os.chown(planted, OTHER_UID, OTHER_UID)
            os.chmod(planted, 0o600)
        else:
            os.chmod(planted, 0o666)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        path, picked = pick_backup(TARGET)
    assert path == own and picked["rows"][0]["before"]["title"] == "old"
    notices = [str(w.message) for w in said if issubclass(w.category, StoreNotice)]
    assert len(notices) == 1 and "left out and are never restored" in notices[0]
    with pytest.raises(WriteRefused) as refused:
        pick_backup(TARGET, planted)
    assert refused.value.reason == "invalid" and "not read or restored" in str(refused.value)
    own.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(WriteRefused) as nothing:
            pick_backup(TARGET)
    assert nothing.value.reason == "not-found"

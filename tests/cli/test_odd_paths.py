"""Paths Linux allows that a new user has: names that are not UTF-8, paths longer than SQLite's 512 bytes.

Linux file names are bytes. Python reads a name that is not UTF-8 (here Latin-1 "café.db", the
byte 0xE9) from the command line as a surrogate escape ('\\udce9'); the studio must open the file
by its real bytes and show the name with U+FFFD (the replacement char) where it prints it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from studio.main import main
from tests.conftest import copy_fixture

LATIN1_NAME = os.fsdecode(b"caf\xe9.db")   # 'caf\udce9.db'


def latin1_copy(tmp_path: Path, fixture: str = "tools") -> Path:
    """Copy FIXTURE (with its -wal/-shm) to a file whose name is the bytes b'caf\\xe9.db'."""
    src = copy_fixture(fixture, tmp_path / "src")
    dst = tmp_path / LATIN1_NAME
    for ext in ("", "-wal", "-shm"):
        if Path(str(src) + ext).exists():
            shutil.copyfile(str(src) + ext, str(dst) + ext)
    return dst


def test_a_file_whose_name_is_not_utf8_opens(tmp_path, capsys):
    path = latin1_copy(tmp_path)
    assert os.fsencode(path).endswith(b"/caf\xe9.db")
    assert main(["threads", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["thread_ids"] == ["tools-1"]  # tools.db's one thread
    assert main(["inspect", str(path), "--json"]) == 0
    capsys.readouterr()
    # the same file by its file: URL, the byte percent-encoded
    url = "file:" + os.fsencode(path).decode("latin-1").replace("\xe9", "%E9")
    assert main(["threads", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["thread_ids"] == ["tools-1"]


def test_a_missing_non_utf8_name_is_shown_with_the_replacement_char(tmp_path, capsys):
    missing = tmp_path / os.fsdecode(b"na\xefve.db")
    assert main(["threads", str(missing), "--json"]) == 2
    err = capsys.readouterr().err
    assert "No such file" in err and "na\ufffdve.db" in err and "\\udc" not in err


def test_a_write_to_a_non_utf8_name_backs_up_and_commits(tmp_path, capsys):
    path = latin1_copy(tmp_path)
    assert main(["clone", str(path), "--thread", "tools-1", "--new-id", "copy-1", "--yes", "--json"]) == 0
    capsys.readouterr()
    assert main(["threads", str(path), "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["thread_ids"]) == ["copy-1", "tools-1"]

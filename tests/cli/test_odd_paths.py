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


# -- a path longer than SQLite opens ------------------------------------------------------------------

#: SQLite's unix VFS opens paths of at most 512 bytes (MAX_PATHNAME) less its "-journal" suffix; Linux
#: allows 4,095. The issue's path: 1,255 characters.
LONG = 1255


def long_copy(tmp_path: Path, fixture: str = "tools") -> Path:
    """Copy FIXTURE (with its -wal/-shm) to a path of exactly LONG characters under TMP_PATH."""
    src = copy_fixture(fixture, tmp_path / "src")
    name = f"{fixture}.db"
    folder = str(tmp_path / "deep")
    while len(folder) + 1 + len(name) < LONG:
        room = LONG - len(folder) - 2 - len(name)
        folder += "/" + "d" * max(1, min(200, room))
    dst = Path(folder) / name
    assert len(str(dst)) == LONG
    dst.parent.mkdir(parents=True)
    for ext in ("", "-wal", "-shm"):
        if Path(str(src) + ext).exists():
            shutil.copyfile(str(src) + ext, str(dst) + ext)
    return dst


def test_a_1255_character_path_opens(tmp_path, capsys):
    path = long_copy(tmp_path, "support")
    assert main(["threads", str(path), "--json"]) == 0
    ids = json.loads(capsys.readouterr().out)["thread_ids"]
    assert len(ids) == 6 and "support-1" in ids   # support.db's six threads
    assert main(["inspect", str(path), "--json"]) == 0
    capsys.readouterr()
    # nothing is left beside the file, nor in the temporary folder's snapshot
    assert sorted(p.name for p in path.parent.iterdir()) == ["support.db", "support.db-shm", "support.db-wal"]


def test_a_long_path_with_rows_in_its_wal_reads_them(tmp_path, capsys):
    import sqlite3

    path = long_copy(tmp_path, "tools")
    # a writer (stdlib SQLite, WAL mode) commits a thread and keeps the file open: the row lives in the
    # -wal only, as while a Mastra app runs. SQLite cannot open the long name, so the writer works on a
    # short-named copy whose file and -wal are then copied to the long name.
    short = tmp_path / "w.db"
    shutil.copyfile(path, short)
    writer = sqlite3.connect(short)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("INSERT INTO mastra_threads VALUES ('wal-only', 'user-finn', 'in the wal', NULL, "
                   "'2026-12-05T00:00:00.000Z', '2026-12-05T00:00:00.000Z')")
    writer.commit()
    assert (tmp_path / "w.db-wal").stat().st_size > 0
    shutil.copyfile(tmp_path / "w.db-wal", str(path) + "-wal")
    shutil.copyfile(short, path)
    writer.close()
    main_bytes, wal_bytes = path.read_bytes(), Path(str(path) + "-wal").read_bytes()
    assert len(wal_bytes) > 0
    assert main(["threads", str(path), "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["thread_ids"]) == ["tools-1", "wal-only"]
    assert path.read_bytes() == main_bytes and Path(str(path) + "-wal").read_bytes() == wal_bytes


def test_a_write_to_a_long_path_is_refused_with_a_sentence(tmp_path, capsys):
    path = long_copy(tmp_path, "tools")
    before = path.read_bytes()
    code = main(["clone", str(path), "--thread", "tools-1", "--new-id", "copy-1", "--yes", "--json"])
    err = capsys.readouterr().err
    assert code == 2
    assert "longer than 504 bytes" in err and "Nothing was written" in err and "OperationalError" not in err
    assert "…" in err and len(err) < 600   # the path is elided in the middle, not printed whole
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["tools.db"]

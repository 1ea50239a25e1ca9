"""Permission denied is exit 4 (I/O) with a sentence, for a write in a read-only folder and for `--screenshot`.

README: "4 I/O (disk full, read-only file or folder, disk I/O error)", the same for every command.
Before: a write in a read-only folder (file writable, folder 555) said "Backing up … failed:
sqlite3.OperationalError: unable to open database file" and exited 2; `--screenshot` of a file
nobody may read exited 2 where `inspect` exits 4. Run as an unprivileged user (root may write
anywhere): `setpriv` to nobody when the tests run as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO

NOBODY = 65534


def run_as_user(*args: str) -> subprocess.CompletedProcess:
    """Run `python -m studio ARGS` as an unprivileged user (nobody when we are root)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), QT_QPA_PLATFORM="offscreen")
    prefix = (["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
              if os.geteuid() == 0 else [])
    return subprocess.run([*prefix, sys.executable, "-m", "studio", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def base():
    """A folder everyone may enter (the unprivileged user's files go in it), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="studio-perm-"))
    folder.chmod(0o755)
    yield folder
    for sub in folder.iterdir():
        if sub.is_dir():
            sub.chmod(0o755)
    shutil.rmtree(folder)


def _copy(folder: Path, mode: int) -> Path:
    folder.mkdir()
    path = folder / "memory.db"
    shutil.copyfile(FIXTURES / "tools.db", path)
    path.chmod(mode)
    return path


def test_a_write_in_a_read_only_folder_exits_4_with_a_sentence(base):
    path = _copy(base / "ro", 0o666)     # the file is writable, its folder is not
    (base / "ro").chmod(0o555)
    before = path.read_bytes()
    done = run_as_user("clone", str(path), "--thread", "tools-1", "--new-id", "c-1", "--yes", "--json")
    assert done.returncode == 4, done.stderr
    assert "read-only for you (permission denied)" in done.stderr and "Nothing was written" in done.stderr
    assert "OperationalError" not in done.stderr and "Traceback" not in done.stderr
    assert path.read_bytes() == before and sorted(p.name for p in (base / "ro").iterdir()) == ["memory.db"]


def test_screenshot_of_an_unreadable_file_exits_4_as_inspect_does(base):
    path = _copy(base / "locked", 0o000)
    inspect = run_as_user("inspect", str(path), "--json")
    shot = run_as_user(str(path), "--screenshot", str(base / "x.png"))
    assert inspect.returncode == 4 and "permission denied" in inspect.stderr
    assert shot.returncode == 4, shot.stderr
    assert "permission denied" in shot.stderr and not (base / "x.png").exists()


def test_screenshot_into_a_read_only_folder_exits_4(base):
    path = _copy(base / "ok", 0o644)
    (base / "out").mkdir()
    (base / "out").chmod(0o555)
    done = run_as_user(str(path), "--screenshot", str(base / "out" / "x.png"), "--size", "800x600")
    assert done.returncode == 4, done.stderr
    assert "permission denied" in done.stderr and not (base / "out" / "x.png").exists()

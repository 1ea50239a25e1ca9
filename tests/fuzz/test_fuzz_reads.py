"""Fuzzing every fixture: byte flips, truncations and odd values never get a traceback, a hang or a change.

For each real Mastra fixture, hypothesis damages a private copy (flip bytes of the main file or of
its -wal, cut the file short, or store an odd value — a blob, text that is not UTF-8, a huge number,
deep JSON — in a random cell) and then reads it the way the CLI and the GUI do. What must hold,
whatever the damage: every failure is a StudioError (a sentence for the user, never another
exception or a driver panic), every case ends (a watchdog fails a case that runs for
CASE_LIMIT_S), and the main file and -wal are byte for byte what they were. The GUI part opens a
smaller sample of damaged copies one after another in one window, in a subprocess: each load
ends, and the window then still opens a healthy fixture.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.app.listing import load_listing
from studio.app.messages import load_message_page
from studio.app.thread_detail import load_thread_detail
from studio.cli import main as cli_main
from studio.errors import StudioError
from studio.store import open_store
from tests.conftest import FIXTURE_NAMES, REPO, copy_fixture

EXAMPLES_PER_FIXTURE = 40
CASE_LIMIT_S = 60          # a case still running after this is a hang (reads take well under a second)
GUI_CASES = 6
CASES_RUN: list[str] = []  # what ran, for the report (pytest -s prints the summary)

TABLES = ["mastra_threads", "mastra_messages", "mastra_observational_memory", "mastra_resources"]
ODD_VALUES = st.one_of(
    st.binary(max_size=24),
    st.binary(min_size=1, max_size=24).map(lambda b: ("invalid-utf8", b + b"\xff\xed\xa0\x80")),
    st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=24),
    st.sampled_from(["", "null", "[]", "{}", "[" * 3000 + "]" * 3000, '{"format":2,"parts":"x"}',
                     "9" * 400, "-1", "1e999", "2026-13-45T99:99:99.999Z", "resource:", "thread:"]),
    st.none(),
)

DAMAGE = st.one_of(
    st.tuples(st.just("flip"), st.sampled_from(["main", "wal"]),
              st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=6)),
    st.tuples(st.just("truncate"), st.sampled_from(["main", "wal"]), st.floats(0, 1, exclude_max=True)),
    st.tuples(st.just("value"), st.sampled_from(TABLES), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6),
              ODD_VALUES),
)


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def damage(path: Path, case) -> bool:
    """Apply CASE to the copy at PATH; return False when it does not apply (an empty table, a duplicate id)."""
    kind = case[0]
    if kind in ("flip", "truncate"):
        target = Path(str(path) + "-wal") if case[1] == "wal" else path
        if not (target.exists() and target.stat().st_size):
            target = path  # this fixture's -wal is empty: damage the main file instead
        size = target.stat().st_size
        if size == 0:
            return False
        if kind == "truncate":
            with open(target, "r+b") as fh:
                fh.truncate(int(size * case[2]))
            return True
        data = bytearray(target.read_bytes())
        for where, mask in case[2]:
            data[int(size * where)] ^= mask
        target.write_bytes(bytes(data))
        return True
    _, table, row_pick, col_pick, value = case
    conn = sqlite3.connect(path)
    try:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        count = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] if columns else 0
        if not count:
            return False
        column = columns[col_pick % len(columns)]
        rowid = conn.execute(f"SELECT rowid FROM {table} LIMIT 1 OFFSET ?", (row_pick % count,)).fetchone()[0]
        if isinstance(value, tuple):
            conn.execute(f'UPDATE {table} SET "{column}" = CAST(? AS TEXT) WHERE rowid = ?', (value[1], rowid))
        else:
            conn.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid = ?', (value, rowid))
        conn.commit()
    except sqlite3.IntegrityError:
        return False
    finally:
        conn.close()
    return True


class Hang(Exception):
    pass


@contextlib.contextmanager
def watchdog(seconds: int):
    def expire(_signum, _frame):
        raise Hang(f"a read was still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def read_everything(path: Path) -> None:
    """Read PATH as the studio does; StudioError (a sentence for the user) is the only allowed failure."""
    try:
        with open_store(path) as store:
            listing = load_listing(store)
            for row in listing.rows:
                load_thread_detail(store, row.thread.id)
                load_message_page(store, row.thread.id, 0, 50)
            for key in store.om_lookup_keys():
                store.om_history(key["lookupKey"])
    except StudioError:
        pass
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(["inspect", str(path)])
    assert code in (0, 2), err.getvalue()
    assert "unexpected error" not in err.getvalue() and "Traceback" not in err.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_damaged_copies_are_read_or_refused_cleanly(name):
    workdir = Path(tempfile.mkdtemp(prefix="studio-fuzz-"))

    @settings(max_examples=EXAMPLES_PER_FIXTURE, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(case=DAMAGE)
    def run(case):
        folder = Path(tempfile.mkdtemp(dir=workdir))
        try:
            path = copy_fixture(name, folder)
            if not damage(path, case):
                return
            wal = Path(str(path) + "-wal")
            before = (digest(path), digest(wal))
            files = sorted(p.name for p in folder.iterdir())
            with watchdog(CASE_LIMIT_S):
                read_everything(path)
            assert (digest(path), digest(wal)) == before, "the damaged file was changed by a read"
            created = sorted({p.name for p in folder.iterdir()} - set(files))
            assert created in ([], [path.name + "-shm"], [path.name + "-wal", path.name + "-shm"]), created
            CASES_RUN.append(f"{name}:{case[0]}")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    try:
        run()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"fuzz {name}: {sum(1 for c in CASES_RUN if c.startswith(name + ':'))} damaged copies read")


GUI_SCRIPT = r"""
import sys
from PySide6.QtCore import QSettings
from studio.ui.app import application
from studio.ui.context import AppContext
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.main_window import MainWindow

app = application()
ctx = AppContext(settings=QSettings(sys.argv[1] + "/settings.ini", QSettings.Format.IniFormat), runner=TaskRunner(),
                 interactive=False)
window = MainWindow(ctx)
window.resize(1200, 800)
window.show()
for path in sys.argv[3:]:
    window.open_database(path)
    assert ctx.runner.wait_idle(120), f"loading {path} never ended"
    if window.database_path == path and window.thread_model.rowCount():
        window.select_thread(window.first_thread_with_om())
        assert ctx.runner.wait_idle(120), f"loading a thread of {path} never ended"
    window.refresh()
    assert ctx.runner.wait_idle(120), f"refreshing {path} never ended"
window.open_database(sys.argv[2])
assert ctx.runner.wait_idle(120)
assert window.database_path == sys.argv[2] and window.thread_model.rowCount() == 6, "the window did not survive"
print("GUI OK", len(sys.argv) - 3)
ctx.runner.shutdown()
"""


def test_the_gui_survives_a_sample_of_damaged_copies(tmp_path):
    cases = [("flip", "main", [(0.3, 0x55), (0.6, 0xFF)]), ("flip", "main", [(0.05, 0x01)]),
             ("truncate", "main", 0.5), ("flip", "wal", [(0.4, 0x80), (0.7, 0x10)]),
             ("value", "mastra_threads", 0, 2, ("invalid-utf8", b"title \xff\xed\xa0\x80")),
             ("value", "mastra_messages", 3, 2, ("invalid-utf8", b'{"format":2,"parts":[],"x":"\xff"}'))]
    names = ["support", "collab", "tools", "live/support", "history", "buffered"]
    paths = []
    for i, (name, case) in enumerate(zip(names, cases[:GUI_CASES], strict=True)):
        path = copy_fixture(name, tmp_path / f"case{i}")
        assert damage(path, case)
        paths.append(str(path))
    healthy = copy_fixture("support", tmp_path / "healthy")
    env = dict(os.environ, PYTHONPATH=str(REPO), QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-c", GUI_SCRIPT, str(tmp_path), str(healthy), *paths], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"GUI OK {len(paths)}" in done.stdout
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr, done.stderr[-3000:]

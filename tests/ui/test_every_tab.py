"""No tab, on any database, may crash the process: every tab of every thread of every fixture, in a child process.

Each fixture runs in its own `python -m tests.ui.every_tab_probe` process (offscreen), so a segmentation
fault or an abort inside Qt or pyqtgraph ends that child only; the test then fails naming the database
and the thread and tab the child announced last. The threads are those Mastra itself lists for the
database (the keys of `threads` in its oracle). A read that fails while a tab loads (the tab shows an
error instead of the data) or an exception printed by a slot fails the test too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from studio.ui.widgets.thread_view import TAB_NAMES
from tests.conftest import FIXTURE_NAMES, REPO, copy_fixture, load_oracle

PROBE_TIMEOUT_S = 900


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_tab_of_every_thread_opens_without_crash_or_error(name, tmp_path):
    thread_ids = sorted(load_oracle(name)["threads"])
    assert thread_ids, f"the oracle of {name} lists no thread"
    db = copy_fixture(name, tmp_path / "fx")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tests.ui.every_tab_probe", str(db), *thread_ids],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    lines = done.stdout.splitlines()
    steps = [line.split(" ", 2)[1:] for line in lines if line.startswith("STEP ")]
    if done.returncode != 0 or not any(line.startswith("DONE ") for line in lines):
        where = f"thread {steps[-1][0]!r}, tab {steps[-1][1]!r}" if steps else "before any tab"
        pytest.fail(f"{name}.db: the studio process ended ({_describe_exit(done.returncode)}) at {where}\n"
                    f"{done.stdout[-2000:]}\n{done.stderr[-6000:]}")
    errors = [line for line in lines if line.startswith("ERROR ")]
    assert not errors, f"{name}.db: tabs that failed to load:\n" + "\n".join(errors)
    # an exception in a slot does not end the process, PySide prints it: a tab half drawn
    assert "Traceback" not in done.stderr, f"{name}.db: an exception while opening the tabs:\n{done.stderr[-6000:]}"
    assert [tuple(s) for s in steps] == [(t, tab) for t in thread_ids for tab in TAB_NAMES]
    assert lines[-1] == f"DONE {len(thread_ids) * len(TAB_NAMES)}"

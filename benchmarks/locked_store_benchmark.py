"""Measure the window while another process holds a rollback-journal database's lock (issue 21, item 4).

    python benchmarks/locked_store_benchmark.py [DB] [--hold 5] [--json OUT.json]

DB defaults to benchmarks/out/large.db (built by build_large_db.py when missing); a private copy is put in
rollback-journal mode (journal_mode DELETE), where a writer in the middle of its transaction (BEGIN
EXCLUSIVE, `tests/lock_holder.py`: another process, another SQLite library) keeps every reader out. The
issue's first measurement: the window went black for ~5 s, the GUI thread waiting in the driver's busy
handler. Two cases, the studio offscreen with a 10 ms heartbeat on its GUI thread
(`live_refresh_benchmark.Heartbeat`), the lock held HOLD s in each:

* `open`: File ▸ Open of the locked file, then the writer lets go;
* `refresh`: the file open and settled (every bar and badge), the writer takes the lock, F5, the 2 s
  watcher polling meanwhile, then the writer lets go.

Reported per case: `notice_s` (from the open / F5 until the status bar's "Waiting for the database"
notice is shown: the window says what it waits for), `settled_after_release_s` (from the writer's release
until the thread list is read again and, for `open`, every bar and badge is in), and for `while_held` and
`after_release` (until settled): `gui_stall_ms_longest` (the longest gap between two beats: wall clock,
so a loaded machine's scheduling shows in it), `gui_busy_ms_longest` (the GUI thread's own CPU in its
busiest gap, what a stall would be on an idle machine) and `gui_stalls_over_50_ms`. Figures are
measurements, not assertions; the machine's load (`os.getloadavg()`) is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT_DB = REPO / "benchmarks" / "out" / "large.db"


def rollback_journal_copy(db: Path, folder: Path) -> Path:
    """Copy DB (and its -wal) into FOLDER and put the copy in journal_mode DELETE; return the copy's path."""
    dest = folder / db.name
    for suffix in ("", "-wal"):
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", f"{dest}{suffix}")
    conn = sqlite3.connect(dest)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert conn.execute("PRAGMA journal_mode=delete").fetchone()[0] == "delete"
    finally:
        conn.close()
    return dest


def measure(path: Path, hold_s: float, settle_s: float = 600.0) -> dict:
    """Run both cases (see the module) on PATH, a rollback-journal database; return their figures."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QSettings, QTimer

    from benchmarks.live_refresh_benchmark import Heartbeat
    from studio.ui.app import application, warm_tokenizer
    from studio.ui.context import AppContext
    from studio.ui.tasks import TaskRunner
    from studio.ui.widgets.main_window import MainWindow
    from tests.lock_holder import hold_lock, release

    _app = application()   # kept: the QApplication lives as long as the window
    tmp = tempfile.mkdtemp(prefix="locked-bench-")
    ctx = AppContext(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.Format.IniFormat), runner=TaskRunner())
    warm_tokenizer()   # as `run_studio` does before the window shows
    window = MainWindow(ctx)
    window.resize(1400, 900)
    window.show()

    def pump(duration: float) -> None:
        loop = QEventLoop()
        QTimer.singleShot(max(1, int(duration * 1000)), loop.quit)
        loop.exec()

    def wait_for(predicate, limit: float) -> float | None:
        """Pump events until PREDICATE holds (return the seconds it took) or LIMIT s pass (None)."""
        t0 = time.monotonic()
        while not predicate():
            if time.monotonic() - t0 > limit:
                return None
            pump(0.01)
        return time.monotonic() - t0

    def settled() -> bool:
        return (window.thread_model.total_rows > 0 and window.thread_model.statuses_done
                and not window.health.scan.running and ctx.runner.pending == 0)

    def case(start, *, then_settled: bool) -> dict:
        heartbeat = Heartbeat()
        holder = hold_lock(path, "rollback-journal")
        heartbeat.start()
        t0 = time.monotonic()
        start()
        notice = wait_for(window.lock_notice.isVisible, hold_s)
        pump(max(0.0, hold_s - (time.monotonic() - t0)))
        heartbeat.stop()
        held = {"gui_stall_ms_longest": round(max(heartbeat.gaps), 1),
                "gui_busy_ms_longest": round(max(heartbeat.busy), 1),
                "gui_stalls_over_50_ms": sum(g > 50 for g in heartbeat.gaps)}
        released = time.monotonic()
        heartbeat.start()
        release(holder)
        done = wait_for(lambda: not window.lock_notice.isVisible() and ctx.runner.pending == 0
                        and window.thread_model.total_rows > 0 and (settled() if then_settled else True), settle_s)
        heartbeat.stop()
        return {"notice_s": None if notice is None else round(notice, 3),
                "held_s": round(released - t0, 2), "while_held": held,
                "settled_after_release_s": None if done is None else round(time.monotonic() - released, 2),
                "after_release": {"gui_stall_ms_longest": round(max(heartbeat.gaps), 1),
                                  "gui_busy_ms_longest": round(max(heartbeat.busy), 1),
                                  "gui_stalls_over_50_ms": sum(g > 50 for g in heartbeat.gaps)},
                "rows_listed": window.thread_model.total_rows}

    opened = case(lambda: window.open_database(str(path)), then_settled=True)
    refreshed = case(window.refresh_action.trigger, then_settled=False)
    window.watcher.stop()
    ctx.runner.wait_idle()
    window.close()
    ctx.runner.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    return {"open": opened, "refresh": refreshed}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db", nargs="?", type=Path, default=DEFAULT_DB)
    p.add_argument("--hold", type=float, default=5.0, help="seconds the writer holds the lock in each case")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    args = p.parse_args(argv)
    if not args.db.exists():
        if args.db != DEFAULT_DB:
            p.error(f"{args.db} does not exist")
        args.db.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "build_large_db.py"), str(args.db)], check=True)
    with tempfile.TemporaryDirectory(prefix="locked-db-") as folder:
        path = rollback_journal_copy(args.db, Path(folder))
        figures = {"db": str(args.db), "hold_s": args.hold, **measure(path, args.hold),
                   "load_average": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The studio on a server store (PostgreSQL URL, or any target): thread list, bars, stalls, statements.

    python benchmarks/server_studio_benchmark.py TARGET [--runs N] [--json OUT]

TARGET: e.g. 'postgresql://USER@127.0.0.1:PORT/DB?schema=bench'.

The target is what build_large_db.py --pg / --libsql-url wrote (5,007 threads, ~220k messages), or
the local file itself. Reports, in ms: first painted thread list (issue 13: ≤ 300; the threads
alone, the listing's first step), message counts and last activity in (its second step), every
thread's bars exact (in the background), the longest GUI-thread stall meanwhile (a 5 ms timer's
largest lateness, as run_benchmark.py measures it; goal ≤ 50), and `inspect`'s statement count and
time on the same target (count independent of the thread count). The studio and `inspect` run in
fresh processes (each run): the studio part starts the driver import as `memory-studio URL` does
(`studio.store.warmup`, before Qt is imported), and times from `open_database` as well as from
the process start. Figures are measurements, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROCESS_START = time.perf_counter()

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def studio_on(target: str, bars: bool = True) -> dict:
    """Open TARGET in the real MainWindow (offscreen without a display) and time the thread list and bars."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from studio.store.warmup import warm_up

    warm_up(target)   # as studio.ui.start does before it imports Qt
    from PySide6.QtCore import QElapsedTimer, QSettings, QTimer

    from studio.ui.app import application
    from studio.ui.context import AppContext
    from studio.ui.widgets.main_window import MainWindow

    app = application()
    settings_dir = tempfile.mkdtemp(prefix="studio-bench-")
    ctx = AppContext(settings=QSettings(str(Path(settings_dir) / "s.ini"), QSettings.Format.IniFormat))
    window = MainWindow(ctx)
    window.resize(1400, 900)
    window.show()
    stall = {"max": 0, "last": None, "at": None, "t0": None}
    clock = QElapsedTimer()
    clock.start()

    def tick() -> None:
        now = clock.elapsed()
        if stall["last"] is not None and now - stall["last"] - 5 > stall["max"]:
            stall["max"] = now - stall["last"] - 5
            stall["at"] = now - (stall["t0"] or 0)
        stall["last"] = now

    ticker = QTimer()
    ticker.setInterval(5)
    ticker.timeout.connect(tick)
    ticker.start()

    def wait_until(predicate, timeout_s: float = 900) -> float:
        start = time.perf_counter()
        while not predicate():
            app.processEvents()
            if time.perf_counter() - start > timeout_s:
                raise TimeoutError("benchmark step did not finish")
            time.sleep(0.001)
        return time.perf_counter()

    out = {}
    t0 = time.perf_counter()
    stall["t0"] = clock.elapsed()
    window.open_database(target)
    t_rows = wait_until(lambda: window.thread_model.rowCount() > 0)
    window.threads_view.viewport().repaint()
    out["first_painted_thread_list_ms"] = ms(time.perf_counter() - t0)
    out["first_paint_from_process_start_ms"] = ms(time.perf_counter() - PROCESS_START)
    out["rows_in_model_ms"] = ms(t_rows - t0)
    out["threads_listed"] = window.thread_model.rowCount()
    out["counts_shown_at_first_paint"] = window.thread_model.counted
    wait_until(lambda: window.thread_model.counted)
    out["message_counts_in_ms"] = ms(time.perf_counter() - t0)
    if bars:
        wait_until(lambda: window.thread_model._status_state == "done")
        out["all_bars_exact_ms"] = ms(time.perf_counter() - t0)
    else:   # the stalls of the listing, the selected thread's detail and the first status batches
        end = time.perf_counter() + 3
        wait_until(lambda: time.perf_counter() > end)
    out["stall_while_loading_ms"] = stall["max"]
    out["longest_stall_ended_at_ms"] = stall["at"]
    ticker.stop()
    window.close()
    ctx.runner.shutdown()
    return out


def inspect_on(target: str) -> dict:
    """Time `inspect` in this process and count its statements (benchmarks/query_count.py)."""
    from benchmarks.query_count import counting_statements, inspect_path

    t0 = time.perf_counter()
    with counting_statements() as count:
        doc = inspect_path(target)
    return {"inspect_ms": ms(time.perf_counter() - t0), "inspect_statements": count.statements,
            "threads": len(doc["threads"]), "lookup_keys": len(doc["observational_memory"])}


def run_part(part: str, target: str, extra: tuple[str, ...] = ()) -> dict:
    """Run PART ("studio" or "inspect") on TARGET in a fresh process; return its figures."""
    done = subprocess.run([sys.executable, __file__, target, "--part", part, *extra], capture_output=True,
                          text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{part} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def main(argv=None) -> int:
    """Parse arguments, measure, print (and write) the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("target", help="a postgresql:// URL (or any target the studio opens)")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    p.add_argument("--skip-studio", action="store_true", help="inspect only (no Qt)")
    p.add_argument("--skip-inspect", action="store_true", help="the studio only")
    p.add_argument("--runs", type=int, default=1, help="measure this many times (fresh processes each run)")
    p.add_argument("--no-bars", action="store_true",
                   help="stop 3 s after the message counts instead of waiting for every bar (a slow sqld)")
    p.add_argument("--part", choices=["studio", "inspect"], help=argparse.SUPPRESS)   # a child process
    a = p.parse_args(argv)
    if a.part:
        print(json.dumps(studio_on(a.target, not a.no_bars) if a.part == "studio" else inspect_on(a.target)))
        return 0
    runs = []
    for _ in range(max(1, a.runs)):
        figures = {}
        if not a.skip_inspect:
            figures["inspect"] = run_part("inspect", a.target)
        if not a.skip_studio:
            figures["studio"] = run_part("studio", a.target, ("--no-bars",) if a.no_bars else ())
        runs.append(figures)
    text = json.dumps(runs[0] if len(runs) == 1 else runs, indent=2)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure the Overview window on the large benchmark database: GUI-thread stalls while it loads.

    python benchmarks/overview_benchmark.py [DB] [--json OUT.json]

DB defaults to benchmarks/out/large.db, built by build_large_db.py when missing. The real
MainWindow opens DB (offscreen unless a display is set); as soon as its thread list is in, View ▸
Overview is opened while the thread list's own status batches are still running. A 5 ms timer on
the GUI thread records how late each tick fires; reported, in ms: time to the first points drawn,
time until every thread's point is drawn, the longest stall and the 99th-percentile lateness while
the Overview loads, and the same while the user pans and zooms the full chart. Figures are
measurements, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TICK_MS = 5


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(db: Path) -> dict:
    """Open DB in the studio, open the Overview, and time it (see the module docstring)."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QElapsedTimer, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from studio.ui.app import application
    from studio.ui.context import AppContext
    from studio.ui.widgets.main_window import MainWindow

    _app = application()   # held while the window lives
    settings_dir = tempfile.mkdtemp(prefix="studio-overview-bench-")
    ctx = AppContext(settings=QSettings(str(Path(settings_dir) / "s.ini"), QSettings.Format.IniFormat),
                     interactive=False)
    window = MainWindow(ctx)
    window.resize(1400, 900)
    window.show()

    lateness: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = {"t": None}

    def tick() -> None:
        now = clock.elapsed()
        if last["t"] is not None:
            lateness.append(max(0, now - last["t"] - TICK_MS))
        last["t"] = now

    ticker = QTimer()
    ticker.setInterval(TICK_MS)
    ticker.timeout.connect(tick)
    ticker.start()

    def wait_until(predicate, timeout_s: float = 900) -> float:
        start = time.perf_counter()
        while not predicate():
            QApplication.processEvents()
            if time.perf_counter() - start > timeout_s:
                raise TimeoutError("benchmark step did not finish")
            time.sleep(0.001)
        return time.perf_counter()

    out: dict = {}
    t0 = time.perf_counter()
    window.open_database(str(db))
    wait_until(lambda: window.thread_model.rowCount() > 0)
    out["thread_list_ms"] = ms(time.perf_counter() - t0)
    out["helper_process"] = window.uses_helper

    lateness.clear()
    t0 = time.perf_counter()
    overview = window.dialogs.show_overview()
    overview.resize(1000, 750)
    out["overview_window_shown_ms"] = ms(time.perf_counter() - t0)
    t_first = wait_until(lambda: len(overview.entries) > 0)
    out["first_points_ms"] = ms(t_first - t0)
    t_all = wait_until(lambda: overview.finished)
    out["all_points_ms"] = ms(t_all - t0)
    out["points"] = len(overview.entries)
    out["longest_stall_while_loading_ms"] = round(max(lateness, default=0), 1)
    out["p99_lateness_while_loading_ms"] = round(percentile(lateness, 0.99), 1)
    out["ticks_while_loading"] = len(lateness)

    lateness.clear()
    vb = overview.plot.getPlotItem().getViewBox()
    for i in range(40):  # pan and zoom the full chart, as a user would
        vb.scaleBy((0.9, 0.9) if i % 2 else (1 / 0.9, 1 / 0.9))
        vb.translateBy(x=0.01 * (1 if i % 4 < 2 else -1))
        overview.plot.repaint()
        QApplication.processEvents()
    out["longest_stall_while_panning_ms"] = round(max(lateness, default=0), 1)
    wait_until(lambda: ctx.runner.pending == 0)
    ticker.stop()
    overview.close()
    window.close()
    ctx.runner.shutdown()
    return out


def main(argv=None) -> int:
    """Build the database if needed, measure, print and optionally save the figures."""
    p = argparse.ArgumentParser(description="Memory Studio Overview benchmark")
    p.add_argument("db", nargs="?", type=Path, default=REPO / "benchmarks" / "out" / "large.db")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    a = p.parse_args(argv)
    if not a.db.exists():
        from benchmarks.build_large_db import DEFAULT_SOURCE, build

        print(f"building {a.db} …", flush=True)
        print(build(a.db, DEFAULT_SOURCE, 5000, 40, 20000), flush=True)
    results = {"database": str(a.db), "bytes": a.db.stat().st_size, "overview": measure(a.db)}
    text = json.dumps(results, indent=2)
    print(text)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

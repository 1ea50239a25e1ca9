"""Measure Memory Studio on a large database: core timings and the real window's responsiveness.

    python benchmarks/run_benchmark.py [DB] [--json OUT.json]

DB defaults to benchmarks/out/large.db, built by build_large_db.py when missing. Reports, in ms:
  core: open + thread list, every thread's status (Mastra's getStatus), the 20,000-message thread
        read and estimated;
  studio (offscreen unless a display is set): time to the first painted thread list, time until
        every thread's bars are exact, time to open the 20,000-message thread (its OM bars and
        first message page shown), the longest GUI-thread stall while loading (a 5 ms timer's
        largest lateness), and the process's peak resident memory;
  timeline (that thread's Timeline tab): opening it (until the chart is painted), the What-if replay
        with the stored settings (`whatif_replay_ms`, and whether it ran in the helper process) and
        after a changed setting typed twice (the first replay cancelled), a repaint with the overlay,
        the pan frame (move a twentieth of the view and paint; median and max over 20 frames per x
        axis) and the longest stall of each phase (`timeline_stall_*_ms`) and of all
        (`timeline_longest_stall_ms`), with the GUI thread's CPU time in its longest busy stretch
        (`timeline_gui_work_*_ms`: the stall without the waits for the OS and the interpreter lock, a
        figure the machine's load hardly moves).
Figures are measurements, not assertions: rerun to compare before and after a change. The machine's
load shows in the stalls (a timer is late when the OS runs another process): compare runs made
under the same load, and repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
BIG_THREAD = "bench-big"


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def core_timings(db: Path) -> dict:
    """Time the Qt-free core on DB."""
    from studio.app.statuses import iter_thread_statuses
    from studio.engine import tokens
    from studio.store import open_store

    out = {}
    t0 = time.perf_counter()
    store = open_store(db)
    threads = store.list_threads(with_counts=True)
    out["open_and_list_threads_ms"] = ms(time.perf_counter() - t0)
    out["threads"] = len(threads)
    out["messages"] = sum(t.message_count or 0 for t in threads)
    t0 = time.perf_counter()
    n = sum(1 for _ in iter_thread_statuses(store, threads))
    out["all_statuses_ms"] = ms(time.perf_counter() - t0)
    out["statuses"] = n
    t0 = time.perf_counter()
    msgs = [m.as_mastra() for m in store.list_messages(BIG_THREAD)]
    out["big_thread_read_ms"] = ms(time.perf_counter() - t0)
    t0 = time.perf_counter()
    total = tokens.count_messages(msgs)
    out["big_thread_estimate_ms"] = ms(time.perf_counter() - t0)
    out["big_thread_messages"], out["big_thread_tokens"] = len(msgs), total
    store.close()
    return out


def studio_timings(db: Path) -> dict:
    """Time the real MainWindow on DB (offscreen when there is no display)."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
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

    # A stall: how late the 5 ms timer fired (wall clock: includes waiting for the interpreter lock and
    # for the OS when the machine is busy). Its CPU part: the GUI thread's own CPU time between two ticks
    # (time.thread_time), the work a quiet machine would still do in one go.
    stall = {"max": 0, "last": None, "cpu_max": 0.0, "cpu_last": None}
    clock = QElapsedTimer()
    clock.start()

    def tick() -> None:
        now, cpu = clock.elapsed(), time.thread_time()
        if stall["last"] is not None:
            stall["max"] = max(stall["max"], now - stall["last"] - 5)
            stall["cpu_max"] = max(stall["cpu_max"], cpu - stall["cpu_last"])
        stall["last"], stall["cpu_last"] = now, cpu

    ticker = QTimer()
    ticker.setInterval(5)
    ticker.timeout.connect(tick)
    ticker.start()

    def wait_until(predicate, timeout_s: float = 600) -> float:
        start = time.perf_counter()
        while not predicate():
            app.processEvents()
            if time.perf_counter() - start > timeout_s:
                raise TimeoutError("benchmark step did not finish")
            time.sleep(0.001)
        return time.perf_counter()

    out = {}
    t0 = time.perf_counter()
    window.open_database(str(db))
    t_rows = wait_until(lambda: window.thread_model.rowCount() > 0)
    window.threads_view.viewport().repaint()  # paint now, synchronously
    out["first_painted_thread_list_ms"] = ms(time.perf_counter() - t0)
    out["rows_in_model_ms"] = ms(t_rows - t0)
    wait_until(lambda: window.thread_model._status_state == "done")
    out["all_bars_exact_ms"] = ms(time.perf_counter() - t0)
    out["stall_while_loading_ms"] = stall["max"]

    stall["max"] = 0
    t0 = time.perf_counter()
    assert window.select_thread(BIG_THREAD), "the big thread is not in the list"
    window.thread_view.set_tab("messages")
    model = window.thread_view.messages_tab.model
    wait_until(lambda: window.current_thread_id == BIG_THREAD and model.rowCount() > 0)
    out["big_thread_first_page_ms"] = ms(time.perf_counter() - t0)
    wait_until(lambda: ctx.runner.pending == 0)
    out["big_thread_fully_open_ms"] = ms(time.perf_counter() - t0)
    out["stall_while_opening_big_thread_ms"] = stall["max"]
    out["big_thread_rows_loaded"] = model.rowCount()
    out.update(timeline_timings(app, window, ctx, stall, wait_until))
    ticker.stop()
    window.close()
    ctx.runner.shutdown()
    return out


def timeline_timings(app, window, ctx, stall, wait_until) -> dict:
    """Time the big thread's Timeline tab: open, what-if replay, repaint, pan and axis switches."""
    import statistics

    tab = window.thread_view.timeline_tab
    out = {}
    worst, worst_cpu = 0, 0.0

    def phase(name: str) -> None:  # the longest stall of each phase too, to see where a stall comes from
        nonlocal worst, worst_cpu
        out[f"timeline_stall_{name}_ms"] = stall["max"]
        out[f"timeline_gui_work_{name}_ms"] = ms(stall["cpu_max"])
        worst = max(worst, stall["max"])
        worst_cpu = max(worst_cpu, stall["cpu_max"])
        stall["max"] = 0
        stall["cpu_max"] = 0.0

    stall["max"] = 0
    t0 = time.perf_counter()
    window.thread_view.set_tab("timeline")
    wait_until(lambda: tab.timeline is not None and tab.timeline.thread_id == BIG_THREAD and not tab.drawing)
    out["timeline_open_ms"] = ms(time.perf_counter() - t0)
    wait_until(lambda: ctx.runner.pending == 0)
    for _ in range(10):   # the chart's first paint belongs to opening, not to the next phase
        app.processEvents()
        time.sleep(0.005)
    phase("open")
    t0 = time.perf_counter()
    if not tab.whatif_button.isChecked():
        tab.whatif_button.setChecked(True)   # What-if is off until the user asks
    wait_until(lambda: tab.whatif is not None)
    out["whatif_replay_ms"] = ms(time.perf_counter() - t0)
    out["whatif_in_helper"] = getattr(tab.whatif, "pid", os.getpid()) != os.getpid()
    wait_until(lambda: ctx.runner.pending == 0)
    app.processEvents()
    phase("replay")
    # Settings the user changes: modelled replays (other output sizes). messageTokens 3,000 first (with the
    # stored observationTokens this thread reflects after nearly every observation: a replay of minutes),
    # then, before it ends, observationTokens 2,000: the first replay is cancelled, the second drawn.
    first = tab.whatif
    panel = tab.whatif_panel
    t0 = time.perf_counter()
    panel.message_tokens.setValue(3000)
    panel.run()
    started = time.perf_counter()
    wait_until(lambda: time.perf_counter() - started > 0.5)   # the user looks, then types again
    panel.observation_tokens.setValue(2000)
    panel.run()
    wait_until(lambda: tab.whatif is not first and tab.whatif.settings.observation_tokens == 2000)
    out["whatif_changed_replay_ms"] = ms(time.perf_counter() - t0)
    wait_until(lambda: ctx.runner.pending == 0)
    app.processEvents()
    phase("replay_changed")
    viewport = tab.plot.viewport()
    times = []
    for _ in range(5):   # events between repaints: five in a row were one stall, counted in the next phase
        t0 = time.perf_counter()
        viewport.repaint()
        times.append(time.perf_counter() - t0)
        app.processEvents()
        time.sleep(0.006)
        app.processEvents()
    out["timeline_repaint_ms"] = ms(statistics.median(times))
    phase("repaint")
    box = tab.plot.getPlotItem().getViewBox()
    frames = []
    for mode in ("turn", "time"):
        tab.set_x_mode(mode)
        wait_until(lambda m=mode: tab.x_mode == m and not tab.drawing)   # a long thread's switch is drawn in steps
        app.processEvents()
        phase(f"switch_to_{mode}")
        for _ in range(20):  # pan a twentieth of the view at a time: move, paint (one frame), then events
            t0 = time.perf_counter()
            (x0, x1), _ = box.viewRange()
            box.translateBy(x=(x1 - x0) / 20)
            viewport.repaint()
            frames.append(time.perf_counter() - t0)
            app.processEvents()
    out["timeline_pan_frame_ms"] = round(statistics.median(frames) * 1000, 1)
    out["timeline_pan_frame_max_ms"] = round(max(frames) * 1000, 1)
    phase("pan")
    for mode in ("turn", "time", "turn"):
        tab.set_x_mode(mode)
        wait_until(lambda m=mode: tab.x_mode == m and not tab.drawing)
        viewport.repaint()
        for _ in range(20):
            app.processEvents()
            time.sleep(0.005)
    phase("axis")
    out["timeline_longest_stall_ms"] = worst
    out["timeline_longest_gui_work_ms"] = ms(worst_cpu)
    return out


def main(argv=None) -> int:
    """Build the database if needed, run both parts, print and optionally save the figures."""
    p = argparse.ArgumentParser(description="Memory Studio benchmark")
    p.add_argument("db", nargs="?", type=Path, default=REPO / "benchmarks" / "out" / "large.db")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    p.add_argument("--skip-studio", action="store_true", help="core timings only (no Qt)")
    p.add_argument("--skip-core", action="store_true", help="the studio's timings only")
    a = p.parse_args(argv)
    if not a.db.exists():
        from benchmarks.build_large_db import DEFAULT_SOURCE, build

        print(f"building {a.db} …", flush=True)
        print(build(a.db, DEFAULT_SOURCE, 5000, 40, 20000), flush=True)
    results = {"database": str(a.db), "bytes": a.db.stat().st_size}
    if not a.skip_core:
        results["core"] = core_timings(a.db)
    if not a.skip_studio:
        results["studio"] = studio_timings(a.db)
    results["peak_rss_mb"] = round(peak_rss_mb(), 1)
    # The studio's helper process (big databases) has exited by now: its peak is the children's.
    results["helper_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    text = json.dumps(results, indent=2)
    print(text)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""First open and reopen of a store: every thread's bar, count and health badge, against `inspect` (issue 21).

    python benchmarks/open_results_benchmark.py [DB] [--before CHECKOUT] [--json OUT.json]

DB defaults to benchmarks/out/large.db (built by build_large_db.py when missing). Each figure is
one run in a fresh process (CPU = user + sys of that process, wall = its whole run, imports included):

* `inspect`: `memory-studio inspect DB --json` (the yardstick);
* `scan`: what the studio computed before per-thread results: every thread's status
  (`iter_thread_statuses`) and the whole-file health scan (`load_scan_plan` + every `load_scan_batch`);
  with --before CHECKOUT also run from that checkout's `studio` (the code before the change);
* `first_open`: `thread_results` of every thread + `store_findings`, with an empty result cache;
* `reopen`: the same again, the file unchanged, the cache the first open wrote;
* `studio_first` / `studio_reopen` (--studio): the studio itself, offscreen, opening DB until every bar
  and badge is in (the results round and the health scan done), with an empty cache, then again; CPU
  is the studio's process and its helper process (reaped at close), `exact_s` the wall time from the
  process start (imports included) to the last bar and badge; `open_s` / `open_cpu_s` the wall time
  and CPU (studio process + helper) from the open (the window already shown) to the last bar and badge.

Ratios: first_open / inspect (the issue's target: <= 1.5) and reopen wall (target: <= 1 s).
The cache lives in a temporary folder (MEMORY_STUDIO_CACHE_DIR), never the user's. Figures are
measurements, not assertions; the machine's load (`os.getloadavg()`) is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DB = REPO / "benchmarks" / "out" / "large.db"

STUDIO = r"""
import os, resource, sys, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
started = time.perf_counter()
db = sys.argv[1]
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from studio.ui.app import application
from studio.ui.context import AppContext
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.main_window import MainWindow
app = QApplication([])
application()
ctx = AppContext(settings=QSettings(os.path.join(os.environ["MEMORY_STUDIO_CACHE_DIR"], "settings.ini"),
                                    QSettings.Format.IniFormat), runner=TaskRunner())
window = MainWindow(ctx)
window.resize(1024, 700)
window.show()
finished, reused = [], []
window.statuses_finished.connect(lambda: finished.append(time.perf_counter()))
if hasattr(window.loader, "results_landed"):   # not in a checkout from before the results round (--before)
    window.loader.results_landed.connect(lambda batch, _d, _t, _p: reused.append(batch.reused))
def helper_cpu():   # the helper process's CPU so far (s), from /proc (0 when it never started)
    pid = ctx.runner.helper.pid
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, TypeError, ValueError, IndexError):
        return 0.0
app.processEvents()
opened = time.perf_counter()
me0, helper0 = resource.getrusage(resource.RUSAGE_SELF), helper_cpu()
window.open_database(db)
while not (finished and not window.health.scan.running):
    app.processEvents()
    time.sleep(0.005)
exact = time.perf_counter() - started
open_s = time.perf_counter() - opened
me1 = resource.getrusage(resource.RUSAGE_SELF)
open_cpu = (me1.ru_utime + me1.ru_stime - me0.ru_utime - me0.ru_stime) + helper_cpu() - helper0
statuses = sum(1 for r in window.thread_model.all_threads() if r.status is not None)
findings = len(window.health.scan.findings)
ctx.runner.wait_idle()
window.close()
ctx.runner.shutdown()
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
print(f"{statuses} {findings} exact_s={exact:.2f} cpu_s={cpu:.2f} open_s={open_s:.2f} open_cpu_s={open_cpu:.2f} "
      f"reused={sum(reused)}")
"""

CHILD = r"""
import sys, time
mode, db = sys.argv[1], sys.argv[2]
from studio.store import open_store
with open_store(db) as store:
    if mode == "scan":
        from studio.app.health import load_scan_batch, load_scan_plan
        from studio.app.statuses import iter_thread_statuses
        threads = store.list_threads()
        statuses = sum(1 for _ in iter_thread_statuses(store, threads, on_error=lambda _t, _e: None))
        _total, batches = load_scan_plan(store, 1)
        findings = sum(len(load_scan_batch(store, 1, i)[0]) for i in range(batches))
    else:
        from studio.app.result_cache import ResultCache
        from studio.app.thread_results import store_findings, thread_results
        with store.snapshot():
            threads = store.list_threads()
            results = thread_results(store, [t.id for t in threads], ResultCache.for_store(store))
            statuses = sum(1 for r in results.values() if r.status is not None)
            findings = sum(len(r.findings) for r in results.values()) + len(store_findings(store))
print(statuses, findings)
"""


def run(args: list[str], pythonpath: Path, env: dict | None = None) -> tuple[float, float, str]:
    """Return (wall s, CPU s, stdout) of ARGS run with PYTHONPATH."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(pythonpath)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # run in PYTHONPATH's folder: `python -c` puts the working folder first on sys.path (--before's
    # checkout must not import this checkout's studio)
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True, cwd=pythonpath)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout.strip()


def main(argv=None) -> int:
    """Measure once each and print the figures (and write them to --json)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db", nargs="?", type=Path, default=DEFAULT_DB)
    p.add_argument("--before", type=Path, help="a checkout of the code before the change (its scan is measured too)")
    p.add_argument("--json", type=Path)
    p.add_argument("--studio", action="store_true", help="also measure the studio's own first open and reopen")
    p.add_argument("--only-studio", action="store_true", help="measure inspect and the studio only")
    a = p.parse_args(argv)
    a.db = a.db.resolve()
    if not a.db.exists():
        from benchmarks.build_large_db import main as build

        build([str(a.db)])
    figures: dict[str, dict] = {"load_before": list(os.getloadavg())}
    with tempfile.TemporaryDirectory() as cache:
        env = {"MEMORY_STUDIO_CACHE_DIR": cache}
        py = [sys.executable, "-c", CHILD]
        steps = [("inspect", [sys.executable, "-m", "studio", "inspect", str(a.db), "--json"], REPO)]
        if a.before and not a.only_studio:
            steps.append(("scan_before", [*py, "scan", str(a.db)], a.before))
        if not a.only_studio:
            steps += [("scan", [*py, "scan", str(a.db)], REPO),
                      ("first_open", [*py, "results", str(a.db)], REPO), ("reopen", [*py, "results", str(a.db)], REPO)]
        if a.studio or a.only_studio:
            studio = [sys.executable, "-c", STUDIO, str(a.db)]
            if a.before:
                steps.append(("studio_before", studio, a.before))
            steps += [("studio_first", studio, REPO), ("studio_reopen", studio, REPO)]
        for name, args, path in steps:
            if name in ("studio_before", "studio_first"):   # the studio's first open starts from an empty cache too
                shutil.rmtree(cache, ignore_errors=True)
                os.makedirs(cache, exist_ok=True)
            wall, cpu, out = run(args, path, env)
            figures[name] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
            if name != "inspect":
                figures[name]["statuses_findings"] = out
            print(f"{name}: wall {wall:.2f} s, CPU {cpu:.2f} s {'' if name == 'inspect' else out}", flush=True)
    figures["load_after"] = list(os.getloadavg())
    inspect = figures["inspect"]["cpu_s"]
    for name in ("studio_before", "studio_first", "studio_reopen"):
        if name in figures:   # the studio's own figures: its process and helper, to the last bar and badge
            fields = dict(kv.split("=") for kv in figures[name]["statuses_findings"].split()[2:])
            figures[name]["cpu_s"] = float(fields["cpu_s"])
            figures[name]["exact_s"] = float(fields["exact_s"])
            figures[name]["open_s"] = float(fields["open_s"])   # File > Open to the last bar and badge
            figures[name]["open_cpu_s"] = float(fields["open_cpu_s"])
    for name in ("scan_before", "scan", "first_open", "reopen", "studio_before", "studio_first", "studio_reopen"):
        if name in figures:
            figures[name]["cpu_vs_inspect"] = round(figures[name]["cpu_s"] / inspect, 2)
    print(json.dumps(figures, indent=1))
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())

"""Measure the studio left open beside a running agent: CPU, how soon the changed thread is exact, rows read.

    python benchmarks/live_refresh_benchmark.py DB.db [--seconds 40] [--interval 2] [--json OUT.json]
    python benchmarks/live_refresh_benchmark.py --server URL [--server URL …] [--appends 20]
    python benchmarks/live_refresh_benchmark.py --refreshes DB.db [--appends 20]

DB.db (the benchmark-size file, `benchmarks/build_large_db.py`): the studio (offscreen) opens it and
settles (every bar and health badge computed), and the thread the agent will write to is selected
(open in the window on its TAB, `--tab`, default the Observations tab); an "agent" process then
appends one message to that thread every INTERVAL s for SECONDS s, as Mastra's saveMessages writes
it (the message, then the thread's updatedAt). The window runs its own event loop meanwhile (as
`app.exec()` does: it sleeps until an event comes). Reported: the studio's CPU over those seconds
(its process and its helper process) as a share of one core, the idle CPU over as long before the
agent starts, for each commit how long until the thread list showed the new message count, and
the GUI thread's longest stall while the agent wrote (the longest gap between the beats of a 10 ms
QTimer on the GUI thread; `gui_stalls_over_50_ms` counts the gaps over 50 ms; `gui_stall_ms_longest_idle`:
the same idle, the machine's own share; `gui_busy_ms_longest`: the GUI thread's own CPU in its busiest
gap, what a stall would be on an idle machine). The heartbeat's 100 beats a second cost ~1 % of a core
themselves, so the agent runs twice: the CPU is measured without the heartbeat, the stalls (and
`cpu_share_with_heartbeat`) in the second run, the latencies in both; at the end, whether
the thread's row and bars equal a fresh load. The agent's messages are deleted afterwards
(deleteMessages), so the file can be measured again.

--server URL (a PostgreSQL URL with ?schema=…, or a libSQL server URL holding a Mastra memory):
APPENDS appends (as above, one thread), each followed by one live refresh
(`studio.app.live.refresh_live_listing`); reported: rows the store returned per refresh, the
wider reads it needed, its time, and the rows of a full listing for comparison. The appended
messages are deleted afterwards.

--refreshes DB.db: the same on the file (no window): each refresh's CPU time, and how many of them
left the OM table unread (a WAL file whose frames since named none of its pages).

Figures are measurements, not assertions; report the machine's load (`uptime`) with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

AGENT = r"""
import json, sqlite3, sys, time, uuid
from datetime import datetime, timezone
path, thread, seconds, interval = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
conn = sqlite3.connect(path, isolation_level=None, timeout=30)
resource = conn.execute('SELECT "resourceId" FROM mastra_threads WHERE id = ?', (thread,)).fetchone()[0]
end = time.time() + seconds
while time.time() < end:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    text = "A message from the benchmark agent. " * 8
    content = json.dumps({"format": 2, "parts": [{"type": "text", "text": text}], "content": text})
    mid = "bench-live-" + uuid.uuid4().hex
    conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                 "VALUES (?, ?, ?, 'user', 'v2', ?, ?) ON CONFLICT(id) DO UPDATE SET content = excluded.content",
                 (mid, thread, content, now, resource))
    conn.execute('UPDATE mastra_threads SET "updatedAt" = ? WHERE id = ?', (now, thread))
    print(json.dumps({"committed": time.time(), "id": mid}), flush=True)
    time.sleep(interval)
"""


def _children_cpu(pid: int) -> float:
    """CPU seconds (user + system) of PID's live child processes (the studio's helper process)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _cpu() -> float:
    return time.process_time() + _children_cpu(os.getpid())


def _pick_thread(path: str) -> str:
    """A thread of ordinary size governed by a thread-scope OM record (what an agent's conversation is)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT t.id FROM mastra_threads t JOIN mastra_observational_memory o "
                           "ON o.\"lookupKey\" = 'thread:' || t.id WHERE t.id != 'bench-big' "
                           "ORDER BY t.\"createdAt\" DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    return row[0]


def _delete_agent_messages(path: str) -> int:
    import sqlite3
    from datetime import UTC, datetime

    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    threads = [r[0] for r in conn.execute(
        "SELECT DISTINCT thread_id FROM mastra_messages WHERE id LIKE 'bench-live-%'")]
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    conn.execute("BEGIN")
    n = conn.execute("DELETE FROM mastra_messages WHERE id LIKE 'bench-live-%'").rowcount
    for t in threads:
        conn.execute('UPDATE mastra_threads SET "updatedAt" = ? WHERE id = ?', (now, t))
    conn.execute("COMMIT")
    conn.close()
    return n


class Heartbeat:
    """A 10 ms QTimer on the GUI thread: the longest gap between its beats is the longest GUI stall (ms)."""

    def __init__(self):
        from PySide6.QtCore import QTimer

        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.gaps: list[float] = []
        self.busy: list[float] = []   # the GUI thread's own CPU in each gap (ms): its work, whatever the machine's load
        self._last: float | None = None
        self._last_cpu = 0.0

    def start(self) -> None:
        self.gaps, self.busy, self._last, self._last_cpu = [], [], time.monotonic(), time.thread_time()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self._on_timer_timeout()

    def _on_timer_timeout(self) -> None:
        now, cpu = time.monotonic(), time.thread_time()
        if self._last is not None:
            self.gaps.append((now - self._last) * 1000)
            self.busy.append((cpu - self._last_cpu) * 1000)
        self._last, self._last_cpu = now, cpu


def _run_loop(duration: float, each=None) -> None:
    """Run the GUI event loop for DURATION s (sleeping until events, as app.exec()), calling EACH() every 50 ms."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    ticker = None
    if each is not None:
        ticker = QTimer()
        ticker.setInterval(50)
        ticker.timeout.connect(each)
        ticker.start()
    QTimer.singleShot(max(1, int(duration * 1000)), loop.quit)
    loop.exec()
    if ticker is not None:
        ticker.stop()


def studio_beside_agent(path: str, seconds: float, interval: float, settle_s: float, tab: str = "observations") -> dict:
    """Open PATH in the studio (offscreen), let it settle, open the agent's thread on TAB, measure idle CPU, then
    CPU, latency and GUI stalls beside an agent."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import tempfile

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from studio.app.statuses import iter_thread_statuses
    from studio.store import open_store
    from studio.ui.app import application
    from studio.ui.context import AppContext
    from studio.ui.models.threads import ThreadColumn
    from studio.ui.tasks import TaskRunner
    from studio.ui.widgets.main_window import MainWindow

    _app = QApplication.instance() or QApplication([])   # kept alive for the run
    application()
    tmp = tempfile.mkdtemp(prefix="live-bench-")
    ctx = AppContext(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.Format.IniFormat), runner=TaskRunner())
    thread = _pick_thread(path)
    _delete_agent_messages(path)   # what an interrupted run left
    window = MainWindow(ctx)
    window.resize(1400, 900)
    window.show()
    started = time.monotonic()
    cpu0 = _cpu()
    window.open_database(path)

    def settled() -> bool:
        return (window.thread_model.total_rows > 0 and window.thread_model.statuses_done
                and not window.health.scan.running and ctx.runner.pending == 0)

    while not settled() and time.monotonic() - started < settle_s:
        _run_loop(0.05)
    open_s, open_cpu = time.monotonic() - started, _cpu() - cpu0
    pump = _run_loop
    selected = window.select_thread(thread)
    window.thread_view.set_tab(tab)
    pump(1.0)
    while ctx.runner.pending:
        pump(0.2)
    heartbeat = Heartbeat()

    cpu_idle0 = _cpu()
    pump(seconds / 4)
    idle_cpu = (_cpu() - cpu_idle0) / (seconds / 4)
    heartbeat.start()
    pump(seconds / 4)
    heartbeat.stop()
    idle_stall = max(heartbeat.gaps) if heartbeat.gaps else None

    def listed_count() -> int | None:
        model = window.thread_model
        row = model.row_of(thread)
        if row < 0:
            return None
        return model.thread_row(row).thread.message_count

    import threading

    refreshes = []

    def beside_agent(beat: bool) -> tuple[float, float, list[float], int]:
        """Run the agent for SECONDS; return (wall s, CPU s, the latency s of each commit seen, commits); the
        heartbeat on when BEAT."""
        base = listed_count()
        agent = subprocess.Popen([sys.executable, "-c", AGENT, path, thread, str(seconds), str(interval)],
                                 stdout=subprocess.PIPE, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(agent.stdout.readline, "")), daemon=True)
        reader.start()
        commits: list[float] = []
        seen: dict[int, float] = {}

        def watch() -> None:
            while len(commits) < len(lines):
                commits.append(json.loads(lines[len(commits)])["committed"])
            n = listed_count()
            if n is not None and base is not None and n - base not in seen:
                seen[n - base] = time.time()
            last = window.loader.last_refresh
            if last is not None and (not refreshes or refreshes[-1] is not last):
                refreshes.append(last)

        cpu1, t1 = _cpu(), time.monotonic()
        if beat:
            heartbeat.start()
        while agent.poll() is None:
            pump(0.25, watch)
        pump(3.0, watch)   # the last commit's refresh
        if beat:
            heartbeat.stop()
        reader.join()
        return (time.monotonic() - t1, _cpu() - cpu1,
                [seen[i + 1] - c for i, c in enumerate(commits) if i + 1 in seen], len(commits))

    # the CPU without the heartbeat (its 100 beats a second cost ~1 % of a core themselves), then the stalls
    busy_s, agent_cpu, latencies, n_commits = beside_agent(beat=False)
    busy2, cpu2, latencies2, n_commits2 = beside_agent(beat=True)
    latencies += latencies2
    n_commits += n_commits2

    # exact? the thread's row and bars against a fresh load
    row = window.thread_model.thread_row(window.thread_model.row_of(thread))
    with open_store(path) as store:
        fresh_thread = store.get_thread(thread)
        fresh_count = store.message_count(thread)
        [fresh_status] = list(iter_thread_statuses(store, [fresh_thread]))
    bar = window.thread_model.index(window.thread_model.row_of(thread), ThreadColumn.OBSERVATION).data()
    exact = row.thread.message_count == fresh_count and row.status == fresh_status
    window.watcher.stop()
    ctx.runner.wait_idle()
    window.close()
    ctx.runner.shutdown()
    removed = _delete_agent_messages(path)
    return {
        "thread": thread, "thread_open_in_window": selected and window.current_thread_id == thread, "tab": tab,
        "open_s": round(open_s, 1), "open_cpu_s": round(open_cpu, 1),
        "idle_cpu_share_of_one_core": round(idle_cpu, 4),
        "agent_seconds": round(busy_s, 1), "commits": n_commits,
        "cpu_s_beside_agent": round(agent_cpu, 2),
        "cpu_share_of_one_core": round(agent_cpu / busy_s, 4),
        "cpu_share_with_heartbeat": round(cpu2 / busy2, 4),
        "commits_seen": len(latencies),
        "latency_s_median": round(statistics.median(latencies), 2) if latencies else None,
        "latency_s_worst": round(max(latencies), 2) if latencies else None,
        "gui_stall_ms_longest": round(max(heartbeat.gaps), 1) if heartbeat.gaps else None,
        "gui_stall_ms_longest_idle": round(idle_stall, 1) if idle_stall is not None else None,
        "gui_busy_ms_longest": round(max(heartbeat.busy), 1) if heartbeat.busy else None,
        "gui_stalls_over_50_ms": sum(g > 50 for g in heartbeat.gaps),
        "refreshes": len(refreshes),
        "rows_read_per_refresh": sorted(r.rows_read for r in refreshes),
        "wider_reads": sum(bool(r.wider) for r in refreshes),
        "exact_at_end": exact, "bar_text": bar, "agent_messages_deleted": removed,
    }


def server_rows(url: str, appends: int) -> dict:
    """APPENDS Mastra-like appends to one thread of the store URL (a server, or a file), one live refresh after each."""
    import random

    from studio.app.live import load_live_listing, refresh_live_listing
    from studio.store import open_store
    from studio.store.target import FILE, POSTGRESQL, parse_target, redact_url
    from tests.live_writes import FileSql, MastraWrites, PgSql, SqldSql

    location = parse_target(url)
    if location.kind == FILE:
        sql = FileSql(url)
    elif location.kind == POSTGRESQL:
        schema = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&")).get("schema", "public")
        sql = PgSql(url.split("?", 1)[0], schema)
    else:
        sql = SqldSql(url)
    writes = MastraWrites(sql, random.Random(1))
    thread = sql.query('SELECT id, "resourceId" FROM mastra_threads ORDER BY "createdAt" DESC LIMIT 1')[0]
    writes.a_thread = lambda: thread
    out = []
    with open_store(url) as store:
        started = time.perf_counter()
        live = load_live_listing(store)
        full_s = time.perf_counter() - started
        full_rows = (len(live.listing.rows) + len(live.lookup_keys) + len(live.listing.resources)
                     + sum(1 for r in live.listing.rows if r.thread.message_count))
        for _ in range(appends):
            writes.save_message()
            cpu, started = time.process_time(), time.perf_counter()
            refresh = refresh_live_listing(store, live)
            out.append({"rows_read": refresh.rows_read, "wider": refresh.wider, "unread": refresh.unread,
                        "s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu,
                        "changed": len(refresh.changes.threads | refresh.changes.threads_created)})
            live = refresh.live
    sql.run([("DELETE FROM mastra_messages WHERE id LIKE ?", ("msg-live-%",))])
    sql.close()
    return {"target": redact_url(url), "threads": len(live.listing.rows), "full_listing_s": round(full_s, 3),
            "full_listing_rows": full_rows, "appends": appends,
            "rows_read_per_refresh": [r["rows_read"] for r in out],
            "wider_reads": sum(bool(r["wider"]) for r in out),
            "refresh_s_median": round(statistics.median(r["s"] for r in out), 4),
            "refresh_cpu_s_median": round(statistics.median(r["cpu_s"] for r in out), 4),
            "refresh_cpu_ms_each": [round(r["cpu_s"] * 1000, 1) for r in out],
            "om_table_unread": sum(bool(r["unread"]) for r in out),
            "changed_threads_per_refresh": sorted({r["changed"] for r in out})}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db", nargs="?", help="the benchmark-size file (benchmarks/build_large_db.py)")
    p.add_argument("--seconds", type=float, default=40.0)
    p.add_argument("--interval", type=float, default=2.0)
    p.add_argument("--settle", type=float, default=900.0, help="longest wait for the open to settle (s)")
    p.add_argument("--tab", default="observations", help="the tab the agent's thread is shown on (thread_view's names)")
    p.add_argument("--server", action="append", default=[], metavar="URL")
    p.add_argument("--refreshes", metavar="DB", help="APPENDS appends and refreshes on this file, no window")
    p.add_argument("--appends", type=int, default=20)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    report: dict = {"load": os.getloadavg()}
    if args.db:
        report["file"] = studio_beside_agent(args.db, args.seconds, args.interval, args.settle, args.tab)
    if args.refreshes:
        report["file_refreshes"] = server_rows(args.refreshes, args.appends)
    report["servers"] = [server_rows(url, args.appends) for url in args.server]
    report["load_after"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

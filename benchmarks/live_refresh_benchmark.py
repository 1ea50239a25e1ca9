"""Measure the studio left open beside a running agent: CPU, how soon the changed thread is exact, rows read.

    python benchmarks/live_refresh_benchmark.py DB.db [--seconds 40] [--interval 2] [--tab NAME] [--json OUT.json]
    python benchmarks/live_refresh_benchmark.py --window URL [--window URL …] [--seconds 40] [--interval 2] [--tab …]
    python benchmarks/live_refresh_benchmark.py --server URL [--server URL …] [--appends 20]
    python benchmarks/live_refresh_benchmark.py --refreshes DB.db [--appends 20]

DB.db (the benchmark-size file, `benchmarks/build_large_db.py`) or --window URL (the same store copied
into PostgreSQL, `postgresql://…?schema=NAME`, or into a libSQL server, `http://127.0.0.1:PORT`: see
`build_large_db.py --pg/--libsql-url`): the studio (offscreen) opens it and settles (every bar and
health badge computed), and the thread the agent will write to is selected (open in the window on its
TAB, `--tab`, default the Observations tab); an "agent" process then appends one message to that
thread every INTERVAL s for SECONDS s, as Mastra's saveMessages writes it on that store (the message
upsert, then the thread's updatedAt; on PostgreSQL the `…Z` twins too). The window runs its own event
loop meanwhile (as `app.exec()` does: it sleeps until an event comes). Reported: the studio's CPU over
those seconds (its process and its helper process) as a share of one core, the idle CPU over as long
before the agent starts, for each commit how long until the thread list showed the new message count,
the rows each live refresh read (and its wider reads), and the GUI thread's stalls, from a 10 ms QTimer
on the GUI thread (the heartbeat): `…stall_ms_worst…` its largest lateness (ms, while opening, idle and
beside the agent), `gui_stall_ms_longest` (`…_idle`) the longest gap between its beats beside the agent
(idle: the machine's own share), `gui_stalls_over_50_ms` the gaps over 50 ms, `gui_busy_ms_longest` the
GUI thread's own CPU in its busiest gap (what a stall would be on an idle machine). The heartbeat's 100
beats a second cost ~1 % of a core themselves, so the agent runs twice: the CPU (and the idle CPU) is
measured without the heartbeat, the stalls (and `cpu_share_with_heartbeat`, `--stall-stacks`) in the
second run, the latencies in both (`runs`: each run's commits and commits seen); at the end, whether
the thread's row, bars and health badge equal a fresh load. The agent's messages are deleted
afterwards (deleteMessages), so the store can be measured again.

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
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

AGENT = r"""
import json, sys, time
from datetime import datetime, timezone
sys.path.insert(0, sys.argv[5])
from benchmarks.live_refresh_benchmark import agent_sql
from tests.live_writes import MastraWrites
import random
target, thread, seconds, interval = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
sql = agent_sql(target)
writes = MastraWrites(sql, random.Random(7))
resource = sql.query('SELECT "resourceId" FROM mastra_threads WHERE id = ?', (thread,))[0][0]
def now():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
end = time.time() + seconds
n = 0
while time.time() < end:
    n += 1
    mid = f"bench-live-{int(time.time() * 1000)}-{n}"
    text = "A message from the benchmark agent. " * 8
    # saveMessages: the message upsert, then its thread's updatedAt (a statement of its own, as Mastra does)
    sql.run([writes.message_upsert(mid, (thread, resource), text, now())])
    sql.run([writes.bump(thread, now())])
    print(json.dumps({"committed": time.time(), "id": mid}), flush=True)
    time.sleep(interval)
sql.close()
"""


def agent_sql(target: str):
    """A `tests.live_writes.Sql` writing to TARGET (a file, a PostgreSQL URL with ?schema=…, a libSQL server URL)."""
    import sqlite3

    from studio.store.target import FILE, POSTGRESQL, parse_target
    from tests.live_writes import FileSql, PgSql, SqldSql

    location = parse_target(target)
    if location.kind == FILE:   # the file's journal mode as it is (FileSql would switch it to WAL)
        sql = FileSql.__new__(FileSql)
        sql.conn = sqlite3.connect(target, isolation_level=None, timeout=30)
        return sql
    if location.kind == POSTGRESQL:
        base, _, query = target.partition("?")
        schema = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("schema", "public")
        return PgSql(base, schema)
    return SqldSql(target)


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


def _pick_thread(target: str) -> str:
    """A thread of ordinary size governed by a thread-scope OM record (what an agent's conversation is)."""
    sql = agent_sql(target)
    try:
        row = sql.query("SELECT t.id FROM mastra_threads t JOIN mastra_observational_memory o "
                        "ON o.\"lookupKey\" = 'thread:' || t.id WHERE t.id != 'bench-big' "
                        "ORDER BY t.\"createdAt\" DESC, t.id LIMIT 1")
    finally:
        sql.close()
    return row[0][0]


def _delete_agent_messages(target: str) -> int:
    """deleteMessages of the agent's messages (`bench-live-…`), their threads' updatedAt set; return how many."""
    from datetime import UTC, datetime

    from tests.live_writes import MastraWrites

    sql = agent_sql(target)
    try:
        rows = sql.query("SELECT id, thread_id FROM mastra_messages WHERE id LIKE 'bench-live-%'")
        if rows:
            writes = MastraWrites(sql, random.Random(1))
            now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            sql.run([("DELETE FROM mastra_messages WHERE id LIKE 'bench-live-%'", ()),
                     *(writes.bump(t, now) for t in sorted({r[1] for r in rows}))])
    finally:
        sql.close()
    return len(rows)


class Heartbeat:
    """A 10 ms QTimer on the GUI thread, beating between `start()` and `stop()`: every gap between its beats
    (`gaps`, ms; the longest is the longest GUI stall), the GUI thread's own CPU in each gap (`busy`, ms: its
    work, whatever the machine's load) and `worst_ms`, the largest lateness (the longest gap less 10 ms)."""

    def __init__(self, interval_ms: int = 10):
        from PySide6.QtCore import QTimer

        self.interval_ms = interval_ms
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.gaps: list[float] = []
        self.busy: list[float] = []
        self.last = time.perf_counter()
        self._last_cpu = 0.0

    @property
    def worst_ms(self) -> float:
        """The largest lateness of a beat since `start()` (ms; 0 when none was late)."""
        return max([0.0, *(g - self.interval_ms for g in self.gaps)])

    def start(self) -> None:
        """Start a new measurement (the gaps and their CPU forgotten) and the timer."""
        self.gaps, self.busy, self.last, self._last_cpu = [], [], time.perf_counter(), time.thread_time()
        self.timer.start()

    def stop(self) -> None:
        """Stop the timer, counting the gap up to now."""
        self.timer.stop()
        self._on_timer_timeout()

    def _on_timer_timeout(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        self.gaps.append((now - self.last) * 1000)
        self.busy.append((cpu - self._last_cpu) * 1000)
        self.last, self._last_cpu = now, cpu

    def sample_stalls(self, late_ms: float = 30.0):
        """Sample every thread's stack every 5 ms while a beat is LATE_MS late, until the timer stops; return the
        Counter of (thread name, innermost frames) samples (what the GUI thread did, or waited for, in its stalls)."""
        import collections
        import threading
        import traceback

        samples: collections.Counter = collections.Counter()
        gui = threading.main_thread().ident
        names = {}

        def run() -> None:
            while self.timer.isActive():
                if (time.perf_counter() - self.last) * 1000 > self.interval_ms + late_ms:
                    names.update({t.ident: t.name for t in threading.enumerate()})
                    for ident, frame in sys._current_frames().items():
                        if ident == threading.get_ident():
                            continue
                        stack = traceback.extract_stack(frame)[-6:]
                        where = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))
                        samples[("GUI" if ident == gui else names.get(ident, str(ident)), where)] += 1
                time.sleep(0.005)

        threading.Thread(target=run, daemon=True, name="stall-sampler").start()
        return samples


def studio_beside_agent(path: str, seconds: float, interval: float, settle_s: float, stacks: bool = False,
                        tab: str = "observations") -> dict:
    """Open PATH (a file, or a server URL) in the studio (offscreen), let it settle, open the agent's thread on
    TAB, measure idle CPU, then CPU (agent run 1, no heartbeat), GUI stalls (run 2, with it), latency and rows
    read per live refresh (both runs) beside an agent appending to that thread."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import tempfile
    import threading

    from PySide6.QtCore import QEventLoop, QSettings, QTimer

    from studio.app.health import load_thread_findings
    from studio.app.statuses import iter_thread_statuses
    from studio.store import open_store
    from studio.ui.app import application
    from studio.ui.context import AppContext
    from studio.ui.models.threads import ThreadColumn
    from studio.ui.tasks import TaskRunner
    from studio.ui.widgets.main_window import MainWindow

    _app = application()   # kept: the QApplication lives as long as the window
    tmp = tempfile.mkdtemp(prefix="live-bench-")
    ctx = AppContext(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.Format.IniFormat), runner=TaskRunner())
    thread = _pick_thread(path)
    _delete_agent_messages(path)   # what an interrupted run left
    window = MainWindow(ctx)
    window.resize(1400, 900)
    window.show()

    def pump(duration: float, each=None) -> None:
        """Run the GUI's event loop for DURATION s (sleeping until events, as app.exec(); EACH every 50 ms)."""
        loop = QEventLoop()
        ticker = QTimer()
        if each is not None:
            ticker.timeout.connect(each)
            ticker.start(50)
        QTimer.singleShot(max(1, int(duration * 1000)), loop.quit)
        loop.exec()
        ticker.stop()

    heartbeat = Heartbeat()
    heartbeat.start()
    started = time.monotonic()
    cpu0 = _cpu()
    window.open_database(path)

    def settled() -> bool:
        return (window.thread_model.total_rows > 0 and window.thread_model.statuses_done
                and not window.health.scan.running and ctx.runner.pending == 0)

    while not settled() and time.monotonic() - started < settle_s:
        pump(0.05)
    open_s, open_cpu = time.monotonic() - started, _cpu() - cpu0
    heartbeat.stop()
    open_stall = heartbeat.worst_ms
    selected = window.select_thread(thread)   # the agent's conversation, open on TAB
    window.thread_view.set_tab(tab)
    pump(1.0)
    while ctx.runner.pending:
        pump(0.2)

    cpu_idle0 = _cpu()   # idle CPU without the heartbeat, then the idle stalls with it
    pump(seconds / 4)
    idle_cpu = (_cpu() - cpu_idle0) / (seconds / 4)
    heartbeat.start()
    pump(seconds / 4)
    heartbeat.stop()
    idle_stall, idle_gap = heartbeat.worst_ms, max(heartbeat.gaps)

    def listed_count() -> int | None:
        model = window.thread_model
        row = model.row_of(thread)
        if row < 0:
            return None
        return model.thread_row(row).thread.message_count

    refreshes = []
    samples = None
    slots: dict[str, float] = {}   # with STACKS: the longest GUI-thread callback of each task key (ms)
    gui_profile: list[str] = []

    def beside_agent(beat: bool) -> dict:
        """Run the agent for SECONDS; return its wall s, the studio's CPU s, its commits and the latency (s) of
        each commit seen in the list; the heartbeat (and with STACKS the stall probes) on when BEAT."""
        nonlocal samples, gui_profile
        base = listed_count()
        agent = subprocess.Popen([sys.executable, "-c", AGENT, path, thread, str(seconds), str(interval), str(REPO)],
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
            if n is not None and base is not None:
                for k in range(1, n - base + 1):   # one refresh may bring two commits
                    seen.setdefault(k, time.time())
            last = window.loader.last_refresh
            if last is not None and (not refreshes or refreshes[-1] is not last):
                refreshes.append(last)

        cpu1, t1 = _cpu(), time.monotonic()
        profile = None
        if beat:
            heartbeat.start()
            if stacks:
                samples = heartbeat.sample_stalls()
                finish = ctx.runner._finish

                def timed_finish(task, outcome, _finish=finish) -> None:
                    t = time.perf_counter()
                    _finish(task, outcome)
                    key = str(task.key)
                    slots[key] = max(slots.get(key, 0.0), (time.perf_counter() - t) * 1000)

                ctx.runner._finish = timed_finish   # a probe of the GUI thread's callbacks
                import cProfile

                profile = cProfile.Profile()   # the GUI thread's Python beside the agent
                profile.enable()
        while agent.poll() is None:
            pump(0.25, watch)
        pump(3.0, watch)   # the last commit's refresh
        if beat:
            heartbeat.stop()
        wall, cpu = time.monotonic() - t1, _cpu() - cpu1
        reader.join()
        watch()   # the last lines read
        if profile is not None:
            import io
            import pstats

            profile.disable()
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(r"studio/(ui|app)", 30)
            gui_profile = [line.strip() for line in out.getvalue().splitlines() if "studio/" in line]
        return {"heartbeat": beat, "seconds": round(wall, 1), "cpu_s": cpu, "commits": len(commits),
                "latencies": [seen[i + 1] - c for i, c in enumerate(commits) if i + 1 in seen]}

    # the CPU without the heartbeat (its 100 beats a second cost ~1 % of a core themselves), then the stalls
    runs = [beside_agent(beat=False), beside_agent(beat=True)]
    latencies = [x for r in runs for x in r["latencies"]]
    busy_s, agent_cpu = runs[0]["seconds"], runs[0]["cpu_s"]

    opened_thread = window.current_thread_id
    # exact? the thread's row and bars against a fresh load
    row = window.thread_model.thread_row(window.thread_model.row_of(thread))
    with open_store(path) as store:
        fresh_thread = store.get_thread(thread)
        fresh_count = store.message_count(thread)
        [fresh_status] = list(iter_thread_statuses(store, [fresh_thread]))
        fresh_health: dict[str, int] = {}
        for f in load_thread_findings(store, [thread]):
            fresh_health[f["severity"]] = fresh_health.get(f["severity"], 0) + 1
    bar = window.thread_model.index(window.thread_model.row_of(thread), ThreadColumn.OBSERVATION).data()
    exact = {"count": row.thread.message_count == fresh_count, "status": row.status == fresh_status,
             "health": window.health.scan.thread_counts(thread) == fresh_health}
    listed_at_end, fresh_at_end = row.thread.message_count, fresh_count
    window.watcher.stop()
    ctx.runner.wait_idle()
    window.close()
    ctx.runner.shutdown()
    removed = _delete_agent_messages(path)
    from studio.store.target import redact_url

    return {
        "target": redact_url(path), "thread": thread,
        "thread_open_in_window": selected and opened_thread == thread, "tab": tab,
        "open_s": round(open_s, 1), "open_cpu_s": round(open_cpu, 1),
        "open_stall_ms_worst": round(open_stall, 1),
        "idle_cpu_share_of_one_core": round(idle_cpu, 4), "idle_stall_ms_worst": round(idle_stall, 1),
        "stall_ms_worst_beside_agent": round(heartbeat.worst_ms, 1),
        "agent_seconds": round(busy_s, 1), "commits": sum(r["commits"] for r in runs),
        "cpu_s_beside_agent": round(agent_cpu, 2),
        "cpu_share_of_one_core": round(agent_cpu / busy_s, 4),
        "cpu_share_with_heartbeat": round(runs[1]["cpu_s"] / runs[1]["seconds"], 4),
        "commits_seen": len(latencies),
        "latency_s_median": round(statistics.median(latencies), 2) if latencies else None,
        "latency_s_worst": round(max(latencies), 2) if latencies else None,
        "gui_stall_ms_longest": round(max(heartbeat.gaps), 1),
        "gui_stall_ms_longest_idle": round(idle_gap, 1),
        "gui_busy_ms_longest": round(max(heartbeat.busy), 1),
        "gui_stalls_over_50_ms": sum(g > 50 for g in heartbeat.gaps),
        "runs": [{"heartbeat": r["heartbeat"], "seconds": r["seconds"], "commits": r["commits"],
                  "commits_seen": len(r["latencies"]), "cpu_share_of_one_core": round(r["cpu_s"] / r["seconds"], 4)}
                 for r in runs],
        "refreshes": len(refreshes),
        "rows_read_per_refresh": [r.rows_read for r in refreshes],
        "wider_reads": sorted({w for r in refreshes for w in r.wider}),
        "latency_s_each": [round(x, 2) for x in latencies],
        "exact_at_end": exact, "count_listed_at_end": listed_at_end, "count_fresh_at_end": fresh_at_end,
        "bar_text": bar, "agent_messages_deleted": removed,
        **({"stall_stacks": [f"x{c} {who}: {where}" for (who, where), c in samples.most_common(25)],
            "slot_ms_worst": {k: round(v, 1) for k, v in sorted(slots.items(), key=lambda kv: -kv[1])},
            "gui_profile_cumulative": gui_profile}
           if samples is not None else {}),
    }


def server_rows(url: str, appends: int) -> dict:
    """APPENDS Mastra-like appends to one thread of the store URL (a server, or a file), one live refresh after each."""
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
    p.add_argument("--window", action="append", default=[], metavar="URL",
                   help="the window beside an agent (as DB.db) on this server (PostgreSQL ?schema=…, libSQL server)")
    p.add_argument("--stall-stacks", action="store_true",
                   help="window mode: sample the threads' stacks while the GUI thread stalls (> 30 ms)")
    p.add_argument("--tab", default="observations",
                   help="window mode: the tab the agent's thread is shown on (thread_view's names)")
    p.add_argument("--server", action="append", default=[], metavar="URL")
    p.add_argument("--refreshes", metavar="DB", help="APPENDS appends and refreshes on this file, no window")
    p.add_argument("--appends", type=int, default=20)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    report: dict = {"load": os.getloadavg()}
    if args.db:
        report["file"] = studio_beside_agent(args.db, args.seconds, args.interval, args.settle, args.stall_stacks,
                                             args.tab)
    report["windows"] = [studio_beside_agent(url, args.seconds, args.interval, args.settle, args.stall_stacks,
                                             args.tab)
                         for url in args.window]
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

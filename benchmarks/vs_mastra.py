"""The studio's reads against Mastra's own calls on the same store, side by side (issue 28).

    python benchmarks/vs_mastra.py [DB] [--rounds 7] [--reps 3] [--only NAME,...] [--pg-url URL]
                                   [--libsql-url URL] [--no-file] [--json OUT] [--collector studio|auto]

DB is the benchmark file (build_large_db.py; default benchmarks/out/large.db). Two warm processes
answer the same calls on two copies of the store (file: copied to a temp folder, both copies read
once before timing; a server URL is shared): real Mastra (`vs_mastra_worker.mjs` in the corpus
folder, ~/.cache/memory-studio/mastra-corpus-*, importing its pinned @mastra/memory, @mastra/libsql
and @mastra/pg) and the studio's API (this script with `--worker`). Each process times the call
alone (no pipe, no JSON), REPS times a round; rounds alternate Mastra, studio, studio, Mastra, ...
so that a shared machine's load weighs on both alike. Before any timing, each call's outputs from
both sides are compared (normalised: thread rows with ISO dates, message ids, totals, status figures)
and the run stops if they differ. Printed per call: min / median / max ms of each side, the median
ratio studio / Mastra (issue 28's target: ≤ 0.7), and the load average before and after; beside them
the median CPU ms of each side's process over each call (Node's process.cpuUsage, Python's
process_time: every thread, a collector's helper threads included) and their ratio, which a shared
machine's load disturbs far less than wall time. The studio worker runs its calls as the studio does,
with Python's automatic cyclic collection off (`--collector auto` turns it on: see `worker_main`).

Calls (Mastra's name → the studio's function):
  listThreads            Memory.listThreads({perPage: false})      → thread_list.list_threads(per_page=False)
  listThreads_read       the same, the studio also reading every thread's metadata inside its timing
                         (a thread parses its stored metadata on first read; Mastra parses all in the call)
  listThreads_metadata   the same with filter {metadata: {category: "billing"}}
  getThreadById          Memory.getThreadById                      → history.get_thread_by_id
  recall                 Memory.recall, last 50 of bench-big       → history.recall(per_page=50)
  listMessages           storage listMessages page 100 of 40       → history.list_messages
  estimate_warm          TokenCounter.countMessages of bench-big's messages, estimates already stamped
                         in them (what Mastra leaves after counting) → tokens.count_messages
  estimate_cold          the same on fresh copies without estimates (studio: its text and key memos cleared)
  statuses               ObservationalMemory.getStatus of every thread an OM record governs (one
                         ObservationalMemory per stored config, built as the corpus's oracle.mjs does)
                         → statuses.iter_thread_statuses
  inspect                inspect's work: listThreads, every OM thread's getStatus and every record's
                         getHistory (newest 100) → inspection.inspect_document (which also counts every
                         thread's messages)
statuses and inspect read every thread's unobserved messages (tens of seconds on Mastra's side):
they are timed once a round, whatever REPS. Mastra's side finds which threads OM governs (listThreads,
getObservationalMemory of each) once, before any timing. `--pg-url` runs the same calls on a
PostgreSQL schema (build_large_db.py --pg; the studio's URL, `postgresql://…?schema=NAME`, whose
schema the worker passes to PostgresStore as schemaName); `--libsql-url` on a libSQL server (sqld)
holding the same rows (build_large_db.py --libsql-url), without the estimates: there Mastra's recall
of all 20,007 messages fails (sqld's RESPONSE_TOO_LARGE), and they are not reads. `--no-file` times
the servers alone. Both columns of ratios are printed: medians (the target's) and minimums (steadier
on a loaded machine). Figures are measurements, not assertions.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
WORKER = Path(__file__).resolve().parent / "vs_mastra_worker.mjs"
BIG = "bench-big"
TARGET = 0.7
CALLS = {
    "listThreads": ("listThreads", {}),
    "listThreads_read": ("listThreads", {"read": True}),
    "listThreads_metadata": ("listThreads", {"metadata": {"category": "billing"}}),
    "getThreadById": ("getThreadById", {"threadId": "bench-7"}),
    "recall": ("recall", {"threadId": BIG, "perPage": 50}),
    "listMessages": ("listMessages", {"threadId": BIG, "perPage": 40, "page": 100}),
    "estimate_warm": ("estimateWarm", {"threadId": BIG}),
    "estimate_cold": ("estimateCold", {"threadId": BIG}),
    "statuses": ("statuses", {}),
    "inspect": ("inspect", {}),
}
#: Calls that read every thread's messages: one timing a round (REPS would multiply minutes on a server).
WHOLE_STORE = ("statuses", "inspect")


# -- the studio's side (this script with --worker) -------------------------------------------------

def _thread_row(thread) -> list | None:
    """Normalise a Thread as the node worker normalises Mastra's: [id, resourceId, title, metadata, dates]."""
    from studio.store.history import js_date_iso

    if thread is None:
        return None
    return [thread.id, thread.resource_id, thread.title, thread.metadata,
            js_date_iso(thread.created_at), js_date_iso(thread.updated_at)]


class StudioSide:
    """The studio's answers to the benchmark's calls on one open store (warm: the store stays open)."""

    def __init__(self, target: str):
        from studio.store import open_store

        self.store = open_store(target)
        self.loaded: dict[str, list[dict]] = {}
        self.warm: list[dict] | None = None

    def _messages(self, thread_id: str) -> list[dict]:
        if thread_id not in self.loaded:
            self.loaded[thread_id] = [m.as_mastra() for m in self.store.list_messages(thread_id)]
        return self.loaded[thread_id]

    def run(self, op: str, reps: int, args: dict) -> dict:
        """Return {ms: [REPS wall timings of OP alone], cpu: [their CPU ms], out: its last result, normalised as
        the node worker's}."""
        from studio.engine import tokens
        from studio.engine.estimate_cache import forget_estimate_keys
        from studio.store.history import get_thread_by_id, list_messages, recall
        from studio.store.thread_list import list_threads

        ms: list[float] = []
        cpu: list[float] = []  # the process's CPU ms of each call (time.process_time), as the node worker's
        if op in ("estimateWarm", "estimateCold"):
            messages = self._messages(args["threadId"])
            if op == "estimateWarm" and self.warm is None:
                self.warm = copy.deepcopy(messages)
                tokens.count_messages(self.warm, stamp=True)
            out = None
            for _ in range(reps):
                if op == "estimateWarm":
                    given = self.warm
                else:
                    given = copy.deepcopy(messages)
                    tokens.forget_counted_strings()
                    forget_estimate_keys()
                c0, t0 = time.process_time(), time.perf_counter()
                out = tokens.count_messages(given)
                ms.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
            return {"ms": ms, "cpu": cpu, "out": out}
        if op in ("statuses", "inspect"):
            for _ in range(reps):
                c0, t0 = time.process_time(), time.perf_counter()
                out = self._statuses() if op == "statuses" else self._inspect()
                ms.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
            return {"ms": ms, "cpu": cpu, "out": out}
        calls = {
            "listThreads": lambda: list_threads(self.store, per_page=args.get("perPage", False),
                                                page=args.get("page", 0),
                                                filter={"metadata": args["metadata"]} if args.get("metadata")
                                                else None),
            "getThreadById": lambda: get_thread_by_id(self.store, args["threadId"]),
            "recall": lambda: recall(self.store, args["threadId"], per_page=args["perPage"], page=args.get("page")),
            "listMessages": lambda: list_messages(self.store, args["threadId"], per_page=args["perPage"],
                                                  page=args["page"], order_by=args.get("orderBy")),
        }
        result = None
        for _ in range(reps):
            c0, t0 = time.process_time(), time.perf_counter()
            result = calls[op]()
            if args.get("read"):  # every thread's metadata read too (parsed on first read)
                for thread in result.threads:
                    _ = thread.metadata
            ms.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        if op == "listThreads":
            out = {"threads": [_thread_row(t) for t in result.threads], "total": result.total,
                   "hasMore": result.has_more}
        elif op == "getThreadById":
            out = _thread_row(result)
        else:
            out = {"ids": result.message_ids, "total": result.total, "hasMore": result.has_more}
        return {"ms": ms, "cpu": cpu, "out": out}


    def _statuses(self) -> dict:
        """getStatus of every thread an OM record governs: {thread id: figures, as the node worker lists them}."""
        from studio.app.statuses import iter_thread_statuses

        return {s.thread_id: [s.pending_tokens, s.threshold, s.unbuffered_pending_tokens, s.should_observe,
                              s.should_reflect, s.buffered_chunk_count, s.can_activate, s.record_id,
                              s.generation_count, s.observation_token_count]
                for s in iter_thread_statuses(self.store)}

    def _inspect(self) -> dict:
        """inspect's document (threads, statuses, histories), normalised as the node worker's."""
        from studio.app.inspection import inspect_document

        with self.store.snapshot():
            doc = inspect_document(self.store)
        statuses, history = {}, {}
        for om in doc["observational_memory"]:
            history[om["lookup_key"]] = [[h["record_id"], h["generation_count"], h["observation_token_count"]]
                                         for h in om["history"][:100]]
            for thread_id, s in om["status"].items():
                statuses[thread_id] = [s["pending_tokens"], s["threshold"], s["unbuffered_pending_tokens"],
                                       s["should_observe"], s["should_reflect"], s["buffered_chunk_count"],
                                       s["can_activate"], om["record_id"], om["generation_count"],
                                       om["observation_token_count"]]
        return {"threads": sorted(t["id"] for t in doc["threads"]), "statuses": statuses, "history": history}


def worker_main(target: str, collector: str = "studio") -> None:
    """Answer JSON requests on stdin, one a line, as the node worker does.

    COLLECTOR "studio": Python's automatic cyclic collection off, as the studio runs its store calls (a CLI
    command disables it for the whole command, studio/cli/__init__.py; the window collects on its GUI
    thread's timer between calls and freezes a big listing's burst instead of scanning it,
    studio/ui/gc_collector.py); "auto": CPython's automatic collection on (its full collections then walk
    this worker's whole heap, the 40,000 message dicts it keeps for the estimates included, inside
    whichever call they land in).
    """
    if collector == "studio":
        import gc

        gc.disable()
    side = StudioSide(target)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip():
            req = json.loads(line)
            print(json.dumps(side.run(req["op"], req["reps"], req.get("args", {})), ensure_ascii=False), flush=True)


# -- the harness -----------------------------------------------------------------------------------

class Worker:
    """A warm process answering one JSON request a line."""

    def __init__(self, argv: list[str], cwd: Path):
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     encoding="utf-8")
        first = self.proc.stdout.readline()
        if not first:
            raise SystemExit(f"{argv[0]} worker did not start")

    def ask(self, op: str, reps: int, args: dict) -> dict:
        self.proc.stdin.write(json.dumps({"op": op, "reps": reps, "args": args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"worker ended on {op}")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def mastra_worker(target: str) -> Worker:
    """Start Mastra's warm worker on TARGET (a file:, http:// or postgresql://…?schema= URL) in the corpus folder.

    The worker is copied beside the corpus's node_modules (to import Mastra) under a name of its
    content's hash: a run of another version of this script sharing the corpus folder keeps its own.
    """
    import hashlib

    from tests.interop.conftest import install_corpus

    corpus = install_corpus()
    code = WORKER.read_bytes()
    name = f"vs-mastra-worker-{hashlib.sha256(code).hexdigest()[:12]}.mjs"
    if not (corpus / name).exists() or (corpus / name).read_bytes() != code:
        tmp = corpus / f".{name}.{os.getpid()}"
        tmp.write_bytes(code)
        tmp.replace(corpus / name)
    return Worker(["node", name, target], corpus)


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


#: Each side's batch of timed calls (other than the whole-store ones) follows one untimed call of its own. The
#: first call after the other side's batch meets a client process and a server backend that slept meanwhile:
#: on this 2-core machine 0.4-1.3 ms of wake-up for a PostgreSQL getThreadById whose next calls take 0.07-0.1
#: ms, on both sides; with three calls a batch that wake-up, not the call, decided the median.
WARM_UP = 1


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(mastra_target: str, studio_target: str, rounds: int, reps: int, names: list[str],
            collector: str = "studio") -> dict:
    """Compare then time every call NAMES; return {name: {mastra: [ms], studio: [ms]}} and loads.

    COLLECTOR: the studio worker's cyclic collection (`worker_main`)."""
    mastra = mastra_worker(mastra_target)
    studio = Worker([sys.executable, str(Path(__file__).resolve()), "--worker", studio_target, collector], REPO)
    try:
        for name in names:  # outputs equal first (this also warms both sides)
            op, args = CALLS[name]
            a, b = mastra.ask(op, 1, args)["out"], studio.ask(op, 1, args)["out"]
            if _canonical(a) != _canonical(b):
                raise SystemExit(f"{name}: outputs differ\n mastra {_canonical(a)[:600]}\n"
                                 f" studio {_canonical(b)[:600]}")
        times = {name: {"mastra": [], "studio": []} for name in names}
        cpu = {name: {"mastra": [], "studio": []} for name in names}
        load_before = _load()
        for r in range(rounds):
            order = (("mastra", mastra), ("studio", studio)) if r % 2 == 0 else (("studio", studio), ("mastra", mastra))
            for name in names:
                op, args = CALLS[name]
                for side, worker in order:
                    if name not in WHOLE_STORE:   # one untimed call first: see WARM_UP
                        worker.ask(op, 1, args)
                    answer = worker.ask(op, 1 if name in WHOLE_STORE else reps, args)
                    times[name][side] += answer["ms"]
                    cpu[name][side] += answer["cpu"]
        return {"times": times, "cpu": cpu, "load_before": load_before, "load_after": _load()}
    finally:
        mastra.close()
        studio.close()


def report(result: dict) -> str:
    """Return the ratio table (markdown) of MEASURE's result."""
    lines = ["| call | Mastra min / median / max ms | studio min / median / max ms | ratio (medians) | ratio (mins) "
             "| CPU medians ms Mastra / studio | ratio (CPU) |",
             "|---|---|---|---|---|---|---|"]
    for name, t in result["times"].items():
        m, s = t["mastra"], t["studio"]
        ratio = statistics.median(s) / statistics.median(m)
        flag = "" if ratio <= TARGET else " **over 0.7**"
        cm, cs = (statistics.median(result["cpu"][name][side]) for side in ("mastra", "studio"))
        cpu_ratio = f"{cs / cm:.2f}×" if cm else "–"
        lines.append(f"| {name} | {min(m):.1f} / {statistics.median(m):.1f} / {max(m):.1f} "
                     f"| {min(s):.1f} / {statistics.median(s):.1f} / {max(s):.1f} | {ratio:.2f}×{flag} "
                     f"| {min(s) / min(m):.2f}× | {cm:.1f} / {cs:.1f} | {cpu_ratio} |")
    lines.append(f"\nload average before: {result['load_before']}, after: {result['load_after']}")
    return "\n".join(lines)


def main() -> None:
    """Parse the arguments, run the comparison and print its table."""
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2], *sys.argv[3:4])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db", nargs="?", default=str(REPO / "benchmarks" / "out" / "large.db"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated call names (default: all)")
    ap.add_argument("--libsql-url", help="also time a libSQL server (sqld) holding the same rows")
    ap.add_argument("--pg-url", help="also time a PostgreSQL schema holding the same rows "
                                     "(postgresql://…?schema=NAME, build_large_db.py --pg)")
    ap.add_argument("--no-file", action="store_true", help="time only the servers given (DB is not read)")
    ap.add_argument("--json", help="write the timings here")
    ap.add_argument("--collector", choices=("studio", "auto"), default="studio",
                    help="the studio worker's cyclic garbage collection: as the studio runs its calls (automatic "
                         "collection off; default) or CPython's automatic collection")
    opts = ap.parse_args()
    names = [n for n in opts.only.split(",") if n] or list(CALLS)
    unknown = set(names) - set(CALLS)
    if unknown:
        ap.error(f"unknown calls: {sorted(unknown)}")
    results = {}
    stamp = f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, studio collector: {opts.collector})"
    if not opts.no_file:
        with tempfile.TemporaryDirectory() as tmp:
            copies = []
            for side in ("mastra", "studio"):
                dest = Path(tmp) / f"{side}.db"
                shutil.copyfile(opts.db, dest)
                dest.read_bytes()  # both copies in the page cache alike
                copies.append(dest)
            results["file"] = measure(f"file:{copies[0]}", str(copies[1]), opts.rounds, opts.reps, names,
                                      opts.collector)
            print(f"file {opts.db} {stamp}")
            print(report(results["file"]), flush=True)
    if opts.pg_url:  # one schema read by both sides (getStatus may write: a stale buffering flag cleared)
        results["pg"] = measure(opts.pg_url, opts.pg_url, opts.rounds, opts.reps, names, opts.collector)
        print(f"\nPostgreSQL {opts.pg_url} {stamp}")
        print(report(results["pg"]), flush=True)
    if opts.libsql_url:  # Mastra cannot read bench-big whole from a sqld (RESPONSE_TOO_LARGE): no estimates there
        served = [n for n in names if not n.startswith("estimate_")]
        results["libsql"] = measure(opts.libsql_url, opts.libsql_url, opts.rounds, opts.reps, served, opts.collector)
        print(f"\nlibSQL server {opts.libsql_url} {stamp}")
        print(report(results["libsql"]), flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

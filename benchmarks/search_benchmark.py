"""Search across every thread (View ▸ Search All Threads…, `memory-studio search`) on the benchmark file.

    python benchmarks/search_benchmark.py [DB] [--query TEXT]... [--repeat 3] [--json OUT.json]

DB: the benchmark database (build_large_db.py; default benchmarks/out/large.db). For each query, in one warm
process, best and median of REPEAT runs of `studio.app.search.iter_search`:
  * first_results_ms: from the call until the first batch that holds a hit is in hand (what the window shows
    first; the issue's goal is ≤ 300 ms);
  * first_batch_ms: until the first batch of threads is searched, hit or not;
  * total_ms: the whole store searched; hits: how many messages matched; messages_scanned is not counted (the
    prefilter skips parsing).
The machine's load average is printed with the figures: they are measurements, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.app.search import iter_search
from studio.store import open_store

DEFAULT_QUERIES = ["budget", "lisbon trip", '"the decision"', "zzz-no-such-word"]


def one_run(path: str, query: str) -> dict:
    """Time one search of QUERY in PATH (ms)."""
    start = time.perf_counter()
    first_batch = first_results = None
    hits = 0
    with open_store(path) as store, store.snapshot():
        for found, _done, _total in iter_search(store, query):
            now = (time.perf_counter() - start) * 1000
            first_batch = first_batch if first_batch is not None else now
            if found and first_results is None:
                first_results = now
            hits += len(found)
    return {"first_batch_ms": first_batch, "first_results_ms": first_results,
            "total_ms": (time.perf_counter() - start) * 1000, "hits": hits}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", nargs="?", default=str(Path(__file__).parent / "out" / "large.db"))
    parser.add_argument("--query", action="append", help="a query (repeatable; default: a set of four)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="OUT.json")
    args = parser.parse_args()
    report = {"db": args.db, "load_average": os.getloadavg(), "queries": {}}
    for query in args.query or DEFAULT_QUERIES:
        runs = [one_run(args.db, query) for _ in range(args.repeat)]
        summary = {"hits": runs[-1]["hits"]}
        for key in ("first_batch_ms", "first_results_ms", "total_ms"):
            values = [r[key] for r in runs if r[key] is not None]
            summary[key] = ({"best": round(min(values), 1), "median": round(statistics.median(values), 1)}
                            if values else None)
        report["queries"][query] = summary
        print(f"{query!r}: {summary}", flush=True)
    print(f"load average {report['load_average']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time `inspect` on a libSQL server and count the requests, statements and pages it took.

Usage: PYTHONPATH=. python -m benchmarks.libsql_paging URL [--runs N]

URL: a sqld (or Turso) holding a big Mastra memory, e.g. the benchmark store `build_large_db.py --libsql-url`
copies (5,007 threads, 220,126 messages, 8,012 OM records). Only reads are sent. A read whose answer is over
the server's response limit (sqld's --max-response-size, 10 MB by default) is read in pages
(`studio.store.hrana.HranaConnection._paged`); before that, `inspect` on that store failed with
"Response is too large" (exit 2). Prints, per run: wall and CPU seconds of the inspect (open included),
HTTP requests, statements, reads paged and their pages, and the load average.

Measured 2026-12-05 on the benchmark store (2 shared cores, load average 3–5): 27–34 s wall, 5.7 s CPU,
1.0 GB max RSS; 54 requests, 55 statements, 2 paged reads in 41 pages (the OM generations, 8,012 rows in
8 pages; the unobserved messages, 134,031 rows in 33 pages of 4,096). `inspect` on a file copy of the same
store: 4.9 s; the same JSON. CPU here is small: the time is the server's. Each page makes sqld run the
statement again up to its OFFSET, so a page of the messages read takes 0.2 s at offset 0 and 1.0 s at
offset 122,880 (~20 s of the run): paging that read by its thread keys instead would remove that.
"""

from __future__ import annotations

import argparse
import os
import time


def run(url: str) -> dict:
    """One `inspect` on URL as the CLI runs it (one snapshot); its seconds and traffic."""
    from studio.app.inspection import inspect_document
    from studio.store import open_store

    wall, cpu = time.perf_counter(), time.process_time()
    with open_store(url) as store, store.snapshot():
        doc = inspect_document(store)
    traffic = store.backend.traffic
    return {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2),
            "threads": len(doc["threads"]), "om_records": len(doc["observational_memory"]),
            "requests": traffic.requests, "statements": traffic.statements,
            "paged_reads": traffic.paged_reads, "pages": traffic.pages,
            "load_average": os.getloadavg()}


def main() -> None:
    """Parse the arguments and print one line per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for _ in range(args.runs):
        print(run(args.url), flush=True)


if __name__ == "__main__":
    main()

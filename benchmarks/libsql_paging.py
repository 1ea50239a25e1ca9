"""Time `inspect` on a libSQL server and count the requests, statements and pages it took.

Usage: PYTHONPATH=. python -m benchmarks.libsql_paging URL [--runs N] [--sqld-pid PID] [--pages keyset|offset]
                                                         [--file PATH]

URL: a sqld (or Turso) holding a big Mastra memory, e.g. the benchmark store `build_large_db.py --libsql-url`
copies (5,007 threads, 220,126 messages, 8,012 OM records). Only reads are sent. A read whose answer is over
the server's response limit (sqld's --max-response-size, 10 MB by default) is read in pages
(`studio.store.hrana.HranaConnection._paged`); before that, `inspect` on that store failed with
"Response is too large" (exit 2). Prints, per run: wall and CPU seconds of the inspect (open included),
the server's CPU seconds meanwhile (--sqld-pid: its utime + stime from /proc), HTTP requests, statements,
reads paged and their pages, and the load average. `--pages offset` reads every paged read in OFFSET pages, as
before keyset pages (`studio.store.batch.CursorPages` and `TablePages`); runs alternate with
`--pages both`. `--file PATH` also times `inspect` on the file copy of the same store.

Measured 2026-12-05 on the benchmark store (2 shared cores), OFFSET pages: 27–103 s wall (load 3–12),
20.5–22.8 s of sqld's CPU, 5.7–6.0 s of ours; 54 requests, 55 statements, 2 paged reads in 41 pages (the OM
generations, 8,012 rows in 8 pages; the unobserved messages, 134,031 rows in 33 pages of 4,096). Each page made
sqld run the statement again up to its OFFSET: a page of the messages read took 0.2 s at offset 0 and 1.0 s at
offset 122,880, that read 55 s of a 66 s run. Keyset pages (`studio.store.batch`: the messages read by
windows of threads, ~3,300 rows a page, 0.1–0.35 s each; the OM generations after the last row read; 63
requests, 50 pages), alternated with OFFSET at load 5–7: 8.4–11.9 s wall (OFFSET 47–50 s), 2.8–2.9 s of sqld's
CPU (OFFSET 19.4 s), 5.3–5.5 s of ours (OFFSET 5.3–5.6 s), the same JSON. The file: 3.8–4.2 s wall, 3.5 s CPU.
What is left on the server is mostly the failed whole read of the messages (~1.5 s) and the answers' encoding.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def _cpu_of(pid: int | None) -> float | None:
    """CPU seconds (user + system) process PID has used, or None without a PID."""
    if pid is None:
        return None
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(url: str, sqld_pid: int | None = None) -> dict:
    """One `inspect` on URL as the CLI runs it (one snapshot); its seconds and traffic."""
    from studio.app.inspection import inspect_document
    from studio.store import open_store
    from studio.store.backends.libsql_server import LibsqlServerBackend

    server = _cpu_of(sqld_pid)
    wall, cpu = time.perf_counter(), time.process_time()
    with open_store(url) as store, store.snapshot():
        doc = inspect_document(store)
    out = {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2)}
    if server is not None:
        out["sqld_cpu_s"] = round(_cpu_of(sqld_pid) - server, 2)
    out.update({"threads": len(doc["threads"]), "om_records": len(doc["observational_memory"])})
    if isinstance(store.backend, LibsqlServerBackend):
        traffic = store.backend.traffic
        out.update({"requests": traffic.requests, "statements": traffic.statements,
                    "paged_reads": traffic.paged_reads, "pages": traffic.pages})
    out["load_average"] = tuple(round(x, 2) for x in os.getloadavg())
    return out


#: The studio's `HranaConnection._paged` (keyset pages when the read has them), kept while OFFSET pages replace it.
_studio_paged = None


def offset_pages(on: bool) -> None:
    """Read every paged read in OFFSET pages (ON), as before keyset pages, or as the studio does (not ON)."""
    global _studio_paged
    from studio.store.hrana import HranaConnection

    if _studio_paged is None:
        _studio_paged = HranaConnection._paged
    studio_paged = _studio_paged

    def by_offset(self, sql, params, pages):
        return studio_paged(self, sql, params, None)

    HranaConnection._paged = by_offset if on else studio_paged


def main() -> None:
    """Parse the arguments and print one line per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sqld-pid", type=int, help="the sqld's process id: its CPU seconds are reported too")
    parser.add_argument("--pages", choices=("keyset", "offset", "both"), default="keyset",
                        help="how paged reads are read (both: alternate, offset first)")
    parser.add_argument("--file", help="also time inspect on this file copy of the store, once per run")
    args = parser.parse_args()
    modes = ["offset", "keyset"] if args.pages == "both" else [args.pages]
    for _ in range(args.runs):
        for mode in modes:
            offset_pages(mode == "offset")
            print({"mode": mode, **run(args.url, args.sqld_pid)}, flush=True)
        if args.file:
            print({"file": args.file, **run(args.file)}, flush=True)


if __name__ == "__main__":
    main()

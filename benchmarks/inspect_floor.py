"""How low `inspect`'s ratio to a raw read can go: the work any inspect must do, each part alone.

    python benchmarks/inspect_floor.py [DB] [--repeat 3] [--json OUT.json]

`cli_ratio_benchmark.py` divides `inspect DB --json` by a raw read of every thread, message and OM
row (libSQL `SELECT *`, each JSON column `json.loads`ed, the parsed value dropped). This measures,
in this process and best of REPEAT, the parts of inspect's work that no implementation can skip,
each as cheap as it can be done, and divides their sum by that raw read:

  * `raw_read_ms`: the raw read of every row (the ratio's denominator);
  * `needed_read_ms`: the same raw read of only the rows inspect's figures depend on: every thread
    and OM row, and the messages after each thread's observation cursor (thread scope: Mastra's
    unobserved messages; the statuses are estimates of these), read in one unordered statement;
  * `estimate_ms`: Mastra's token estimate of the text parts of those messages alone, as Mastra
    gets it: the estimate stamped on the part when its key (sha256 of the text) matches, else tokenx
    through the command's memo of texts already priced (`tokens.count_string`, emptied first, as in
    a new process) — no dispatch over part kinds, no unobserved-window rules;
  * `output_ms`: writing inspect's JSON document (`studio.cli.output.pretty_json`, as the command writes it).

`floor_ratio` = (needed_read + estimate + output) / raw_read: an inspect doing nothing else would
still take that share of the raw read. Figures are measurements, not assertions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.cli_ratio_benchmark import JSON_COLUMNS, raw_read  # noqa: E402  (once sys.path holds the repository)


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _needed_statement(db: Path) -> tuple[str, tuple, int]:
    """(SELECT * of the messages after each thread-scope record's cursor, its params, resource-scope records)."""
    from studio.store import batch, open_store
    from studio.store.records import storage_cursor

    with open_store(str(db)) as store:
        cursors: dict[str, str | None] = {}
        resource_scope = 0
        for history in store.om_histories().values():
            current = history[0]
            if current.scope == "thread" and current.thread_id:
                cursors[current.thread_id] = storage_cursor(current.last_observed_at)
            else:
                resource_scope += 1
        tail, params = batch.cursor_tail(store.sql, "thread_id", cursors)
    where = tail[:tail.index(" ORDER BY")]  # "AS m JOIN (the cursors) AS c ON …": the message rows only
    return f"SELECT m.* FROM mastra_messages {where}", tuple(params), resource_scope


def _text_parts(db: Path, sql: str, params: tuple) -> list[tuple[str, object]]:
    import libsql

    conn = libsql.connect(str(db))
    try:
        texts = []
        for (content,) in conn.execute(sql.replace("SELECT m.*", "SELECT m.content", 1), params).fetchall():
            parsed = json.loads(content) if isinstance(content, str) else None
            parts = parsed.get("parts") if isinstance(parsed, dict) else None
            for part in parts if isinstance(parts, list) else ():
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    meta = part.get("providerMetadata")
                    mastra = meta.get("mastra") if isinstance(meta, dict) else None
                    texts.append((part["text"], mastra.get("tokenEstimate") if isinstance(mastra, dict) else None))
        return texts
    finally:
        conn.close()


def measure(db: Path, repeat: int) -> dict:
    """Return the figures of the module docstring (ms)."""
    from benchmarks.query_count import inspect_path
    from studio.cli.output import pretty_json
    from studio.engine import tokens
    from studio.engine.estimate_cache import cache_lookup, estimate_key, is_valid

    def everything():
        return [raw_read(db, f"SELECT * FROM {t}")
                for t in ("mastra_threads", "mastra_messages", "mastra_observational_memory")]

    sql, params, resource_scope = _needed_statement(db)

    def needed():
        return (raw_read(db, "SELECT * FROM mastra_threads"),
                raw_read(db, "SELECT * FROM mastra_observational_memory"), raw_read(db, sql, params))

    texts = _text_parts(db, sql, params)

    def estimate() -> None:
        tokens.forget_counted_strings()
        for text, stamped in texts:
            if isinstance(stamped, dict):
                key = estimate_key("text", text)
                if is_valid(cache_lookup(stamped, key), key):
                    continue
            tokens.count_string(text)

    document = inspect_path(str(db))
    out = {"raw_read_ms": _best(everything, repeat), "needed_read_ms": _best(needed, repeat),
           "estimate_ms": _best(estimate, repeat), "output_ms": _best(lambda: pretty_json(document), repeat)}
    out = {k: round(v * 1000) for k, v in out.items()}
    out["needed_messages"] = raw_read(db, sql, params)
    out["text_parts"] = len(texts)
    out["text_chars"] = sum(len(t) for t, _ in texts)
    out["text_parts_stamped"] = sum(1 for _, stamped in texts if isinstance(stamped, dict))
    out["resource_scope_records_left_out"] = resource_scope
    out["floor_ratio"] = round((out["needed_read_ms"] + out["estimate_ms"] + out["output_ms"]) / out["raw_read_ms"], 2)
    return out


def main(argv=None) -> int:
    """Parse arguments, measure, print (and write) the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db", nargs="?", type=Path, default=REPO / "benchmarks" / "out" / "large.db")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    a = p.parse_args(argv)
    if not a.db.exists():
        p.error(f"{a.db} does not exist: build it with benchmarks/build_large_db.py")
    assert JSON_COLUMNS  # the raw reads parse the same columns as cli_ratio_benchmark's
    text = json.dumps(measure(a.db, a.repeat), indent=2)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure semantic recall on a large vector index: similar messages and a query's hits (target ≤ 200 ms).

    python benchmarks/build_large_db.py /tmp/vec.db --vectors 100000 [--vector-dim 384]
    python benchmarks/semantic_benchmark.py /tmp/vec.db [--runs 5] [--json OUT.json]

Each case runs RUNS times on a fresh store (median and worst, ms), for a few messages spread over the index:
  indexes_ms           vector_memory_document: every index with its row count (describeIndex's count(*))
  similar_ms           similar_messages of a message in its resource's scope (8 nearest; libSQL's ANN index,
                       topK × 10 candidates scored exactly, the brute-force fallback when too few pass)
  similar_all_ms       the same over the whole index (no filter: topK × 2 candidates)
  recall_ms            recall_with_vector: a stored vector as the query, Mastra's defaults (topK 4,
                       messageRange 1, resource scope), hits merged into the newest 10 messages
  recall_exact_ms      the same scoring every vector of the resource (`--exact`)
  turn_ms              turn_recall: what a user message's turn recalled (the index before the turn, exact)
Figures are measurements, not assertions; say the machine's load (uptime) with them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def main(argv=None) -> int:
    """Run each case; print (and optionally save) median and worst in ms."""
    from studio.app.semantic import (
        memory_indexes,
        recall_with_vector,
        similar_messages,
        turn_recall,
        vector_memory_document,
    )
    from studio.engine.semantic import SemanticConfig
    from studio.store import open_store
    from studio.store.vectors import read_vector_rows

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db", help="a database with a vector index (build_large_db.py --vectors N)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    args = p.parse_args(argv)

    with open_store(args.db) as store:
        (index,) = memory_indexes(store, counted=True)[:1]
        rows = read_vector_rows(store, index.name, rowids=[1 + k * (index.count // 5) for k in range(5)])
        picks = [(r.message_id, r.thread_id, r.metadata.get("resource_id"), r.metadata.get("role")) for r in rows]
    user = next(p for p in picks if p[3] == "user") if any(p[3] == "user" for p in picks) else picks[0]
    config = SemanticConfig()

    cases = {
        "indexes_ms": lambda s, m: vector_memory_document(s),
        "similar_ms": lambda s, m: similar_messages(s, m[0], top_k=8, where={"resource_id": m[2]}),
        "similar_all_ms": lambda s, m: similar_messages(s, m[0], top_k=8),
        "recall_ms": lambda s, m: recall_with_vector(s, m[1], m[0], config, resource_id=m[2]),
        "recall_exact_ms": lambda s, m: recall_with_vector(s, m[1], m[0], config, resource_id=m[2], exact=True),
        "turn_ms": lambda s, m: turn_recall(s, user[0], config),
    }
    figures: dict = {"index": index.to_json()}
    for name, case in cases.items():
        runs = []
        for n in range(max(1, args.runs)):
            pick = picks[n % len(picks)]
            with open_store(args.db) as store:
                started = time.perf_counter()
                with store.snapshot():
                    case(store, pick)
                runs.append(time.perf_counter() - started)
        figures[name] = {"median": _ms(statistics.median(runs)), "worst": _ms(max(runs))}
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

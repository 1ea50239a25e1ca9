"""Build a large Mastra memory.db for benchmarks from the rows of a real fixture.

    python benchmarks/build_large_db.py OUT.db [--threads 5000] [--messages-per-thread 40]
                                             [--big-thread 20000] [--source ../shared/fixtures/mastra/support.db]
                                             [--pg URL] [--libsql-url URL] [--reuse]
                                             [--vectors 100000] [--vector-dim 384] [--no-vector-index]

Every row is a copy of a row Mastra wrote (support.db): threads, messages (content verbatim, ids
suffixed), and each thread's OM generations (lookup keys and thread ids rewritten), so the OM
engine sees real data. One extra thread, `bench-big`, holds BIG_THREAD messages whose times are
spread one second apart. The source is copied first; it is never opened in place.
`--pg` / `--libsql-url` also write the same rows into a server store (benchmarks/copy_to_server.py).
`--vectors N` adds semantic recall's vector memory as LibSQLVector writes it (`add_vectors`): the table
`memory_messages_<dim>` with N vectors of the benchmark threads' messages and, unless `--no-vector-index`,
libSQL's ANN index, built through the libsql driver (plain SQLite cannot).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DEFAULT_SOURCE = REPO.parent / "shared" / "fixtures" / "mastra" / "support.db"


def build(out: Path, source: Path, threads: int, per_thread: int, big: int) -> dict:
    """Write the benchmark database to OUT; return counts {threads, messages, om_records, bytes}."""
    out.parent.mkdir(parents=True, exist_ok=True)
    for ext in ("", "-wal", "-shm"):
        Path(str(out) + ext).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "source.db"
        shutil.copyfile(source, src)
        for ext in ("-wal", "-shm"):
            if Path(str(source) + ext).exists():
                shutil.copyfile(str(source) + ext, str(src) + ext)
        # Fold any WAL into the private copy, then copy it as the base of the output.
        conn = sqlite3.connect(src)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()
        shutil.copyfile(src, out)
    db = sqlite3.connect(out)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    tmpl = db.execute("SELECT id FROM mastra_threads WHERE id LIKE 'support-%' AND id != 'support-meta' "
                      "ORDER BY id").fetchall()
    templates = [t[0] for t in tmpl]
    numbers = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
    for k, template in enumerate(templates):
        # thread i uses template i % len(templates)
        args = (threads - 1, len(templates), k, template)
        db.execute(numbers + """
            INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt")
            SELECT 'bench-' || i, 'bench-user-' || (i % 100), t.title || ' #' || i, t.metadata,
                   strftime('%Y-%m-%dT%H:%M:%fZ', t."createdAt", '+' || i || ' seconds'),
                   strftime('%Y-%m-%dT%H:%M:%fZ', t."updatedAt", '+' || i || ' seconds')
            FROM n, mastra_threads t WHERE i % ? = ? AND t.id = ?""", args)
        count = db.execute("SELECT COUNT(*) FROM mastra_messages WHERE thread_id = ?", (template,)).fetchone()[0]
        reps = max(1, -(-per_thread // count))
        # Copy j = 0 keeps Mastra's times (observed as in the fixture); later copies come j hours later.
        db.execute(numbers + """, r(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM r WHERE j < ?)
            INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
            SELECT m.id || '-' || i || '-' || j, 'bench-' || i, m.content, m.role, m.type,
                   CASE WHEN j = 0 THEN m."createdAt"
                        ELSE strftime('%Y-%m-%dT%H:%M:%fZ', m."createdAt", '+' || (j * 3600) || ' seconds') END,
                   'bench-user-' || (i % 100)
            FROM n, r, (SELECT *, ROW_NUMBER() OVER (ORDER BY "createdAt") - 1 AS rn FROM mastra_messages
                        WHERE thread_id = ?) m
            WHERE i % ? = ? AND j * ? + m.rn < ?""",
                   (threads - 1, reps - 1, template, len(templates), k, count, per_thread))
        cols = [r[1] for r in db.execute("PRAGMA table_info(mastra_observational_memory)")]
        select = []
        for c in cols:
            q = f'o."{c}"'
            if c == "id":
                q = "o.id || '-' || i"
            elif c == "lookupKey":
                q = "'thread:bench-' || i"
            elif c == "threadId":
                q = "'bench-' || i"
            elif c == "resourceId":
                q = "'bench-user-' || (i % 100)"
            select.append(q)
        collist = ", ".join(f'"{c}"' for c in cols)
        db.execute(numbers + f"""
            INSERT INTO mastra_observational_memory ({collist})
            SELECT {', '.join(select)} FROM n, mastra_observational_memory o
            WHERE o."lookupKey" = 'thread:' || ? AND i % ? = ?""", (threads - 1, template, len(templates), k))
    # One very long thread.
    db.execute("""INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt")
                  SELECT 'bench-big', 'bench-user-big', 'A very long conversation', metadata, "createdAt", "updatedAt"
                  FROM mastra_threads WHERE id = 'support-1'""")
    source_msgs = db.execute("SELECT COUNT(*) FROM mastra_messages WHERE thread_id = 'support-1'").fetchone()[0]
    db.execute(numbers + """
        INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
        SELECT 'big-' || i || '-' || m.id, 'bench-big', m.content, m.role, m.type,
               strftime('%Y-%m-%dT%H:%M:%fZ', '2026-11-29T17:00:00.000Z', '+' || (i * ? + m.rn) || ' seconds'),
               'bench-user-big'
        FROM n, (SELECT *, ROW_NUMBER() OVER (ORDER BY "createdAt") - 1 AS rn FROM mastra_messages
                 WHERE thread_id = 'support-1') m""", ((big + source_msgs - 1) // source_msgs - 1, source_msgs))
    # Its OM record: support-1's generations; messages after 20:42 on Nov 29 are unobserved (~13k).
    big_select = {"id": "o.id || '-big'", "lookupKey": "'thread:bench-big'", "threadId": "'bench-big'",
                  "resourceId": "'bench-user-big'"}
    db.execute(f"""
        INSERT INTO mastra_observational_memory ({collist})
        SELECT {', '.join(big_select.get(c, f'o."{c}"') for c in cols)}
        FROM mastra_observational_memory o WHERE o."lookupKey" = 'thread:support-1'""")
    db.commit()
    db.execute("PRAGMA journal_mode=WAL")  # as Mastra leaves it
    counts = {
        "threads": db.execute("SELECT COUNT(*) FROM mastra_threads").fetchone()[0],
        "messages": db.execute("SELECT COUNT(*) FROM mastra_messages").fetchone()[0],
        "big_thread_messages": db.execute("SELECT COUNT(*) FROM mastra_messages WHERE thread_id='bench-big'")
                                .fetchone()[0],
        "om_records": db.execute("SELECT COUNT(*) FROM mastra_observational_memory").fetchone()[0],
    }
    db.close()
    counts["bytes"] = out.stat().st_size
    return counts


def _vector_table(dim: int) -> str:
    return "memory_messages" if dim == 1536 else f"memory_messages_{dim}"


def add_vectors(out: Path, count: int, dim: int, *, index: bool = True, seed: int = 1,
                index_options: tuple[str, ...] = ()) -> dict:
    """Add COUNT vectors of DIM float32 values to OUT as LibSQLVector stores Memory's (one per message).

    The table and index are LibSQLVector.createIndex's SQL; rows are the first COUNT text messages of the
    `bench-*` threads, vector id = message id, metadata {message_id, thread_id, resource_id, role, content,
    created_at}. A vector is its thread's direction plus noise, normalised (messages of a thread are
    near each other, like real embeddings of one topic). INDEX: build libSQL's ANN index too (the
    driver's `libsql_vector_idx`, with INDEX_OPTIONS such as `compress_neighbors=float1bit`: LibSQLVector's
    default index keeps every neighbour's full vector, ~90 KB a node at 384 dimensions, so 100k vectors
    need ~9 GB and hours; a compressed one builds in minutes and answers the same queries). Returns
    {vectors, dimension, index_s}.
    """
    import json

    import libsql
    import numpy as np

    table = _vector_table(dim)
    rng = np.random.default_rng(seed)
    db = sqlite3.connect(out)
    rows = db.execute("SELECT id, thread_id, \"resourceId\", role, content, \"createdAt\" FROM mastra_messages "
                      "WHERE thread_id LIKE 'bench-%' AND role IN ('user', 'assistant') ORDER BY rowid LIMIT ?",
                      (count,)).fetchall()
    db.close()
    conn = libsql.connect(str(out))
    conn.execute(f"""CREATE TABLE IF NOT EXISTS {table} (
            id SERIAL PRIMARY KEY,
            vector_id TEXT UNIQUE NOT NULL,
            embedding F32_BLOB({dim}),
            metadata TEXT DEFAULT '{{}}'
          )""")
    centres: dict[str, np.ndarray] = {}
    batch = []
    for message_id, thread_id, resource_id, role, content, created in rows:
        try:
            parts = json.loads(content).get("parts") or []
        except (ValueError, AttributeError):
            parts = []
        text = "\n".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")
        centre = centres.get(thread_id)
        if centre is None:
            centre = centres[thread_id] = rng.standard_normal(dim)
        v = centre + 0.8 * rng.standard_normal(dim)
        v = (v / np.linalg.norm(v)).astype("<f4")
        meta = {"message_id": message_id, "thread_id": thread_id, "resource_id": resource_id, "role": role,
                "content": text, "created_at": created}
        batch.append((message_id, v.tobytes(), json.dumps(meta)))
    conn.executemany(f"INSERT INTO {table} (vector_id, embedding, metadata) VALUES (?, ?, ?)", batch)
    conn.commit()
    t0 = time.perf_counter()
    if index:
        options = "".join(f", '{o}'" for o in index_options)
        conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_vector_idx ON {table} "
                     f"(libsql_vector_idx(embedding{options}))")
        conn.commit()
    index_s = time.perf_counter() - t0
    conn.close()
    return {"vectors": len(batch), "dimension": dim, "index_s": round(index_s, 1)}


def main(argv=None) -> int:
    """Parse arguments, build the database, print what was built."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    p.add_argument("--threads", type=int, default=5000)
    p.add_argument("--messages-per-thread", type=int, default=40)
    p.add_argument("--big-thread", type=int, default=20000)
    p.add_argument("--pg", metavar="URL", help="also copy it into this PostgreSQL schema (postgresql://…?schema=NAME), "
                   "created by Mastra's PostgresStore.init(); the schema is dropped first")
    p.add_argument("--libsql-url", metavar="URL", help="also copy it into this libSQL server (sqld), e.g. http://127.0.0.1:PORT")
    p.add_argument("--reuse", action="store_true", help="OUT exists: copy it to the servers without rebuilding it")
    p.add_argument("--vectors", type=int, default=0, metavar="N",
                   help="add N vectors of semantic recall (LibSQLVector's memory_messages_<dim>), e.g. 100000")
    p.add_argument("--vector-dim", type=int, default=384, metavar="D", help="their dimension (default 384)")
    p.add_argument("--no-vector-index", action="store_true", help="without libSQL's ANN index")
    p.add_argument("--vector-index-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of libsql_vector_idx, e.g. compress_neighbors=float1bit, max_neighbors=16")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    if not (a.reuse and a.out.exists()):
        counts = build(a.out, a.source, a.threads, a.messages_per_thread, a.big_thread)
        print(f"built {a.out} in {time.perf_counter() - t0:.1f} s: {counts}")
        if a.vectors:
            t0 = time.perf_counter()
            counts = add_vectors(a.out, a.vectors, a.vector_dim, index=not a.no_vector_index,
                                 index_options=tuple(a.vector_index_option))
            print(f"added vectors in {time.perf_counter() - t0:.1f} s: {counts}")
    from benchmarks.copy_to_server import copy_to_libsql, copy_to_pg

    if a.pg:
        t0 = time.perf_counter()
        counts = copy_to_pg(a.out, a.pg)
        print(f"copied to PostgreSQL in {time.perf_counter() - t0:.1f} s: {counts}")
    if a.libsql_url:
        t0 = time.perf_counter()
        counts = copy_to_libsql(a.out, a.libsql_url)
        print(f"copied to {a.libsql_url} in {time.perf_counter() - t0:.1f} s: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Row-level views of a PostgreSQL schema for the write tests: exact dumps, changes between dumps, copies."""

from __future__ import annotations

import subprocess

import psycopg

from tests.interop.conftest import changes as changes  # re-exported: the server write tests take it from here
from tests.interop.conftest import run_node
from tests.server.test_pg_store import pg_dump_binary

#: Columns holding write times (and their TIMESTAMPTZ twins): equal in NULL-ness, not in value.
TIME_COLUMNS = {c + z for c in ("createdAt", "updatedAt", "lastReflectionAt", "lastBufferedAtTime")
                for z in ("", "Z")}


def copy_schema(pg_corpus, src: str, dst: str) -> str:
    """Copy schema SRC to DST with the corpus's copy.mjs (Mastra's own copy); return DST's studio URL."""
    run_node(pg_corpus.corpus, "copy.mjs", src, dst, "--store", "pg", "--url", pg_corpus.url)
    return pg_corpus.target(dst)


def copy_pair(pg_corpus, scenario: str, a: str, b: str) -> tuple[str, dict]:
    """Copy SCENARIO's schema to A (for Mastra's write) and B (for ours); return B's studio URL and A's dump
    (`dump_schema`) before either write, which is B's too."""
    copy_schema(pg_corpus, scenario, a)
    target = copy_schema(pg_corpus, scenario, b)
    return target, dump_schema(pg_corpus.url, a)


def node_pg(pg_corpus, script: str, *args: str) -> dict:
    """Run a corpus script against the test server (`--store pg --url …`) and return its JSON."""
    return run_node(pg_corpus.corpus, script, *args, "--store", "pg", "--url", pg_corpus.url)


def dump_schema(url: str, schema: str) -> dict[str, dict[str, dict]]:
    """Return {table: {id: {column: exact text}}} of every mastra_* table of SCHEMA (twins included; TIMESTAMPTZ in
    UTC)."""
    out: dict[str, dict[str, dict]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_name LIKE 'mastra%%' "
            "ORDER BY 1", (schema,))]
        for table in tables:
            cols = conn.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s "
                                "AND table_name = %s ORDER BY ordinal_position", (schema, table)).fetchall()
            names = [c[0] for c in cols]
            if "id" not in names:
                continue
            exprs = ", ".join(f"((\"{c}\" AT TIME ZONE 'UTC')::text || '+00')" if t == "timestamp with time zone"
                              else f'"{c}"::text' for c, t in cols)
            rows = conn.execute(f'SELECT {exprs} FROM "{schema}"."{table}"').fetchall()
            out[table] = {r[names.index("id")]: dict(zip(names, r, strict=True)) for r in rows}
    return out


def same_row(a: dict, b: dict, skip: set[str] = frozenset()) -> list[str]:
    """Columns where rows A and B differ: values outside TIME_COLUMNS | {id} | SKIP, NULL-ness of times."""
    diffs = []
    for col in a.keys() | b.keys():
        if col == "id" or col in skip:
            continue
        if col in TIME_COLUMNS:
            if (a.get(col) is None) != (b.get(col) is None):
                diffs.append(col)
        elif a.get(col) != b.get(col):
            diffs.append(col)
    return sorted(diffs)


def pg_dump_schema(url: str, schema: str) -> str:
    """`pg_dump --data-only` of SCHEMA (the bytes a refused write must leave alone)."""
    done = subprocess.run([pg_dump_binary(), "--no-owner", "--data-only", "--inserts", "--schema", schema, url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return "\n".join(line for line in done.stdout.splitlines() if not line.startswith(("\\restrict", "\\unrestrict")))

"""Copy the benchmark database (a Mastra libSQL file) into a server store: PostgreSQL or a libSQL server.

    python benchmarks/copy_to_server.py LOCAL.db --pg postgresql://USER@127.0.0.1:PORT/DB?schema=bench
    python benchmarks/copy_to_server.py LOCAL.db --libsql-url http://127.0.0.1:PORT

PostgreSQL: the schema is created by Mastra itself (`@mastra/pg`'s `PostgresStore.init()` with that
`schemaName`, run with node in the npm-ci'd corpus folder), so every table, column type, twin and
index is the one Mastra makes; an existing schema of that name is dropped first. Then every row of
threads, messages, resources and OM generations is copied with COPY: JSON columns as JSON text
(libSQL's JSONB blobs turned into text by SQLite's `json()`), 0/1 flags as booleans, and every
`"<col>Z"` TIMESTAMPTZ twin set to its column's time, as Mastra writes both (`lastBufferedAtTimeZ`,
which Mastra neither writes nor reads, stays NULL).

libSQL server (sqld): the local file's Mastra tables and indexes are created with the file's own
DDL and the rows sent through sqld's HTTP pipeline API (`/v2/pipeline`) in batches, values typed as
stored (JSONB blobs stay blobs). The local file is read-only throughout.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import urllib.parse
from pathlib import Path

TABLES = ("mastra_threads", "mastra_resources", "mastra_messages", "mastra_observational_memory")
#: Twins Mastra never writes: left NULL in the copy.
UNWRITTEN_TWINS = {("mastra_observational_memory", "lastBufferedAtTimeZ")}

_PG_INIT = """
const { PostgresStore } = await import('@mastra/pg');
const store = new PostgresStore({ id: 'bench', connectionString: process.argv[1], schemaName: process.argv[2] });
await store.init();
await store.close?.();
"""


class _Local:
    """DB read through libSQL (its SQLite decodes libSQL's JSONB; Python's sqlite3 may be too old)."""

    def __init__(self, db: Path):
        import libsql

        self.conn = libsql.connect(str(db))

    def execute(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self.conn.execute(sql, params).fetchall()

    def rows(self, table: str, select: str, page: int = 5000):
        """Yield SELECT's rows of TABLE, PAGE rows at a time (by rowid: the whole table never sits in memory)."""
        last = -1
        while True:
            chunk = self.execute(f"SELECT rowid, {select} FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                 (last, page))
            for row in chunk:
                yield row[1:]
            if len(chunk) < page:
                return
            last = chunk[-1][0]

    def close(self) -> None:
        self.conn.close()


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _split_pg_url(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query)
    schema = next((v for k, v in query if k in ("schema", "schemaName")), "public")
    rest = urllib.parse.urlencode([(k, v) for k, v in query if k not in ("schema", "schemaName")])
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, rest, "")), schema


def default_corpus() -> Path:
    """The npm-ci'd corpus folder (tests/interop/conftest.install_corpus), for node to find @mastra/pg."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.interop.conftest import install_corpus

    return install_corpus()


def copy_to_pg(db: Path, url: str, corpus: Path | None = None) -> dict:
    """Create URL's schema with Mastra's PostgresStore.init() and copy DB's rows into it; return row counts."""
    import psycopg

    conninfo, schema = _split_pg_url(url)
    corpus = corpus or default_corpus()
    with psycopg.connect(conninfo, autocommit=True) as pg:
        pg.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    subprocess.run(["node", "--input-type=module", "-e", _PG_INIT, conninfo, schema], cwd=corpus, check=True,
                   timeout=300)
    counts = {}
    local = _Local(db)
    with psycopg.connect(conninfo, options=f"-c search_path={schema}") as pg:
        for table in TABLES:
            types = dict(pg.execute("SELECT column_name, data_type FROM information_schema.columns "
                                    "WHERE table_schema = %s AND table_name = %s", (schema, table)).fetchall())
            have = [r[1] for r in local.execute(f"PRAGMA table_info({table})")]
            have = [_text(c) for c in have]
            if not types or not have:
                continue
            targets, sources = [], []
            for col in types:
                base = col[:-1] if col.endswith("Z") and col[:-1] in types else col
                if base not in have or (table, col) in UNWRITTEN_TWINS:
                    continue
                targets.append(col)
                kind = types[col]
                q = f'"{base}"'
                jsonb = f"CASE WHEN typeof({q}) = 'blob' THEN json({q}) ELSE {q} END"  # a JSONB blob as JSON text
                sources.append((jsonb if kind == "jsonb" else q, kind))
            select = ", ".join(s for s, _ in sources)
            names = ", ".join(f'"{c}"' for c in targets)
            n = 0
            with pg.cursor() as cur, cur.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in local.rows(table, select):
                    copy.write_row([_pg_value(v, kind) for v, (_, kind) in zip(row, sources, strict=True)])
                    n += 1
            counts[table] = n
        pg.execute("ANALYZE")
    local.close()
    return counts


def _pg_value(value, kind: str):
    if value is None:
        return None
    if kind == "boolean":
        return bool(value)
    return _text(value)


# -- libSQL server -------------------------------------------------------------------------------

def _hrana_value(value) -> dict:
    if value is None:
        return {"type": "null"}
    if isinstance(value, int):
        return {"type": "integer", "value": str(value)}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, bytes):  # a blob (libSQL's JSONB): sent as one
        return {"type": "blob", "base64": base64.b64encode(value).decode("ascii")}
    return {"type": "text", "value": str(value)}


def copy_to_libsql(db: Path, url: str, batch_bytes: int = 4 << 20) -> dict:
    """Create the Mastra tables of DB on the sqld at URL and copy DB's rows into them; return row counts.

    The auth token, when the server wants one, comes from LIBSQL_AUTH_TOKEN. Blobs (libSQL's JSONB)
    are sent as blobs, text as text, so the server holds what the file holds.
    """
    import httpx

    base = url.replace("libsql://", "https://", 1).rstrip("/")
    token = os.environ.get("LIBSQL_AUTH_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    local = _Local(db)  # text as str, blobs as bytes (Mastra's rows are valid UTF-8)

    with httpx.Client(timeout=600, headers=headers) as http:
        def pipeline(statements: list[dict]) -> None:
            body = {"requests": [*({"type": "execute", "stmt": s} for s in statements), {"type": "close"}]}
            response = http.post(f"{base}/v2/pipeline", json=body)
            response.raise_for_status()
            for result in response.json()["results"]:
                if result.get("type") == "error":
                    raise RuntimeError(f"sqld refused a statement: {result['error']}")

        schema = local.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND "
                               "(name LIKE 'mastra_%' OR tbl_name LIKE 'mastra_%') ORDER BY type = 'index', name")
        drops = [{"sql": f'DROP TABLE IF EXISTS "{name}"'} for kind, name, _ in schema if kind == "table"]
        pipeline(drops + [{"sql": sql} for _, _, sql in schema])  # a fresh copy: every Mastra table made again
        counts = {}
        for table in TABLES:
            cols = [_text(r[1]) for r in local.execute(f"PRAGMA table_info({table})")]
            if not cols:
                continue
            marks = ", ".join("?" * len(cols))
            sql = f"INSERT INTO {table} ({', '.join(json.dumps(c) for c in cols)}) VALUES ({marks})"
            select = ", ".join(f'"{c}"' for c in cols)
            statements, size, n = [], 0, 0
            for row in local.rows(table, select):
                args = [_hrana_value(v) for v in row]
                statements.append({"sql": sql, "args": args})
                size += sum(len(v) for v in row if isinstance(v, (str, bytes)))
                n += 1
                if size >= batch_bytes or len(statements) >= 2000:
                    pipeline(statements)
                    statements, size = [], 0
            if statements:
                pipeline(statements)
            counts[table] = n
    local.close()
    return counts

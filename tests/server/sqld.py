"""Helpers of the libSQL-server tests: talk to a throwaway sqld with plain httpx (independent of the studio's
client)."""

from __future__ import annotations

import json

import httpx


def pipeline(url: str, sqls: list[str], token: str | None = None) -> list[dict]:
    """Run SQLS on one autocommit stream of the sqld at URL with plain httpx (independent of the studio's client)."""
    requests = [{"type": "execute", "stmt": {"sql": q}} for q in sqls] + [{"type": "close"}]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = httpx.post(url + "/v2/pipeline", json={"baton": None, "requests": requests}, headers=headers,
                      timeout=30).json()
    for result in body["results"]:
        assert result["type"] == "ok", result
    return [r["response"]["result"] for r in body["results"][:-1]]


def dump(url: str) -> tuple[str, list]:
    """Every row of every table (schema included) and the server's replication index (its WAL frame number,
    which any write advances)."""
    tables = [r[0]["value"] for r in pipeline(url, ["SELECT name FROM sqlite_master WHERE type = 'table' "
                                                    "ORDER BY name"])[0]["rows"]]
    results = pipeline(url, ["SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"]
                       + [f'SELECT * FROM "{t}" ORDER BY 1' for t in tables])
    data = [[json.dumps(row, sort_keys=True) for row in r["rows"]] for r in results]
    return results[-1]["replication_index"], data


def make_memory(url: str, token: str | None = None) -> None:
    """The two tables every Mastra memory has (the columns the studio requires), with one thread."""
    pipeline(url, ['CREATE TABLE IF NOT EXISTS mastra_threads (id TEXT PRIMARY KEY, "resourceId" TEXT, title TEXT, '
                   'metadata TEXT, "createdAt" TEXT, "updatedAt" TEXT)',
                   'CREATE TABLE IF NOT EXISTS mastra_messages (id TEXT PRIMARY KEY, thread_id TEXT, content TEXT, '
                   'role TEXT, type TEXT, "createdAt" TEXT, "resourceId" TEXT)',
                   "INSERT INTO mastra_threads VALUES ('t1', 'r', 'one', '{}', '2026-01-01T00:00:00.000Z', "
                   "'2026-01-01T00:00:00.000Z')"], token)


def add_thread(url: str, n: int) -> None:
    pipeline(url, [f"INSERT INTO mastra_threads VALUES ('t{n}', 'r', 'more', '{{}}', '2026-01-0{n}T00:00:00.000Z', "
                   f"'2026-01-0{n}T00:00:00.000Z')"])

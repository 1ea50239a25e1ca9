"""A read over a libSQL server's response limit is read again in pages (`HranaConnection._paged`).

sqld refuses an answer over `--max-response-size` (SQLD_MAX_RESPONSE_SIZE) with the statement error
RESPONSE_TOO_LARGE; the benchmark store's `om_histories` (8,012 OM records in one SELECT) met it at
the default 10 MB. Here sqld servers with a small limit hold Mastra's `support` corpus (copied from
its fixture) or a table of known rows; every answer must equal what the same data gives unpaged
(the file copy, or an unlimited server).
"""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest

from benchmarks.copy_to_server import copy_to_libsql
from studio.errors import StoreError
from studio.store import open_store
from studio.store.hrana import HranaConnection
from tests.conftest import copy_fixture
from tests.interop.conftest import install_corpus
from tests.server.checks import cli_json
from tests.server.sqld import pipeline

#: The limit of the small servers: support's OM generations (69 KB stored, its largest row 11 KB) and its messages
#: (244 KB) are over it, each of their rows (base64 in an answer: ~4/3 larger) under it.
LIMIT = "32KB"
#: Rows of the `pages` table: 200 rows of 1,000 characters (~210 KB in an answer), many pages under LIMIT.
ROWS = 200


def _body(n: int) -> str:
    return f"{n:04d}" + "abcdefghij"[n % 10] * 996


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """Three sqld: `limited` and `unlimited` holding the support corpus and the `pages` table, `row` (tiny limit)."""
    corpus = install_corpus()
    folder = tmp_path_factory.mktemp("paging-servers")

    def start(name: str, limit: str | None) -> str:
        env = {**os.environ, **({"SQLD_MAX_RESPONSE_SIZE": limit} if limit else {})}
        done = subprocess.run(["bash", "servers.sh", "sqld", "start", str(folder), name], cwd=corpus, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1]

    try:
        urls = {"limited": start("limited", LIMIT), "unlimited": start("unlimited", None),
                "row": start("row", LIMIT)}
        db = copy_fixture("support", tmp_path_factory.mktemp("paging-support"))
        for name in ("limited", "unlimited"):
            copy_to_libsql(db, urls[name])
            pipeline(urls[name], ["CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT)"]
                     + [f"INSERT INTO pages VALUES ({n}, '{_body(n)}')" for n in range(1, ROWS + 1)])
        pipeline(urls["row"], ["CREATE TABLE big (id INTEGER PRIMARY KEY, body TEXT)",
                               "INSERT INTO big VALUES (1, 'small')",
                               "INSERT INTO big VALUES (2, printf('%.*c', 40000, 'x'))"])
        yield urls, db
    finally:
        subprocess.run(["bash", "servers.sh", "sqld", "stop", str(folder)], cwd=corpus, capture_output=True,
                       timeout=120)


def test_the_limited_server_refuses_the_whole_read(servers):
    """First principles: the limit refuses support's OM generations read in one statement (plain httpx)."""
    urls, _ = servers
    stmt = {"sql": "SELECT * FROM mastra_observational_memory"}
    body = httpx.post(urls["limited"] + "/v2/pipeline", timeout=30,
                      json={"baton": None, "requests": [{"type": "execute", "stmt": stmt}, {"type": "close"}]}).json()
    assert body["results"][0]["type"] == "error"
    assert body["results"][0]["error"]["code"] == "RESPONSE_TOO_LARGE"


def test_inspect_on_a_limited_server_equals_inspect_on_the_file(servers):
    urls, db = servers
    on_file = cli_json(["inspect", str(db), "--json"])
    on_server = cli_json(["inspect", urls["limited"], "--json"])
    assert on_file["observational_memory"] and on_file["threads"]
    assert {k: v for k, v in on_server.items() if k != "path"} == {k: v for k, v in on_file.items() if k != "path"}
    with open_store(urls["limited"]) as store, store.snapshot():
        histories = store.om_histories()
        assert store.backend.traffic.paged_reads >= 1 and store.backend.traffic.pages > 1
    with open_store(str(db)) as store:
        assert histories == store.om_histories()


def test_store_reads_outside_a_load_are_paged_too(servers):
    """Outside a load a read first asks for text as text (not paged), then as bytes: that read pages."""
    urls, db = servers
    with open_store(str(db)) as store:
        expected = (store.om_histories(), store.om_lookup_keys())
    store = open_store(urls["limited"])
    try:
        assert (store.om_histories(), store.om_lookup_keys()) == expected
        assert store.backend.traffic.paged_reads >= 1
    finally:
        store.close()


@pytest.mark.parametrize("in_load", [False, True])
def test_a_paged_read_returns_the_unpaged_rows(servers, in_load):
    urls, _ = servers
    sql = "SELECT id, body, length(body) AS n FROM pages WHERE id > ? ORDER BY id DESC"
    plain = HranaConnection(urls["unlimited"], None, "unlimited")
    conn = HranaConnection(urls["limited"], None, "limited")
    try:
        whole = plain.execute(sql, (3,))
        assert plain.traffic.paged_reads == 0 and len(whole.rows) == ROWS - 3
        assert whole.rows[0] == (ROWS, _body(ROWS), 1000)
        if in_load:
            conn.begin()
            assert conn.execute("SELECT count(*) FROM pages").fetchall() == [(ROWS,)]
        paged = conn.execute(sql, (3,))
        assert conn.traffic.paged_reads == 1 and conn.traffic.pages > 2
        assert paged.rows == whole.rows and paged.description == whole.description
        assert conn.in_snapshot is in_load
        if in_load:   # the load's snapshot goes on after the pages
            assert conn.execute("SELECT count(*) FROM pages").fetchall() == [(ROWS,)]
            conn.end()
    finally:
        conn.close()
        plain.close()


def test_the_pages_of_a_read_see_one_state(servers, monkeypatch):
    """A commit made between two pages of a read outside a load is not in any of its pages."""
    urls, _ = servers
    conn = HranaConnection(urls["limited"], None, "limited")
    sent = conn._snapshot_execute
    events = []

    def page_then_commit(stmts):
        cursors = sent(stmts)
        if not events:
            events.append("committed")
            pipeline(urls["limited"], ["DELETE FROM pages WHERE id = 1",
                                       f"INSERT INTO pages VALUES ({ROWS + 1}, 'new')"])
        return cursors

    monkeypatch.setattr(conn, "_snapshot_execute", page_then_commit)
    try:
        rows = conn.execute("SELECT id, body FROM pages ORDER BY id").fetchall()
        assert events == ["committed"] and conn.traffic.pages > 1
        assert rows == [(n, _body(n)) for n in range(1, ROWS + 1)]
    finally:
        pipeline(urls["limited"], [f"DELETE FROM pages WHERE id = {ROWS + 1}",
                                   f"INSERT OR REPLACE INTO pages VALUES (1, '{_body(1)}')"])
        conn.close()


@pytest.mark.parametrize("in_load", [False, True])
def test_one_row_over_the_limit_is_a_sentence(servers, in_load):
    urls, _ = servers
    conn = HranaConnection(urls["row"], None, "the row server")
    try:
        if in_load:
            conn.begin()
        with pytest.raises(StoreError) as caught:
            conn.execute("SELECT id, body FROM big ORDER BY id")
        assert str(caught.value) == (
            "Reading the row server failed: row 2 of big is larger than the server's response limit "
            "(RESPONSE_TOO_LARGE) even when read alone; raise the server's limit (sqld --max-response-size) to read "
            "it (Mastra's libsql client cannot read that row either)")
        assert conn.in_snapshot is in_load
        assert conn.execute("SELECT id FROM big ORDER BY id").fetchall() == [(1,), (2,)]
    finally:
        conn.close()


@pytest.mark.parametrize("in_load", [False, True])
def test_reads_sent_together_are_paged_one_by_one(servers, in_load):
    """`read_many` (one request) fails as a whole on RESPONSE_TOO_LARGE; each read is then run alone and pages."""
    from studio.store.backends import RowsRead, SelectRead

    urls, db = servers

    def read(target: str) -> tuple[list, int]:
        store = open_store(target)
        try:
            if in_load:
                store.backend.begin_read()
            selected, counted = store.backend.read_many([SelectRead("mastra_messages", ["id", "content", "role"],
                                                                    "ORDER BY id"),
                                                         RowsRead("SELECT count(*) FROM mastra_messages")])
            if in_load:
                store.backend.end_read()
            present, fetched, decode = selected
            traffic = store.backend.traffic if target.startswith("http") else None
            return [present, [decode(r) for r in fetched], counted], traffic
        finally:
            store.close()

    expected, _ = read(str(db))
    assert len(expected[1]) == 119 and expected[2] == [(119,)]
    got, traffic = read(urls["limited"])
    assert got == expected and traffic.paged_reads == 1

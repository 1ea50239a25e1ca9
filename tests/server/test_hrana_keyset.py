"""Reads over a libSQL server's response limit that the studio knows the key of are read in keyset pages.

`inspect` reads the unobserved messages of every thread in one statement and every OM generation in another
(studio.store.batch); on the benchmark store both answers are over sqld's 10 MB limit. Read in OFFSET pages,
each page made sqld read (and sort) the read again up to its OFFSET (the work grows with the square of the
rows: 55 s of a 66 s `inspect`); keyset pages (`batch.CursorPages`: a window of threads each; `batch.TablePages`:
after the last row read) cost about a page each. Here a sqld with a 32 KB limit holds a store built by
benchmarks/build_large_db.py from Mastra's `support` rows (120 threads of 4 messages, one of 30, their OM
generations, three of them tied); every answer must equal the same read of the file.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from benchmarks.build_large_db import build
from benchmarks.copy_to_server import copy_to_libsql
from studio.errors import StoreError
from studio.store import open_store
from tests.conftest import copy_fixture
from tests.interop.conftest import install_corpus
from tests.server.sqld import pipeline

#: The server's response limit: a page holds ~10 of the store's messages (~2 KB each, base64 in an answer).
LIMIT = "32KB"
THREADS, PER_THREAD, BIG = 120, 4, 30


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A sqld with LIMIT holding the small benchmark store, and that store's file."""
    corpus = install_corpus()
    folder = tmp_path_factory.mktemp("keyset-servers")
    work = tmp_path_factory.mktemp("keyset-store")
    db = work / "many.db"
    build(db, copy_fixture("support", work / "source"), THREADS, PER_THREAD, BIG)
    done = subprocess.run(["bash", "servers.sh", "sqld", "start", str(folder), "many"], cwd=corpus,
                          env={**os.environ, "SQLD_MAX_RESPONSE_SIZE": LIMIT}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    url = done.stdout.strip().splitlines()[-1]
    try:
        _add_ties(db)
        copy_to_libsql(db, url)
        yield url, db
    finally:
        subprocess.run(["bash", "servers.sh", "sqld", "stop", str(folder)], cwd=corpus, capture_output=True,
                       timeout=120)


def _add_ties(db) -> None:
    """Give three lookup keys a second generation with the count of their newest (a damaged store's ties)."""
    import sqlite3

    conn = sqlite3.connect(db)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(mastra_observational_memory)")]
    newest = conn.execute('SELECT * FROM mastra_observational_memory AS o WHERE "generationCount" = (SELECT '
                          'max("generationCount") FROM mastra_observational_memory WHERE "lookupKey" = o."lookupKey") '
                          'ORDER BY "lookupKey" LIMIT 3 OFFSET 10').fetchall()
    for row in newest:
        tie = list(row)
        tie[cols.index("id")] += "-tie"
        tie[cols.index("activeObservations")] = "a tie"
        conn.execute(f"INSERT INTO mastra_observational_memory VALUES ({', '.join('?' * len(cols))})", tie)
    conn.commit()
    conn.close()


def _wanted(store, by: str) -> list[tuple[str, str | None]]:
    """Every thread (or resource) of STORE, every other one from the time of its second message on."""
    threads = store.list_threads()
    keys = sorted({t.id if by == "thread" else t.resource_id for t in threads})
    wanted = []
    for i, key in enumerate(keys):
        messages = store.list_messages(key) if by == "thread" else store.list_resource_messages(key)
        wanted.append((key, messages[1].created_at if i % 2 and len(messages) > 1 else None))
    return wanted


def _read(target: str, wanted, by: str, in_load: bool):
    store = open_store(target)
    try:
        if in_load:
            with store.snapshot():
                got = store.messages_since_many(wanted, by=by)
        else:
            got = store.messages_since_many(wanted, by=by)
        return got, (store.backend.traffic if target.startswith("http") else None)
    finally:
        store.close()


@pytest.mark.parametrize("by", ["thread", "resource"])
@pytest.mark.parametrize("in_load", [False, True])
def test_the_paged_read_of_many_threads_equals_the_file(server, in_load, by):
    url, db = server
    with open_store(str(db)) as store:
        wanted = _wanted(store, by)
        expected = store.messages_since_many(wanted, by=by)
    assert sum(map(len, expected.values())) > 200
    got, traffic = _read(url, wanted, by, in_load)
    assert got == expected
    assert traffic.paged_reads == 1 and traffic.pages > 20


def _unlimited(stmt: dict) -> tuple[str, list] | None:
    """A page statement without its LIMIT (and OFFSET): the rows the server joins and sorts to make that page."""
    sql, args = stmt["sql"], stmt.get("args", [])
    if sql.endswith(" LIMIT ? OFFSET ?"):
        return sql[:-len(" LIMIT ? OFFSET ?")], args[:-2]
    if sql.endswith(" LIMIT ?"):
        return sql[:-len(" LIMIT ?")], args[:-1]
    return None


@pytest.mark.parametrize("in_load", [False, True])
def test_each_page_makes_the_server_sort_about_a_page(server, monkeypatch, in_load):
    """Keyset pages are linear: the rows the pages' statements select (each without its LIMIT) add up to a few
    times the rows read. OFFSET pages select the whole read again each (here ~50 pages of 510 messages)."""
    import httpx

    from studio.store.hrana import HranaConnection

    url, db = server
    with open_store(str(db)) as store:
        wanted = [(t.id, None) for t in store.list_threads()]
        expected = store.messages_since_many(wanted)
    read = sum(map(len, expected.values()))
    pages: list[dict] = []
    sent = HranaConnection._snapshot_execute

    def keep(self, stmts):
        cursors = sent(self, stmts)   # a refused page (too large) raises: only pages read are kept
        pages.extend(s for s in stmts if _unlimited(s))
        return cursors

    monkeypatch.setattr(HranaConnection, "_snapshot_execute", keep)
    got, traffic = _read(url, wanted, "thread", in_load)
    assert got == expected and len(pages) == traffic.pages > 20
    selected = 0
    for page in pages:
        sql, args = _unlimited(page)
        body = httpx.post(url + "/v2/pipeline", timeout=30, json={"baton": None, "requests": [
            {"type": "execute", "stmt": {"sql": f"SELECT count(*) FROM ({sql})", "args": args}},
            {"type": "close"}]}).json()
        selected += int(body["results"][0]["response"]["result"]["rows"][0][0]["value"])
    assert read <= selected <= 3 * read, (selected, read, len(pages))


def test_a_commit_between_pages_is_in_none_of_them(server, monkeypatch):
    """Outside a load the pages are read in one read transaction: a message added to (and one deleted from) the
    last thread after the first page is in no page."""
    from studio.store.hrana import HranaConnection

    url, db = server
    with open_store(str(db)) as store:
        wanted = [(t.id, None) for t in store.list_threads()]
        expected = store.messages_since_many(wanted)
    last = max(k for k, _ in wanted)
    sent = HranaConnection._snapshot_execute
    events = []

    def page_then_commit(self, stmts):
        cursors = sent(self, stmts)
        if not events and _unlimited(stmts[0]):
            events.append("committed")
            pipeline(url, ["INSERT INTO mastra_messages (id, thread_id, content, role, type, \"createdAt\", "
                           "\"resourceId\") SELECT id || '-new', thread_id, content, role, type, \"createdAt\", "
                           f"\"resourceId\" FROM mastra_messages WHERE thread_id = '{last}' LIMIT 1",
                           f"UPDATE mastra_messages SET thread_id = 'moved' WHERE id = "
                           f"'{expected[(last, None)][0].id}'"])
        return cursors

    monkeypatch.setattr(HranaConnection, "_snapshot_execute", page_then_commit)
    try:
        got, traffic = _read(url, wanted, "thread", False)
        assert events == ["committed"] and traffic.pages > 20
        assert got == expected
    finally:
        pipeline(url, ["DELETE FROM mastra_messages WHERE id LIKE '%-new'",
                       f"UPDATE mastra_messages SET thread_id = '{last}' WHERE thread_id = 'moved'"])


@pytest.mark.parametrize("in_load", [False, True])
def test_one_message_over_the_limit_is_a_sentence(server, in_load):
    """A message alone over the limit fails the read with the sentence naming the limit and its row in the read."""
    url, db = server
    with open_store(str(db)) as store:
        wanted = [(t.id, None) for t in store.list_threads()]
        expected = store.messages_since_many(wanted)
    keys = sorted(k for k, _ in wanted)
    thread = keys[len(keys) // 2]
    row = sum(len(expected[(k, None)]) for k in keys[:keys.index(thread)]) + 1   # first of its thread
    pipeline(url, ["INSERT INTO mastra_messages (id, thread_id, content, role, type, \"createdAt\", \"resourceId\") "
                   f"VALUES ('huge', '{thread}', printf('%.*c', 40000, 'x'), 'user', 'v2', '0000', NULL)"])
    try:
        with pytest.raises(StoreError) as caught:
            _read(url, wanted, "thread", in_load)
        assert re.sub(r"Reading \S+ failed: ", "", str(caught.value)) == (
            f"row {row} of mastra_messages is larger than the server's response limit (RESPONSE_TOO_LARGE) even "
            "when read alone; raise the server's limit (sqld --max-response-size) to read it (Mastra's libsql "
            "client cannot read that row either)")
    finally:
        pipeline(url, ["DELETE FROM mastra_messages WHERE id = 'huge'"])


@pytest.mark.parametrize("in_load", [False, True])
def test_a_stream_forgotten_between_pages_reads_every_page_again(server, monkeypatch, in_load):
    """sqld forgets a stream idle ~10 s ("invalid baton"): the snapshot starts again, and the keyset pages with
    it, from the first message (none is lost or read twice)."""
    from studio.store.hrana import HranaConnection

    url, db = server
    with open_store(str(db)) as store:
        wanted = [(t.id, None) for t in store.list_threads()]
        expected = store.messages_since_many(wanted)
    sent = HranaConnection._snapshot_execute
    read_pages, forgotten = [], []

    def forget_after_three(self, stmts):
        if len(read_pages) == 3 and not forgotten:
            forgotten.append(self._baton)
            self._baton = "forgotten"
        cursors = sent(self, stmts)
        read_pages.extend(s for s in stmts if _unlimited(s))
        return cursors

    monkeypatch.setattr(HranaConnection, "_snapshot_execute", forget_after_three)
    got, traffic = _read(url, wanted, "thread", in_load)
    assert got == expected and len(forgotten) == 1
    assert traffic.snapshot_restarts == 1 and len(read_pages) == traffic.pages > 23


def _page_rows_read(monkeypatch) -> list[int]:
    """The rows sqld says it read (`rows_read`) for each page statement (LIMIT ? last) sent from now on."""
    from studio.store.hrana import HranaConnection

    read: list[int] = []
    sent = HranaConnection._pipeline

    def count(self, requests, **kwargs):
        results = sent(self, requests, **kwargs)
        for request, result in zip(requests, results, strict=True):
            if request["type"] == "execute" and _unlimited(request["stmt"]) and result["type"] == "ok":
                read.append(result["response"]["result"]["rows_read"])
        return results

    monkeypatch.setattr(HranaConnection, "_pipeline", count)
    return read


@pytest.mark.parametrize("in_load", [False, True])
def test_the_paged_om_generations_equal_the_file(server, in_load):
    """Every lookup key's generations (`om_histories`, one SELECT of the whole table), ties in the file's order."""
    url, db = server
    with open_store(str(db)) as store:
        expected = store.om_histories()
    ties = [k for k, h in expected.items() if len({g.generation_count for g in h}) < len(h)]
    assert len(ties) == 3 and sum(map(len, expected.values())) > 120
    store = open_store(url)
    try:
        if in_load:
            with store.snapshot():
                got = store.om_histories()
        else:
            got = store.om_histories()
        assert got == expected
        assert store.backend.traffic.paged_reads == 1 and store.backend.traffic.pages > 20
    finally:
        store.close()


def test_each_om_page_makes_the_server_read_about_a_page(server, monkeypatch):
    """sqld's own count of the rows each page statement read: by key a page reads its rows and the rest of one
    lookup key's generations (Mastra's lookupKey index, scanned from the last key read); by OFFSET each page
    read every row before it again."""
    url, db = server
    with open_store(str(db)) as store:
        rows = sum(map(len, store.om_histories().values()))
    read = _page_rows_read(monkeypatch)
    with open_store(url) as store, store.snapshot():
        store.om_histories()
        pages = store.backend.traffic.pages
    assert len(read) == pages > 20
    # a page of 1-2 generations (~11 KB each under the 32 KB limit) reads them, the key's lookup and the rest of
    # one or two lookup keys (at most 4 generations a key) through the index and the table: 4-16 rows here;
    # by OFFSET the last pages read every row before them again (~400)
    assert max(read) <= 20 and sum(read) <= 5 * rows, (sum(read), rows, read)

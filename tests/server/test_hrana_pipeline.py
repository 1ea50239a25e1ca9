"""Reads sent together to a libSQL server (issue 28): a count and its page in one round trip, in one read
transaction, with the rows each statement returns alone; a failing statement named; Hrana values decoded while
the answer is parsed; a server on this machine asked for plain (unzipped) answers over one kept-alive connection."""

from __future__ import annotations

import http.server
import json
import threading
from contextlib import nullcontext

import pytest

from studio.errors import ServerUnreachable, StoreError
from studio.store import open_store
from studio.store.backends import LIMIT_TO_COUNT, RowsRead, SelectRead, read_each
from studio.store.history import list_messages, recall
from studio.store.hrana import HranaConnection, HranaStatementError, loads_hrana
from studio.store.thread_list import list_threads
from tests.server.sqld import add_thread, make_memory, pipeline


def _statements(thread_id: str) -> list[tuple[str, list]]:
    return [("SELECT COUNT(*) FROM mastra_messages WHERE thread_id = ?", [thread_id]),
            ('SELECT id, content, "createdAt" FROM mastra_messages WHERE thread_id = ? ORDER BY "createdAt" '
             "LIMIT ? OFFSET ?", [thread_id, 3, 1]),
            ("SELECT 1.5, x'00ff', NULL, 'é', -7", [])]


def test_statements_sent_together_return_what_each_returns_alone(sqld_corpus):
    """Outside a load and inside one: the same rows and column names, in one request instead of one each."""
    with open_store(sqld_corpus.target("support")) as store:
        conn = store.backend.conn
        thread_id = store.list_threads()[0].id
        statements = _statements(thread_id)
        alone = [conn.execute(sql, params) for sql, params in statements]
        assert alone[0].rows[0][0] > 3 and len(alone[1].rows) == 3
        assert alone[2].rows == [(1.5, b"\x00\xff", None, "é", -7)]
        for in_load in (False, True):
            if in_load:
                conn.begin()
                conn.execute("SELECT 1")   # the snapshot's stream is open
            before = conn.traffic.requests
            together = conn.execute_many(statements)
            assert conn.traffic.requests == before + 1
            assert [c.rows for c in together] == [c.rows for c in alone]
            assert [c.description for c in together] == [c.description for c in alone]
            if in_load:
                assert conn.in_snapshot and conn._baton is not None   # still the load's stream
                conn.end()
        assert conn._baton is None


def test_an_error_in_the_second_statement_is_named_and_the_connection_goes_on(sqld_corpus):
    with open_store(sqld_corpus.target("support")) as store:
        conn = store.backend.conn
        bad = [("SELECT COUNT(*) FROM mastra_threads", []), ("SELECT * FROM no_such_table", [])]
        with pytest.raises(HranaStatementError, match=r"^statement 2 of 2: .*no_such_table") as failed:
            conn.execute_many(bad)
        assert failed.value.index == 1 and failed.value.code
        assert conn.execute("SELECT 2").rows == [(2,)]
        conn.begin()                       # inside a load: the stream survives a failed statement
        first = conn.execute_many(bad[:1])[0].rows
        with pytest.raises(HranaStatementError, match=r"^statement 2 of 2: .*no_such_table"):
            conn.execute_many(bad)
        assert conn.execute_many(bad[:1])[0].rows == first and conn.traffic.snapshot_restarts == 0
        conn.end()
        # through the store: the failed read is reported as that read alone reports it
        with pytest.raises(StoreError) as alone:
            store.rows("SELECT nope FROM mastra_threads")
        with pytest.raises(StoreError) as together:
            store.backend.read_many([RowsRead("SELECT COUNT(*) FROM mastra_threads"),
                                     RowsRead("SELECT nope FROM mastra_threads")])
        assert str(together.value) == str(alone.value) and "nope" in str(alone.value)


def test_writes_are_refused_before_anything_is_sent(sqld_corpus):
    with open_store(sqld_corpus.target("support")) as store:
        conn = store.backend.conn
        before = conn.traffic.requests
        with pytest.raises(StoreError, match="read-only"):
            conn.execute_many([("SELECT 1", []), ("DELETE FROM mastra_threads", [])])
        assert conn.traffic.requests == before


def test_a_count_and_its_page_cost_one_round_trip(sqld_corpus):
    """listThreads and listMessages (a number per page or every row) and recall: one request each, the count and
    the page in one read transaction (BEGIN and ROLLBACK ride along), inside a load or not; the page of perPage
    false holds every row counted."""
    with open_store(sqld_corpus.target("support")) as store:
        traffic = store.backend.traffic
        every = [t.id for t in store.list_threads()]
        thread_id = every[0]
        calls = [lambda: list_threads(store, per_page=2), lambda: list_threads(store, per_page=False),
                 lambda: list_messages(store, thread_id, per_page=2, page=1),
                 lambda: list_messages(store, thread_id, per_page=False),
                 lambda: recall(store, thread_id, per_page=3)]
        with store.snapshot():   # inside a load text comes as bytes: the width of each count probed once
            list_threads(store, per_page=2)
            list_messages(store, thread_id, per_page=2)
        results = []
        for call in calls:
            before = traffic.requests, traffic.statements
            results.append(call())
            assert (traffic.requests - before[0], traffic.statements - before[1]) == (1, 4)
        assert [t.id for t in results[1].threads] == every and results[1].total == len(every)
        assert results[0].thread_ids == every[:2] and results[0].has_more
        assert len(results[3].messages) == results[3].total == store.message_count(thread_id)
        with store.snapshot():
            for call, result in zip(calls, results, strict=True):
                before = traffic.requests
                assert call() == result
                assert traffic.requests - before == 1   # the first also opens the stream: BEGIN rides along


def test_the_count_and_the_page_see_one_state(sqld_corpus):
    """A thread committed between two reads of a load is in neither (one snapshot); outside a load, the count and
    the page of one call agree after every commit."""
    url = sqld_corpus.start("pipeline-state")
    make_memory(url)
    with open_store(url) as store:
        for n in range(2, 5):
            add_thread(url, n)
            page = list_threads(store, per_page=False)
            assert page.total == len(page.threads) == n
        with store.snapshot():
            first = list_threads(store, per_page=False)
            add_thread(url, 5)
            assert list_threads(store, per_page=False) == first and first.total == 4
        assert list_threads(store, per_page=False).total == 5


class _Recorder:
    """A backend's `rows` / `select` that record what they were given (for `read_each`)."""

    def __init__(self, count: int):
        self.count, self.calls = count, []

    def rows(self, sql, params):
        self.calls.append(("rows", sql, list(params)))
        return [(self.count,)]

    def select(self, table, wanted, tail, params, lazy=None):
        self.calls.append(("select", table, list(params), lazy))
        return wanted, [], list


def test_reads_one_after_another_bind_the_count_as_the_limit():
    """A store that reads one statement after the other (a file, PostgreSQL) binds LIMIT_TO_COUNT to the count,
    as Mastra binds `total` for perPage false."""
    backend = _Recorder(7)
    out = read_each(backend, [RowsRead("SELECT COUNT(*) FROM t", ["a"]),
                              SelectRead("t", ["id"], "WHERE x = ? LIMIT ? OFFSET ?", ["a", LIMIT_TO_COUNT, 0],
                                         "content")])
    assert out == [[(7,)], (["id"], [], list)]
    assert backend.calls == [("rows", "SELECT COUNT(*) FROM t", ["a"]), ("select", "t", ["a", 7, 0], "content")]


def test_hrana_values_are_decoded_while_the_answer_is_parsed():
    answer = {"baton": None, "results": [
        {"type": "ok", "response": {"type": "execute", "result": {
            "cols": [{"name": "a", "decltype": "TEXT"}, {"name": "type", "decltype": None}],
            "rows": [[{"type": "text", "value": "x"}, {"type": "integer", "value": "9007199254740993"},
                      {"type": "float", "value": 0.1}, {"type": "blob", "base64": "AP8"},
                      {"type": "blob", "base64": "AP8="}, {"type": "null"}, {"value": "-3", "type": "integer"},
                      {"base64": "", "type": "blob"}, {"type": "text", "value": ""}]]}}},
        {"type": "error", "error": {"message": "no such table: t", "code": "SQLITE_ERROR"}},
        {"type": "ok", "response": {"type": "close"}}]}
    body = loads_hrana(json.dumps(answer).encode())
    rows = body["results"][0]["response"]["result"]["rows"]
    assert rows == [["x", 9007199254740993, 0.1, b"\x00\xff", b"\x00\xff", None, -3, b"", ""]]
    assert body["results"][0]["response"]["result"]["cols"][1] == {"name": "type", "decltype": None}
    assert body["results"][1] == {"type": "error", "error": {"message": "no such table: t", "code": "SQLITE_ERROR"}}
    assert body["results"][2] == {"type": "ok", "response": {"type": "close"}}


_ANSWER = json.dumps({"baton": None, "base_url": None, "results": [
    {"type": "ok", "response": {"type": "execute", "result": {
        "cols": [{"name": "x", "decltype": None}], "rows": [[{"type": "integer", "value": "1"}]],
        "affected_row_count": 0}}},
    {"type": "ok", "response": {"type": "close"}}]}).encode()


class _FakeSqld(http.server.BaseHTTPRequestHandler):
    """Answers every POST with one row (1); records each request's headers and client port; HTTP/1.1 keep-alive
    unless the server's `close_after` is set (then the connection is closed after the answer, without saying so)."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen.append((dict(self.headers), self.client_address[1]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(_ANSWER)))
        self.end_headers()
        self.wfile.write(_ANSWER)
        self.wfile.flush()
        if self.server.close_after:
            self.close_connection = True

    def log_message(self, *args):
        pass


class _FakeServer(http.server.ThreadingHTTPServer):
    def shutdown_request(self, request):
        super().shutdown_request(request)   # the connection's socket is closed here
        self.closed.set()


@pytest.fixture
def fake_sqld():
    server = _FakeServer(("127.0.0.1", 0), _FakeSqld)
    server.seen, server.close_after, server.closed = [], False, threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_loopback_server_answers_plainly_over_one_kept_alive_connection(fake_sqld):
    """Gzip saves nothing on a loopback link (it cost sqld and the studio ~70 ms on 3 MB): asked for plain answers;
    three reads travel on one connection; a connection the server closed while idle is replaced, not failed."""
    url = f"http://127.0.0.1:{fake_sqld.server_address[1]}"
    conn = HranaConnection(url, "tok", url)
    try:
        for _ in range(3):
            assert conn.execute("SELECT 1").rows == [(1,)]
        headers = [h for h, _ in fake_sqld.seen]
        assert {h["Accept-Encoding"] for h in headers} == {"identity"}
        assert {h["Authorization"] for h in headers} == {"Bearer tok"}
        assert len({port for _, port in fake_sqld.seen}) == 1
        fake_sqld.close_after = True
        assert conn.execute("SELECT 1").rows == [(1,)]
        assert fake_sqld.closed.wait(30)    # the server has closed the kept-alive connection
        fake_sqld.close_after = False
        assert conn.execute("SELECT 1").rows == [(1,)]
        assert len({port for _, port in fake_sqld.seen}) == 2
    finally:
        conn.close()


def test_a_remote_server_keeps_compressed_answers():
    remote = HranaConnection("http://db.example:8080", None, "http://db.example:8080")
    try:
        assert "identity" not in remote._client.headers.get("Accept-Encoding", "")
    finally:
        remote.close()


def test_a_refused_loopback_connection_is_a_sentence():
    conn = HranaConnection("http://127.0.0.1:1", None, "http://127.0.0.1:1")
    try:
        with pytest.raises(ServerUnreachable, match=r"^Cannot connect to http://127\.0\.0\.1:1: Connection refused$"):
            conn.execute_many([("SELECT 1", []), ("SELECT 2", [])])
    finally:
        conn.close()


def test_text_read_as_text_equals_text_read_as_bytes(sqld_corpus):
    """Outside a load a read asks for text as text (no base64, no decode of every value); inside one, every text
    comes as bytes (the SQL of local files). Both give the same threads, messages (parsed content included),
    counts and rows."""
    with open_store(sqld_corpus.target("support")) as store:
        thread_id = store.list_threads()[0].id

        def everything():
            page = list_threads(store, per_page=False)
            messages = list_messages(store, thread_id, per_page=False)
            return ([(t.id, t.resource_id, t.title, t.metadata, t.created_at, t.updated_at, t.damaged_text)
                     for t in page.threads], page.total,
                    [m.as_mastra() for m in messages.messages], messages.total,
                    [m.as_mastra() for m in recall(store, thread_id, per_page=3).messages],
                    store.rows("SELECT id, title, metadata, 1, 2.5, x'00ff', NULL FROM mastra_threads ORDER BY id"),
                    store.select_rows("mastra_messages", "WHERE thread_id = ? ORDER BY id", [thread_id]))

        traffic = store.backend.traffic
        before = traffic.requests
        as_text = everything()
        assert traffic.requests - before == 5   # no width probe, no second try
        with store.snapshot():
            assert store.backend.plain_text is False
            as_bytes = everything()
        assert as_text == as_bytes and as_text[1] > 0 and as_text[3] > 0


def test_text_that_is_not_utf8_or_holds_u_fffd_is_read_again_as_bytes(sqld_corpus):
    """sqld fails a request holding text that is not UTF-8 (HTTP 500): the read is made again with text as bytes
    and the value is DamagedText, as on a file. A text holding U+FFFD itself (which a server replacing bad bytes
    would also send) is read again too, and is plain text."""
    url = sqld_corpus.start("plain-damaged")
    make_memory(url)
    add_thread(url, 2)
    pipeline(url, ["UPDATE mastra_threads SET title = CAST(x'ff41' AS TEXT) WHERE id = 't1'",
                   "UPDATE mastra_threads SET title = 'ok \ufffd' WHERE id = 't2'"])
    with open_store(url) as store:
        traffic = store.backend.traffic
        with store.snapshot():   # the width of the count (text as bytes) probed once
            list_threads(store, per_page=2)
        for in_load in (True, False):
            with store.snapshot() if in_load else nullcontext():
                before = traffic.requests
                page = list_threads(store, per_page=False)
                titles = {t.id: t.title for t in page.threads}
                assert titles == {"t1": "\ufffdA", "t2": "ok \ufffd"} and page.total == 2
                assert type(titles["t2"]) is str and type(titles["t1"]).__name__ == "DamagedText"
                assert {t.id: t.damaged_text for t in page.threads} == {"t1": ("title",), "t2": ()}
                assert traffic.requests - before == (1 if in_load else 2)   # as text, then again as bytes
                assert store.get_thread("t1").title == "\ufffdA"
                assert store.rows("SELECT title FROM mastra_threads WHERE id = 't1'") == [("\ufffdA",)]



class _OneAnswerPerConnection(http.server.BaseHTTPRequestHandler):
    """Answers `SELECT 1` as sqld does (HTTP/1.1, kept alive by its headers), then closes the connection when
    the server's `close_after` says so: a server dropping a kept connection while the client is idle."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.connections.add(self.client_address)
        body = json.dumps({"baton": None, "base_url": None, "results": [
            {"type": "ok", "response": {"type": "execute", "result": {
                "cols": [{"name": "1", "decltype": None}], "rows": [[{"type": "integer", "value": "1"}]],
                "affected_row_count": 0}}},
            {"type": "ok", "response": {"type": "close"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = self.server.close_after

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("close_after", [False, True])
def test_a_loopback_server_is_read_over_one_kept_connection_opened_again_when_dropped(close_after):
    """Reads of a plain-HTTP server on this machine go over one kept connection (httpx's pool: no new TCP
    connection a round trip); one the server dropped while idle is opened again and the read succeeds."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OneAnswerPerConnection)
    server.connections, server.close_after = set(), close_after
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    conn = HranaConnection(url, None, url)
    try:
        assert [conn.execute("SELECT 1").fetchall() for _ in range(3)] == [[(1,)]] * 3
        assert len(server.connections) == (3 if close_after else 1)
        assert conn.traffic.requests == 3
    finally:
        conn.close()
        server.shutdown()
        server.server_close()

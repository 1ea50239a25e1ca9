"""What a newcomer meets first on the command line: a mistyped option, a MongoDB that is not running, --help."""

from __future__ import annotations

import socket

import pytest

from studio.errors import StoreError
from studio.main import main


def test_a_bad_option_prints_the_commands_own_usage(fixture_db, capsys):
    """Before: `threads PATH --bogus` printed `usage: memory-studio [-h] [--version] {threads} ...`."""
    assert main(["threads", str(fixture_db("support")), "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: memory-studio threads ") and "--per-page" in err
    assert "memory-studio threads: error: unrecognized arguments: --bogus" in err


def test_a_refused_mongodb_connection_is_said_without_waiting_for_pymongo(monkeypatch):
    """A port bound but not listening refuses every connection (the port stays ours, so nobody else takes
    it). Before: pymongo retried for its 10 s server selection and the message quoted its timeouts."""
    import pymongo

    from studio.store import open_store

    def no_client(*_args, **_kwargs):
        raise AssertionError("pymongo was asked to connect")

    monkeypatch.setattr(pymongo, "MongoClient", no_client)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        with pytest.raises(StoreError) as error:
            open_store(f"mongodb://127.0.0.1:{port}/agent")
    text = str(error.value)
    assert f"the server is down or unreachable (connection refused: nothing listens on 127.0.0.1:{port}" in text
    assert "Errno" not in text and "configured timeouts" not in text


def test_mongodb_url_hosts():
    from studio.store.backends.mongodb import url_hosts

    assert url_hosts("mongodb://u:p@h1:27018,h2/db?replicaSet=rs") == [("h1", 27018), ("h2", 27017)]
    assert url_hosts("mongodb://[::1]:27019/db") == [("::1", 27019)]
    assert url_hosts("mongodb+srv://u@cluster.example.net/db") == []


def test_help_names_server_urls_and_connect(capsys, monkeypatch):
    """Before: the studio's --help named no MongoDB URL nor File ▸ Connect…, and broke names at their
    hyphens ("delete-" / "thread", "memory-" / "studio"), which a newcomer copies wrong."""
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    out = " ".join(text.split())
    for word in ("postgresql://", "libsql://", "mongodb://", "File ▸ Connect…", "delete-thread", "sample-path"):
        assert word in out
    assert not [line for line in text.splitlines() if line.rstrip().endswith("-")]


def test_connect_calls_a_refused_mongodb_unreachable():
    from studio.store.probe import check_connection

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        check = check_connection(f"mongodb://127.0.0.1:{held.getsockname()[1]}/agent")
    assert check.outcome == "unreachable" and "connection refused" in check.sentence

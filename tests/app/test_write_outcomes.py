"""What every face says about a write's outcome and the smaller sentences of issue 22 (no server needed).

The outcomes themselves, under real faults on real servers: tests/server/test_write_faults.py.
"""

from __future__ import annotations

import errno
import warnings
from types import SimpleNamespace

import httpx
import pytest

from studio.app.failures import (
    EXIT_BAD_INPUT,
    EXIT_RECONNECTED,
    EXIT_REFUSED,
    EXIT_SERVER_DOWN,
    exit_code_for,
    outcome_heading,
    outcome_line,
    show_notices,
    write_outcome,
)
from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable, StoreError, StoreNotice
from studio.store.write.outcome import journal_outcome

WRITTEN = OutcomeFoundAfterReconnect("found it", written=True, backup="/b.json")
LOST = OutcomeFoundAfterReconnect("found nothing", written=False)
UNKNOWN = ServerUnreachable("gone after COMMIT", outcome="unknown", backup="/b.json")
DOWN = ServerUnreachable("gone")


def test_each_outcome_has_its_exit_code_and_its_own_words():
    assert [exit_code_for(e) for e in (WRITTEN, LOST, UNKNOWN, DOWN)] == [EXIT_RECONNECTED, EXIT_RECONNECTED,
                                                                          EXIT_SERVER_DOWN, EXIT_SERVER_DOWN]
    assert [write_outcome(e) for e in (WRITTEN, LOST, UNKNOWN, DOWN, StoreError("x"))] == [
        "written", "not-written", "unknown", "not-written", "not-written"]
    # a committed write is never called "nothing written", on any face
    assert "Nothing was written" not in outcome_heading(WRITTEN) and "Written" in outcome_line(WRITTEN)
    assert "Nothing was written" not in outcome_heading(UNKNOWN) and "unknown" in outcome_line(UNKNOWN)
    assert outcome_heading(LOST) == "Nothing was written (found after reconnecting)"
    assert outcome_heading(StoreError("x")) == "Nothing was written"


def test_a_dead_server_is_sorted_by_the_driver_s_codes_not_by_words():
    """Exit 6 follows StoreError.kind, which the backends set from the driver: a PostgreSQL connect refused (a port
    held bound and never listening refuses every connect), a session lost (psycopg: no SQLSTATE, no connect state),
    pymongo's ConnectionFailure. The same words in a message without a kind are bad input (2)."""
    import socket

    import psycopg
    import pymongo.errors

    from studio.store import open_store
    from studio.store.backends.mongodb import mongo_error_kind
    from studio.store.backends.pg import pg_error_kind

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        with pytest.raises(StoreError) as opened:
            open_store(f"postgresql://u@127.0.0.1:{port}/db?schema=s")
    assert opened.value.kind == "unreachable" and exit_code_for(opened.value) == EXIT_SERVER_DOWN
    lost = psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly")
    assert pg_error_kind(lost) == "unreachable"
    assert pg_error_kind(psycopg.errors.lookup("57P01")("terminating connection due to administrator command")) \
        == "unreachable"
    assert pg_error_kind(psycopg.errors.lookup("3D000")('database "nope" does not exist')) == "no-database"
    assert pg_error_kind(psycopg.errors.lookup("42P01")('relation "x" does not exist')) is None
    # an error that carries the server's SQLSTATE (a failed connect carries none: tests/server/test_pg_connect.py)
    assert pg_error_kind(psycopg.errors.lookup("28000")('role "ghost" does not exist')) == "login-refused"
    assert pg_error_kind(psycopg.errors.lookup("53300")("sorry, too many clients already")) == "too-many-connections"
    assert exit_code_for(StoreError("Cannot connect to x: full", kind="too-many-connections")) == EXIT_REFUSED
    assert exit_code_for(StoreError("Cannot connect to x: no role", kind="login-refused")) == EXIT_BAD_INPUT
    assert mongo_error_kind(pymongo.errors.ServerSelectionTimeoutError("127.0.0.1:1: [Errno 111]")) == "unreachable"
    assert mongo_error_kind(pymongo.errors.OperationFailure("Authentication failed.", code=18)) == "auth"
    assert mongo_error_kind(pymongo.errors.OperationFailure("ns not found", code=26)) is None
    words = StoreError("Reading postgresql://u@h/db failed: consuming input failed: server closed the connection")
    assert exit_code_for(words) == EXIT_BAD_INPUT
    assert exit_code_for(StoreError("Reading x failed: gone", kind="unreachable")) == EXIT_SERVER_DOWN
    assert exit_code_for(StoreError("Reading x failed: canceling statement due to lock timeout")) == EXIT_REFUSED
    assert exit_code_for(StoreError("x is not a Mastra database")) == EXIT_BAD_INPUT


def test_journal_outcome_tells_written_from_not_written_and_says_when_it_cannot():
    journal = [{"table": "t", "id": "new", "before": None, "after": {"id": "new", "v": 1}},
               {"table": "t", "id": "old", "before": {"id": "old", "v": 1}, "after": {"id": "old", "v": 2}}]
    assert journal_outcome(journal, lambda t, i: {"new": {"id": "new", "v": 1}, "old": {"id": "old", "v": 2}}[i]) \
        == "written"
    assert journal_outcome(journal, lambda t, i: {"new": None, "old": {"id": "old", "v": 1}}[i]) == "not-written"
    # another writer changed a row since: neither image, so undecided (the backup is kept)
    assert journal_outcome(journal, lambda t, i: {"new": None, "old": {"id": "old", "v": 3}}[i]) is None


def test_the_token_warning_is_printed_once_per_command(capsys):
    show_notices()
    for _ in range(5):
        warnings.warn(StoreNotice("http://h: the auth token is written in the URL"), stacklevel=1)
    assert capsys.readouterr().err.count("auth token is written in the URL") == 1


def test_a_read_only_token_on_a_write_and_the_token_source_read_as_english():
    from studio.store.hrana import HranaConnection, HranaWriteStream

    reader = HranaConnection("http://127.0.0.1:9", "tok", "http://127.0.0.1:9", token_source="from the URL")
    writer = HranaWriteStream("http://127.0.0.1:9", "tok", "http://127.0.0.1:9", token_source="LIBSQL_AUTH_TOKEN")
    try:
        with pytest.raises(StoreError) as read_refused:
            reader._body(httpx.Response(403, json={}))
        with pytest.raises(StoreError) as write_refused:
            writer._body(httpx.Response(403, json={}))
    finally:
        reader.close()
        writer.close()
    assert "from from" not in str(read_refused.value) and "token from the URL" in str(read_refused.value)
    assert "read-only token cannot write" in str(write_refused.value)
    assert "from LIBSQL_AUTH_TOKEN" in str(write_refused.value)


def test_an_own_writes_journal_that_cannot_be_saved_is_said(tmp_path, monkeypatch):
    from studio.store.write import own_writes

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(own_writes, "write_json_atomically", full)
    with pytest.warns(StoreNotice, match="No space left on device"):
        own_writes.remember_write(SimpleNamespace(path=tmp_path / "memory.db"), 1_000, now_ms=1_000)


def test_a_server_write_is_not_called_a_file_change():
    from studio.app.text import changed_store_line

    assert changed_store_line("/x/memory.db") == "The file is changed: /x/memory.db"
    assert changed_store_line("http://127.0.0.1:8080") == "The store on the server is changed: http://127.0.0.1:8080"

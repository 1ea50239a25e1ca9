"""A target is parsed once (studio.store.target): its kind by scheme, its pieces, its display without secrets."""

from __future__ import annotations

import copy
import os
import pickle
from pathlib import Path

import pytest

from studio.errors import StoreError
from studio.store.target import (
    FILE,
    LIBSQL_SERVER,
    POSTGRESQL,
    absolute_target,
    file_target,
    is_server_target,
    parse_target,
    target_kind,
)


@pytest.mark.parametrize("text, kind", [
    ("memory.db", FILE), ("/abs/memory.db", FILE), ("file:memory.db", FILE), ("file:///abs/m.db", FILE),
    ("mysql://h/db", FILE),   # an unknown scheme is read as a path (opening it: "No such file")
    ("postgresql://u@h/db", POSTGRESQL), ("POSTGRES://u@h/db", POSTGRESQL),
    ("libsql://db.turso.io", LIBSQL_SERVER), ("https://h", LIBSQL_SERVER), ("http://127.0.0.1:8080", LIBSQL_SERVER),
    ("ws://h:1", LIBSQL_SERVER), ("wss://h", LIBSQL_SERVER),
])
def test_the_kind_comes_from_the_scheme(text, kind):
    assert target_kind(text) == kind
    assert is_server_target(text) is (kind != FILE)
    assert parse_target(text).kind == kind


def test_each_kind_carries_the_pieces_its_backend_needs():
    f = parse_target("file:///tmp/x%20y.db?mode=ro")
    assert (f.path, f.display, f.conninfo, f.base_url) == (Path("/tmp/x y.db"), "/tmp/x y.db", None, None)
    pg = parse_target("postgresql://ann:s3cret@h:5433/mem?schema=agent&sslmode=require")
    assert (pg.path, pg.schema) == (None, "agent")
    assert pg.display == "postgresql://ann:***@h:5433/mem?schema=agent&sslmode=require"
    assert pg.conninfo == "postgresql://ann:s3cret@h:5433/mem?sslmode=require"
    remote = parse_target("libsql://db.turso.io?authToken=t0k")
    assert (remote.path, remote.base_url, remote.url_token) == (None, "https://db.turso.io", "t0k")
    assert remote.display == "libsql://db.turso.io?authToken=***"


def test_a_target_is_an_immutable_value_that_shows_no_secret():
    pg = parse_target("postgresql://ann:s3cret@h/db")
    assert "s3cret" not in repr(pg) and "s3cret" not in str(pg)
    for clone in (pickle.loads(pickle.dumps(pg)), copy.copy(pg), copy.deepcopy(pg)):
        assert clone == pg and hash(clone) == hash(pg)
    assert pg != parse_target("postgresql://ann:other@h/db")
    with pytest.raises(AttributeError):
        pg.schema = "x"


@pytest.mark.parametrize("url, words", [
    ("postgresql://ann:s3cret@h/db",
     r"The PostgreSQL store \(postgresql://ann:\*\*\*@h/db\) is never opened as a file"),
    ("https://h?authToken=t0k", r"The remote libSQL store \(https://h\?authToken=\*\*\*\) is never opened read-write"),
])
def test_a_server_url_is_never_taken_for_a_file(url, words):
    with pytest.raises(StoreError, match=words) as refused:
        file_target(url)
    assert "s3cret" not in str(refused.value) and "t0k" not in str(refused.value)


def test_only_a_plain_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert absolute_target("memory.db") == os.path.join(str(tmp_path), "memory.db")
    for given in ("file:memory.db", "postgresql://u@h/db", "libsql://h", "/abs/m.db", ""):
        assert absolute_target(given) == given

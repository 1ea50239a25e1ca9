"""The PostgreSQL store as a user meets it: every read command works, nothing is written, errors are sentences."""

from __future__ import annotations

import glob
import json
import shutil
import subprocess

import pytest

from studio.cli import main
from studio.errors import SchemaError, StoreError
from studio.store import open_store
from studio.store.backends.pg import PgBackend
from studio.store.target import parse_target, redact_url
from tests.server.checks import run_every_read_command


def pg_dump_binary() -> str:
    found = shutil.which("pg_dump") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_dump"), reverse=True)),
                                            None)
    if not found:
        pytest.fail("pg_dump is missing (Debian: apt-get install postgresql-client)")
    return found


def dump(url: str) -> str:
    done = subprocess.run([pg_dump_binary(), "--no-owner", "--data-only", "--inserts", url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # pg_dump (15.14+) brackets its output with a random \restrict key: not data
    return "\n".join(line for line in done.stdout.splitlines() if not line.startswith(("\\restrict", "\\unrestrict")))


def test_reads_leave_the_server_data_byte_identical(pg_corpus, capsys):
    before = dump(pg_corpus.url)
    assert "INSERT INTO support.mastra_messages" in before
    for scenario in ("support", "buffered", "resource"):
        target = pg_corpus.target(scenario)
        run_every_read_command(target)
    assert dump(pg_corpus.url) == before


def test_the_session_is_read_only(pg_corpus):
    with open_store(pg_corpus.target("support")) as store:
        assert isinstance(store.backend, PgBackend) and store.dialect == "postgresql"
        with pytest.raises(StoreError, match="read-only transaction"):
            store.rows('UPDATE mastra_threads SET title = ? WHERE id = ?', ("changed", "support-1"))
        timeout = store.rows("SHOW statement_timeout")[0][0]
        assert timeout not in ("0", "")           # a runaway read is cut off by the server
        assert store.get_thread("support-1").title != "changed"


def test_a_write_to_an_unreachable_server_is_a_sentence_and_leaves_no_backup(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    code = main(["clone", "postgresql://postgres:s3cret@127.0.0.1:1/postgres?schema=support", "--thread", "support-1",
                 "--yes", "--json"])
    out, err = capsys.readouterr()
    # a dead server (exit 6, issue 22), not bad input; the JSON says nothing was written
    assert code == 6 and "Traceback" not in err
    assert json.loads(out)["outcome"] == "not-written" and json.loads(out)["backup"] is None
    assert "Cannot connect to postgresql://postgres:***@127.0.0.1:1/postgres?schema=support for writing" in err
    assert "s3cret" not in err
    assert not (tmp_path / "data").exists()


def test_a_dead_server_is_a_sentence_not_a_hang(capsys):
    # port 1 on 127.0.0.1: nothing listens there, the connect is refused at once
    code = main(["inspect", "postgresql://postgres:s3cret@127.0.0.1:1/postgres", "--json"])
    out, err = capsys.readouterr()
    assert code == 6 and out == ""   # a dead server's own exit code (issue 22)
    assert "Cannot connect to postgresql://postgres:***@127.0.0.1:1/postgres" in err
    assert "s3cret" not in err and "Traceback" not in err


def test_a_schema_without_mastra_tables_names_the_schema(pg_corpus):
    """A schema that does not exist says so (it read "has no Mastra tables"); either sentence names the schemas
    that hold Mastra's tables (the corpus writes one per scenario, each with mastra_threads)."""
    with pytest.raises(SchemaError) as missing:
        open_store(f"{pg_corpus.url}?schema=nothing_here")
    text = str(missing.value)
    assert "the schema 'nothing_here' does not exist in this database" in text and "has no Mastra" not in text
    assert "Mastra's tables are in schema " in text and "'support'" in text and "add ?schema=" in text
    with pytest.raises(SchemaError) as empty:
        open_store(f"{pg_corpus.url}?schema=information_schema")
    assert "the schema 'information_schema' has no Mastra tables" in str(empty.value)
    assert "'support'" in str(empty.value)


def test_urls_are_shown_without_their_password():
    loc = parse_target("postgresql://ann:pa%40ss@db.example:5433/mem?schema=agent&sslmode=require")
    assert loc.schema == "agent"
    assert loc.display == "postgresql://ann:***@db.example:5433/mem?schema=agent&sslmode=require"
    assert "schema" not in loc.conninfo and "sslmode=require" in loc.conninfo
    assert redact_url("postgresql://ann@h/db?password=x1") == "postgresql://ann@h/db?password=***"
    with pytest.raises(StoreError, match="not a PostgreSQL schema name"):
        parse_target("postgresql://ann@h/db?schema=a;drop")

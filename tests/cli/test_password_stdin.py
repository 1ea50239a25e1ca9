"""A secret in the URL warns once and names the alternatives; `--password-stdin` keeps it off the command line
(issue 22, item 4). The real-server half is tests/server/test_pg_connect.py."""

from __future__ import annotations

import io
import shlex

import pytest

from studio.app.failures import BadInput
from studio.app.password_input import read_secret_from_stdin
from studio.cli import build_parser
from studio.store import credentials as cred
from studio.store.target import parse_target

ALTERNATIVES = ("$PGPASSWORD", "~/.pgpass", "keyring", "File ▸ Connect…", "--password-stdin")


@pytest.mark.parametrize("url, words, suggested", [
    ("postgresql://ann:s3cr3t@db.example:5433/mem?schema=agent", ALTERNATIVES,
     "postgresql://ann@db.example:5433/mem?schema=agent"),
    ("postgresql://ann@db.example/mem?password=s3cr3t&sslmode=require", ALTERNATIVES,
     "postgresql://ann@db.example/mem?sslmode=require"),
    ("libsql://db-org.turso.io?authToken=s3cr3t", ("$LIBSQL_AUTH_TOKEN", "keyring", "File ▸ Connect…",
                                                   "--password-stdin"), "libsql://db-org.turso.io"),
])
def test_the_notice_names_the_alternatives_and_suggests_a_command_without_the_secret(url, words, suggested):
    notice = cred.secret_in_url_notice(parse_target(url))
    assert "s3cr3t" not in notice and "every user of this machine can read" in notice and "(ps)" in notice
    for word in words:
        assert word in notice, word
    # the suggested command line parses (shell words) and its URL holds no secret
    command = notice.split("e.g. ", 1)[1]
    assert shlex.split(command.split("| ", 1)[1])[-1] == suggested


def test_no_notice_without_a_secret_in_the_url():
    for url in ("postgresql://ann@h/db", "libsql://h", "postgresql://ann:***@h/db", "libsql://h?authToken=***"):
        assert cred.secret_in_url_notice(parse_target(url)) is None


def test_the_warning_is_given_once_per_target(monkeypatch):
    monkeypatch.setattr(cred, "_warned", set())
    location = parse_target("postgresql://ann:s3cr3t@h/db")
    with pytest.warns(Warning) as said:
        for _ in range(5):
            assert cred.warn_secret_in_url(location)
    assert len(said) == 1


def test_every_command_that_takes_a_target_offers_password_stdin():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")   # argparse's own subparsers action
    with_target = [name for name, p in sub.choices.items()
                   if any(a.dest in ("path", "target") for a in p._actions)]
    assert len(with_target) >= 15
    for name in with_target:
        assert any(a.dest == "password_stdin" for a in sub.choices[name]._actions), name


def test_password_stdin_takes_the_first_line_and_holds_it_for_the_session():
    url = "postgresql://ann@h:5432/db?schema=s"
    try:
        stdin = io.StringIO("p@ss word?#\nyes\n")
        read_secret_from_stdin(url, stdin)
        assert cred.pg_password(url, env={}, keyring_get=None) == ("p@ss word?#", "session")
        assert stdin.read() == "yes\n"    # the rest is left for the command's questions
    finally:
        cred.forget_for_session(url)


@pytest.mark.parametrize("target, stdin, words", [
    ("memory.db", "pw\n", "is for a server URL"),
    ("postgresql://ann:pw@h/db", "pw\n", r"already holds its secret; with --password-stdin give the URL without it "
                                         r"\(postgresql://ann@h/db\)"),
    ("libsql://h", "\n", "read no token from standard input"),
])
def test_password_stdin_refuses_what_it_cannot_use(target, stdin, words):
    with pytest.raises(BadInput, match=words) as refused:
        read_secret_from_stdin(target, io.StringIO(stdin))
    assert "pw" not in str(refused.value).replace("password", "")

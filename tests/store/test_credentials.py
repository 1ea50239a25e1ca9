"""Secrets of server stores: redaction of every URL form, where a password / token comes from, the keyring."""

from __future__ import annotations

import pytest

from studio.errors import SchemaError, StoreError
from studio.store import credentials as cred
from studio.store import target as tg
from studio.store.probe import classify_failure

# (URL, as shown: redact_url, as remembered: strip_secrets, keyring username: keyring_target)
URL_FORMS = [
    ("postgresql://u:pw@h:5432/db?schema=s&sslmode=require", "postgresql://u:***@h:5432/db?schema=s&sslmode=require",
     "postgresql://u@h:5432/db?schema=s&sslmode=require", "postgresql://u@h:5432/db"),
    ("postgres://u:p%40ss@h/db", "postgres://u:***@h/db", "postgres://u@h/db", "postgresql://u@h:5432/db"),
    # an unescaped / or # in a password is still the password (the URL is ambiguous: parse_target refuses it;
    # shown, only the host after the last @)
    ("postgresql://u:p/ss#x@h/db", "postgresql://u:***@h…", "postgresql://u@h…", "postgresql://u@h:5432/db"),
    ("postgresql://u@h/db?password=sec&schema=a", "postgresql://u@h/db?password=***&schema=a",
     "postgresql://u@h/db?schema=a", "postgresql://u@h:5432/db"),
    ("postgresql://u@h/db?sslpassword=key", "postgresql://u@h/db?sslpassword=***", "postgresql://u@h/db",
     "postgresql://u@h:5432/db"),
    ("postgresql://u:pw@[::1]:5433/db", "postgresql://u:***@[::1]:5433/db", "postgresql://u@[::1]:5433/db",
     "postgresql://u@[::1]:5433/db"),
    ("postgresql://H/db", "postgresql://H/db", "postgresql://H/db", "postgresql://h:5432/db"),
    ("libsql://db-org.turso.io?authToken=abc.def", "libsql://db-org.turso.io?authToken=***",
     "libsql://db-org.turso.io", "libsql://db-org.turso.io"),
    ("libsql://db-org.turso.io?auth_token=abc", "libsql://db-org.turso.io?auth_token=***",
     "libsql://db-org.turso.io", "libsql://db-org.turso.io"),
    ("https://db.turso.io/?authToken=t&tls=1", "https://db.turso.io/?authToken=***&tls=1", "https://db.turso.io/?tls=1",
     "https://db.turso.io"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080", "http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("wss://u:tok@db.example.com/x", "wss://u:***@db.example.com/x", "wss://u@db.example.com/x",
     "wss://db.example.com/x"),
]
#: the secret of each URL_FORMS row (None: the URL holds none)
SECRETS = ["pw", "p%40ss", "p/ss", "sec", "sslpassword=key", "pw", None, "abc.def", "abc", "authToken=t", None, "tok"]


@pytest.mark.parametrize("url,shown,remembered,user,secret", [(*f, s) for f, s in zip(URL_FORMS, SECRETS, strict=True)])
def test_every_url_form_is_redacted_stripped_and_keyed(url, shown, remembered, user, secret):
    assert tg.redact_url(url) == shown
    assert tg.strip_secrets(url) == remembered
    assert cred.keyring_target(url) == user
    if secret is not None:
        assert secret in url
        for text in (shown, remembered, user):
            assert secret not in text


@pytest.mark.parametrize("path", ["/tmp/memory.db", "memory.db", "file:///tmp/x.db", "file:memory.db?mode=ro"])
def test_a_local_path_is_left_as_it_is(path):
    assert tg.redact_url(path) == path == tg.strip_secrets(path)
    assert cred.secret_kind(path) is None and not tg.is_server_target(path)


def test_the_secret_written_in_a_url_is_found_unescaped():
    assert tg.url_secret("postgresql://u:p%40ss@h/db") == "p@ss"
    assert tg.url_secret("postgresql://u@h/db?password=x%26y") == "x&y"
    assert tg.url_secret("libsql://h?authToken=t1") == "t1"
    assert tg.url_secret("postgresql://u@h/db") is None
    assert cred.secret_kind("postgres://h/db") == "password" and cred.secret_kind("libsql://h") == "token"


def _no_pgpass(tmp_path):
    return {"PGPASSFILE": str(tmp_path / "absent")}


def test_pg_password_order_url_then_env_then_pgpass_then_keyring(tmp_path, memory_keyring):
    url = "postgresql://alice@db.example:6000/mem?schema=s"
    memory_keyring.set_password("memory-studio", "postgresql://alice@db.example:6000/mem", "from-keyring")
    env = _no_pgpass(tmp_path)
    assert cred.pg_password(url, env=env) == ("from-keyring", "keyring")
    assert cred.pg_password(url, env=env, keyring_get=None) == (None, "none")
    passfile = tmp_path / "pgpass"
    passfile.write_text("# comment\nother:*:*:*:x\ndb.example:6000:mem:alice:from-file\n")
    passfile.chmod(0o600)
    env = {"PGPASSFILE": str(passfile)}
    assert cred.pg_password(url, env=env) == (None, "pgpass")   # libpq reads the file itself
    env["PGPASSWORD"] = "from-env"
    assert cred.pg_password(url, env=env) == ("from-env", "PGPASSWORD")
    assert cred.pg_password("postgresql://alice:in-url@db.example:6000/mem", env=env) == ("in-url", "url")


def test_a_password_typed_this_session_wins_over_env_and_keyring_and_is_forgotten(tmp_path, memory_keyring):
    url = "postgresql://alice@h/db?schema=one"
    memory_keyring.set_password("memory-studio", "postgresql://alice@h:5432/db", "saved")
    env = {**_no_pgpass(tmp_path), "PGPASSWORD": "env"}
    cred.remember_for_session("postgres://alice@h:5432/db?schema=two", "typed")   # same database, other spelling
    try:
        assert cred.pg_password(url, env=env) == ("typed", "session")
    finally:
        cred.forget_for_session(url)
    assert cred.pg_password(url, env=env) == ("env", "PGPASSWORD")


def test_pgpass_rules_wildcards_escapes_defaults_and_permissions(tmp_path):
    passfile = tmp_path / "pgpass"
    passfile.write_text("*:*:mem\\:db:bob:x\n")
    passfile.chmod(0o600)
    env = {"PGPASSFILE": str(passfile)}
    assert cred.pgpass_has_entry("postgresql://bob@anyhost/mem%3Adb", env=env)
    assert not cred.pgpass_has_entry("postgresql://carol@anyhost/mem%3Adb", env=env)
    passfile.write_text("localhost:5432:bob:bob:x\n")
    assert cred.pgpass_has_entry("postgresql://bob@/", env=env)   # libpq's defaults: localhost, 5432, db = user
    passfile.chmod(0o644)   # libpq ignores a password file others can read
    assert not cred.pgpass_has_entry("postgresql://bob@/", env=env)


def test_libsql_token_order_env_then_keyring_then_url(memory_keyring):
    url = "libsql://db-org.turso.io?authToken=in-url"
    assert cred.libsql_auth_token(url, env={}) == ("in-url", "url")
    memory_keyring.set_password("memory-studio", "libsql://db-org.turso.io", "kept")
    assert cred.libsql_auth_token(url, env={}) == ("kept", "keyring")
    assert cred.libsql_auth_token(url, env={"TURSO_AUTH_TOKEN": "t2"}) == ("t2", "TURSO_AUTH_TOKEN")
    assert cred.libsql_auth_token(url, env={"TURSO_AUTH_TOKEN": "t2", "LIBSQL_AUTH_TOKEN": "t1"}) == (
        "t1", "LIBSQL_AUTH_TOKEN")
    assert cred.libsql_auth_token("http://127.0.0.1:8080", env={}) == (None, "none")
    assert "authToken" in cred.URL_TOKEN_WARNING


def test_save_and_delete_a_secret_in_the_keyring(memory_keyring):
    url = "postgresql://alice:ignored@h:5433/db?schema=x"
    assert cred.save_secret(url, "s3cret") == "postgresql://alice@h:5433/db"
    assert memory_keyring.secrets == {("memory-studio", "postgresql://alice@h:5433/db"): "s3cret"}
    assert cred.saved_secret(url) and cred.keyring_backend() is not None
    assert cred.delete_secret(url) is True
    assert memory_keyring.secrets == {} and not cred.saved_secret(url)
    assert cred.delete_secret(url) is False


def test_no_keyring_backend_is_tolerated_and_said(no_keyring, tmp_path):
    url = "postgresql://alice@h/db"
    assert cred.keyring_backend() is None
    assert cred.pg_password(url, env=_no_pgpass(tmp_path)) == (None, "none")
    assert not cred.saved_secret(url) and cred.delete_secret(url) is False
    with pytest.raises(cred.KeyringUnavailable, match="No system keyring is available"):
        cred.save_secret(url, "s3cret")


@pytest.mark.parametrize("kind,outcome", [
    ("auth", "auth"), ("no-secret", "no-secret"), ("unreachable", "unreachable"), ("no-database", "no-database"),
    ("not-mastra", "not-mastra"), (None, "error"),
])
def test_open_failures_are_sorted_by_their_kind(kind, outcome):
    """The outcome is the error's kind (set by the backend from the driver's codes), not its words: libpq's own
    sentence for a refused password without a kind is an "error" like any other."""
    url = "postgresql://alice:pw@127.0.0.1:1/db"
    words = 'connection failed: FATAL:  password authentication failed for user "alice"; Connection refused'
    check = classify_failure(url, StoreError(f"Cannot connect to {tg.redact_url(url)}: {words}", kind=kind))
    assert check.outcome == outcome and not check.ok
    assert ":pw@" not in check.sentence
    wrapped = StoreError("Opening failed")   # a cause's kind counts
    wrapped.__cause__ = StoreError("inner", kind=kind)
    assert classify_failure(url, wrapped).outcome == outcome


def test_a_database_without_mastra_tables_is_said_so():
    check = classify_failure("postgresql://h/db", SchemaError("no mastra_threads table in schema public"))
    assert check.outcome == "not-mastra" and check.sentence.startswith("Connected, but this is not a Mastra database")

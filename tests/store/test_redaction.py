"""Secrets are redacted by the URL's structure, never by their text (issue 22, item 2).

Property-style: secrets of any characters (a fixed seed) are written into every place a URL can
hold one, and what the studio shows, remembers or says must not depend on the secret at all: the
redacted URL, the stripped URL, the parse's refusal, a Target's display and repr, a failed
connect's message. Where the URL grammar allows it (the secret percent-encoded), the parse also
finds back the exact secret, so the redaction hides exactly what the store would use.
"""

from __future__ import annotations

import logging
import random
import socket
import string
import urllib.parse

import psycopg
import pytest

from studio.errors import StoreError
from studio.store import open_store
from studio.store import target as tg

SEED = 22
#: every printable ASCII character, the URL delimiters twice as likely, some non-ASCII letters
ALPHABET = string.printable.strip() + "@?#/:&=%@?#/:&=%" + "äé漢🙂"


def random_secrets(count: int, seed: int = SEED) -> list[str]:
    """COUNT secrets of 1 to 24 characters from ALPHABET (the same ones every run)."""
    rng = random.Random(seed)
    out = ["p", "a", "/", "@", "?", "#", "***", "parameter", "%41"]   # the short ones the issue names
    while len(out) < count:
        out.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 24))))
    return out


SECRETS = random_secrets(400)
ENCODE = lambda s: urllib.parse.quote(s, safe="")  # noqa: E731

#: (name, URL with {} where the secret goes, encode it?) — raw: the secret as a user may paste it
PLACES = [
    ("pg password, raw", "postgresql://ann:{}@db.example:5433/mem?schema=agent&sslmode=require", False),
    ("pg password, encoded", "postgresql://ann:{}@db.example:5433/mem?schema=agent", True),
    ("pg ?password=", "postgresql://ann@db.example/mem?password={}&schema=agent", True),
    ("pg ?sslpassword=", "postgresql://ann@db.example/mem?sslmode=verify-full&sslpassword={}", True),
    ("libsql ?authToken=", "libsql://db-org.turso.io?authToken={}", True),
    ("libsql ?auth_token=", "https://db.example:8443/?tls=1&auth_token={}", True),
    ("libsql #authToken=", "libsql://db-org.turso.io#authToken={}", True),
    ("ws password", "wss://u:{}@db.example.com/x", True),
]
REFERENCE = "reference-secret"


def _fill(template: str, secret: str, encode: bool) -> str:
    return template.format(ENCODE(secret) if encode else secret)


def _outcome(url: str) -> tuple:
    """What the studio shows of URL: its display, remembered form, and the parse (display, repr) or refusal."""
    try:
        parsed = tg.parse_target(url)
        shown = ("parsed", parsed.display, repr(parsed))
    except StoreError as exc:
        shown = ("refused", str(exc))
    return tg.redact_url(url), tg.strip_secrets(url), shown


@pytest.mark.parametrize("name, template, encode", PLACES, ids=[p[0] for p in PLACES])
def test_what_is_shown_does_not_depend_on_the_secret(name, template, encode):
    expected = _outcome(_fill(template, REFERENCE, encode))
    # a raw password holding `/`, `?` or `#` makes the URL ambiguous: shown as the ambiguous reference is
    ambiguous = _outcome(_fill(template, "refer/ence", encode))
    for shown in (expected, ambiguous):
        assert "refer" not in repr(shown) and "ence" not in repr(shown)
    for secret in SECRETS:
        url = _fill(template, secret, encode)
        assert _outcome(url) == (ambiguous if tg.ambiguity(url) else expected), (name, secret)


#: (URL, where the backend finds the secret) for the encoded places
USED = [
    ("postgresql://ann:{}@db.example:5433/mem?schema=agent", "password"),
    ("postgresql://ann@db.example/mem?password={}&schema=agent", "password"),
    ("postgresql://ann@db.example/mem?sslmode=verify-full&sslpassword={}", "sslpassword"),
    ("libsql://db-org.turso.io?authToken={}", "url_token"),
    ("https://db.example:8443/?tls=1&auth_token={}", "url_token"),
]


@pytest.mark.parametrize("template, key", USED)
def test_an_encoded_secret_reaches_its_backend_exactly(template, key):
    """What is hidden is exactly what the store uses: libpq's parameter, or the libSQL token."""
    for secret in SECRETS:
        target = tg.parse_target(template.format(ENCODE(secret)))
        used = target.url_token if key == "url_token" else psycopg.conninfo.conninfo_to_dict(target.conninfo)[key]
        assert used == secret, (template, secret)


def test_an_unencoded_password_is_the_password_or_the_url_is_refused():
    """A password with a raw `@` is read whole (the last `@` ends it) and handed to libpq encoded, so libpq
    reads the same host; one with a raw `/`, `?` or `#` is ambiguous and refused, never half read."""
    for secret in SECRETS:
        url = f"postgresql://ann:{secret}@127.0.0.1:5433/mem"
        if tg.ambiguity(url):
            assert any(ch in secret for ch in "/?#"), secret
            with pytest.raises(StoreError, match="cannot be read unambiguously") as refused:
                tg.parse_target(url)
            assert str(refused.value).startswith("postgresql://ann:***@127.0.0.1:5433… cannot")
            continue
        params = psycopg.conninfo.conninfo_to_dict(tg.parse_target(url).conninfo)
        assert (params["host"], params["port"], params["dbname"], params["user"]) == ("127.0.0.1", "5433", "mem",
                                                                                       "ann"), secret
        assert params["password"] == urllib.parse.unquote(secret), secret


def test_the_issues_urls():
    # an unencoded ? and @ in the password: refused, nothing of it shown (it was printed whole)
    with pytest.raises(StoreError) as refused:
        tg.parse_target("postgresql://s3:ab?cd@ef@127.0.0.1:5432/db")
    assert "ab" not in str(refused.value).replace("unambiguously", "") and "ef" not in str(refused.value)
    # part of a password as a host name ("resolve host 'en99@127.0.0.1'"): libpq now reads the right host
    params = psycopg.conninfo.conninfo_to_dict(tg.parse_target("postgresql://u:pass@en99@127.0.0.1/db").conninfo)
    assert (params["host"], params["password"]) == ("127.0.0.1", "pass@en99")
    # a token in the fragment: never printed, and refused (no store reads a fragment)
    assert tg.redact_url("libsql://h#authToken=abcdef") == "libsql://h#***"
    with pytest.raises(StoreError, match="fragment") as refused:
        tg.parse_target("libsql://h#authToken=abcdef")
    assert "abcdef" not in str(refused.value)
    # a query value with an @ makes the URL ambiguous: the shown form keeps only the host after the last @
    assert tg.redact_url("postgresql://u:pw@h/db?user=a@b&password=x") == "postgresql://u:***@b…"
    # redaction never cuts a secret's text out of other words
    assert tg.redact_url("postgresql://p:p@parameter/p?password=p&options=p") == \
        "postgresql://p:***@parameter/p?password=***&options=p"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_failed_connect_says_the_same_whatever_the_secret(caplog):
    """Nothing listens on the port: the message (and the logs) are those of the reference secret."""
    port = _free_port()
    caplog.set_level(logging.DEBUG)

    def message(url: str) -> str:
        with pytest.raises(StoreError) as failed:
            open_store(url)
        return str(failed.value)

    for template in (f"postgresql://ann:{{}}@127.0.0.1:{port}/mem?connect_timeout=2",
                     f"postgresql://ann@127.0.0.1:{port}/mem?password={{}}",
                     f"http://127.0.0.1:{port}?authToken={{}}"):
        expected = message(template.format(REFERENCE))
        assert "Cannot connect to" in expected and REFERENCE not in expected
        # a token no HTTP header can carry is refused before anything is sent, in one sentence of its own
        unsendable = message(template.format(ENCODE("refer ence")))
        assert "refer" not in unsendable
        for secret in SECRETS[:60]:
            said = message(template.format(ENCODE(secret)))
            assert said == expected or ("authToken" in template and said == unsendable), (template, secret)
    assert REFERENCE not in caplog.text


def test_open_recent_remembers_no_secret(tmp_path):
    from PySide6.QtCore import QSettings

    from studio.ui.context import AppContext

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    ctx = AppContext(settings=settings, runner=None)   # no runner needed to remember
    for secret in SECRETS[:50]:
        ctx.add_recent_file(f"postgresql://ann:{ENCODE(secret)}@h:5432/db?schema=s&password={ENCODE(secret)}")
        ctx.add_recent_file(f"libsql://db.turso.io?authToken={ENCODE(secret)}")
    assert ctx.recent_files() == ["libsql://db.turso.io", "postgresql://ann@h:5432/db?schema=s"]

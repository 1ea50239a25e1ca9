"""Secrets of server stores (PostgreSQL passwords, libSQL auth tokens): where they come from, how they are kept.

Where a PostgreSQL password comes from, first found wins (`pg_password`):
  1. the URL (`postgresql://user:PASSWORD@…` or `?password=`), or the password typed in File ▸ Connect…
     this session (held in memory only, `remember_for_session`);
  2. `$PGPASSWORD`, then the password file (`$PGPASSFILE` or `~/.pgpass`): libpq reads both itself;
  3. the OS keyring through the `keyring` package: service `memory-studio`, username the target
     without secrets (`keyring_target`, e.g. `postgresql://user@host:5432/db`).
Where a libSQL auth token comes from (`libsql_auth_token`): the token typed in Connect… this session,
`$LIBSQL_AUTH_TOKEN`, `$TURSO_AUTH_TOKEN`, the keyring (username e.g. `libsql://db-org.turso.io`), then
`?authToken=` in the URL (accepted with `URL_TOKEN_WARNING`: a URL ends up in shell history and logs).
Where a MongoDB password comes from (`mongodb_password`): the URL (`mongodb://user:PASSWORD@…`), the
password typed in Connect… this session, `$MONGODB_PASSWORD`, then the keyring (username e.g.
`mongodb://user@host:27017/db`).

A missing, locked or broken keyring backend counts as "nothing saved" for reads, and `save_secret`
says so in one sentence. Secrets are never written anywhere else: every target the studio shows or
remembers goes through `studio.store.target.redact_url` (password and token values as `***`) or
`strip_secrets` (removed). No Qt here; the studio's Connect dialog and the server backends use it.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

from studio.common.keyring_lookup import KEYRING_SERVICE, KeyringGetter, os_keyring_get
from studio.errors import StoreError
from studio.store.target import (
    LIBSQL_SERVER,
    MONGODB,
    POSTGRESQL,
    Target,
    split_url,
    strip_secrets,
    target_kind,
    url_secret,
)

#: The environment variables holding a libSQL auth token, in the order they are read.
TOKEN_ENV_VARS = ("LIBSQL_AUTH_TOKEN", "TURSO_AUTH_TOKEN")
URL_TOKEN_WARNING = ("The auth token is in the URL (?authToken=): it is used, but a URL ends up in shell history "
                     "and logs; prefer $LIBSQL_AUTH_TOKEN or the system keyring (File ▸ Connect…)")
DEFAULT_PG_PORT = 5432
#: The environment variable holding a MongoDB password (the URL names the user).
MONGODB_PASSWORD_ENV = "MONGODB_PASSWORD"
#: What `secret_in_url_notice` says of a secret written in a URL, by target kind ({url}: the URL without it).
_IN_URL = {
    POSTGRESQL: ("the password is written in the URL, which every user of this machine can read while the studio "
                 "runs (ps) and your shell keeps in its history; prefer $PGPASSWORD, ~/.pgpass, the system "
                 "keyring (File ▸ Connect… saves it there) or --password-stdin, e.g. "
                 "printf '%s\\n' \"$PASSWORD\" | memory-studio … --password-stdin {url}"),
    MONGODB: ("the password is written in the URL, which every user of this machine can read while the studio "
              "runs (ps) and your shell keeps in its history; prefer $MONGODB_PASSWORD, the system keyring "
              "(File ▸ Connect… saves it there) or --password-stdin, e.g. "
              "printf '%s\\n' \"$PASSWORD\" | memory-studio … --password-stdin {url}"),
    LIBSQL_SERVER: ("the auth token is written in the URL, which every user of this machine can read while the "
                    "studio runs (ps) and your shell keeps in its history; prefer $LIBSQL_AUTH_TOKEN (or "
                    "$TURSO_AUTH_TOKEN), the system keyring (File ▸ Connect… saves it there) or --password-stdin, "
                    "e.g. printf '%s\\n' \"$TOKEN\" | memory-studio … --password-stdin {url}"),
}
_warned: set[str] = set()



_session: dict[str, str] = {}
_session_lock = threading.Lock()


class KeyringUnavailable(StoreError):
    """No usable OS keyring backend (or it refused the write); the message is one sentence for the user."""


# -- which secret a target takes, and where it is kept -----------------------------------------

def secret_kind(target: str | os.PathLike[str]) -> str | None:
    """Return "password" for a PostgreSQL or MongoDB URL, "token" for a libSQL server URL, None for a local file."""
    return _SECRET_KINDS.get(target_kind(target))


_SECRET_KINDS = {POSTGRESQL: "password", LIBSQL_SERVER: "token", MONGODB: "password"}


def keyring_target(url: str) -> str:
    """Return the keyring username of URL's secret: the target without secrets, query or default-less port.

    PostgreSQL: `postgresql://USER@HOST:PORT/DB` (scheme `postgres` spelled `postgresql`, port 5432
    when absent, so both spellings share one entry); libSQL: `SCHEME://HOST[:PORT][/PATH]`; MongoDB:
    `SCHEME://USER@HOSTS/DB`. The schema does not take part: one password serves every schema of a database.
    """
    scheme, userinfo, hostpath, _query, _fragment = split_url(url)
    scheme = scheme.lower()
    user = userinfo.split(":", 1)[0]
    host, slash, path = hostpath.partition("/")
    if target_kind(url) == POSTGRESQL:
        hostname, port = _host_port(host)
        return f"postgresql://{user + '@' if user else ''}{hostname}:{port or DEFAULT_PG_PORT}/{path}"
    if target_kind(url) == MONGODB:
        return f"{scheme}://{user + '@' if user else ''}{host.lower()}/{path.rstrip('/')}"
    return f"{scheme}://{host.lower()}{slash + path.rstrip('/') if path.rstrip('/') else ''}"


def _host_port(host: str) -> tuple[str, str]:
    """Split `host[:port]` (IPv6 in brackets) into (lower-cased host, port or "")."""
    if host.startswith("["):
        end = host.find("]")
        return host[:end + 1].lower(), host[end + 2:] if host[end + 1:end + 2] == ":" else ""
    name, _, port = host.partition(":")
    return name.lower(), port


# -- a secret written in the URL ------------------------------------------------------------------

def secret_in_url_notice(location: Target) -> str | None:
    """The sentence for a server TARGET whose URL holds its secret (a PostgreSQL password, a libSQL token), else None.

    It names the alternatives and suggests a command line that holds no secret (the URL stripped).
    A `***` left by redaction (a reopen by the shown URL) is no secret and earns nothing.
    """
    if location.kind == LIBSQL_SERVER:
        written = location.url_token
    elif location.kind in (POSTGRESQL, MONGODB):
        written = url_secret(location.conninfo)
    else:
        return None
    if not written or written == "***":
        return None
    import shlex

    return f"{location.display}: {_IN_URL[location.kind].format(url=shlex.quote(strip_secrets(location.display)))}"


def warn_secret_in_url(location: Target) -> str | None:
    """Warn (a StoreNotice) once per process and target that LOCATION's URL holds its secret; return the sentence.

    Every open and write of the target calls it: the command line prints the warning once, the studio
    shows the returned sentence in its status bar. None when the URL holds no secret.
    """
    notice = secret_in_url_notice(location)
    if notice and location.display not in _warned:
        _warned.add(location.display)
        import warnings

        from studio.errors import StoreNotice

        warnings.warn(StoreNotice(notice), stacklevel=2)
    return notice


# -- the secret typed this session -----------------------------------------------------------------

def remember_for_session(url: str, secret: str) -> None:
    """Hold SECRET for URL's target in this process's memory (never on disk) until `forget_for_session`."""
    with _session_lock:
        _session[keyring_target(url)] = secret


def forget_for_session(url: str) -> None:
    """Drop the secret held in memory for URL's target (after it was refused, or on request)."""
    with _session_lock:
        _session.pop(keyring_target(url), None)


def session_secrets() -> dict[str, str]:
    """Return a copy of the secrets held this session {keyring username: secret} (for the studio's helper process)."""
    with _session_lock:
        return dict(_session)


def load_session_secrets(secrets: Mapping[str, str]) -> None:
    """Replace the secrets held this session by SECRETS (the helper process receives its parent's)."""
    with _session_lock:
        _session.clear()
        _session.update(secrets)


def _session_secret(url: str) -> str | None:
    with _session_lock:
        return _session.get(keyring_target(url))


# -- the OS keyring ------------------------------------------------------------------------------

def _os_keyring_get(service: str, user: str) -> str | None:
    return os_keyring_get(service, user, logger="studio.store")


#: Default for `keyring_get`: the OS keyring (looked up at call time, so `keyring.set_keyring` applies).
OS_KEYRING: KeyringGetter = lambda service, user: _os_keyring_get(service, user)  # noqa: E731  (a constant: the default of every keyring_get)


def keyring_backend() -> str | None:
    """Return the name of the usable keyring backend (e.g. "SecretService Keyring"), None when there is none."""
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring):
        return None
    return getattr(backend, "name", None) or type(backend).__name__


def saved_secret(url: str) -> bool:
    """Return True when the keyring holds a secret for URL's target (False too when there is no keyring)."""
    return bool(_os_keyring_get(KEYRING_SERVICE, keyring_target(url)))


def save_secret(url: str, secret: str) -> str:
    """Save SECRET in the OS keyring for URL's target; return the keyring username used.

    Raises KeyringUnavailable (one sentence) when no backend is usable or it refuses the write;
    the secret is then kept nowhere but in this session's memory.
    """
    user = keyring_target(url)
    if keyring_backend() is None:
        raise KeyringUnavailable("No system keyring is available here, so the secret was not saved; it is used for "
                                 "this session only (set $PGPASSWORD / $LIBSQL_AUTH_TOKEN or ~/.pgpass instead)")
    try:
        import keyring

        keyring.set_password(KEYRING_SERVICE, user, secret)
    except Exception as exc:
        raise KeyringUnavailable(f"The system keyring refused to save the secret ({exc.__class__.__name__}); it is "
                                 "used for this session only") from None
    return user


def delete_secret(url: str) -> bool:
    """Delete URL's secret from the OS keyring; return True when one was deleted (False: none, or no keyring)."""
    try:
        import keyring

        keyring.delete_password(KEYRING_SERVICE, keyring_target(url))
        return True
    except Exception:  # PasswordDeleteError (nothing saved), no backend
        return False


# -- lookups -------------------------------------------------------------------------------------

def pg_password(url: str, *, env: Mapping[str, str] | None = None,
                keyring_get: KeyringGetter | None = OS_KEYRING) -> tuple[str | None, str]:
    """Return (password or None, source) for the PostgreSQL URL, in the order of this module's docstring.

    source: "url" | "session" | "PGPASSWORD" | "pgpass" | "keyring" | "none". For "url", "PGPASSWORD"
    and "pgpass" libpq finds the password itself (the password is returned for "url" and "PGPASSWORD",
    None for "pgpass"); the caller passes it to the connection only for "session" and "keyring".
    KEYRING_GET=None skips the keyring.
    """
    env = os.environ if env is None else env
    written = url_secret(url)
    if written:
        return written, "url"
    typed = _session_secret(url)
    if typed:
        return typed, "session"
    if env.get("PGPASSWORD"):
        return env["PGPASSWORD"], "PGPASSWORD"
    if pgpass_has_entry(url, env=env):
        return None, "pgpass"
    if keyring_get is not None:
        value = keyring_get(KEYRING_SERVICE, keyring_target(url))
        if value:
            return value, "keyring"
    return None, "none"


def mongodb_password(url: str, *, env: Mapping[str, str] | None = None,
                     keyring_get: KeyringGetter | None = OS_KEYRING) -> tuple[str | None, str]:
    """Return (password or None, source) for the MongoDB URL: the URL's, one typed this session,
    `$MONGODB_PASSWORD`, the OS keyring (KEYRING_GET=None skips it).

    source: "url" | "session" | "MONGODB_PASSWORD" | "keyring" | "none". A URL without a user name
    needs no password (a local server), and then none is looked up: (None, "none").
    """
    env = os.environ if env is None else env
    written = url_secret(url)
    if written and written != "***":
        return written, "url"
    if not split_url(url)[1]:
        return None, "none"
    typed = _session_secret(url)
    if typed:
        return typed, "session"
    if env.get(MONGODB_PASSWORD_ENV):
        return env[MONGODB_PASSWORD_ENV], MONGODB_PASSWORD_ENV
    if keyring_get is not None:
        value = keyring_get(KEYRING_SERVICE, keyring_target(url))
        if value:
            return value, "keyring"
    return None, "none"


def libsql_auth_token(url: str, *, env: Mapping[str, str] | None = None,
                      keyring_get: KeyringGetter | None = OS_KEYRING) -> tuple[str | None, str]:
    """Return (auth token or None, source) for a libSQL server URL (`libsql://`, `http(s)://`, `ws(s)://`).

    source: "session" (typed in Connect…) | "LIBSQL_AUTH_TOKEN" | "TURSO_AUTH_TOKEN" | "keyring" |
    "url" (`?authToken=`: show `URL_TOKEN_WARNING`) | "none" (a local `sqld` needs none).
    KEYRING_GET=None skips the keyring.
    """
    env = os.environ if env is None else env
    typed = _session_secret(url)
    if typed:
        return typed, "session"
    for var in TOKEN_ENV_VARS:
        if env.get(var, "").strip():
            return env[var].strip(), var
    if keyring_get is not None:
        value = keyring_get(KEYRING_SERVICE, keyring_target(url))
        if value:
            return value, "keyring"
    written = url_secret(url)
    if written:
        return written, "url"
    return None, "none"


def libsql_token(target: Target) -> tuple[str | None, str]:
    """Return (the auth token for the libSQL server TARGET, where it came from): what a read or a write sends.

    Order: a token written in the URL (`?authToken=`: the most specific; a redacted `***` stands for
    the token this process read from that URL before), then `libsql_auth_token` (a token typed in
    File ▸ Connect… this session, `LIBSQL_AUTH_TOKEN`, `TURSO_AUTH_TOKEN`, the OS keyring). (None, "")
    when there is none: a local sqld needs none. The source is a phrase for the user, or the
    variable's name.
    """
    url_token = target.url_token
    if url_token and url_token != "***":
        _URL_TOKENS[target.display] = url_token
        return url_token, "the URL's authToken"
    if url_token == "***" and target.display in _URL_TOKENS:
        return _URL_TOKENS[target.display], "the URL's authToken"
    token, source = libsql_auth_token(target.display)
    if token:
        return token, (source if source in TOKEN_ENV_VARS else secret_source_text(source))
    return None, ""


#: Tokens read from URLs in this process, by redacted URL: the studio reopens a store by the URL it shows
#: (`?authToken=***`). Memory only: never written anywhere.
_URL_TOKENS: dict[str, str] = {}


def secret_source_text(source: str) -> str:
    """Return a short phrase naming SOURCE (a `pg_password` / `libsql_auth_token` source) for the Connect dialog."""
    return {"url": "from the URL", "session": "typed this session", "PGPASSWORD": "from $PGPASSWORD",
            "pgpass": "from the password file (~/.pgpass)",
            "MONGODB_PASSWORD": "from $MONGODB_PASSWORD", "keyring": "saved in the system keyring",
            "LIBSQL_AUTH_TOKEN": "from $LIBSQL_AUTH_TOKEN", "TURSO_AUTH_TOKEN": "from $TURSO_AUTH_TOKEN",
            "none": "none found"}.get(source, source)


def pgpass_has_entry(url: str, *, env: Mapping[str, str] | None = None) -> bool:
    """Return True when the libpq password file has a line for URL's host, port, database and user.

    Mirrors libpq: `$PGPASSFILE` (or `passfile=` in the URL) else `~/.pgpass`; lines
    `host:port:database:user:password` with `*` wildcards and `\\:` escapes; ignored when group or
    world can read it. Defaults as libpq's: host localhost, port 5432, user $PGUSER or the login name,
    database the user.
    """
    env = os.environ if env is None else env
    _scheme, userinfo, hostpath, query, _fragment = split_url(url)
    params = dict(urllib.parse.parse_qsl(query))
    path = Path(params.get("passfile") or env.get("PGPASSFILE") or Path.home() / ".pgpass")
    try:
        if not path.is_file() or (os.name == "posix" and path.stat().st_mode & 0o077):
            return False
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    host, _, db = hostpath.partition("/")
    hostname, port = _host_port(host)
    user = urllib.parse.unquote(userinfo.split(":", 1)[0]) or params.get("user") or env.get("PGUSER") or _login()
    want = [urllib.parse.unquote(hostname.strip("[]")) or params.get("host") or env.get("PGHOST") or "localhost",
            port or params.get("port") or env.get("PGPORT") or str(DEFAULT_PG_PORT),
            urllib.parse.unquote(db) or params.get("dbname") or user, user]
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = _pgpass_fields(line)
        if len(fields) >= 5 and all(f == "*" or f == w for f, w in zip(fields[:4], want, strict=True)):
            return True
    return False


def _pgpass_fields(line: str) -> list[str]:
    fields, current, escaped = [], "", False
    for ch in line:
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ":":
            fields.append(current)
            current = ""
        else:
            current += ch
    fields.append(current)
    return fields


def _login() -> str:
    try:
        import getpass

        return getpass.getuser()
    except Exception:
        return ""


__all__ = [
    "KEYRING_SERVICE",
    "URL_TOKEN_WARNING",
    "KeyringUnavailable",
    "delete_secret",
    "forget_for_session",
    "keyring_backend",
    "keyring_target",
    "libsql_auth_token",
    "libsql_token",
    "load_session_secrets",
    "mongodb_password",
    "pg_password",
    "pgpass_has_entry",
    "remember_for_session",
    "save_secret",
    "saved_secret",
    "secret_in_url_notice",
    "secret_kind",
    "secret_source_text",
    "session_secrets",
    "warn_secret_in_url",
]

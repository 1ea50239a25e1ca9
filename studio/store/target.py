"""What a target names: a path, a `file:` URL or a server URL, parsed once into a `Target`.

Every place that needs to know what kind of store a string names asks here:

- `FILE`: `memory.db`, `/abs/memory.db`, `file:memory.db`, `file:///abs/memory.db`; piece: `path`;
- `LIBSQL_SERVER`: `libsql://HOST`, `https://HOST[:PORT]`, `http://HOST:PORT`, `ws(s)://…`; pieces:
  `base_url`, `url_token`;
- `POSTGRESQL`: `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?schema=NAME]` (or `postgres://`);
  pieces: `conninfo`, `schema`.

Any other `SCHEME://` is read as a path (as before: opening it then says there is no such file).
A kind is added (e.g. `mongodb://` / `mongodb+srv://`) by naming its schemes in `SCHEMES`, its
parser in `_PARSERS`, its read backend in `studio.store.open_store` and its write backend in
`studio.store.write.transaction`.

The display form of every target (`Target.display`, `redact_url`) shows a password and every secret
query value as `***`; `strip_secrets` removes them (what Open Recent remembers). No I/O here, and
nothing heavier than `urllib.parse` is imported: a CLI command parses its target before anything else.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path

from studio.errors import StoreError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "FILE",
    "LIBSQL_SERVER",
    "POSTGRESQL",
    "SCHEMES",
    "Target",
    "absolute_target",
    "display_path",
    "elide_middle",
    "file_target",
    "is_server_target",
    "libsql_server_refusal",
    "parse_target",
    "redact_url",
    "split_url",
    "strip_secrets",
    "target_kind",
    "url_secret",
]

FILE = "file"
LIBSQL_SERVER = "libsql-server"
POSTGRESQL = "postgresql"

#: URL scheme (lower case) -> kind. `libsql://` is `https://` as @libsql/client reads it; `ws(s)://` is read
#: as http(s) (sqld serves both on one port).
SCHEMES = {"postgresql": POSTGRESQL, "postgres": POSTGRESQL,
           "libsql": LIBSQL_SERVER, "https": LIBSQL_SERVER, "http": LIBSQL_SERVER,
           "wss": LIBSQL_SERVER, "ws": LIBSQL_SERVER}

#: Query parameters whose value is a secret (lower-cased): libpq's password / sslpassword, libSQL's token.
SECRET_PARAMS = frozenset({"password", "sslpassword", "authtoken", "auth_token", "token", "jwt", "access_token"})
#: The URL query keys that carry a libSQL auth token (@libsql/client reads `authToken`).
TOKEN_KEYS = ("authtoken", "auth_token")
#: A schema name Mastra would use (compiled on first use: a file open never needs it).
_SCHEMA_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"

_FIELDS = ("kind", "display", "path", "conninfo", "schema", "base_url", "url_token")


class Target:
    """One parsed target: its `kind`, how it is shown (`display`, secrets as `***`) and what its backend needs.

    FILE: `path` (a Path). LIBSQL_SERVER: `base_url` (the HTTP base URL the client posts to) and
    `url_token` (a token written in the URL, else None). POSTGRESQL: `conninfo` (the libpq URL
    without `schema`) and `schema` (Mastra's PostgresStore `schemaName`). Pieces a kind has not are
    None (`path` is None for every server: file-only features check it). Immutable, compared and
    hashed by value, picklable (the studio's helper process receives it); its repr shows no secret.
    A plain class: no dataclasses import (~8 ms of a command's start).
    """

    __slots__ = _FIELDS

    def __init__(self, kind: str, display: str, *, path: Path | None = None, conninfo: str | None = None,
                 schema: str | None = None, base_url: str | None = None, url_token: str | None = None):
        for name, value in zip(_FIELDS, (kind, display, path, conninfo, schema, base_url, url_token), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a Target is immutable")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def _values(self) -> tuple:
        return tuple(getattr(self, f) for f in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Target({self.kind!r}, {self.display!r})"

    def __reduce__(self) -> tuple:  # pickle and copy rebuild it through __init__ (its __setattr__ refuses)
        return _rebuild, self._values()


def _rebuild(kind: str, display: str, path, conninfo, schema, base_url, url_token) -> Target:
    return Target(kind, display, path=path, conninfo=conninfo, schema=schema, base_url=base_url, url_token=url_token)


def target_kind(target: str | os.PathLike[str]) -> str:
    """Return the kind of TARGET (FILE, LIBSQL_SERVER or POSTGRESQL) from its scheme alone; never raises."""
    scheme, sep, _rest = os.fspath(target).partition("://")
    return SCHEMES.get(scheme.lower(), FILE) if sep else FILE


def is_server_target(target: str | os.PathLike[str]) -> bool:
    """Return True for a PostgreSQL or libSQL-server URL, False for a path or a `file:` URL."""
    return target_kind(target) != FILE


def absolute_target(target: str | os.PathLike[str]) -> str:
    """Return TARGET with a plain path made absolute (`~` expanded, symlinks kept as named); a `file:` URL or
    any `SCHEME://` URL as given. A relative path would name another file after a change of directory."""
    text = os.fspath(target)
    if text and "://" not in text and not text.startswith("file:"):
        return os.path.abspath(os.path.expanduser(text))
    return text


def parse_target(target: str | os.PathLike[str]) -> Target:
    """Parse TARGET into a Target (see the module docstring for the forms of each kind).

    Raises StoreError for a server URL that cannot be used: a libSQL URL without a host, with a
    port that is not a number or a query key the studio does not know; a PostgreSQL `schema` that
    is not an identifier. The URL in every message is redacted.
    """
    text = os.fspath(target)
    return _PARSERS[target_kind(text)](text)


def file_target(target: str | os.PathLike[str]) -> Target:
    """Parse TARGET as a local file (what a file copy or a file write needs); StoreError for a server URL.

    A server store is never opened as a file: its reads go through `studio.store.open_store` and its
    writes through `studio.store.write.transaction.write_transaction`'s server backends.
    """
    text = os.fspath(target)
    kind = target_kind(text)
    if kind == POSTGRESQL:
        raise StoreError(f"The PostgreSQL store ({redact_url(text)}) is never opened as a file: the studio writes to "
                         "it only inside a write's own transaction (its rows backed up). Nothing was written")
    if kind == LIBSQL_SERVER:
        raise StoreError(libsql_server_refusal(redact_url(text)))
    return _parse_file(text)


def libsql_server_refusal(display: str) -> str:
    """The sentence a read-write open of a libSQL server (or a file-only write path given its URL) gets.

    Nothing is sent to the server: writes go through `studio.store.write.backends.libsql_remote` only.
    """
    return (f"The remote libSQL store ({display}) is never opened read-write: the studio writes to it only "
            "inside a write's own transaction (one stream, its rows backed up). Nothing was written")


# -- the parsers of each kind ---------------------------------------------------------------------

def _parse_file(text: str) -> Target:
    """A path or `file:` URL (a query such as `?mode=ro` is ignored: the studio decides the mode)."""
    if text.lower().startswith("file:"):
        parsed = urllib.parse.urlparse(text)
        raw = parsed.path if parsed.netloc in ("", "localhost") else f"//{parsed.netloc}{parsed.path}"
        if not raw:  # file:relative.db puts the path in .path too, but guard anyway
            raw = text[5:].split("?", 1)[0]
        text = urllib.parse.unquote(raw, errors="surrogateescape")   # %E9: the byte 0xE9, as SQLite reads it
    path = Path(text).expanduser()
    return Target(FILE, display_path(path), path=path)


def display_path(path: str | os.PathLike[str]) -> str:
    """Return PATH as shown to the user: bytes of its name that are not UTF-8 as U+FFFD (the replacement char).

    Linux file names are bytes; Python reads one that is not UTF-8 as lone surrogates (surrogate
    escapes), which no terminal, Qt string or JSON document can carry. The file itself is always
    opened by its real bytes (`Target.path`); only what is shown is replaced.
    """
    return os.fsencode(os.fspath(path)).decode("utf-8", "replace")


def elide_middle(text: str, limit: int = 120) -> str:
    """Return TEXT cut to at most LIMIT characters by an ellipsis in the middle (its start and end kept).

    A path is recognised by its ends (the root and the file name): a 1,255-character one would
    otherwise fill a message (or a dialog) with the middle nobody reads.
    """
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def _parse_libsql_server(text: str) -> Target:
    """`libsql://HOST` (https; `?tls=0`: http), `https://HOST[:PORT]`, `http://HOST:PORT`, `ws(s)://…` (as http(s)).

    `?authToken=` (also `auth_token`) is the one token place in a URL; `tls` the one other key.
    """
    parts = urllib.parse.urlsplit(text)
    scheme = parts.scheme.lower()
    http_scheme = {"libsql": "https", "wss": "https", "ws": "http"}.get(scheme, scheme)
    try:
        hostname, port = parts.hostname, parts.port
    except ValueError as exc:   # a port that is not a number
        raise StoreError(f"{redact_url(text)} is not a server URL: {exc}") from exc
    if not hostname:
        raise StoreError(f"{redact_url(text)} names no server: write libsql://HOST, https://HOST or "
                         "http://127.0.0.1:PORT")
    token = None
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in TOKEN_KEYS:
            token = value or None
        elif key.lower() == "tls" and value in ("0", "1"):   # @libsql/client: libsql://HOST?tls=0 is plain http
            if scheme == "libsql":
                http_scheme = "https" if value == "1" else "http"
        else:
            raise StoreError(f"{redact_url(text)}: unknown URL parameter {key!r} (the studio reads "
                             "authToken and tls only)")
    host = hostname if ":" not in hostname else f"[{hostname}]"
    netloc = f"{host}:{port}" if port else host
    base = urllib.parse.urlunsplit((http_scheme, netloc, parts.path.rstrip("/"), "", ""))
    return Target(LIBSQL_SERVER, redact_url(text), base_url=base, url_token=token)


def _parse_postgresql(text: str) -> Target:
    """`postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?schema=NAME&sslmode=…]`.

    `schema` (also `schemaName`) is Mastra's PostgresStore `schemaName`, default `public`; the
    other query parameters go to libpq as they are. A password may also come from `PGPASSWORD` or
    `~/.pgpass` (libpq reads both), Connect… or the OS keyring (`studio.store.credentials.pg_password`).
    """
    parts = urllib.parse.urlsplit(text)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    schema = "public"
    rest = []
    for key, value in query:
        if key in ("schema", "schemaName"):
            schema = value or "public"
        else:
            rest.append((key, value))
    if not re.match(_SCHEMA_NAME, schema):
        raise StoreError(f"{schema!r} is not a PostgreSQL schema name Mastra would use (letters, digits, _)")
    conninfo = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, urllib.parse.urlencode(rest),
                                        parts.fragment))
    return Target(POSTGRESQL, redact_url(text), conninfo=conninfo, schema=schema)


_PARSERS: dict[str, Callable[[str], Target]] = {FILE: _parse_file, LIBSQL_SERVER: _parse_libsql_server,
                                                POSTGRESQL: _parse_postgresql}


# -- secrets in URLs -------------------------------------------------------------------------------

def split_url(url: str) -> tuple[str, str, str, str, str]:
    """Split URL into (scheme, userinfo, hostport+path, query, fragment) without trusting the password's characters.

    The userinfo ends at the last `@` before the query, so a password holding an unescaped `/` or `#`
    is still recognised as the password (and redacted) rather than read as a path.
    """
    scheme, rest = url.split("://", 1)
    head, sep, query = rest.partition("?")
    fragment = ""
    if not sep:
        head, _, fragment = head.partition("#") if "@" not in head.partition("#")[2] else (head, "", "")
    else:
        query, _, fragment = query.partition("#")
    userinfo, at, hostpath = head.rpartition("@")
    if not at:
        userinfo, hostpath = "", head
    return scheme, userinfo, hostpath, query, fragment


def _join(scheme: str, userinfo: str, hostpath: str, query: list[tuple[str, str]], fragment: str) -> str:
    out = f"{scheme}://{userinfo + '@' if userinfo else ''}{hostpath}"
    if query:
        out += "?" + urllib.parse.urlencode(query, safe="*/:")
    return out + (f"#{fragment}" if fragment else "")


def _clean(url: str, *, replacement: str | None) -> str:
    if "://" not in url:
        return url
    scheme, userinfo, hostpath, query, fragment = split_url(url)
    if ":" in userinfo:
        user = userinfo.split(":", 1)[0]
        userinfo = f"{user}:{replacement}" if replacement is not None else user
    pairs = []
    for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if key.lower() in SECRET_PARAMS:
            if replacement is None:
                continue
            value = replacement
        pairs.append((key, value))
    return _join(scheme, userinfo, hostpath, pairs, fragment)


def redact_url(url: str | os.PathLike[str]) -> str:
    """Return URL as windows, logs and errors show it: a password and every secret query value as `***`.

    `postgresql://u:pw@h/db?sslpassword=x` → `postgresql://u:***@h/db?sslpassword=***`;
    `libsql://db.turso.io?authToken=t` → `libsql://db.turso.io?authToken=***`; a path comes back unchanged.
    """
    return _clean(os.fspath(url), replacement="***")


def strip_secrets(url: str | os.PathLike[str]) -> str:
    """Return URL without its password and secret query parameters (what Open Recent remembers).

    `postgresql://u:pw@h:5432/db?schema=s&password=x` → `postgresql://u@h:5432/db?schema=s`; reopening
    it finds the secret in the environment, ~/.pgpass or the keyring. A path comes back unchanged.
    """
    return _clean(os.fspath(url), replacement=None)


def url_secret(url: str) -> str | None:
    """Return the secret written in URL (the password, or a `password` / token query value), else None."""
    if "://" not in url:
        return None
    _scheme, userinfo, _hostpath, query, _fragment = split_url(url)
    if ":" in userinfo:
        return urllib.parse.unquote(userinfo.split(":", 1)[1])
    for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if key.lower() in ("password", "authtoken", "auth_token") and value:
            return value
    return None


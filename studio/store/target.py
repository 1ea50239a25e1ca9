"""What a target names: a path, a `file:` URL or a server URL, parsed once into a `Target`.

Every place that needs to know what kind of store a string names asks here:

- `FILE`: `memory.db`, `/abs/memory.db`, `file:memory.db`, `file:///abs/memory.db`; piece: `path`;
- `LIBSQL_SERVER`: `libsql://HOST`, `https://HOST[:PORT]`, `http://HOST:PORT`, `ws(s)://…`; pieces:
  `base_url`, `url_token`;
- `POSTGRESQL`: `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?schema=NAME]` (or `postgres://`);
  pieces: `conninfo`, `schema`;
- `MONGODB`: `mongodb://[USER[:PASSWORD]@]HOST[:PORT][,HOST…]/DBNAME[?…]` or `mongodb+srv://…/DBNAME`
  (DBNAME is @mastra/mongodb's MongoDBStore `dbName`); pieces: `conninfo` (the URL the driver gets),
  `schema` (the database name).

Any other `SCHEME://` is read as a path (as before: opening it then says there is no such file).
A kind is added by naming its schemes in `SCHEMES`, its
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
    "MONGODB",
    "POSTGRESQL",
    "SCHEMES",
    "Target",
    "absolute_target",
    "ambiguity",
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
MONGODB = "mongodb"

#: URL scheme (lower case) -> kind. `libsql://` is `https://` as @libsql/client reads it; `ws(s)://` is read
#: as http(s) (sqld serves both on one port).
SCHEMES = {"postgresql": POSTGRESQL, "postgres": POSTGRESQL,
           "libsql": LIBSQL_SERVER, "https": LIBSQL_SERVER, "http": LIBSQL_SERVER,
           "wss": LIBSQL_SERVER, "ws": LIBSQL_SERVER,
           "mongodb": MONGODB, "mongodb+srv": MONGODB}

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
    without `schema`) and `schema` (Mastra's PostgresStore `schemaName`). MONGODB: `conninfo` (the
    URL as written, for the driver) and `schema` (the database, MongoDBStore's `dbName`). Pieces a kind has not are
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
    """Return the kind of TARGET (FILE, LIBSQL_SERVER, POSTGRESQL or MONGODB) from its scheme alone; never raises."""
    scheme, sep, _rest = os.fspath(target).partition("://")
    return SCHEMES.get(scheme.lower(), FILE) if sep else FILE


def is_server_target(target: str | os.PathLike[str]) -> bool:
    """Return True for a PostgreSQL, libSQL-server or MongoDB URL, False for a path or a `file:` URL."""
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
    kind = target_kind(text)
    if kind != FILE:
        _check_unambiguous(text)
    return _PARSERS[kind](text)


def _check_unambiguous(text: str) -> None:
    """Refuse a server URL whose secret could be read two ways, or that carries a fragment no store reads."""
    why = ambiguity(text)
    if why:
        raise StoreError(f"{redact_url(text)} cannot be read unambiguously: {why}. Nothing was sent")
    if "#" in text.split("://", 1)[1].rpartition("@")[2]:
        raise StoreError(f"{redact_url(text)} has a fragment (#…), which no store reads (a token there would not be "
                         "sent): put a libSQL token in $LIBSQL_AUTH_TOKEN and a password in $PGPASSWORD or "
                         "~/.pgpass, or use File ▸ Connect…")


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
    if kind == MONGODB:
        raise StoreError(f"The MongoDB store ({redact_url(text)}) is never opened as a file. Nothing was written")
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
    query = []   # (key, value) decoded as libpq decodes them (%XX only: a `+` stays a `+`)
    for raw, _key, value in _pairs(split_url(text)[3]):
        if raw:
            query.append((urllib.parse.unquote(raw.partition("=")[0]), urllib.parse.unquote(value)))
    schema = "public"
    rest = []
    for key, value in query:
        if key in ("schema", "schemaName"):
            schema = value or "public"
        else:
            rest.append((key, value))
    if not re.match(_SCHEMA_NAME, schema):
        raise StoreError(f"{schema!r} is not a PostgreSQL schema name Mastra would use (letters, digits, _)")
    conninfo = _canonical_conninfo(text, rest)
    return Target(POSTGRESQL, redact_url(text), conninfo=conninfo, schema=schema)


#: A database name MongoDB accepts (no `/\\. "$` characters, at most 63 bytes; checked here so a typo is
#: named before any connection is made).
_DB_NAME = r'^[^/\\. "$*<>:|?]{1,63}$'


def _parse_mongodb(text: str) -> Target:
    """`mongodb://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]…]/DBNAME[?options]` or `mongodb+srv://…/DBNAME`.

    DBNAME is MongoDBStore's `dbName` (required: Mastra has no default database); the query options
    (`replicaSet`, `authSource`, `tls`, …) go to the driver as written. A password may also come from
    `$MONGODB_PASSWORD`, Connect… or the OS keyring (`studio.store.credentials.mongodb_password`).
    """
    _scheme, _userinfo, hostpath, _query, _fragment = split_url(text)
    hosts, _slash, path = hostpath.partition("/")
    if not hosts:
        raise StoreError(f"{redact_url(text)} names no server: write mongodb://HOST[:PORT]/DBNAME")
    db_name = urllib.parse.unquote(path.rstrip("/"))
    if not db_name:
        raise StoreError(f"{redact_url(text)} names no database: add /DBNAME (the dbName of Mastra's MongoDBStore), "
                         "e.g. mongodb://127.0.0.1:27017/mastra")
    if not re.match(_DB_NAME, db_name):
        raise StoreError(f"{db_name!r} is not a MongoDB database name (no / \\ . \" $ and at most 63 characters)")
    return Target(MONGODB, redact_url(text), conninfo=text, schema=db_name)


_PARSERS: dict[str, Callable[[str], Target]] = {FILE: _parse_file, LIBSQL_SERVER: _parse_libsql_server,
                                                POSTGRESQL: _parse_postgresql, MONGODB: _parse_mongodb}


# -- secrets in URLs -------------------------------------------------------------------------------
#
# Redaction works on the URL's structure, never on the text of a secret: the userinfo's password and
# the values of secret query (and fragment) parameters are replaced whole, whatever characters they
# hold, and nothing else of the URL is touched. Where the structure is ambiguous (an `@` after the
# host: a password holding an unencoded `/`, `?` or `#`, or an `@` in a query value), the reading
# that hides the most is used for display, and `parse_target` refuses the URL (`ambiguity`).

def _authority_end(rest: str) -> int:
    """Index in REST (the URL after `://`) where the authority ends, as RFC 3986 reads it (`/`, `?` or `#`)."""
    ends = [i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0]
    return min(ends) if ends else len(rest)


def ambiguity(url: str) -> str | None:
    """Return why URL's userinfo cannot be told apart from the rest unambiguously, or None when it can.

    Ambiguous: an `@` after the host (in the path, query or fragment). It may end a password holding an
    unencoded `/`, `?` or `#` (`postgresql://u:ab?cd@host/db`), or belong to a query value; libpq,
    @libsql/client and this module would each read such a URL differently, and a wrong reading sends
    part of the password to a name lookup or a message. The studio refuses those URLs (say `%40`).
    """
    if "://" not in url:
        return None
    rest = url.split("://", 1)[1]
    if "@" in rest[_authority_end(rest):]:
        return ("an '@' comes after the host, so where the password ends is ambiguous: write each @, /, ?, # "
                "and : of the user name or password (and any @ further on) percent-encoded (%40, %2F, %3F, "
                "%23, %3A), or leave the password out of the URL")
    return None


def split_url(url: str) -> tuple[str, str, str, str, str]:
    """Split URL into (scheme, userinfo, hostpath, query, fragment) without trusting the password's characters.

    The userinfo ends at the LAST `@` of the URL, so a password holding an unescaped `/`, `?`, `#`
    or `@` is still the password (and redacted) rather than read as a path, query or host. For an
    unambiguous URL (`ambiguity` None) this is RFC 3986's reading; for an ambiguous one it is the
    reading that hides the most. The query ends at the first `#`.
    """
    scheme, rest = url.split("://", 1)
    userinfo, at, tail = rest.rpartition("@")
    if not at:
        userinfo, tail = "", rest
    head, _, fragment = tail.partition("#")
    hostpath, _, query = head.partition("?")
    return scheme, userinfo, hostpath, query, fragment


def _pairs(text: str) -> list[tuple[str, str, str]]:
    """Split a query (or fragment) into [(raw pair, decoded lower-cased key, raw value)], keeping empty pieces."""
    out = []
    for raw in text.split("&"):
        key, _, value = raw.partition("=")
        out.append((raw, urllib.parse.unquote_plus(key).strip().lower(), value))
    return out


def _shown_userinfo(userinfo: str, replacement: str | None, *, ambiguous: bool) -> str:
    user, colon, _password = userinfo.partition(":")
    if ambiguous and (not colon or any(ch in user for ch in "/?#@&=")):
        return replacement or ""      # no telling where a user name would end: nothing of it is shown
    if not colon:
        return user
    return f"{user}:{replacement}" if replacement is not None else user


def _clean(url: str, *, replacement: str | None) -> str:
    if "://" not in url:
        return url
    scheme, userinfo, hostpath, query, fragment = split_url(url)
    ambiguous = ambiguity(url) is not None
    userinfo = _shown_userinfo(userinfo, replacement, ambiguous=ambiguous) if userinfo else ""
    if ambiguous:   # after the last `@` may come what was meant as a query (`?a=x@b&password=…`): only a host
        host = re.split(r"[/?#&=;]", f"{hostpath}?{query}#{fragment}", maxsplit=1)[0]
        return f"{scheme}://{userinfo + '@' if userinfo else ''}{host}…"
    kept = []
    for raw, key, _value in _pairs(query) if query else []:
        if key in SECRET_PARAMS:
            if replacement is None:
                continue
            raw = f"{raw.partition('=')[0]}={replacement}"
        kept.append(raw)
    out = f"{scheme}://{userinfo + '@' if userinfo else ''}{hostpath}"
    if kept:
        out += "?" + "&".join(kept)
    # a fragment is read by no store (parse_target refuses it): it is shown as *** and never remembered
    if fragment and replacement is not None:
        out += f"#{replacement}"
    return out


def redact_url(url: str | os.PathLike[str]) -> str:
    """Return URL as windows, logs and errors show it: a password and every secret query value as `***`.

    `postgresql://u:pw@h/db?sslpassword=x` → `postgresql://u:***@h/db?sslpassword=***`;
    `libsql://db.turso.io?authToken=t` → `libsql://db.turso.io?authToken=***`; a fragment → `#***`;
    an ambiguous URL (see `ambiguity`) shows `***` for everything before its last `@` and only the host
    after it (`postgresql://u:***@host…`). Only the
    structure is used, never the secret's text, so the result is the same whatever the secret holds.
    A path comes back unchanged.
    """
    return _clean(os.fspath(url), replacement="***")


def strip_secrets(url: str | os.PathLike[str]) -> str:
    """Return URL without its password, secret query parameters and fragment (what Open Recent remembers).

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
    for _raw, key, value in _pairs(query) if query else []:
        if key in ("password", "authtoken", "auth_token") and value:
            return urllib.parse.unquote_plus(value)
    return None


def _canonical_conninfo(text: str, rest: list[tuple[str, str]]) -> str:
    """The libpq URL of an unambiguous PostgreSQL URL: user and password percent-encoded whole, so libpq
    (which ends the userinfo at the FIRST `@`) reads the same user, password and host as the studio, and
    never quotes a piece of a secret back in an error."""
    scheme, userinfo, hostpath, _query, _fragment = split_url(text)
    if userinfo:
        user, colon, password = userinfo.partition(":")
        userinfo = urllib.parse.quote(urllib.parse.unquote(user), safe="")
        if colon:
            userinfo += ":" + urllib.parse.quote(urllib.parse.unquote(password), safe="")
        userinfo += "@"
    query = "&".join(f"{urllib.parse.quote(k, safe='')}={urllib.parse.quote(v, safe='')}" for k, v in rest)
    return f"{scheme}://{userinfo}{hostpath}" + (f"?{query}" if query else "")

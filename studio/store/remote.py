"""Read a Mastra memory on a libSQL server (`@mastra/libsql`'s LibSQLStore on `sqld` or Turso).

A libSQL server holds the same SQLite database a local `memory.db` is, so `RemoteStore` reuses
every query of `MemoryStore` (same dialect, same SQL: text fetched as bytes, JSONB decoded by the
server's `json()`); only the transport differs: Hrana over HTTP (`studio.store.hrana`), no local
replica file. Targets: `libsql://HOST` (= `https://HOST`, as @libsql/client reads it),
`https://HOST[:PORT]`, `http://HOST:PORT` (a local `sqld`), and `ws://` / `wss://` (read as http /
https: sqld serves both on one port).

Reads never get in the agent's way: only read statements are sent; a `with MemoryStore.open(URL)
as store:` block (one CLI command, one load) reads one consistent snapshot (a deferred read
transaction on one stream, rolled back at the end); outside such a block every statement is its
own autocommit stream. Requests time out. A `RemoteStore` never writes: the studio's writes on a
server go through `studio.store.write.remote_transaction` (the same SQL as on a file, one Hrana
write stream, a JSON row backup before COMMIT).
"""

from __future__ import annotations

import os
import urllib.parse
import warnings
from dataclasses import dataclass

from studio.errors import SchemaError, StoreError, StoreNotice
from studio.store import schema as sc
from studio.store.cells import sqlite_encoding_name
from studio.store.memory_store import REMOTE_LIBSQL_SCHEMES, MemoryStore
from studio.store.pg import redact_url   # passwords and authToken values as ***: one rule for every server URL

REMOTE_SCHEMES = REMOTE_LIBSQL_SCHEMES
#: The URL query keys that carry an auth token (@libsql/client reads `authToken`).
TOKEN_KEYS = ("authtoken", "auth_token")
TOKEN_ENV = ("LIBSQL_AUTH_TOKEN", "TURSO_AUTH_TOKEN")


def is_remote_libsql_target(target: str | os.PathLike[str]) -> bool:
    """Return True when TARGET is a libSQL server URL (libsql://, http(s)://, ws(s)://)."""
    return os.fspath(target).lower().startswith(REMOTE_SCHEMES)


@dataclass(frozen=True)
class RemoteLocation:
    """A libSQL server target: the HTTP base URL the client posts to and the URL as shown to the user.

    `display` never contains a token (an `authToken` query value is shown as `***`).
    """

    base_url: str
    display: str

    @property
    def path(self):
        """A server store has no local path (`None`): file-only features check for it."""
        return None


def parse_remote_location(target: str) -> tuple[RemoteLocation, str | None]:
    """Parse a libSQL server URL; return (location, the token written in the URL or None).

    Raises StoreError for a URL without a host or with a query key the studio does not know
    (a typo would otherwise be silently ignored).
    """
    parts = urllib.parse.urlsplit(target)
    scheme = parts.scheme.lower()
    http_scheme = {"libsql": "https", "wss": "https", "ws": "http"}.get(scheme, scheme)
    try:
        hostname, port = parts.hostname, parts.port
    except ValueError as exc:   # a port that is not a number
        raise StoreError(f"{redact_url(target)} is not a server URL: {exc}") from exc
    if not hostname:
        raise StoreError(f"{redact_url(target)} names no server: write libsql://HOST, https://HOST or "
                         "http://127.0.0.1:PORT")
    token = None
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() in TOKEN_KEYS:
            token = value or None
        elif key.lower() == "tls" and value in ("0", "1"):   # @libsql/client: libsql://HOST?tls=0 is plain http
            if scheme == "libsql":
                http_scheme = "https" if value == "1" else "http"
        else:
            raise StoreError(f"{redact_url(target)}: unknown URL parameter {key!r} (the studio reads "
                             "authToken and tls only)")
    host = hostname if ":" not in hostname else f"[{hostname}]"
    netloc = f"{host}:{port}" if port else host
    base = urllib.parse.urlunsplit((http_scheme, netloc, parts.path.rstrip("/"), "", ""))
    return RemoteLocation(base_url=base, display=redact_url(target)), token


def auth_token(location: RemoteLocation, url_token: str | None = None) -> tuple[str | None, str]:
    """Return (the auth token for LOCATION, where it came from) — the one place tokens are looked up.

    Order: a token written in the URL (`?authToken=`: the most specific; a redacted `***` stands for
    the token this process read from that URL before), then `LIBSQL_AUTH_TOKEN`, then
    `TURSO_AUTH_TOKEN`, a token typed in File ▸ Connect… this session, then the OS keyring
    (studio.store.credentials). (None, "") when there is none: a local sqld needs none.
    """
    if url_token and url_token != "***":
        _URL_TOKENS[location.display] = url_token
        return url_token, "the URL's authToken"
    if url_token == "***" and location.display in _URL_TOKENS:
        return _URL_TOKENS[location.display], "the URL's authToken"
    from studio.store.credentials import libsql_auth_token, secret_source_text

    token, source = libsql_auth_token(location.display)   # typed in Connect…, LIBSQL_/TURSO_AUTH_TOKEN, keyring
    if token:
        return token, (source if source in TOKEN_ENV else secret_source_text(source))
    return None, ""


#: Tokens read from URLs in this process, by redacted URL: the studio reopens a store by the URL it shows
#: (`?authToken=***`). Memory only: never written anywhere.
_URL_TOKENS: dict[str, str] = {}


class RemoteStore(MemoryStore):
    """A Mastra memory on a libSQL server, opened read-only; the read API of `MemoryStore`.

    Raises StoreError from `open` (server unreachable, no answer, auth refused, not a libSQL
    server) and SchemaError when the database holds no Mastra tables; query methods raise
    StoreError when a request or statement fails. `traffic` counts round trips and statements.
    """

    #: A load is one read transaction on one stream: `fingerprint()` inside it describes what the load reads.
    fingerprint_in_snapshot = True

    def __init__(self, location: RemoteLocation, conn, schema: sc.Schema, encoding: str = "utf-8"):
        self.location = location
        self.conn = conn
        self.schema = schema
        self.writable = False
        self.immutable = False
        self.encoding = encoding
        self._reopens = 0
        self._widths: dict[str, int] = {}
        self._traffic = conn.traffic
        self._snapshot_depth = 0      # studio.store.loads: the load in progress
        self._snapshot_conn = None
        self._wal = None

    @classmethod
    def open(cls, target: str | os.PathLike[str], *, writable: bool = False) -> "RemoteStore":
        """Connect to the libSQL server URL TARGET read-only (token: see `auth_token`).

        A token written in the URL works but is announced with a StoreNotice warning (URLs end up
        in shell histories and recent-file lists); the URL is shown redacted everywhere.
        """
        from studio.store.hrana import HranaConnection, HranaStatementError   # httpx: only for server stores

        location, url_token = parse_remote_location(os.fspath(target))
        if writable:
            raise StoreError(refusal(location.display))
        token, source = auth_token(location, url_token)
        notices: tuple[str, ...] = ()
        if url_token and url_token != "***":
            notices = ("The auth token is written in the URL (it ends up in shell histories): prefer "
                       "LIBSQL_AUTH_TOKEN or TURSO_AUTH_TOKEN",)
            warnings.warn(StoreNotice(f"{location.display}: {notices[0]}"))
        conn = HranaConnection(location.base_url, token, location.display, token_source=source or "the URL")
        try:
            schema = sc.discover(conn)
            encoding = sqlite_encoding_name(conn.execute("PRAGMA encoding").fetchall()[0][0])
        except SchemaError as exc:
            conn.close()
            raise SchemaError(f"{location.display}: {str(exc).replace('SQLite file', 'libSQL database')}") from exc
        except HranaStatementError as exc:
            conn.close()
            raise StoreError(f"Cannot read {location.display}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        store = cls(location, conn, schema, encoding)
        store.notices = notices
        return store

    @property
    def traffic(self):
        """Round trips and statements sent so far, also after `close` (studio.store.hrana.Traffic)."""
        return self._traffic

    def _begin_read(self) -> None:
        """Start this load's snapshot: one read transaction on one stream (`BEGIN` travels with the first statement)."""
        self._snapshot_conn = None
        if self.conn is not None and not self.conn.in_snapshot:
            self.conn.begin()
            self._snapshot_conn = self.conn

    def _end_read(self, failed: bool = False) -> None:
        """End this load's snapshot at once: the read transaction is rolled back and its stream closed."""
        conn, self._snapshot_conn = self._snapshot_conn, None
        if conn is not None and conn is self.conn:
            conn.end()

    def reopen_if_changed(self) -> bool:
        """A server store sees every commit on its next statement (outside a snapshot): nothing to reopen."""
        return False

    def close(self) -> None:
        """End the snapshot and close the client (the server's data is left as it was: nothing was written)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _fail(self, exc: BaseException) -> StoreError:
        error = StoreError(f"Reading {self.location.display} failed: {exc}")
        error.__cause__ = exc
        return error


def refusal(display: str) -> str:
    """The sentence a read-write open of a libSQL server (or a file-only write path given its URL) gets.

    Nothing is sent to the server: writes go through `studio.store.write.remote_transaction` only.
    """
    return (f"The remote libSQL store ({display}) is never opened read-write: the studio writes to it only "
            "inside a write's own transaction (one stream, its rows backed up). Nothing was written")


__all__ = ["RemoteStore", "RemoteLocation", "is_remote_libsql_target", "parse_remote_location", "auth_token",
           "refusal"]

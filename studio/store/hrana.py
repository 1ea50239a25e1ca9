"""Hrana over HTTP: the wire protocol of a libSQL server (`sqld`, Turso), spoken with httpx.

A small DB-API-like connection (`execute(sql, params).fetchall()` / `.description`) so that the
SQLite reads (`studio.store.backends.sqlite_sql`) run unchanged on a server. Every request is one HTTP POST to
`/v2/pipeline` carrying one or more statements; the server answers with typed values
(`{"type": "integer", "value": "3"}`, blobs base64-encoded), decoded here into what the local
`libsql` driver returns (int, float, str, bytes, None).

Two ways to read:
- outside a snapshot each statement is its own stream (`execute` + `close` in one round trip):
  autocommit, nothing is held on the server between statements;
- `begin()` … `end()` reads on one stream (the server's `baton`) inside a deferred `BEGIN`: every
  statement sees the same snapshot, and `end()` rolls the read transaction back and closes the
  stream. The `BEGIN` travels with the first statement (no extra round trip). A read transaction
  in SQLite's WAL mode takes no lock that blocks a writer. sqld expires a stream idle for ~10 s
  (`STREAM_EXPIRED`): the snapshot is then restarted once on a fresh stream (`snapshot_restarts`).

Only reads are ever sent on a `HranaConnection`: a statement that is not SELECT / WITH / VALUES / a
PRAGMA without `=` (or the transaction's own BEGIN / ROLLBACK) is refused before it leaves the process.
The one exception is `HranaWriteStream`, opened only by `studio.store.write.backends.libsql_remote` for
a write the user asked for: one stream, `BEGIN IMMEDIATE` … `COMMIT` / `ROLLBACK`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from studio.errors import ServerUnreachable, StoreError, cause_chain
from studio.store.cells import bulk_decode

#: Bound of one request (s): a statement on a big table over a slow link still answers, a dead link does not hang.
READ_TIMEOUT_S = 60.0
#: Bound of the TCP/TLS connect (s).
CONNECT_TIMEOUT_S = 10.0
PIPELINE_PATH = "/v2/pipeline"
_READ_HEADS = ("SELECT", "WITH", "PRAGMA", "VALUES")
_a2b = binascii.a2b_base64
#: U+FFFD in UTF-8: in an answer to a read of text as text, it may stand for bytes that were not UTF-8.
_REPLACEMENT = "\ufffd".encode()
#: The code of a statement whose answer is over the server's response-size limit (sqld, Turso).
TOO_LARGE = "RESPONSE_TOO_LARGE"
#: Rows of the first page when a read too large for one answer is read in pages (halved until a page fits).
PAGE_ROWS = 4096


class HranaStatementError(Exception):
    """The server ran the request but a statement failed (`code` e.g. SQLITE_ERROR, SQL_PARSE_ERROR)."""

    def __init__(self, message: str, code: str | None = None, index: int = 0):
        super().__init__(message)
        self.code = code
        #: Which statement of a request failed (0: the first; `execute_many` counts its own statements).
        self.index = index


class TextNotSent(Exception):
    """A read asked for text as text (`plain`) holds text the server cannot send so: bytes that are not UTF-8
    (sqld fails the whole request with HTTP 500 "invalid utf-8"), or U+FFFD, which may stand for such bytes.
    The read must be made again with every text fetched as bytes (the SQL of local files)."""


class StreamExpired(Exception):
    """The server forgot the stream (idle too long, or restarted): a snapshot must start again."""


def encode_value(value: Any) -> dict:
    """One statement argument as a Hrana value (bool/int -> integer, float, str -> text, bytes -> blob, None)."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "integer", "value": str(int(value))}
    if isinstance(value, int):
        return {"type": "integer", "value": str(value)}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"type": "blob", "base64": base64.b64encode(bytes(value)).decode("ascii")}
    return {"type": "text", "value": str(value)}


#: The keys of each kind of Hrana value ({"type": "text", "value": "…"}, {"type": "blob", "base64": "…"}, …).
_VALUE_KEYS = {"text": "value", "integer": "value", "float": "value", "blob": "base64"}


def _object(pairs: list[tuple[str, Any]]) -> Any:
    """One JSON object of a Hrana answer: a Hrana value as the local driver returns it (integer -> int, float,
    text -> str, blob -> bytes, null -> None), any other object a dict."""
    if len(pairs) == 2:
        (k0, v0), (k1, v1) = pairs
        if k0 != "type":   # the keys in the other order
            (k0, v0), (k1, v1) = (k1, v1), (k0, v0)
        if k0 == "type" and _VALUE_KEYS.get(v0) == k1:
            if v0 == "text":
                return v1
            if v0 == "blob":
                return _a2b(v1 + "=" * (-len(v1) % 4))   # sqld leaves the padding out
            return int(v1) if v0 == "integer" else float(v1)
    elif len(pairs) == 1 and pairs[0] == ("type", "null"):
        return None
    return dict(pairs)


def loads_hrana(data: bytes) -> Any:
    """Parse a Hrana answer (JSON), each Hrana value decoded as it is met (`_object`: its Python value in its place).

    Decoding while parsing spares a dict per value and a second pass over the rows (3 MB of
    listThreads: ~30,000 values); the garbage collector is held meanwhile (studio.store.cells.bulk_decode),
    as none of the containers made is garbage. Raises ValueError when DATA is not JSON.
    """
    with bulk_decode():
        return json.loads(data, object_pairs_hook=_object)


@dataclass
class Cursor:
    """The rows of one statement: `fetchall()` and a DB-API `description` (one 7-tuple per column)."""

    rows: list[tuple]
    description: tuple = ()
    #: Rows a data-changing statement changed (Hrana's affected_row_count; 0 for a read).
    rowcount: int = 0

    def fetchall(self) -> list[tuple]:
        """Return every row (tuples of int, float, str, bytes or None)."""
        return self.rows


@dataclass
class Traffic:
    """What a connection sent: HTTP round trips and statements (the benchmark and tests read them)."""

    requests: int = 0
    statements: int = 0
    snapshot_restarts: int = 0
    #: Pages of reads too large for one answer (`HranaConnection._paged`), and such reads.
    pages: int = 0
    paged_reads: int = 0


class Pages(Protocol):
    """The pages of one read too large for one answer (`HranaConnection._paged` asks for them one by one).

    `statement(size)`: the next page's (sql, params), at most SIZE rows, or None when every row was read;
    `took(rows, size)`: the rows that page returned, each ending with `key_width` key columns (left out of the
    read's rows); `restart()`: forget every page read (before the first, and when the snapshot started again).
    A page's rows follow the previous page's in the read's order, so the pages' rows, in order, are its rows.
    """

    key_width: int

    def restart(self) -> None: ...

    def statement(self, size: int) -> tuple[str, tuple] | None: ...

    def took(self, rows: list[tuple], size: int) -> None: ...


class OffsetPages:
    """The pages of any read SQL: `SELECT * FROM (SQL) LIMIT ? OFFSET ?`.

    Each page makes the server run SQL again up to its OFFSET (a join and a sort over the rows skipped too),
    so the server's work grows with the square of the rows; a read whose key is known pages by it (`Pages`).
    """

    key_width = 0

    def __init__(self, sql: str, params: tuple):
        self._sql = f"SELECT * FROM ({sql.strip().rstrip(';')}) LIMIT ? OFFSET ?"
        self._params = params
        self._offset: int | None = 0

    def restart(self) -> None:
        """Read again from the first row."""
        self._offset = 0

    def statement(self, size: int) -> tuple[str, tuple] | None:
        """The page of SIZE rows after those read, or None after the last."""
        return None if self._offset is None else (self._sql, (*self._params, size, self._offset))

    def took(self, rows: list[tuple], size: int) -> None:
        """Move past ROWS (a page shorter than SIZE was the last)."""
        self._offset = None if len(rows) < size or self._offset is None else self._offset + size


class HranaConnection:
    """A read-only client of one libSQL server database over Hrana-over-HTTP (`/v2/pipeline`).

    BASE_URL is `http(s)://host[:port]` (no token, no query); TOKEN goes in the `Authorization:
    Bearer` header only. DISPLAY (the redacted URL) names the server in errors. Transport failures
    raise StoreError with one sentence (unreachable, timeout, HTTP 401/403 auth, not a libSQL
    server, server error); a failing statement raises HranaStatementError.
    """

    def __init__(self, base_url: str, token: str | None, display: str, *, timeout: float | None = None,
                 token_source: str = "LIBSQL_AUTH_TOKEN or TURSO_AUTH_TOKEN"):
        self.base_url = base_url.rstrip("/")
        self.timeout = READ_TIMEOUT_S if timeout is None else timeout
        self.display = display
        self._token = token
        self._token_source = token_source
        # "from $LIBSQL_AUTH_TOKEN", "typed this session", "from the URL": a source already a phrase is kept
        phrase = token_source.strip()
        self._token_from = phrase if phrase.startswith(("from ", "typed ", "saved ")) else f"from {phrase}"
        if token and not _header_safe(token):
            raise StoreError(f"The auth token for {display} ({self._token_from}) holds characters no token has "
                             "(a space, a control character or a non-ASCII letter): nothing was sent")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # a sqld on this machine is reached directly, never through an HTTP(S)_PROXY of the environment
        local = httpx.URL(self.base_url).host in ("127.0.0.1", "localhost", "::1")
        if local:
            # gzip saves nothing on a loopback link: the server would compress every answer (3 MB of
            # listThreads: ~70 ms of sqld's compression and our decompression) for no transfer gained
            headers["Accept-Encoding"] = "identity"
        timeout = httpx.Timeout(self.timeout, connect=min(CONNECT_TIMEOUT_S, self.timeout))
        # a loopback server's requests go straight to the client's transport (its connection pool): no proxy,
        # redirect, cookie or auth layer applies to them, and those layers cost ~0.15 ms of CPU a request
        # (a sqld getThreadById is one request of ~1.3 ms); the client owns and closes the transport
        self._direct = httpx.HTTPTransport() if local else None
        self._request_headers = {**headers, "Content-Type": "application/json"}
        self._client = httpx.Client(headers=headers, follow_redirects=False, trust_env=not local, timeout=timeout,
                                    transport=self._direct)
        self._baton: str | None = None
        self.writes = False   # True on the one connection that writes (HranaWriteStream): a 403 means read-only
        self._stream_url: str | None = None
        self._in_snapshot = False
        self._began = False
        self.traffic = Traffic()

    # -- DB-API-like surface used by the SQLite reads ----------------------------------------

    def execute(self, sql: str, params: Iterable[Any] = (), *, plain: bool = False,
                pages: Pages | None = None) -> Cursor:
        """Run one read statement (inside the snapshot when one is open) and return its Cursor.

        PLAIN (outside a snapshot only): the statement reads text as text, so an answer that may not
        hold it as stored raises TextNotSent (see there) instead of StoreError.

        A SELECT / WITH / VALUES whose answer is over the server's response limit (sqld's
        `--max-response-size`, 10 MB by default; Turso has its own) is read again in pages (`_paged`):
        one Cursor with the same columns and rows; PAGES (a `Pages`, when the caller knows the read's key) makes
        those pages by key instead of by OFFSET. PLAIN reads are not paged: their RESPONSE_TOO_LARGE
        raises HranaStatementError and the caller reads again with text as bytes, which pages.
        Mastra's libsql client fails such a read the same way (it sends no pages), but Mastra reads OM
        records per thread or resource, so it rarely asks for that much in one statement.
        """
        params = tuple(params)
        stmt = self._read_stmt(sql, params)
        if not self._in_snapshot:
            results = self._pipeline([{"type": "execute", "stmt": stmt}, {"type": "close"}], baton=None, plain=plain)
            try:
                return _cursor(results[0])
            except HranaStatementError as exc:
                if plain or not _too_large(exc, sql):
                    raise
            self.begin()   # the pages: one read transaction on one stream, so they see one state
            try:
                return self._paged(sql, params, pages)
            finally:
                self.end()
        if plain:
            raise StoreError("internal: a read inside a snapshot reads text as bytes")
        try:
            return self._on_snapshot(lambda: self._snapshot_execute([stmt])[0])
        except HranaStatementError as exc:
            if not _too_large(exc, sql):
                raise
        return self._paged(sql, params, pages)

    def _paged(self, sql: str, params: tuple, pages: Pages | None) -> Cursor:
        """The rows of read SQL fetched in pages on the open snapshot's stream, as one Cursor.

        PAGES (a `Pages`: the read's own keyset pages, linear in its rows) or, when None, `OffsetPages`
        (`SELECT * FROM (SQL) LIMIT ? OFFSET ?`, any read: the server runs SQL again up to each OFFSET). The
        first page holds PAGE_ROWS rows, each next page twice as many until the server first refuses one as too
        large (RESPONSE_TOO_LARGE): that page is asked again with half as many rows, and later pages keep the
        smaller size (halved again at each refusal). The pages' rows, in order, make one Cursor (the columns of
        the first page, the key columns of keyset pages left out). One row alone still too large raises
        StoreError; a stream that expires between pages makes the snapshot start again and every page be read
        again (from a fresh PAGES: `Pages.restart`).
        """
        self.traffic.paged_reads += 1
        pager = pages if pages is not None else OffsetPages(sql, params)

        def read() -> Cursor:
            pager.restart()
            return self._pages(sql, pager)

        return self._on_snapshot(read)

    def _pages(self, sql: str, pager: Pages) -> Cursor:
        """Every page PAGER makes, read from its first row, as one Cursor (its key columns left out)."""
        size, rows, description, grow, width = PAGE_ROWS, [], (), True, pager.key_width
        while (page_stmt := pager.statement(size)) is not None:
            stmt = self._read_stmt(*page_stmt)
            try:
                page = self._snapshot_execute([stmt])[0]
            except HranaStatementError as exc:
                if exc.code != TOO_LARGE:
                    raise
                if size == 1:
                    raise StoreError(_row_too_large(self.display, sql, len(rows))) from exc
                size, grow = size // 2, False
                continue
            self.traffic.pages += 1
            description = description or (page.description[:-width] if width else page.description)
            pager.took(page.rows, size)
            rows.extend([r[:-width] for r in page.rows] if width else page.rows)
            if grow:   # fewer pages: fewer round trips (and, by OFFSET, less of SQL run again)
                size *= 2
        return Cursor(rows=rows, description=description)

    def execute_many(self, statements: list[tuple[str, Iterable[Any]]], *, plain: bool = False) -> list[Cursor]:
        """Run read STATEMENTS ([(sql, params), …]) in one round trip; return their Cursors, in order.

        Inside a snapshot they run on its stream; outside one they share a fresh stream inside one
        read transaction (`BEGIN` … `ROLLBACK`, in the same request), so they all see one state of
        the database, which separate `execute` calls would not promise. The server runs every
        statement of the request; the first that failed raises HranaStatementError naming it
        ("statement 2 of 2: …", `index` 1); transport failures raise StoreError as `execute`'s.
        PLAIN (outside a snapshot only) as in `execute`.
        """
        stmts = [self._read_stmt(sql, params) for sql, params in statements]
        if not stmts:
            return []
        if self._in_snapshot and plain:
            raise StoreError("internal: a read inside a snapshot reads text as bytes")
        if self._in_snapshot:
            return self._on_snapshot(lambda: self._snapshot_execute(stmts))
        requests = [{"type": "execute", "stmt": {"sql": "BEGIN"}},
                    *({"type": "execute", "stmt": stmt} for stmt in stmts),
                    {"type": "execute", "stmt": {"sql": "ROLLBACK"}}, {"type": "close"}]
        results = self._pipeline(requests, baton=None, plain=plain)
        _cursor(results[0])   # a failed BEGIN raises here
        return _cursors(results[1:-2])

    def _read_stmt(self, sql: str, params: Iterable[Any]) -> dict:
        """The Hrana statement of one read; StoreError (nothing sent) for a statement that is not a read."""
        head = sql.lstrip()[:8].upper()
        if not head.startswith(_READ_HEADS) or (head.startswith("PRAGMA") and "=" in sql):
            raise StoreError(f"{self.display} is opened read-only: the studio sends it reads only")
        return {"sql": sql, "args": [encode_value(v) for v in params], "want_rows": True}

    def close(self) -> None:
        """End any snapshot and close the HTTP client (the server's data is untouched: nothing was written)."""
        try:
            self.end()
        finally:
            self._client.close()

    # -- snapshots -------------------------------------------------------------------------

    @property
    def in_snapshot(self) -> bool:
        """True between `begin()` and `end()`."""
        return self._in_snapshot

    def begin(self) -> None:
        """Read the following statements on one stream inside one read transaction (lazy: no request yet)."""
        self._in_snapshot = True

    def end(self) -> None:
        """Roll the read transaction back and close its stream (one round trip when a stream is open)."""
        self._in_snapshot = False
        baton, self._baton = self._baton, None
        began, self._began = self._began, False
        if baton is None:
            self._stream_url = None
            return
        requests = ([{"type": "execute", "stmt": {"sql": "ROLLBACK"}}] if began else []) + [{"type": "close"}]
        try:
            self._pipeline(requests, baton=baton)
        except (StoreError, StreamExpired):
            pass   # the server drops an expired stream and its transaction by itself
        finally:
            self._stream_url = None

    def _snapshot_execute(self, stmts: list[dict]) -> list[Cursor]:
        requests = [{"type": "execute", "stmt": stmt} for stmt in stmts]
        if not self._began:
            requests.insert(0, {"type": "execute", "stmt": {"sql": "BEGIN"}})
        results = self._pipeline(requests, baton=self._baton, keep=True)
        began, self._began = self._began, self._baton is not None   # a null baton: the server closed the stream
        if not began:
            _cursor(results[0])   # a failed BEGIN raises here
            results = results[1:]
        return _cursors(results)

    def _on_snapshot(self, read: Callable[[], Any]) -> Any:
        """READ() on the snapshot's stream; once more from a fresh stream when the server had let it expire."""
        try:
            return read()
        except StreamExpired:
            self._restart_snapshot()
            return read()

    def _restart_snapshot(self) -> None:
        """Forget the expired stream: the next statement begins the snapshot again on a fresh one."""
        self.traffic.snapshot_restarts += 1
        self._baton, self._stream_url, self._began = None, None, False

    # -- transport -------------------------------------------------------------------------

    def _pipeline(self, requests: list[dict], *, baton: str | None, keep: bool = False,
                  timeout: float | None = None, plain: bool = False) -> list[dict]:
        url = (self._stream_url or self.base_url) + PIPELINE_PATH if baton else self.base_url + PIPELINE_PATH
        self.traffic.requests += 1
        self.traffic.statements += sum(1 for r in requests if r["type"] == "execute")
        request_timeout = None if timeout is None else httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout))
        body = json.dumps({"baton": baton, "requests": requests})
        try:
            response = self._post(url, body, request_timeout)
        except httpx.ConnectTimeout as exc:   # the TCP connect or the TLS handshake: the shorter connect timeout
            raise ServerUnreachable(f"{self.display} did not complete the connection within "
                             f"{min(CONNECT_TIMEOUT_S, timeout or self.timeout):g} s "
                             "(server down, overloaded or unreachable)") from exc
        except httpx.TimeoutException as exc:
            raise ServerUnreachable(f"{self.display} did not answer within {timeout or self.timeout:g} s "
                             "(server down, overloaded or unreachable)") from exc
        except httpx.HTTPError as exc:
            if url.startswith("https:") and _is_tls_mismatch(exc):
                raise StoreError(plain_http_sentence(self.display, self.base_url)) from exc
            raise ServerUnreachable(f"Cannot connect to {self.display}: {self._scrub(_reason(exc))}") from exc
        if plain:
            data = response.content
            if ((response.status_code == 500 and b"utf-8" in data.lower())
                    or _REPLACEMENT in data or b"\\ufffd" in data or b"\\uFFFD" in data):
                raise TextNotSent(response.text[:200])
        body = self._body(response)
        if keep:
            self._baton = body.get("baton")
            if body.get("base_url"):
                self._stream_url = str(body["base_url"]).rstrip("/")
        results = body.get("results")
        if not isinstance(results, list) or len(results) != len(requests):
            raise StoreError(f"{self.display} is not a libSQL server: its answer to {PIPELINE_PATH} is not Hrana")
        return results

    def _post(self, url: str, body: str, timeout: httpx.Timeout | None) -> httpx.Response:
        """POST BODY (JSON text) to URL and return the response, read whole; TIMEOUT: this request's, else the
        client's. A loopback server is asked through the transport itself (`_direct`). Raises httpx.HTTPError."""
        if self._direct is None:
            extra = {} if timeout is None else {"timeout": timeout}
            return self._client.post(url, content=body, headers={"Content-Type": "application/json"}, **extra)
        request = httpx.Request("POST", url, headers=self._request_headers, content=body.encode(),
                                extensions={"timeout": (timeout or self._client.timeout).as_dict()})
        response = self._direct.handle_request(request)
        try:
            response.read()
        finally:
            response.close()
        return response

    def _body(self, response: httpx.Response) -> dict:
        status = response.status_code
        if status in (401, 403):
            # StoreError.kind from the HTTP status: no token sent is "no-secret", a token refused "auth"
            if not self._token:
                raise StoreError(f"{self.display} asks for an auth token (HTTP {status}): set LIBSQL_AUTH_TOKEN or "
                                 "TURSO_AUTH_TOKEN to a token for this database", kind="no-secret")
            if status == 403 and self.writes:
                raise StoreError(f"{self.display} refused to write with the auth token {self._token_from} "
                                 "(HTTP 403): a read-only token cannot write (or the token is for another "
                                 "database); nothing was written. Give a token with write access.", kind="auth")
            raise StoreError(f"{self.display} refused the auth token {self._token_from} (HTTP {status}): "
                             "it is wrong, expired, or for another database", kind="auth")
        try:
            body = loads_hrana(response.content)
        except ValueError:
            body = None
        if status == 400 and isinstance(body, dict) and body.get("code") == "STREAM_EXPIRED":
            raise StreamExpired(body.get("message"))
        if status == 400 and "baton" in response.text.lower():
            raise StreamExpired(response.text)
        if status != 200 and isinstance(body, dict) and ("message" in body or "error" in body):
            detail = self._scrub(str(body.get("message") or body.get("error")))
            what = "a server error" if status >= 500 else "an error"
            # HTTP 404 with the server's error: sqld has no such namespace (database), Turso no such database
            raise StoreError(f"{self.display} answered with {what} (HTTP {status}): {detail}",
                             kind="no-database" if status == 404 else None)
        if status != 200 or not isinstance(body, dict):
            raise StoreError(f"{self.display} is not a libSQL server (sqld or Turso): POST {PIPELINE_PATH} answered "
                             f"HTTP {status}{'' if isinstance(body, dict) else ' without Hrana JSON'}")
        return body

    def _scrub(self, text: str) -> str:
        """TEXT (a server's or transport's words) as it is, or withheld whole when it quotes the token.

        The token travels in the Authorization header only, so no answer should hold it; one that
        does is not shown at all (no piece of it is cut out: a short token would mangle other words).
        """
        if self._token and self._token in text:
            return "(the answer quoted the auth token, so it is not shown)"
        return text


def _header_safe(token: str) -> bool:
    """True when TOKEN can go in an HTTP header as it is: visible ASCII only (a JWT, an API key)."""
    return all("!" <= ch <= "~" for ch in token)


#: Words of an OpenSSL handshake that met a server speaking plain HTTP (or another protocol) on the port.
_TLS_MISMATCH = ("wrong_version_number", "wrong version number", "record layer failure", "unknown protocol",
                 "packet length too long", "http request")


def _is_tls_mismatch(exc: BaseException) -> bool:
    """Return True when EXC (or a cause) is a TLS handshake answered by something that is not TLS."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        text = str(seen).lower()
        if isinstance(seen, ssl.SSLError) or "[ssl" in text:
            return any(w in text for w in _TLS_MISMATCH)
        seen = seen.__cause__ or seen.__context__
    return False


def plain_http_sentence(display: str, base_url: str) -> str:
    """The sentence for an https:// (or libsql://) URL whose server answers in plain HTTP (a local sqld).

    sqld serves plain HTTP unless started with a certificate; Turso's hosted databases speak TLS.
    """
    host = base_url.split("://", 1)[1].rstrip("/")
    return (f"Cannot connect to {display}: the server there does not speak TLS (HTTPS) — a local sqld serves "
            f"plain HTTP unless given a certificate. Write http://{host} (or libsql://{host}?tls=0) to connect "
            "without TLS, or use the server's https address")


def _reason(exc: httpx.HTTPError) -> str:
    """The innermost cause of a transport error in a few words (refused, name not found, TLS…)."""
    last = str(exc)
    for seen in cause_chain(exc):   # each once: a chain that loops (an error its own cause) ends
        if str(seen):
            last = str(seen)
    text = last.strip().splitlines()[0] if last.strip() else type(exc).__name__
    return re.sub(r"^\[Errno -?\d+\]\s*", "", text)


def _too_large(exc: HranaStatementError, sql: str) -> bool:
    """True when EXC is the server refusing an answer over its size limit and SQL can be read in pages."""
    return exc.code == TOO_LARGE and sql.lstrip()[:6].upper().startswith(("SELECT", "WITH", "VALUES"))


def _row_too_large(display: str, sql: str, offset: int) -> str:
    """The sentence for a read whose row number OFFSET + 1 (of its whole answer) alone is over the server's limit."""
    found = re.search(r'\bFROM\s+("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)', sql, re.IGNORECASE)
    table = found.group(1).strip('"').replace('""', '"') if found else "the read"
    return (f"Reading {display} failed: row {offset + 1} of {table} is larger than the server's response limit "
            "(RESPONSE_TOO_LARGE) even when read alone; raise the server's limit (sqld --max-response-size) to read "
            "it (Mastra's libsql client cannot read that row either)")


def _cursor(result: dict) -> Cursor:
    """Turn one pipeline result into a Cursor, or raise HranaStatementError for a failed statement."""
    if result.get("type") == "error":
        error = result.get("error") or {}
        raise HranaStatementError(str(error.get("message", "statement failed")), error.get("code"))
    body = (result.get("response") or {}).get("result") or {}
    cols = body.get("cols") or []
    rows = list(map(tuple, body.get("rows") or []))   # the values were decoded with the answer (`loads_hrana`)
    description = tuple((c.get("name"), c.get("decltype"), None, None, None, None, None) for c in cols)
    return Cursor(rows=rows, description=description, rowcount=int(body.get("affected_row_count") or 0))


def _cursors(results: list[dict]) -> list[Cursor]:
    """The Cursors of several statements' results; the first failed one raises HranaStatementError naming it."""
    if len(results) == 1:
        return [_cursor(results[0])]   # one statement: its error as `execute` words it
    for i, result in enumerate(results):
        if result.get("type") == "error":
            error = result.get("error") or {}
            raise HranaStatementError(f"statement {i + 1} of {len(results)}: "
                                      f"{error.get('message', 'statement failed')}", error.get("code"), i)
    return [_cursor(r) for r in results]


class CommitUnanswered(Exception):
    """COMMIT was sent on the write stream and its answer never came back: the outcome is unknown."""


class LockWaitTimeout(Exception):
    """`BEGIN IMMEDIATE` got no answer within the write's lock-wait bound (another writer holds the lock)."""


class HranaWriteStream(HranaConnection):
    """One write transaction on a libSQL server: a single Hrana stream from `BEGIN IMMEDIATE` to COMMIT/ROLLBACK.

    Used only by `studio.store.write.backends.libsql_remote` (a write the user asked for); every other
    connection of the studio stays a read-only `HranaConnection`. `execute(sql, params)` runs any
    statement on the stream (its Cursor's `rowcount` is the rows changed). Errors: StoreError
    (transport), HranaStatementError (a statement failed; `code` e.g. SQLITE_BUSY,
    TRANSACTION_TIMEOUT when sqld gave the lock to another writer), StreamExpired (the stream was
    idle ~10 s and the server dropped it with its transaction), LockWaitTimeout (from `begin_immediate`).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._open = False
        self.writes = True

    def begin_immediate(self, wait_ms: int) -> None:
        """Open the stream with `BEGIN IMMEDIATE`, waiting at most WAIT_MS (ms) for the server's write lock.

        sqld queues a writer behind the lock holder and, after 5 s, hands it the lock (rolling the
        holder's transaction back); a lock still not had after WAIT_MS raises LockWaitTimeout.
        """
        try:
            results = self._pipeline([{"type": "execute", "stmt": {"sql": "BEGIN IMMEDIATE"}}], baton=None, keep=True,
                                     timeout=wait_ms / 1000)
        except StoreError as exc:
            if isinstance(exc.__cause__, httpx.TimeoutException) and not isinstance(exc.__cause__,
                                                                                    httpx.ConnectTimeout):
                raise LockWaitTimeout(str(exc)) from exc
            raise
        self._open = self._baton is not None
        _cursor(results[0])

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Cursor:
        """Run one statement (any kind) inside the open transaction; return its Cursor."""
        if not self._open:
            raise StoreError(f"internal: no write transaction is open on {self.display}")
        stmt = {"sql": sql, "args": [encode_value(v) for v in params], "want_rows": True}
        results = self._pipeline([{"type": "execute", "stmt": stmt}], baton=self._baton, keep=True)
        return _cursor(results[0])

    def commit(self) -> None:
        """COMMIT and close the stream (one round trip); raises when the server did not commit.

        CommitUnanswered when the request may have reached the server but no answer came back (the
        connection dropped or the answer timed out): whether it committed is unknown until asked
        again. A connect that failed (the request never left) raises ServerUnreachable.
        """
        baton, self._baton, self._open = self._baton, None, False
        try:
            results = self._pipeline([{"type": "execute", "stmt": {"sql": "COMMIT"}}, {"type": "close"}],
                                     baton=baton)
        except ServerUnreachable as exc:
            if isinstance(exc.__cause__, (httpx.ConnectError, httpx.ConnectTimeout)):
                raise
            raise CommitUnanswered(str(exc)) from exc
        _cursor(results[0])

    def rollback(self) -> None:
        """ROLLBACK and close the stream; quiet when the server already dropped it (nothing was written then)."""
        baton, self._baton, was_open, self._open = self._baton, None, self._open, False
        if baton is None or not was_open:
            return
        with suppress(StoreError, StreamExpired):
            self._pipeline([{"type": "execute", "stmt": {"sql": "ROLLBACK"}}, {"type": "close"}], baton=baton)

    def close(self) -> None:
        """Roll back anything still open and close the HTTP client."""
        try:
            self.rollback()
        finally:
            self._client.close()


__all__ = [
    "CommitUnanswered",
    "Cursor",
    "HranaConnection",
    "HranaStatementError",
    "HranaWriteStream",
    "LockWaitTimeout",
    "OffsetPages",
    "Pages",
    "StreamExpired",
    "TextNotSent",
    "Traffic",
    "encode_value",
    "loads_hrana",
]

"""The backend of a Mastra memory stored in PostgreSQL (`@mastra/pg`'s `PostgresStore`), through psycopg 3.

`PgBackend` gives `MemoryStore` (studio.store.memory_store) the same rows a libSQL store gives, so
the engine, the CLI and the studio work on it unchanged; dialect differences stay here (`PgSql`,
`read_expr`) and in `studio.store.history`. What Mastra does differently on PostgreSQL (@mastra/pg
1.x, read from its `MemoryPG` and `parseOMRow`), and how each is mirrored:

- Tables live in the store's `schemaName` (default `public`): the session's `search_path` is set to it.
- Thread / resource `metadata` and the OM id and chunk columns are JSONB (read as JSON text, so a
  JSONB object keeps the key order PostgreSQL gives it, as Mastra sees it); OM `config` and message
  `content` are TEXT holding JSON; booleans are real booleans.
- Every timestamp has a `"<col>Z"` TIMESTAMPTZ twin. Threads, messages and resources read the twin
  first (`row.createdAtZ || row.createdAt`); OM records read *only* the twin for `createdAt`,
  `updatedAt` and `lastObservedAt`. Times are returned as JavaScript `toISOString()` strings
  (milliseconds, `Z`), the format the libSQL store holds, so every figure is computed the same way.
- Threads and messages break `createdAt` ties by `id` (listThreads, listMessages).

Reads never get in the agent's way: the session is read-only (`default_transaction_read_only`),
with a statement timeout; nothing takes a lock beyond a plain read (ACCESS SHARE). Outside a load
every statement is its own autocommit transaction; a load (`with store.snapshot():`) is one
REPEATABLE READ READ ONLY transaction, ended (COMMIT) as soon as the load ends, so the session is
never left idle in a transaction (`idle_in_transaction_session_timeout` bounds it if the studio
ever hangs mid-load). `writable=True` is refused: a write opens its own read-write transaction
(`studio.store.write.backends.pg`).
"""

from __future__ import annotations

import re
import urllib.parse
from contextlib import suppress

from studio.errors import SchemaError, StoreError
from studio.store import credentials as cred
from studio.store import schema as sc
from studio.store.backends import content_fingerprint, read_each

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from studio.store.target import Target

__all__ = [
    "PG_TIME_TYPES",
    "SNAPSHOT_SQL",
    "PgBackend",
    "PgSql",
    "SnapshotTotals",
    "asks_for_password",
    "connect_pg",
    "describe_pg_error",
    "discover_pg_schema",
    "pg_error_kind",
    "read_expr",
    "timestamp_twin_mismatches",
]

#: Bound of one statement on the server (ms): a read never runs away on a big or slow database.
STATEMENT_TIMEOUT_MS = 60_000
#: Bound of the TCP connect (s): a dead server answers "unreachable" instead of hanging.
CONNECT_TIMEOUT_S = 10
#: The server ends our session if it ever sits this long inside a load's transaction (ms): a safety
#: net for a hung studio, far above any pause between the queries of a load.
IDLE_IN_TRANSACTION_TIMEOUT_MS = 300_000
#: How long a read waits for a lock another session holds on a table (ms; the write bound, WRITE_LOCK_WAIT_MS):
#: then it says the store is locked (exit 3) instead of waiting for the statement timeout.
READ_LOCK_WAIT_MS = 9_000

#: OM columns Mastra reads only through their TIMESTAMPTZ twin (parseOMRow).
OM_TWIN_ONLY = {"createdAt", "updatedAt", "lastObservedAt"}
#: Tables whose timestamps Mastra reads twin first (`row.<col>Z || row.<col>`).
TWIN_FIRST_TABLES = {sc.THREADS, sc.MESSAGES, sc.RESOURCES}
PG_TIME_TYPES = ("TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP WITH TIME ZONE")
#: The output name of a timestamp read as text (`read_expr`): the column's name and this, never the column's own.
ISO_SUFFIX = ".iso"


def _iso(expr: str) -> str:
    """SQL turning the TIMESTAMPTZ expression EXPR into JavaScript's toISOString() text (NULL stays NULL)."""
    return f"to_char(({expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"


def _utc(column: str) -> str:
    """SQL reading a TIMESTAMP WITHOUT TIME ZONE column as UTC (Mastra writes UTC wall time into it)."""
    return f"({sc.quote_ident(column)} AT TIME ZONE 'UTC')"


#: libpq's PGRES_TUPLES_OK (psycopg.pq.ExecStatus.TUPLES_OK): a result holding rows, however many.
_TUPLES_OK = 2


def _qmarks(sql: str) -> str:
    """Turn the store's `?` placeholders into psycopg's `%s` (a literal `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


#: libpq's words for a connect that no server answered: libpq reports no SQLSTATE for a failed connect (psycopg's
#: `sqlstate` is None there), so they are read here, where the driver's error is caught, and nowhere else.
_NO_SERVER = ("connection refused", "could not translate host name", "name or service not known", "timeout expired",
              "no route to host", "network is unreachable", "temporary failure in name resolution",
              "nodename nor servname", "connection reset", "server closed the connection")
#: The server's FATAL words (relayed in libpq's text) for a login it refuses with SQLSTATE 28000
#: (invalid_authorization_specification), not for the password: no such role, a NOLOGIN role, no pg_hba.conf rule.
_LOGIN_REFUSED = re.compile(r'role "[^"]*" (does not exist|is not permitted to log in)|no pg_hba\.conf entry'
                            r'|pg_hba\.conf rejects connection')
#: The server's FATAL words for SQLSTATE 53300 (too_many_connections): max_connections reached, the slots left
#: reserved for superusers, a role's or a database's CONNECTION LIMIT.
_NO_SLOT = ("sorry, too many clients already", "remaining connection slots are reserved",
            "too many connections for role", "too many connections for database")


def pg_error_kind(exc: BaseException) -> str | None:
    """The `StoreError.kind` of a psycopg error EXC, from the driver's codes, or None.

    An error the server sent has its SQLSTATE: 28P01 (invalid_password) "auth", 28000
    (invalid_authorization_specification) "login-refused", 53300 (too_many_connections) "too-many-connections",
    3D000 (invalid_catalog_name) "no-database", class 08 (connection exception) and 57P01-57P05 (the server shut
    down, or ended the session) "unreachable". A failed connect has none (libpq keeps no SQLSTATE for it), but
    libpq's connection state: PQconnectionNeedsPassword (psycopg's `pgconn.needs_password`: the server asked for a
    password and none was available) is "no-secret"; the server's FATAL relayed in libpq's text tells the same
    SQLSTATEs apart: a refused password ("auth"), a role that does not exist or may not log in, or no pg_hba.conf
    rule ("login-refused", 28000), no connection slot free ("too-many-connections", 53300), a missing database
    ("no-database"); libpq's own words for no answer at all (refused, unknown host, timed out) "unreachable". An
    OperationalError with neither an SQLSTATE nor a connect's state is a live session lost: "unreachable".
    """
    import psycopg

    sqlstate = getattr(exc, "sqlstate", None) or ""
    if sqlstate == "28P01":
        return "auth"
    if sqlstate == "28000":
        return "login-refused"
    if sqlstate == "53300":
        return "too-many-connections"
    if sqlstate == "3D000":
        return "no-database"
    if sqlstate.startswith(("08", "57P")):
        return "unreachable"
    if sqlstate or not isinstance(exc, psycopg.OperationalError):
        return None
    pgconn = getattr(exc, "pgconn", None)
    if pgconn is None:
        return "unreachable"
    if getattr(pgconn, "needs_password", False):   # PQconnectionNeedsPassword: asked for one, none available
        return "no-secret"
    text = str(exc).lower()
    if "password authentication failed" in text:
        return "auth"
    if _LOGIN_REFUSED.search(text):
        return "login-refused"
    if any(words in text for words in _NO_SLOT):
        return "too-many-connections"
    if re.search(r'database "[^"]*" does not exist', text):
        return "no-database"
    if any(words in text for words in _NO_SERVER):
        return "unreachable"
    return None


def asks_for_password(exc: BaseException) -> bool:
    """Return True when EXC (a failed connect) says the server asked for a password and none was given
    (`pg_error_kind`: "no-secret", libpq's PQconnectionNeedsPassword)."""
    return pg_error_kind(exc) == "no-secret"


#: Where the studio takes a PostgreSQL password from, in its order (`credentials.pg_password`).
PASSWORD_PLACES = ("the URL (postgresql://USER:PASSWORD@…), a password typed in File ▸ Connect… this session, "
                   "$PGPASSWORD, ~/.pgpass (or $PGPASSFILE), or the system keyring (service \"memory-studio\", "
                   "where Connect… saves one)")
#: Where a password that was used came from, as a sentence says it.
_SOURCES = {"url": "the URL", "session": "the password typed this session", "PGPASSWORD": "$PGPASSWORD",
            "pgpass": "~/.pgpass", "keyring": "the system keyring"}


def describe_pg_error(exc: BaseException, location: Target | None = None, password: str | None = None,
                      source: str | None = None) -> str:
    """One sentence for a psycopg error.

    No text is replaced: a secret never reaches libpq's text in the first place. The target's
    conninfo holds its user and password percent-encoded whole (`studio.store.target`), so libpq
    parses it without an error that could quote a piece of it, and a password found elsewhere
    (session, keyring: PASSWORD) is passed as a keyword, never inside a string libpq parses.

    libpq's own words for the usual failures become what to do: no password supplied (where the
    studio looks for one), a wrong password (where it came from, SOURCE as `credentials.pg_password`
    names it), a refused connection, an unknown host, a missing database or role, a role that may not log
    in, no connection slot free. Other errors keep libpq's first line.
    """
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if location is None or not location.conninfo:
        return text
    lowered = text.lower()
    parts = urllib.parse.urlsplit(location.conninfo)
    try:
        server = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
    except ValueError:
        server = parts.hostname or "localhost"
    if "no password supplied" in lowered:
        return (f"the server asks for a password for user {parts.username or '(your login name)'} and none was "
                f"found: the studio takes it from {PASSWORD_PLACES}")
    match = re.search(r'password authentication failed for user "([^"]*)"', text)
    if match:
        came = _SOURCES.get(source or "", "")
        return (f"the server refused the password for user {match.group(1)} (wrong password"
                + (f"; it came from {came}" if came else "") + f"). The studio takes it from {PASSWORD_PLACES}")
    if "connection refused" in lowered:
        return f"nothing accepts connections at {server} (is PostgreSQL running there, on that port?)"
    if "could not translate host name" in lowered or "name or service not known" in lowered:
        return f"the host name {parts.hostname} is not known (check the URL's host)"
    match = re.search(r'database "([^"]*)" does not exist', text)
    if match:
        return f"the server has no database named {match.group(1)} (check the URL's /DATABASE)"
    match = re.search(r'role "([^"]*)" does not exist', text)
    if match:
        return f"the server has no user (role) named {match.group(1)} (check the URL's USER)"
    match = re.search(r'role "([^"]*)" is not permitted to log in', text)
    if match:
        return f"the user (role) {match.group(1)} may not log in (it has no LOGIN right; check the URL's USER)"
    if any(words in lowered for words in _NO_SLOT):
        reason = text[text.index("FATAL:") + 6:].strip() if "FATAL:" in text else text
        return (f"the server at {server} has no connection free for this login ({reason}): try again when other "
                f"clients have closed theirs, or raise the limit")
    return text


def read_expr(schema: sc.Schema, table: str, column: str) -> str:
    """SQL reading COLUMN of TABLE as Mastra reads it, in the libSQL store's form, aliased to COLUMN
    (a timestamp to COLUMN + ISO_SUFFIX: an ORDER BY naming COLUMN sorts by the stored value, as Mastra's).

    Timestamps: the TIMESTAMPTZ twin as Mastra reads it (OM createdAt / updatedAt / lastObservedAt:
    the twin only; threads, messages, resources: twin first; others: the column as UTC), rendered
    as JavaScript's toISOString() text. JSONB: its JSON text. Anything else as stored.
    """
    q = sc.quote_ident(column)
    kind = schema.types.get(table, {}).get(column, "")
    if kind.startswith("TIMESTAMP"):
        twin = column + "Z"
        has_twin = schema.has_column(table, twin)
        utc = _utc(column) if "WITHOUT" in kind else q
        if table == sc.OBSERVATIONAL_MEMORY and column in OM_TWIN_ONLY and has_twin:
            value = sc.quote_ident(twin)
        elif table in TWIN_FIRST_TABLES and has_twin:
            value = f"COALESCE({sc.quote_ident(twin)}, {utc})"
        else:
            value = utc
        # aliased apart from the column: a bare `ORDER BY "createdAt"` in the statement's tail then sorts by
        # the stored column, as Mastra's does (an output alias of the column's own name would win there,
        # sorting every row's rendered text instead of walking the (thread_id, createdAt) index)
        return f"{_iso(value)} AS {sc.quote_ident(column + ISO_SUFFIX)}"
    if kind in ("JSONB", "JSON"):
        return f"{q}::text AS {q}"
    return q


def connect_pg(location: Target, *, options: str, application_name: str, purpose: str = ""):
    """Open an autocommit psycopg connection to LOCATION with libpq OPTIONS; the studio's password order.

    The password: the URL's, one typed this session, `$PGPASSWORD` or `~/.pgpass`
    (`credentials.pg_password`); the OS keyring's only when the server asked for one and none of
    those had it (libpq's "no password supplied"), then the connection is tried again with it.
    The read session (`PgBackend.open`) and each write transaction
    (`studio.store.write.backends.pg`) connect through here, so a password that opened the
    store also writes. Raises StoreError (the password redacted) when the server cannot be
    reached or refuses ("Cannot connect to LOCATION PURPOSE: …", PURPOSE e.g. "for writing").
    """
    import psycopg

    # The keyring is asked only when the server asks for a password that nothing else gives: choosing
    # its backend costs ~0.1–0.2 s (entry points, D-Bus probes) before the first paint, and a server
    # that trusts the login, or gets the password from libpq (URL, $PGPASSWORD, ~/.pgpass), needs none.
    cred.warn_secret_in_url(location)   # once per process: a password in the URL is visible in `ps`
    password, source = cred.pg_password(location.conninfo, keyring_get=None)

    def connect(secret: str | None):
        extra = {"password": secret} if secret else {}
        return psycopg.connect(location.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                               options=options, application_name=application_name, **extra)

    try:
        try:
            return connect(password if source == "session" else None)
        except psycopg.OperationalError as exc:
            saved = (cred.OS_KEYRING(cred.KEYRING_SERVICE, cred.keyring_target(location.conninfo))
                     if source == "none" and asks_for_password(exc) else None)
            if not saved:
                raise
            password = saved
            return connect(saved)
    except Exception as exc:
        where = f"{location.display} {purpose}" if purpose else location.display
        raise StoreError(f"Cannot connect to {where}: {describe_pg_error(exc, location, password, source)}",
                         kind=pg_error_kind(exc)) from exc


#: The server's snapshot of the statement it is part of, as text (`xmin:xmax:xip,…`), read once a statement (an
#: InitPlan). Two statements that see the same text see the same committed rows: a transaction that writes gets an
#: xid (moving xmax) and its end takes it out of the in-progress list, so no commit lands between them.
SNAPSHOT_SQL = "(SELECT txid_current_snapshot()::text)"


class SnapshotTotals:
    """Counts earlier statements read, each kept with the server snapshot (`SNAPSHOT_SQL`) it was counted in.

    A statement sends the snapshot it remembers for its count (`snapshot_of`); the server counts again only when
    its own snapshot differs (`CASE WHEN snapshot = ? THEN NULL ELSE (count) END`: the count's subquery runs only
    on that branch), so the answer is always the count in the statement's own snapshot. Keys are the SQL and
    parameters of what is counted; the newest SIZE are kept. A lost session forgets them all (`clear`).
    """

    def __init__(self, size: int = 64):
        self._size = size
        self._known: dict[tuple, tuple[str, int]] = {}

    def snapshot_of(self, key: tuple) -> str | None:
        """The snapshot text KEY's remembered count was read in, or None (none remembered)."""
        known = self._known.get(key)
        return known[0] if known else None

    def total(self, key: tuple, snapshot: str, counted: int | None) -> int:
        """Return KEY's count in SNAPSHOT: COUNTED when the server counted (remembered), else the one remembered.

        Raises StoreError when the server did not count and nothing was remembered for SNAPSHOT (it never
        skips the count then: the remembered snapshot it compared with was None or another).
        """
        if counted is None:
            known = self._known.get(key)
            if known is None or known[0] != snapshot:
                raise StoreError("The server skipped a count the studio has not remembered")
            return known[1]
        self._known.pop(key, None)
        self._known[key] = (snapshot, int(counted))
        while len(self._known) > self._size:
            del self._known[next(iter(self._known))]
        return int(counted)

    def clear(self) -> None:
        """Forget every count (a new session: its server may be another one, restored from a backup)."""
        self._known.clear()


class PgSql:
    """The read expressions of @mastra/pg (studio.store.backends.ReadSql): the TIMESTAMPTZ twins first, ties by id."""

    name = "postgresql"
    #: MemoryPG.listMessages breaks createdAt ties by id.
    message_order = '"createdAt" ASC, id ASC'
    #: Bound times are compared as TIMESTAMPTZ (Mastra binds dateRange.start as a Date).
    time_param = "?::timestamptz"

    def __init__(self, schema: sc.Schema):
        self._schema = schema
        #: MemoryPG.listThreads: newest createdAt (twin first) first, ties by id.
        self.thread_order = f"{self.created(sc.THREADS)} DESC, id DESC"

    def created(self, table: str) -> str:
        """The createdAt Mastra reads for TABLE's rows (twin first), as TIMESTAMPTZ SQL."""
        if self._schema.has_column(table, "createdAtZ"):
            return f'COALESCE("createdAtZ", {_utc("createdAt")})'
        return _utc("createdAt")

    def iso(self, expr: str) -> str:
        """EXPR (a TIMESTAMPTZ) as JavaScript's toISOString() text."""
        return _iso(expr)


class PgBackend:
    """A Mastra memory in PostgreSQL, opened read-only (studio.store.backends.Backend).

    Raises StoreError from `open` when the server cannot be reached or refuses the login (the
    message names the redacted URL), SchemaError when the schema holds no Mastra tables. Reads
    raise StoreError when a statement fails (timeout, dropped connection).
    """

    #: A load's REPEATABLE READ transaction: `fingerprint()` inside it describes what the load reads.
    fingerprint_in_snapshot = True
    writable = False
    encoding = "utf-8"
    notices: tuple[str, ...] = ()
    #: The (table, column) pairs the schema declares NOT NULL (`open` reads them with the columns).
    not_null: frozenset[tuple[str, str]] = frozenset()

    def __init__(self, location: Target, conn, schema: sc.Schema, options: str = ""):
        self.location = location
        self.conn = conn
        self._options = options   # libpq options of the session: a lost session is reopened with them
        self.schema = schema
        self.sql = PgSql(schema)
        self._snapshot_conn = None
        #: {(table, wanted columns, extra SQL): (the columns present, the select list)} of `select`: made once
        self._select_lists: dict[tuple, tuple[list[str], str]] = {}
        self._xmax: str | None = None   # the server's transaction snapshot at the last fingerprint
        #: Message counts of pages read (`MemoryStore.select_messages_counted`), valid while the snapshot holds.
        self.totals = SnapshotTotals()
        self._content: str | None = None

    @classmethod
    def open(cls, location: Target, *, writable: bool = False) -> PgBackend:
        """Connect to the PostgreSQL target LOCATION read-only; the password is found as `connect_pg` finds it.

        Raises StoreError (the password redacted) when the server cannot be reached or refuses, and
        for WRITABLE (each write opens its own transaction).
        """
        if writable:
            raise StoreError(f"A PostgreSQL store ({location.display}) is opened read-only: each write opens "
                             "its own transaction (studio.store.writes)")
        # a read waits for another session's lock (a LOCK TABLE … ACCESS EXCLUSIVE) as long as a write would
        options = (f"-c default_transaction_read_only=on -c statement_timeout={STATEMENT_TIMEOUT_MS} "
                   f"-c lock_timeout={READ_LOCK_WAIT_MS} "
                   f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT_MS} "
                   f"-c search_path={location.schema}")
        conn = connect_pg(location, options=options, application_name="memory-studio")
        try:
            schema, not_null = _discover(conn, location)
        except BaseException:
            conn.close()
            raise
        backend = cls(location, conn, schema, options)
        backend.not_null = not_null
        notice = cred.secret_in_url_notice(location)   # warned by connect_pg; the studio's status bar shows it
        if notice:
            backend.notices = (notice,)
        return backend

    def close(self) -> None:
        """Close the session (the server's data is left as it was: the session never wrote)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # -- running a query -------------------------------------------------------------------

    def fail(self, exc: BaseException) -> StoreError:
        """Return the StoreError for a failed read (the password redacted)."""
        error = StoreError(f"Reading {self.location.display} failed: {describe_pg_error(exc)}", kind=pg_error_kind(exc))
        error.__cause__ = exc
        return error

    def _lost(self) -> bool:
        """True when the session is gone (the server restarted, or ended it): psycopg marks it closed or broken."""
        return self.conn is not None and (self.conn.closed or self.conn.broken)

    def _reopen(self) -> None:
        """Replace the lost session with a new one (same options, same password order); StoreError when the
        server cannot be reached ("Cannot connect to …"). The schema read at open is kept."""
        old = self.conn
        self.conn = connect_pg(self.location, options=self._options, application_name="memory-studio")
        self._xmax = self._content = None
        self.totals.clear()
        with suppress(Exception):
            old.close()

    def _run(self, sql: str, params: tuple) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(_qmarks(sql), params)
            # the result's status, not `description` (which builds a Column a column: ~25 us a read of six)
            return cur.fetchall() if cur.pgresult is not None and cur.pgresult.status == _TUPLES_OK else []

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run a statement written with `?` placeholders and return its rows (values as psycopg gives them).

        Outside a load's transaction (the live refresh's fingerprint), a session the server lost (a
        restart) is reopened once and the statement tried again before anything is reported.
        """
        if self.conn is None:
            raise StoreError("The database is closed")
        params = tuple(params)
        try:
            return self._run(sql, params)
        except Exception as exc:
            if self._snapshot_conn is not None or not self._lost():
                raise self.fail(exc) from exc
        self._reopen()
        try:
            return self._run(sql, params)
        except Exception as exc:
            raise self.fail(exc) from exc

    def select(self, table: str, wanted: list[str], tail: str = "", params: Iterable[Any] = (), *,
               lazy: str | None = None, extra: str | None = None, source: str | None = None,
               pages: Callable[[str], Any] | None = None) -> tuple[list[str], list[tuple], Callable[[tuple], list]]:
        """Read WANTED columns of TABLE (all but the Z twins when empty) as Mastra reads them (`read_expr`).

        psycopg has decoded every value already: DECODE is `list`, LAZY changes nothing. EXTRA (SQL, its
        `?` params first in PARAMS) is selected after the columns: each fetched row then ends with its
        value, which `present` does not name. SOURCE (SQL, its params next) is read instead of the table:
        a subquery of TABLE's rows, aliased by the statement to TABLE's name. PAGES (libSQL's keyset pages) is
        ignored: PostgreSQL sends any answer whole.
        """
        key = (table, tuple(wanted), extra)
        known = self._select_lists.get(key)
        if known is None:   # the schema read at open is kept: a select list once made stays right
            columns = wanted or [c for c in self.schema.columns(table)
                                 if not (c.endswith("Z") and self.schema.has_column(table, c[:-1]))]
            present = [c for c in columns if self.schema.has_column(table, c)]
            selected = ", ".join([*(read_expr(self.schema, table, c) for c in present), *([extra] if extra else [])])
            if len(self._select_lists) < 256:
                self._select_lists[key] = (present, selected)
        else:
            present, selected = known
            present = list(present)
        source = f"({source}) AS {sc.quote_ident(table)}" if source else sc.quote_ident(table)
        return present, self.rows(f"SELECT {selected} FROM {source} {tail}", params), list

    #: Reads one after another (`Backend.read_many`).
    read_many = read_each

    def select_column(self, table: str, column: str, tail: str = "", params: Iterable[Any] = ()) -> list:
        """COLUMN of TABLE's rows, one value a row, as `select` reads it."""
        present, fetched, _decode = self.select(table, [column], tail, params)
        if column not in present:
            return [None] * len(fetched)
        at = present.index(column)
        return [r[at] for r in fetched]

    # -- loads and change detection ----------------------------------------------------------

    def begin_read(self) -> None:
        """Start the load's REPEATABLE READ READ ONLY transaction (one snapshot for every read of the load).

        A session the server lost since the last load (a restart: psycopg says "the connection is
        closed") is reopened once before the failure is reported: F5 and the live refresh recover.
        """
        self._snapshot_conn = None
        if self.conn is None:
            raise StoreError("The database is closed")
        try:
            self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        except Exception as exc:
            if not self._lost():
                raise self.fail(exc) from exc
            self._reopen()   # the server restarted (or ended the session): one new session, then report
            try:
                self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            except Exception as again:
                raise self.fail(again) from again
        self._snapshot_conn = self.conn

    def end_read(self, failed: bool = False) -> None:
        """End the load's transaction at once: COMMIT (a read-only transaction writes nothing), ROLLBACK when FAILED."""
        conn, self._snapshot_conn = self._snapshot_conn, None
        if conn is None or conn is not self.conn or conn.closed:
            return
        try:
            conn.execute("ROLLBACK" if failed else "COMMIT")
        except Exception as exc:
            raise self.fail(exc) from exc

    def fingerprint(self) -> str:
        """Return a value that changes when a commit reaches Mastra's tables; cheap when nothing was written.

        Two parts, both read-only and outside any transaction of ours:
        - the server's write counters of this schema's `mastra_*` tables (`pg_stat_user_tables`
          n_tup_ins + n_tup_upd + n_tup_del; catalog views, no table read). They count every
          insert, update and delete, also one that leaves counts and `updatedAt` as they were,
          but another session reports them up to ~10 s after its commit (PostgreSQL 15+);
        - `content_fingerprint` (counts and newest `updatedAt`, one statement), which sees a commit
          at once; recomputed only when the server's transaction snapshot
          (`txid_current_snapshot()`) moved, i.e. some transaction ended since the last call.
        """
        snap, written = self.rows(
            "SELECT txid_current_snapshot()::text, (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) "
            "FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname LIKE 'mastra\\_%')")[0]
        if snap != self._xmax or self._content is None:
            self._content = content_fingerprint(self)
            self._xmax = snap
        return f"{self._content}:{written}"


def discover_pg_schema(conn, location: Target) -> sc.Schema:
    """Read the `mastra_*` tables and columns of LOCATION's schema; raise SchemaError if there are none."""
    return _discover(conn, location)[0]


def _discover(conn, location: Target) -> tuple[sc.Schema, frozenset[tuple[str, str]]]:
    """`discover_pg_schema`, and the (table, column) pairs declared NOT NULL, from one statement."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT table_name, column_name, upper(data_type), is_nullable FROM information_schema.columns "
                        "WHERE table_schema = %s AND table_name LIKE 'mastra\\_%%' "
                        "ORDER BY table_name, ordinal_position", (location.schema,))
            rows = cur.fetchall()
    except Exception as exc:
        raise StoreError(f"Cannot read {location.display}: {describe_pg_error(exc)}", kind=pg_error_kind(exc)) from exc
    schema = sc.Schema()
    for table, column, kind, _nullable in rows:
        schema.tables.setdefault(table, []).append(column)
        schema.types.setdefault(table, {})[column] = kind
    if not schema.tables:
        raise SchemaError(_no_tables_sentence(conn, location))
    sc.check_required(schema)
    return schema, frozenset((table, column) for table, column, _kind, nullable in rows if nullable == "NO")



def _no_tables_sentence(conn, location: Target) -> str:
    """Why LOCATION's schema has no Mastra tables: it does not exist, or it holds none; the schemas that do.

    Mastra's PostgresStore creates its tables in `schemaName` (default `public`): the sentence names
    the schemas of this database that hold `mastra_threads`, so the user can pick the right ?schema=.
    """
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", (location.schema,))
            exists = cur.fetchall()[0][0] > 0
            cur.execute("SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_name = "
                        "'mastra_threads' ORDER BY 1")
            found = [r[0] for r in cur.fetchall()]
    except Exception:   # the sentence without the hints: the original cause is what matters
        exists, found = True, []
    where = (f"the schema {location.schema!r} does not exist in this database" if not exists
             else f"the schema {location.schema!r} has no Mastra tables (mastra_threads, mastra_messages…)")
    hint = (f"Mastra's tables are in schema {', '.join(repr(f) for f in found)}: add ?schema={found[0]} to the URL"
            if found else "no schema of this database has them: is this the database Mastra's PostgresStore "
                          "writes (its URL's /DATABASE)?")
    return f"{location.display}: {where}. {hint}"


#: The twins Mastra reads, per table: {table: (columns read twin first, columns read through the twin only)}.
TWINS_READ = {sc.THREADS: (("createdAt", "updatedAt"), ()), sc.MESSAGES: (("createdAt",), ()),
              sc.RESOURCES: (("createdAt", "updatedAt"), ()),
              sc.OBSERVATIONAL_MEMORY: ((), ("createdAt", "updatedAt", "lastObservedAt"))}


def timestamp_twin_mismatches(backend: PgBackend) -> list[dict]:
    """Return [{table, id, column, value, twin, thread_id, resource_id, lookup_key}] for rows whose twin
    Mastra reads disagrees with the column (to the millisecond, both as UTC ISO strings or None).

    Twin-first columns (threads, messages, resources) mismatch when the twin is set and differs;
    twin-only OM columns also when exactly one of the two is NULL (`lastObservedAt` NULL with
    `lastObservedAtZ` set: Mastra reads a cursor nobody wrote). `lastBufferedAtTime`'s twin is
    never read (nor written) by Mastra and is not checked.
    """
    out = []
    for table, (first, only) in TWINS_READ.items():
        if not backend.schema.has_table(table):
            continue
        ids = {sc.THREADS: ("id", None, "id", '"resourceId"'), sc.MESSAGES: ("id", None, "thread_id", '"resourceId"'),
               sc.RESOURCES: ("id", None, "NULL", "id"),
               sc.OBSERVATIONAL_MEMORY: ("id", '"lookupKey"', '"threadId"', '"resourceId"')}[table]
        for column in (*first, *only):
            twin = column + "Z"
            if not (backend.schema.has_column(table, column) and backend.schema.has_column(table, twin)):
                continue
            value = f"date_trunc('milliseconds', {_utc(column)})"
            twin_value = f"date_trunc('milliseconds', {sc.quote_ident(twin)})"
            differs = (f"{value} IS DISTINCT FROM {twin_value}" if column in only
                       else f"{sc.quote_ident(twin)} IS NOT NULL AND {value} IS DISTINCT FROM {twin_value}")
            rows = backend.rows(f"SELECT {ids[0]}, {ids[1] or 'NULL'}, {ids[2]}, {ids[3]}, {_iso(_utc(column))}, "
                                f"{_iso(sc.quote_ident(twin))} FROM {sc.quote_ident(table)} WHERE {differs} "
                                "ORDER BY 1")
            for row_id, key, thread_id, resource_id, val, tw in rows:
                out.append({"table": table, "id": row_id, "column": column, "value": val, "twin": tw,
                            "thread_id": thread_id, "resource_id": resource_id, "lookup_key": key,
                            "twin_only": column in only})
    return out

"""`@mastra/mongodb`'s MongoDBStore through pymongo, read-only: the connection, a load's snapshot, the fingerprint.

MongoDB is not SQL, so this backend answers `Backend`'s SQL members (`rows`, `select`, `select_column`,
`sql.created`) with a StoreError; the reads are `studio.store.mongo_store.MongoMemoryStore`'s, which
issue the same `find` / `countDocuments` calls @mastra/mongodb 1.19.0 issues (same filters, sorts,
skip and limit) through `find`, `count` and `aggregate` here. Documents come back in the form the
rest of the studio reads from the libSQL store (`to_mastra`): BSON Dates as `toISOString()` text,
also inside embedded documents; `_id` dropped; an integral double as an integer (JavaScript prints 10.0
as 10).

A load (`begin_read`): on a replica set or a sharded cluster, one causally unrelated snapshot
session (`readConcern: snapshot`, MongoDB 5.0+), so every read of the load sees one moment; on a
standalone server, no snapshot exists and reads go one by one (said in `notices`). Nothing is ever
written: no transaction is opened, no collection or index created. Waits are bounded: server
selection and connecting 10 s, a socket read 60 s, a query `maxTimeMS` 60 s.
"""

from __future__ import annotations

import re

from studio.errors import SchemaError, StoreError
from studio.store import credentials as cred
from studio.store import schema as sc
from studio.store.target import split_url

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable
    from typing import Any

    from studio.store.target import Target

__all__ = ["MONGO_FIELDS", "NOT_ATOMIC", "MongoBackend", "MongoSql", "find_documents", "to_mastra"]

SERVER_SELECTION_TIMEOUT_MS = 10_000
CONNECT_TIMEOUT_MS = 10_000
SOCKET_TIMEOUT_MS = 60_000
#: The server-side limit of one query (maxTimeMS); the counterpart of PostgreSQL's statement timeout.
QUERY_TIME_MS = 60_000

#: The fields @mastra/mongodb 1.19.0 writes per collection (a collection's "columns": a document may lack
#: one, which then reads as missing, as parseOMDocument treats it).
MONGO_FIELDS = {
    sc.THREADS: ["id", "resourceId", "title", "metadata", "createdAt", "updatedAt"],
    sc.MESSAGES: ["id", "thread_id", "content", "role", "type", "createdAt", "resourceId"],
    sc.RESOURCES: ["id", "workingMemory", "metadata", "createdAt", "updatedAt"],
    sc.OBSERVATIONAL_MEMORY: [
        "id", "lookupKey", "scope", "resourceId", "threadId", "activeObservations", "activeObservationsPendingUpdate",
        "originType", "config", "generationCount", "lastObservedAt", "lastReflectionAt", "pendingMessageTokens",
        "totalTokensObserved", "observationTokenCount", "isObserving", "isReflecting", "observedMessageIds",
        "observedTimezone", "bufferedObservationChunks", "bufferedReflection", "bufferedReflectionTokens",
        "bufferedReflectionInputTokens", "reflectedObservationLineCount", "isBufferingObservation",
        "isBufferingReflection", "lastBufferedAtTokens", "lastBufferedAtTime", "metadata", "createdAt", "updatedAt"],
}
#: What a confirmation says before a write to a standalone MongoDB server ({display}: the redacted URL).
NOT_ATOMIC = ("{display} is a standalone MongoDB server (no transactions): this write is not atomic there. Its "
              "documents are written one after another, each compared with what was read and backed up first; "
              "if another program changes one in between, what was written is put back and the write refused.")
#: The server's error codes for a refused login, a command the login may not run, a command it does not have.
_AUTH_FAILED, _UNAUTHORIZED, _COMMAND_NOT_FOUND = 18, 13, 59
#: Authentication mechanisms that take no password (a certificate, cloud credentials, Kerberos).
_PASSWORDLESS = re.compile(r"authMechanism=(MONGODB-X509|MONGODB-AWS|MONGODB-OIDC|GSSAPI)", re.IGNORECASE)


def to_mastra(value: Any) -> Any:
    """Return a BSON value as the studio reads Mastra's values: a Date as `toISOString()` text (UTC, ms),
    embedded documents and arrays likewise (`_id` dropped at the top level only by the caller), an
    integral double as an int (as JavaScript prints it), an ObjectId or Decimal128 as its text."""
    from datetime import datetime

    from studio.store.records import ms_to_iso

    def convert(v: Any) -> Any:
        if v is None or v.__class__ in (str, int, bool):
            return v
        if isinstance(v, dict):
            return {k: convert(x) for k, x in v.items()}
        if isinstance(v, list):
            return [convert(x) for x in v]
        if isinstance(v, datetime):
            ms = round(v.timestamp() * 1000)
            try:
                return ms_to_iso(ms)
            except (ValueError, OverflowError):
                return None
        if isinstance(v, float):
            return int(v) if v.is_integer() and abs(v) < 2 ** 53 else v
        if isinstance(v, int):   # bson.Int64
            return int(v)
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        return str(v)

    return convert(value)


def iso_to_bson_date(iso: str) -> Any:
    """Return the ISO time ISO as the Date `formatDateForMongoDB` (`new Date(string)`) makes; StoreError if none."""
    from datetime import UTC, datetime, timedelta

    from studio.store.records import iso_to_ms

    ms = iso_to_ms(iso)
    if ms is None:
        raise StoreError(f"{iso!r} is not a time MongoDB can compare")
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def find_documents(collection, filter: dict, sort: list[tuple[str, int]] | None = None, *, skip: int = 0,
                   limit: int = 0, session=None) -> list[dict]:
    """`find(FILTER).sort(SORT).skip(SKIP).limit(LIMIT)` on the pymongo COLLECTION inside SESSION (None: none),
    bounded by QUERY_TIME_MS; the BSON documents as stored (`_id` kept). The one cursor every read and write of a
    MongoDB store goes through (the read backend's load, the write transaction). Raises pymongo's errors."""
    cursor = collection.find(filter, session=session, max_time_ms=QUERY_TIME_MS)
    if sort:
        cursor = cursor.sort(sort)
    if skip:
        cursor = cursor.skip(skip)
    if limit:
        cursor = cursor.limit(limit)
    return list(cursor)


class MongoSql:
    """What `MemoryStore.sql` is on MongoDB: the dialect's name and orders as words; no SQL (StoreError)."""

    name = "mongodb"
    #: @mastra/mongodb's listMessages: sort({createdAt: 1}), no tie-break (ties as the server returns them).
    message_order = "createdAt ASC"
    #: listThreads: sort({createdAt: -1}), no tie-break.
    thread_order = "createdAt DESC"
    time_param = "?"

    def created(self, table: str) -> str:
        """Raise StoreError: a MongoDB store has no SQL."""
        raise StoreError("A MongoDB store is not read with SQL")

    def iso(self, expr: str) -> str:
        """Raise StoreError: a MongoDB store has no SQL."""
        raise StoreError("A MongoDB store is not read with SQL")


def _pymongo():
    try:
        import pymongo
    except ImportError as exc:  # pragma: no cover - pymongo is a dependency
        raise StoreError("Reading a MongoDB store needs the pymongo package (pip install pymongo)") from exc
    return pymongo


#: pymongo's OperationFailure codes that are a refused login: AuthenticationFailed, Unauthorized.
_AUTH_CODES = frozenset({18, 13})


def mongo_error_kind(exc: BaseException) -> str | None:
    """The `StoreError.kind` of a pymongo error EXC, from its class and code: a ConnectionFailure (server selection
    timed out, connection refused or reset, network timeout: AutoReconnect and its kin) is "unreachable", an
    OperationFailure with code 18 (AuthenticationFailed) or 13 (Unauthorized) "auth"; anything else None."""
    pymongo = _pymongo()
    if isinstance(exc, pymongo.errors.ConnectionFailure):
        return "unreachable"
    if isinstance(exc, pymongo.errors.OperationFailure) and exc.code in _AUTH_CODES:
        return "auth"
    return None


def describe_error(exc: BaseException, secret: str | None = None) -> str:
    """One line for the user about a pymongo error EXC (SECRET, if it appears, as `***`)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text.split(", full error:")[0].split(", Timeout:")[0].split(" (configured timeouts:")[0]
    if secret:
        text = text.replace(secret, "***")
    name = type(exc).__name__
    if name in ("ServerSelectionTimeoutError", "AutoReconnect", "NetworkTimeout", "ConnectionFailure"):
        return f"the server is down or unreachable (no answer within {SERVER_SELECTION_TIMEOUT_MS // 1000} s): {text}"
    if getattr(exc, "code", None) == _AUTH_FAILED:
        return f"password authentication failed (the server refused the login): {text}"
    if getattr(exc, "code", None) == _UNAUTHORIZED:
        return f"no password supplied, or the user may not read this database: {text}"
    if name == "ExecutionTimeout":
        return f"the query took longer than {QUERY_TIME_MS // 1000} s (maxTimeMS): {text}"
    return text


#: How long the quick look at a server's port waits before leaving the answer to pymongo (s).
PROBE_TIMEOUT_S = 1.5


def url_hosts(conninfo: str) -> list[tuple[str, int]]:
    """Return the (host, port) pairs of a `mongodb://` URL (port 27017 when not given); [] for `mongodb+srv://`.

    An SRV URL names a DNS record, not hosts, so it has none to look at. IPv6 hosts come without brackets.
    """
    if not conninfo.startswith("mongodb://"):
        return []
    rest = conninfo[len("mongodb://"):]
    hosts = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    out = []
    for item in filter(None, hosts.split(",")):
        if item.startswith("["):
            host, _, tail = item[1:].partition("]")
            port = tail[1:] if tail.startswith(":") else ""
        else:
            host, _, port = item.partition(":")
        out.append((host, int(port) if port.isdigit() else 27017))
    return out


def refused(conninfo: str) -> str | None:
    """Return a sentence when every host of CONNINFO refuses a TCP connection, else None (pymongo then decides).

    pymongo keeps retrying a refused server until its 10 s server-selection timeout; a port nobody listens
    on answers a connection attempt at once, so the studio says so in well under 2 s. A host that does not
    answer within PROBE_TIMEOUT_S, or that accepts, is left to pymongo and its own timeouts.
    """
    import socket

    hosts = url_hosts(conninfo)
    if not hosts:
        return None
    for host, port in hosts:
        try:
            with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S):
                return None
        except ConnectionRefusedError:
            continue
        except OSError:
            return None
    where = ", ".join(f"{h}:{p}" for h, p in hosts)
    return (f"the server is down or unreachable (connection refused: nothing listens on {where}; "
            "is MongoDB running there?)")


class MongoBackend:
    """A Mastra memory in MongoDB (`MongoDBStore`'s `dbName`), opened read-only.

    `open` raises StoreError when the server cannot be reached or refuses the login (the URL redacted)
    and SchemaError when the database holds no Mastra collections. Reads raise StoreError.
    """

    writable = False
    encoding = "utf-8"

    def __init__(self, location: Target, client, schema: sc.Schema, *, snapshots: bool, secret: str | None):
        self.location = location
        self.client = client
        self.db = client[location.schema]
        self.schema = schema
        self.sql = MongoSql()
        self.snapshots = snapshots
        #: A load's snapshot describes the fingerprint read inside it (replica set); else read it first.
        self.fingerprint_in_snapshot = snapshots
        self.notices: tuple[str, ...] = () if snapshots else (
            f"{location.display} is a standalone MongoDB server: it has no snapshot reads, so a load reads each "
            "collection at its own moment (a write by the agent during a load can show half done)",)
        #: What a write's confirmation says here (None: a write is one transaction, as on a replica set / mongos).
        self.write_note: str | None = None if snapshots else NOT_ATOMIC.format(display=location.display)
        self._secret = secret
        self._session = None

    @classmethod
    def open(cls, location: Target, *, writable: bool = False) -> MongoBackend:
        """Connect to LOCATION (a MONGODB target), check it answers and holds Mastra's collections."""
        if writable:
            raise StoreError(f"A MongoDB store ({location.display}) is opened read-only. Nothing was written")
        pymongo = _pymongo()
        password, source = cred.mongodb_password(location.conninfo, keyring_get=None)
        if source == "none" and split_url(location.conninfo)[1] and not _PASSWORDLESS.search(location.conninfo):
            # a user and no password anywhere else: the keyring's (choosing its backend costs ~0.1 s, so only now)
            password, source = cred.mongodb_password(location.conninfo)
            if password is None:
                raise StoreError(f"Cannot connect to {location.display}: no password supplied for its user (type it "
                                 "in File ▸ Connect…, or set $MONGODB_PASSWORD)", kind="no-secret")

        why = refused(location.conninfo)
        if why is not None:
            raise StoreError(f"Cannot connect to {location.display}: {why}", kind="unreachable")

        def connect(secret: str | None):
            extra = {"password": secret} if secret and source != "url" else {}
            client = pymongo.MongoClient(
                location.conninfo, tz_aware=True, serverSelectionTimeoutMS=SERVER_SELECTION_TIMEOUT_MS,
                connectTimeoutMS=CONNECT_TIMEOUT_MS, socketTimeoutMS=SOCKET_TIMEOUT_MS, appname="memory-studio",
                retryWrites=False, connect=False, **extra)
            try:
                hello = client[location.schema].command("hello")
            except BaseException:
                client.close()
                raise
            return client, hello

        try:
            client, hello = connect(password)
        except pymongo.errors.PyMongoError as exc:
            raise StoreError(f"Cannot connect to {location.display}: {describe_error(exc, password)}",
                             kind=mongo_error_kind(exc)) from exc
        except pymongo.errors.ConfigurationError as exc:  # pragma: no cover - a PyMongoError too
            raise StoreError(f"{location.display} is not a MongoDB URL pymongo accepts: {exc}") from exc
        snapshots = bool(hello.get("setName")) or hello.get("msg") == "isdbgrid"
        backend = cls(location, client, sc.Schema(), snapshots=snapshots, secret=password)
        try:
            backend.schema = backend._discover()
        except BaseException:
            client.close()
            raise
        return backend

    def _discover(self) -> sc.Schema:
        """The Mastra collections of the database (listCollections; where the server lacks it, those holding a
        document), each with Mastra's field names; SchemaError without threads and messages."""
        pymongo = _pymongo()
        names = set(MONGO_FIELDS)
        try:
            present = set(self.db.list_collection_names(filter={"name": {"$in": sorted(names)}})) & names
        except pymongo.errors.OperationFailure as exc:
            if exc.code != _COMMAND_NOT_FOUND:
                raise StoreError(f"Cannot read {self.location.display}: {describe_error(exc, self._secret)}",
                                 kind=mongo_error_kind(exc)) from exc
            present = {n for n in names if self._run(lambda n=n: self.db[n].find_one({}, {"_id": 1})) is not None}
        except pymongo.errors.PyMongoError as exc:
            raise StoreError(f"Cannot read {self.location.display}: {describe_error(exc, self._secret)}",
                             kind=mongo_error_kind(exc)) from exc
        if not {sc.THREADS, sc.MESSAGES} & present:
            raise SchemaError(f"The MongoDB database {self.location.schema!r} has no Mastra collections "
                              "(mastra_threads, mastra_messages…): check the database name (MongoDBStore's dbName)")
        schema = sc.Schema({n: list(MONGO_FIELDS[n]) for n in sorted(present | {sc.THREADS, sc.MESSAGES})})
        return schema

    # -- queries (what MongoMemoryStore reads through) -------------------------------------------

    def _run(self, call):
        pymongo = _pymongo()
        try:
            return call()
        except pymongo.errors.PyMongoError as exc:
            raise StoreError(f"Reading {self.location.display} failed: {describe_error(exc, self._secret)}",
                             kind=mongo_error_kind(exc)) from exc

    def find(self, collection: str, filter: dict, sort: list[tuple[str, int]] | None = None, *, skip: int = 0,
             limit: int = 0, raw: bool = False) -> list[dict]:
        """Documents of COLLECTION matching FILTER, SORTed, after SKIP, at most LIMIT (0: all), in the load's
        snapshot; each decoded by `to_mastra` without `_id` (RAW: as BSON, `_id` kept). Raises StoreError."""
        docs = self._run(lambda: find_documents(self.db[collection], filter, sort, skip=skip, limit=limit,
                                                session=self._session))
        if raw:
            return docs
        out = []
        for doc in docs:
            doc.pop("_id", None)
            out.append(to_mastra(doc))
        return out

    def count(self, collection: str, filter: dict) -> int:
        """countDocuments(FILTER) on COLLECTION, in the load's snapshot. Raises StoreError."""
        return int(self._run(lambda: self.db[collection].count_documents(filter, session=self._session,
                                                                         maxTimeMS=QUERY_TIME_MS)))

    def aggregate(self, collection: str, pipeline: list[dict]) -> list[dict]:
        """The result of PIPELINE on COLLECTION (read stages only), decoded. Raises StoreError."""
        docs = self._run(lambda: list(self.db[collection].aggregate(pipeline, session=self._session,
                                                                     maxTimeMS=QUERY_TIME_MS)))
        return [to_mastra(d) for d in docs]

    def distinct(self, collection: str, field: str) -> list:
        """The distinct values of FIELD in COLLECTION. Raises StoreError."""
        return self._run(lambda: self.db[collection].distinct(field, session=self._session, maxTimeMS=QUERY_TIME_MS))

    # -- Backend's SQL members: none on MongoDB -----------------------------------------------------

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Raise StoreError: a MongoDB store has no SQL (its reads are MongoMemoryStore's)."""
        raise StoreError("A MongoDB store is not read with SQL")

    def select(self, table: str, wanted: list[str], tail: str = "", params: Iterable[Any] = (), *,
               lazy: str | None = None, pages=None):
        """Raise StoreError: a MongoDB store has no SQL."""
        raise StoreError("A MongoDB store is not read with SQL")

    def select_column(self, table: str, column: str, tail: str = "", params: Iterable[Any] = ()) -> list:
        """Raise StoreError: a MongoDB store has no SQL."""
        raise StoreError("A MongoDB store is not read with SQL")

    def read_many(self, reads: list) -> list:
        """Raise StoreError: a MongoDB store has no SQL."""
        raise StoreError("A MongoDB store is not read with SQL")

    # -- loads and live refresh -------------------------------------------------------------------

    def begin_read(self) -> None:
        """Start a load: a snapshot session on a replica set or sharded cluster; nothing on a standalone server."""
        if not self.snapshots:
            return
        self._session = self._run(lambda: self.client.start_session(snapshot=True))

    def end_read(self, failed: bool = False) -> None:
        """End the load's snapshot session (nothing was written: a snapshot session never writes)."""
        session, self._session = self._session, None
        if session is not None:
            session.end_session()

    def fingerprint(self) -> Hashable:
        """Document counts and the newest `updatedAt` (threads, OM records, resources) and message `createdAt`.

        @mastra/mongodb stamps a thread's `updatedAt` whenever it saves, updates or deletes its messages,
        and every OM write sets the record's `updatedAt`. A few small queries (each sort is served by an
        index Mastra creates, except OM's `updatedAt`: OM collections are small).
        """
        parts: list = []
        for name, field in ((sc.THREADS, "updatedAt"), (sc.MESSAGES, "createdAt"),
                            (sc.OBSERVATIONAL_MEMORY, "updatedAt"), (sc.RESOURCES, "updatedAt")):
            if not self.schema.has_table(name):
                continue
            parts.append(self.count(name, {}))
            newest = self.find(name, {}, [(field, -1)], limit=1, raw=True)
            parts.append(repr(newest[0].get(field)) if newest else None)
        return tuple(parts)

    def close(self) -> None:
        """Close the client (the store's data is left as it was)."""
        self.end_read()
        self.client.close()

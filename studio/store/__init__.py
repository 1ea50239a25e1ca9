"""The store: Mastra's memory as it is stored (targets, backends, typed records, reads, writes). No Qt.

`open_store(target)` is how every layer opens one: it parses the target once (`studio.store.target`),
connects the backend of its kind (`studio.store.backends`) and returns the read API
(`studio.store.memory_store.MemoryStore`). Writes: `studio.store.writes`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    import os

    from studio.store.memory_store import MemoryStore

__all__ = ["open_store"]


def open_store(target: str | os.PathLike[str], *, writable: bool = False, cache_kib: int | None = None) -> MemoryStore:
    """Open TARGET read-only unless WRITABLE: a path, a `file:` URL, a libSQL server URL (`libsql://`,
    `https://`, `http://`, `ws(s)://`), a `postgresql://` URL or a `mongodb://` / `mongodb+srv://` URL; return
    its MemoryStore (a MongoDB store's is `studio.store.mongo_store.MongoMemoryStore`).

    Server stores are read-only (WRITABLE raises StoreError: their writes open their own transaction,
    `studio.store.write.transaction.write_transaction`). CACHE_KIB (a file only): SQLite's page cache
    in KiB, default SQLite's 2,000 KiB; a command that reads each page once (`threads`) asks for a
    small one. Only the target's driver is imported (a file open imports neither psycopg, httpx nor pymongo).
    Raises StoreError (missing, not SQLite, locked, unreadable, unreachable, refused, a malformed
    URL) or SchemaError (no Mastra tables).
    """
    from studio.store.memory_store import MemoryStore
    from studio.store.target import LIBSQL_SERVER, MONGODB, POSTGRESQL, parse_target

    location = parse_target(target)
    if location.kind == POSTGRESQL:
        from studio.store.backends.pg import PgBackend

        return MemoryStore(PgBackend.open(location, writable=writable))
    if location.kind == MONGODB:
        from studio.store.backends.mongodb import MongoBackend
        from studio.store.mongo_store import MongoMemoryStore

        return MongoMemoryStore(MongoBackend.open(location, writable=writable))
    if location.kind == LIBSQL_SERVER:
        from studio.store.backends.libsql_server import LibsqlServerBackend

        return MemoryStore(LibsqlServerBackend.open(location, writable=writable))
    from studio.store.backends.sqlite_file import FileBackend

    return MemoryStore(FileBackend.open(location, writable=writable, cache_kib=cache_kib))

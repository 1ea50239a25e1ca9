"""One write transaction on any store: `write_transaction(target)` picks the backend by the parsed target.

- a local file: `backends.sqlite`, its own libSQL connection, BEGIN IMMEDIATE; a JSON row backup before
  COMMIT (`row_backup`), as on a server (a verified copy of the whole file only on request:
  studio.store.write.file_backup);
- a libSQL server: `backends.libsql_remote`, one Hrana write stream running the file's SQL; a JSON row
  backup before COMMIT (`row_backup`);
- PostgreSQL: `backends.pg`, its own READ WRITE connection, FOR UPDATE; a JSON row backup before COMMIT.

Every backend yields a transaction with the methods of `studio.store.write.tx.WriteTx`, waits for
another writer's lock at most `WRITE_LOCK_WAIT_MS`, commits when the block ends normally and rolls
back when it raises. Only the chosen backend's driver is imported.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from studio.store.target import LIBSQL_SERVER, MONGODB, POSTGRESQL, parse_target, redact_url, target_kind
from studio.store.write.tx import WriteTx

__all__ = ["MONGODB_WRITES", "atomicity_note", "refuse_read_only_store", "write_transaction"]


#: The writes built for @mastra/mongodb (their row-backup labels; "undo-check" is undo's read-only look for backups
#: whose write never happened); the others refuse on a MongoDB store.
MONGODB_WRITES = frozenset({"reflect", "revert", "update-thread", "delete-thread", "working-memory", "undo",
                            "undo-check", "delete-messages", "clear-thread", "clone", "observe", "repair",
                            "activate"})


def refuse_read_only_store(target: str | os.PathLike[str], operation: str | None = None) -> None:
    """Raise WriteRefused("invalid") when TARGET is a MongoDB store and OPERATION (a row-backup label such as
    "observe"; None: any write that is not built there) is not one of MONGODB_WRITES.

    Called before anything of a write is read or computed (`studio.store.write.protocol.store_activity`,
    `write_transaction`), so a refused write costs no model call and changes nothing.
    """
    if target_kind(target) == MONGODB and operation not in MONGODB_WRITES:
        from studio.errors import WriteRefused

        raise WriteRefused("invalid", f"This write is not built for @mastra/mongodb yet ({redact_url(target)}): on "
                                      "MongoDB the studio observes, activates, reflects, reverts, repairs, clones, "
                                      "updates and deletes threads, deletes messages, clears threads, writes working "
                                      "memory and undoes. Nothing was written")


def atomicity_note(target: str | os.PathLike[str]) -> str | None:
    """Return None when a write to TARGET is one transaction (every file and SQL server; a MongoDB replica set or
    mongos), else `backends.mongodb.NOT_ATOMIC`'s sentence (a standalone MongoDB server: asks the server `hello`,
    as Mastra's supportsTransactions). Raises StoreError when the server cannot be reached."""
    if target_kind(target) != MONGODB:
        return None
    from studio.store.backends.mongodb import MongoBackend

    backend = MongoBackend.open(parse_target(target))
    try:
        return backend.write_note
    finally:
        backend.close()


@contextmanager
def write_transaction(target: str | os.PathLike[str], *, busy_timeout_ms: int | None = None,
                      label: str = "write") -> Iterator[WriteTx]:
    """Open TARGET (a path, a `file:` URL or a server URL) for one write transaction; yield its WriteTx.

    A file: `backends.sqlite.sqlite_write_transaction` (BUSY_TIMEOUT_MS: how long it waits in all for
    another process's lock, in Python; default WRITE_LOCK_WAIT_MS). A PostgreSQL
    URL: `backends.pg.pg_write_transaction`; a libSQL server URL:
    `backends.libsql_remote.libsql_remote_write_transaction` (BUSY_TIMEOUT_MS there is the lock
    wait; LABEL names the row backup saved before COMMIT, e.g. "reflect").
    Raises StoreError (missing / unreadable file, unreachable server, refused login, a malformed
    URL, SQL errors), SchemaError (not a Mastra database) and WriteRefused("busy") when the write
    lock cannot be had; nothing is written then.
    """
    refuse_read_only_store(target, label)
    location = parse_target(target)
    if location.kind == MONGODB:
        from studio.store.write.backends.mongodb import mongo_write_transaction

        with mongo_write_transaction(location, label=label) as mongo_tx:
            yield mongo_tx
        return
    if location.kind == POSTGRESQL:
        from studio.store.write.backends.pg import pg_write_transaction

        with pg_write_transaction(location, label=label, lock_wait_ms=busy_timeout_ms) as pg_tx:
            yield pg_tx
        return
    if location.kind == LIBSQL_SERVER:
        from studio.store.write.backends.libsql_remote import libsql_remote_write_transaction

        with libsql_remote_write_transaction(location, label=label, lock_wait_ms=busy_timeout_ms) as remote_tx:
            yield remote_tx
        return
    from studio.store.write.backends.sqlite import sqlite_write_transaction

    with sqlite_write_transaction(location, busy_timeout_ms=busy_timeout_ms, label=label) as tx:
        yield tx

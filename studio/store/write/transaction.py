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

__all__ = ["refuse_read_only_store", "write_transaction"]


def refuse_read_only_store(target: str | os.PathLike[str]) -> None:
    """Raise WriteRefused("invalid") when TARGET is a store the studio only reads (MongoDB, for now).

    Called before anything of a write is read or computed (`studio.store.write.protocol.store_activity`,
    `write_transaction`), so a refused write costs no model call and changes nothing.
    """
    if target_kind(target) == MONGODB:
        from studio.errors import WriteRefused

        raise WriteRefused("invalid", f"The studio only reads MongoDB stores so far ({redact_url(target)}): its writes "
                                      "(reflect, revert, observe, activate, clone, delete, clear, undo) are not built "
                                      "for @mastra/mongodb yet. Nothing was written")


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
    refuse_read_only_store(target)
    location = parse_target(target)
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

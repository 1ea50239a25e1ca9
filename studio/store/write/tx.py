"""What a write transaction is, whatever the backend: the `WriteTx` protocol, the lock bound, `Jsonb`.

`studio.store.write.transaction.write_transaction(target)` opens one transaction of the target's
kind (`studio.store.write.backends`: a local file, a libSQL server, PostgreSQL) and yields an object
with the methods of `WriteTx`; the write functions (reflection, observation, activation, threads,
repair, undo) call only these and never test which backend they got. Server transactions also
journal every row they change (`canonical_rows`, `journal`) for the row backup saved before COMMIT
(`studio.store.write.row_backup`).
"""

from __future__ import annotations

from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Protocol

    from studio.store.schema import Schema
    from studio.store.target import Target
else:
    Protocol = object

__all__ = ["WRITE_LOCK_WAIT_MS", "Jsonb", "WriteTx", "lock_wait_message"]

#: The one bound on how long any write of the studio waits for another writer's lock (ms): a file's
#: BEGIN IMMEDIATE (split over its tries with backoff), a server's lock wait, and the backup taken
#: before a session's first write to a file (studio.store.write.file_backup) all give up after it.
WRITE_LOCK_WAIT_MS = 9_000


def lock_wait_message(display: str, waited_ms: int) -> str:
    """The sentence every write says when another process kept the write lock for the whole bound."""
    return (f"{display} is locked by another process that is writing to it; the studio waited {waited_ms / 1000:g} s "
            "(the longest any write waits) and wrote nothing. Try again when it has finished.")


@dataclass(frozen=True)
class Jsonb:
    """A value to store as Mastra stores its `jsonb` columns (SQLite: `jsonb(?)`; PostgreSQL: JSONB): JSON TEXT."""

    text: str


class WriteTx(Protocol):
    """The open write transaction handed to a write function (every backend's has these members).

    Statements are written with `?` placeholders and SQLite's spelling of the few dialect
    differences below; each method raises StoreError (WriteRefused("busy") when a lock wait ran out).
    """

    #: "sqlite" (a file or a libSQL server) or "postgresql".
    dialect: str
    #: Tie-break of rows with equal createdAt ("rowid": insertion order; PostgreSQL: "id").
    insertion_tie: str
    #: The time copyThread's message filter compares.
    clone_message_time: str
    #: copyThread's LIMIT subquery alias ("" on SQLite).
    subquery_alias: str
    #: The parsed target written to.
    location: Target
    #: Its Mastra tables and columns.
    schema: Schema

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run SQL with bound PARAMS and return all rows."""

    def columns(self, table: str) -> list[str]:
        """Return TABLE's columns ([] when it does not exist)."""

    def select(self, table: str, tail: str = "", params: Iterable[Any] = (), wanted: list[str] | None = None,
               *, lock: bool = False) -> list[dict]:
        """SELECT WANTED (default: all) columns of TABLE as Mastra reads them (LOCK: FOR UPDATE where it applies)."""

    def select_rows(self, table: str, tail: str = "", params: Iterable[Any] = (),
                    wanted: list[str] | None = None) -> list[dict]:
        """The read-store spelling of `select` (studio.store.write.protocol reads through either)."""

    def insert(self, table: str, values: dict[str, Any]) -> None:
        """INSERT one row of VALUES (present columns only; `Jsonb` values as JSONB) as Mastra writes it."""

    def update(self, table: str, values: dict[str, Any], where: str, params: Iterable[Any]) -> int:
        """UPDATE TABLE SET VALUES WHERE …; return the rows changed."""

    def key_column(self, table: str) -> str | None:
        """The column a row of TABLE is journaled (backed up) by: `id`, a vector index's `vector_id`, or None."""

    def delete(self, table: str, where: str, params: Iterable[Any]) -> int:
        """DELETE FROM TABLE WHERE …; return the rows deleted."""

    def copy_message(self, source_id: str, new_id: str, thread_id: str, resource_id: str) -> int:
        """Copy message SOURCE_ID as NEW_ID into THREAD_ID / RESOURCE_ID as the store's copyThread does."""

    def touch_threads(self, thread_ids: list[str], now: str) -> None:
        """Stamp the threads' updatedAt as the store's deleteMessages does."""

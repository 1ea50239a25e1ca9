"""Loads and change detection of a store: `snapshot()` (one consistent state per load) and `fingerprint()`.

Mixed into `studio.store.memory_store.MemoryStore` (local libSQL files); server backends override
the hooks `_begin_read` / `_end_read` and, when they have a cheaper change counter,
`fingerprint` (`studio.store.pg.PgStore`). What each backend does is tabulated in
docs/store-layers.md. The whole backend contract (this mixin, `MemoryStore`'s read API, the write
transaction's methods, row backup and undo), which parts of it are SQL-shaped, and what a document
store such as @mastra/mongodb would need instead: docs/mongodb-backend.md.
"""

from __future__ import annotations

from contextlib import contextmanager

from studio.store import schema as sc
from studio.store.cells import is_driver_panic

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Hashable, Iterator

__all__ = ["Loads", "contained"]


def contained(exc: BaseException) -> bool:
    """Return True for what a read may turn into a StoreError: an Exception or a driver panic."""
    return isinstance(exc, Exception) or is_driver_panic(exc)


class Loads:
    """`snapshot()` and `fingerprint()` over the store's `conn`, `_execute`, `_rows`, `_fail` and `schema`.

    Needs the attributes `_snapshot_depth` (0), `_snapshot_conn` (None) and `_wal` (None), set by the store.
    """

    #: True when `fingerprint()` read inside `snapshot()` describes that snapshot's state, so a load may
    #: read it last (server stores: their fingerprint reads Mastra's tables in the load's transaction).
    #: False for a local file: its `data_version` also counts commits the snapshot does not see, so a
    #: load reads it before anything else.
    fingerprint_in_snapshot = False

    @contextmanager
    def snapshot(self) -> Iterator["Loads"]:
        """Run one load: every read inside the block sees the database as of one moment; yields the store.

        On a local file in WAL mode the block is one read transaction on this connection (a
        deferred BEGIN; the snapshot is taken by the first read and released at the block's end,
        COMMIT of a transaction that wrote nothing). A WAL reader takes no lock that delays a
        writer, so a running agent commits as usual meanwhile; the studio just does not see it
        until the next load. A file in rollback-journal mode is read statement by statement as
        before: a read transaction there holds a SHARED lock that would make the agent's commit
        wait for the whole load. A file nobody had open is read immutable (no writer, nothing to
        isolate from). Nested blocks join the outer load. Server backends override
        `_begin_read` / `_end_read` (PostgreSQL: REPEATABLE READ READ ONLY). Raises StoreError
        when the transaction cannot be started; a failure inside the block propagates after the
        transaction was ended.
        """
        if self._snapshot_depth:
            self._snapshot_depth += 1
            try:
                yield self
            finally:
                self._snapshot_depth -= 1
            return
        self.reopen_if_changed()
        self._snapshot_depth = 1
        try:
            self._begin_read()
            yield self
        except BaseException:
            self._snapshot_depth = 0
            try:
                self._end_read(failed=True)
            except Exception:
                pass   # the load's own error is the one to report
            raise
        self._snapshot_depth = 0
        self._end_read()

    def _is_wal(self) -> bool:
        if self._wal is None:
            rows = self._execute("PRAGMA journal_mode", ())
            self._wal = bool(rows) and str(rows[0][0]).lower() == "wal"
        return self._wal

    def _begin_read(self) -> None:
        """Start this load's read transaction when it isolates without delaying writers (see `snapshot`).

        Local files only: a backend without a local file gets no transaction from this default
        (statements read one by one) until it overrides this hook with its own snapshot.
        """
        self._snapshot_conn = None
        if self.conn is None or self.writable or self.immutable or getattr(self.location, "path", None) is None:
            return
        try:
            if not self._is_wal():
                return
            self.conn.execute("BEGIN")
        except BaseException as exc:
            if not contained(exc):
                raise
            raise self._fail(exc) from exc
        self._snapshot_conn = self.conn

    def _end_read(self, failed: bool = False) -> None:
        """End this load's read transaction at once (nothing was written: COMMIT, or ROLLBACK when FAILED,
        only releases the snapshot)."""
        conn, self._snapshot_conn = self._snapshot_conn, None
        if conn is None or conn is not self.conn:
            return   # none was started, or its connection was replaced (closing it ended the transaction)
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK" if failed else "COMMIT")
        except BaseException as exc:
            if not contained(exc):
                raise
            raise self._fail(exc) from exc

    @property
    def in_snapshot(self) -> bool:
        """Return True inside a `snapshot()` block."""
        return self._snapshot_depth > 0

    def fingerprint(self) -> Hashable:
        """Return a cheap value that changes when another process commits to the store; read-only.

        The studio polls it at a gentle interval (live refresh) and reloads when it changes. A local
        file: `data_version` (SQLite's `PRAGMA data_version` plus reopens, two stat calls, no table
        read). A store without a local file (a server backend that does not override this) gets
        `content_fingerprint()`, one statement over Mastra's tables.
        """
        if getattr(self.location, "path", None) is None:
            return self.content_fingerprint()
        return self.data_version()

    def content_fingerprint(self) -> str:
        """Return a digest of row counts and newest `updatedAt` of Mastra's tables, in one SELECT (any SQL backend).

        Catches inserts and deletes (counts), a message saved with a later `createdAt`, and updates
        that stamp `updatedAt` (threads, OM rows, resources; Mastra stamps a thread whenever it saves
        its messages). For backends with no cheaper change counter: a libSQL server (RemoteStore uses
        this default) and PostgreSQL (PgStore, under its write counters).
        """
        parts = ["(SELECT count(*) FROM mastra_threads)", '(SELECT max("updatedAt") FROM mastra_threads)',
                 "(SELECT count(*) FROM mastra_messages)", '(SELECT max("createdAt") FROM mastra_messages)']
        if self.schema.has_observational_memory:
            parts += ["(SELECT count(*) FROM mastra_observational_memory)",
                      '(SELECT max("updatedAt") FROM mastra_observational_memory)']
        if self.schema.has_table(sc.RESOURCES):
            parts += ["(SELECT count(*) FROM mastra_resources)", '(SELECT max("updatedAt") FROM mastra_resources)']
        row = self._rows("SELECT " + ", ".join(parts))[0]
        import hashlib  # here: only a change check needs it (hashlib loads OpenSSL, ~2 ms at startup)

        return hashlib.sha256(repr([str(v) for v in row]).encode()).hexdigest()[:16]

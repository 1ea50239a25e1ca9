"""Read a Mastra memory: resources, threads, messages and Observational Memory generations.

`MemoryStore` is the read API the engine, the CLI and the studio use, whatever holds the memory. It
is made of one backend (`studio.store.backends.Backend`: a local file, a libSQL server or
PostgreSQL), which connects, runs the statements and isolates a load, and of the reads written here
once, in SQL the backend's dialect completes (`backend.sql`: Mastra's orders and time comparisons
per store). Open one with `studio.store.open_store(target)`; it is read-only unless opened with
`writable=True`, which only an explicit user write does.

A *load* is what one CLI command or one studio task reads: `with store.snapshot():` around it
makes every read inside see the store as of one moment, and ends at once when the block ends.
`fingerprint()` is the cheap value the studio polls to notice writes by other processes (live
refresh). What each backend does for both: docs/store-layers.md.

Modules that query the store beyond these methods (studio.store.history, thread_list,
message_queries, batch) use its public query API: `rows`, `select_rows`, `select_column`,
`select_threads`, `select_messages`, `fetch_messages`, `rows_and_threads` / `rows_and_messages`
(a count and its page in one round trip), and `sql` for the dialect's expressions.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager, suppress

from studio.store import schema as sc
from studio.store.backends import RowsRead, SelectRead, decode_all, decode_columns
from studio.store.cells import bulk_decode, damaged_columns
from studio.store.records import (
    Message,
    OMRecord,
    Resource,
    Thread,
    om_record_from_row,
    parse_json,
    threads_from_values,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Iterator
    from typing import Any

    from studio.store.backends import Backend, ReadSql
    from studio.store.target import Target

__all__ = ["MESSAGE_COLUMNS", "RESOURCE_COLUMNS", "THREAD_COLUMNS", "MemoryStore"]

THREAD_COLUMNS = ["id", "resourceId", "title", "metadata", "createdAt", "updatedAt"]
RESOURCE_COLUMNS = ["id", "workingMemory", "metadata", "createdAt", "updatedAt"]
MESSAGE_COLUMNS = ["id", "thread_id", "content", "role", "type", "createdAt", "resourceId"]


def message_reader(present: list[str], decode: Callable[[Any], list], encoding: str) -> Callable[[Any], Message]:
    """Return the function turning one fetched row of PRESENT message columns into a Message.

    DECODE is the backend's (`Backend.select`); `content` may stay as fetched (its bytes, `lazy`):
    `Message.stored` decodes and parses it when it is first used (recall of 20,007 messages looks at
    few of them), and names it in `damaged_text` if its bytes are not valid text.
    """
    at = {c: i for i, c in enumerate(present)}
    i_id, i_thread, i_content, i_role, i_type, i_created, i_resource = (at.get(c, -1) for c in MESSAGE_COLUMNS)

    def read(row: Any) -> Message:
        v = decode(row)
        damaged = damaged_columns(present, v)
        return Message.stored(v[i_id], v[i_thread] if i_thread >= 0 else None,
                              (v[i_role] if i_role >= 0 else None) or "",
                              v[i_content] if i_content >= 0 else None, v[i_created] if i_created >= 0 else None,
                              v[i_resource] if i_resource >= 0 else None, v[i_type] if i_type >= 0 else None,
                              damaged, encoding)
    return read


def messages_from_rows(present: list[str], fetched: list, decode: Callable[[Any], list],
                       encoding: str) -> list[Message]:
    """Return the Messages of FETCHED rows of PRESENT message columns, each as `message_reader` makes it.

    The rows are decoded at once, column by column (`decode_columns`, which says whether a value may be damaged
    text), not row by row; with every column there and none damaged, the Messages are then made from the
    columns with no call between.
    """
    if not fetched:
        return []
    columns, damaged = decode_columns(decode, fetched)
    at = {c: i for i, c in enumerate(present)}
    if damaged or any(c not in at for c in MESSAGE_COLUMNS):
        read = message_reader(present, list, encoding)
        return [read(r) for r in zip(*columns)]  # noqa: B905  (columns of one length)
    ids, threads, contents, roles, types, created, resources = (columns[at[c]] for c in MESSAGE_COLUMNS)
    if not all(roles):   # a NULL or empty role is ""
        roles = [r or "" for r in roles]
    return list(map(Message.stored, ids, threads, roles, contents, created, resources, types,
                    itertools.repeat(()), itertools.repeat(encoding)))


#: Lookup keys named per statement when `om_lookup_keys` reads only some (SQLite allows 32,766 parameters).
KEYS_CHUNK = 500

class MemoryStore:
    """A Mastra memory opened for reading (default) or for one user-requested write, over BACKEND.

    Opening (`studio.store.open_store`) raises StoreError (missing, not SQLite, locked,
    unreachable, refused) or SchemaError (no Mastra tables). Every read raises StoreError when the
    backend fails mid-read; none lets a driver panic escape.
    """

    def __init__(self, backend: Backend):
        self.backend = backend
        self._snapshot_depth = 0

    # -- what was opened -------------------------------------------------------------------

    @property
    def location(self) -> Target:
        """The parsed target (`display`: as the user sees it, secrets redacted; `path`: None for a server)."""
        return self.backend.location

    @property
    def schema(self) -> sc.Schema:
        """The Mastra tables and columns present."""
        return self.backend.schema

    @property
    def writable(self) -> bool:
        """True when opened for one user-requested write (a local file only)."""
        return self.backend.writable

    @property
    def notices(self) -> tuple[str, ...]:
        """Sentences the user should see about how the store was opened (status bar; the CLI warns)."""
        return self.backend.notices

    @property
    def write_note(self) -> str | None:
        """What a write's confirmation must add about this store (a standalone MongoDB server: the write is not
        atomic there); None when every write is one transaction (every other store)."""
        return None

    @property
    def sql(self) -> ReadSql:
        """The dialect's read expressions (message order, createdAt as Mastra compares it, …)."""
        return self.backend.sql

    @property
    def dialect(self) -> str:
        """"sqlite" (a libSQL file or server) or "postgresql": the SQL the reads are written in."""
        return self.backend.sql.name

    @property
    def encoding(self) -> str:
        """The codec of the stored text ("utf-8", or a UTF-16 file's): what content left as fetched is in."""
        return self.backend.encoding

    @property
    def message_order(self) -> str:
        """ORDER BY of messages in Mastra's storage order (libSQL: createdAt then insertion; pg: then id)."""
        return self.backend.sql.message_order

    def close(self) -> None:
        """Close the backend's connection (the store's data is left as it was)."""
        self.backend.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- loads and live refresh ------------------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[MemoryStore]:
        """Run one load: every read inside the block sees the store as of one moment; yields the store.

        What the snapshot is depends on the backend (`Backend.begin_read`): one WAL read
        transaction on a file (a file in rollback-journal mode, or one nobody had open, is read
        statement by statement), one read stream on a libSQL server, one REPEATABLE READ READ ONLY
        transaction on PostgreSQL; none of them delays a writer. Nested blocks join the outer load.
        Raises StoreError when the snapshot cannot be started; a failure inside the block propagates
        after the snapshot was ended.
        """
        if self._snapshot_depth:
            self._snapshot_depth += 1
            try:
                yield self
            finally:
                self._snapshot_depth -= 1
            return
        self._snapshot_depth = 1
        try:
            self.backend.begin_read()
            yield self
        except BaseException:
            self._snapshot_depth = 0
            with suppress(Exception):  # the load's own error is the one to report
                self.backend.end_read(failed=True)
            raise
        self._snapshot_depth = 0
        self.backend.end_read()

    @property
    def in_snapshot(self) -> bool:
        """Return True inside a `snapshot()` block."""
        return self._snapshot_depth > 0

    @property
    def fingerprint_in_snapshot(self) -> bool:
        """True when `fingerprint()` read inside `snapshot()` describes that snapshot's state, so a load may
        read it last (server stores); False for a local file, whose load reads it before anything else."""
        return self.backend.fingerprint_in_snapshot

    def fingerprint(self) -> Hashable:
        """Return a cheap value that changes when another process commits to the store; read-only.

        The studio polls it at a gentle interval (live refresh) and reloads when it changes. A local
        file: SQLite's `PRAGMA data_version` plus reopens (two stat calls, no table read); a libSQL
        server: `content_fingerprint()`; PostgreSQL: its write counters, plus `content_fingerprint()`.
        """
        return self.backend.fingerprint()

    def content_fingerprint(self) -> str:
        """Return a digest of row counts and newest `updatedAt` of Mastra's tables, in one SELECT."""
        from studio.store.backends import content_fingerprint

        return content_fingerprint(self.backend)

    # -- the query API of the modules that read through the store --------------------------

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run one read statement written with `?` placeholders; return its rows, text decoded. Raises StoreError."""
        return self.backend.rows(sql, params)

    def select_rows(self, table: str, tail: str = "", params: Iterable[Any] = (),
                    wanted: list[str] | None = None, *, pages: Callable[[str], Any] | None = None) -> list[dict]:
        """SELECT WANTED (default: all) present columns of TABLE with a WHERE/ORDER TAIL (`?` placeholders).

        Rows as dicts, values as Mastra reads them in the libSQL store's form (times as ISO strings,
        JSON as text, damaged text as DamagedText): the same call as a write transaction's
        `select_rows`, so the write protocol (studio.store.write.protocol) reads through either.
        PAGES as `Backend.select`'s. Raises StoreError.
        """
        present, fetched, decode = self.backend.select(table, list(wanted or []), tail, params, pages=pages)
        with bulk_decode():
            return [dict(zip(present, decode(r))) for r in fetched]  # noqa: B905  (per row: strict= slows zip)

    def select_column(self, table: str, column: str, tail: str = "", params: Iterable[Any] = ()) -> list:
        """Return COLUMN of TABLE's rows (WHERE/ORDER TAIL, `?` PARAMS) as `select_rows` reads it, one value a row.

        Without a dict a row (`threads --all` reads every thread id this way). Raises StoreError.
        """
        return self.backend.select_column(table, column, tail, params)

    def select_threads(self, tail: str = "", params: Iterable[Any] = ()) -> list[Thread]:
        """Return the threads of `SELECT … FROM mastra_threads TAIL` (a WHERE/ORDER tail, `?` params)."""
        present, fetched, decode = self.backend.select(sc.THREADS, list(THREAD_COLUMNS), tail, params)
        with bulk_decode():
            return threads_from_values(present, decode_all(decode, fetched))

    def rows_and_threads(self, sql: str, params: Iterable[Any], tail: str,
                         tail_params: Iterable[Any]) -> tuple[list[tuple], list[Thread]]:
        """`rows(SQL, PARAMS)` and `select_threads(TAIL, TAIL_PARAMS)`, read together.

        A libSQL server sends both in one request, in one read transaction (they see one state of
        the database); other stores read them one after the other, as two calls would. Raises StoreError.
        """
        counted, (present, fetched, decode) = self.backend.read_many(
            [RowsRead(sql, params), SelectRead(sc.THREADS, list(THREAD_COLUMNS), tail, tail_params)])
        with bulk_decode():
            return counted, threads_from_values(present, decode_all(decode, fetched))

    def rows_and_messages(self, sql: str, params: Iterable[Any], tail: str,
                          tail_params: Iterable[Any]) -> tuple[list[tuple], list[Message]]:
        """`rows(SQL, PARAMS)` and `select_messages(TAIL, TAIL_PARAMS)`, read together as `rows_and_threads` reads."""
        counted, (present, fetched, decode) = self.backend.read_many(
            [RowsRead(sql, params), SelectRead(sc.MESSAGES, MESSAGE_COLUMNS, tail, tail_params, "content")])
        with bulk_decode():
            return counted, messages_from_rows(present, fetched, decode, self.backend.encoding)

    def select_threads_counted(self, where: str, params: list[Any], order: str, limit: int | None,
                               offset: int) -> tuple[int, list[Thread]]:
        """Return (the number of threads WHERE matches, the page `WHERE … ORDER BY ORDER LIMIT … OFFSET …`).

        LIMIT None reads every matching thread (OFFSET then 0). On PostgreSQL one statement (the count a
        scalar subquery beside the page's columns, or with LIMIT None the rows read; a page past the end
        costs a second one for the count),
        where MemoryPG.listThreads sends a COUNT(*) and then the page. PostgreSQL only (the other SQL stores
        read the two together with `rows_and_threads`). Threads as `select_threads` makes them (psycopg's
        rows as they are: no copy a row). Raises StoreError.
        """
        paging, bounds = (" LIMIT ? OFFSET ?", [limit, offset]) if limit is not None else ("", [])
        count = f"SELECT COUNT(*) FROM {sc.THREADS} {where}"
        if limit is None:  # every matching thread: the count is the rows' (one snapshot), no second scan for it
            present, fetched, _decode = self.backend.select(sc.THREADS, list(THREAD_COLUMNS),
                                                            f"{where} ORDER BY {order}", params)
            with bulk_decode():
                return len(fetched), threads_from_values(present, fetched)
        present, fetched, _decode = self.backend.select(
            sc.THREADS, list(THREAD_COLUMNS), f"{where} ORDER BY {order}{paging}", [*params, *params, *bounds],
            extra=f"({count})")
        if not fetched:
            return (0 if offset == 0 else int(self.rows(count, params)[0][0])), []
        with bulk_decode():
            return int(fetched[0][-1]), threads_from_values(present, fetched)

    def fetch_messages(self, tail: str = "", params: Iterable[Any] = (),
                       pages: Callable[[str], Any] | None = None) -> tuple[list, Callable[[Any], Message]]:
        """`select_messages` without making the Messages: (rows as fetched, READ turning one row into its Message).

        The whole result is fetched first; a caller that reads a large result a slice at a time drops
        each row once read (studio.store.batch.iter_messages_since_many). PAGES as `Backend.select`'s.
        Raises StoreError.
        """
        present, fetched, decode = self.backend.select(sc.MESSAGES, MESSAGE_COLUMNS, tail, params, lazy="content",
                                                       pages=pages)
        return fetched, message_reader(present, decode, self.backend.encoding)

    def select_messages_counted(self, where: str, params: list[Any], order: str, limit: int | None,
                                offset: int, *, one_thread: str | None = None,
                                descending: bool = False) -> tuple[int, list[Message]]:
        """Return (the number of messages WHERE matches, the page `WHERE … ORDER BY ORDER LIMIT … OFFSET …`).

        LIMIT None reads every matching message (OFFSET then 0). On PostgreSQL one statement, as
        MemoryPG.listMessages reads a page: the count is a scalar subquery beside the page's columns
        (a page past the end, with no row to carry it, costs a second statement for the count, as
        Mastra's does; LIMIT None counts the rows read). PostgreSQL only (the other SQL stores read the
        count and the page together with `rows_and_messages`). Messages as `select_messages` makes them.

        ONE_THREAD: WHERE is `thread_id IN (?)` of this one thread and nothing else, ORDER is
        `"createdAt" …, "id" …` (DESCENDING when DESC). A page past the first is then found on Mastra's
        (thread_id, createdAt) index, which holds no id: the createdAt at position OFFSET and the number
        of rows before it are read from the index alone, and only the rows from that createdAt on are read
        from the table (the page, plus the rows tied with its first); MemoryPG reads every skipped row
        (an OFFSET of 19,990 read 20,030 rows). Needs `createdAt` NOT NULL, as Mastra declares it.

        The count is remembered with the server snapshot it was read in (`backend.totals`, a
        `SnapshotTotals`): the next page of the same WHERE and PARAMS sends that snapshot and the server
        counts again only if its own differs, i.e. a transaction committed since (on a 20,007-message
        thread the count is most of a page's time: 20,007 index entries, or 3,400 table pages before the
        table was vacuumed). A far page with its total remembered counts only the rows before its first
        createdAt. The total is always the one of the statement's own snapshot, as MemoryPG's.
        Raises StoreError.
        """
        paging, bounds = (" LIMIT ? OFFSET ?", [limit, offset]) if limit is not None else ("", [])
        if limit is None:  # every matching message: the count is the rows' (one snapshot), no second scan for it
            messages = self.select_messages(f"{where} ORDER BY {order}", params)
            return len(messages), messages
        from studio.store.backends.pg import SNAPSHOT_SQL

        totals, key = self.backend.totals, (where, *params)
        known = totals.snapshot_of(key)   # the count is read again only if a commit landed since (SnapshotTotals)
        count = f"(SELECT COUNT(*) FROM {sc.MESSAGES} {where})"
        recount = f"CASE WHEN {SNAPSHOT_SQL} = ? THEN NULL ELSE {count} END"
        if one_thread is not None and offset > 0 and (sc.MESSAGES, "createdAt") in self.backend.not_null:
            direction, before, after = ("DESC", ">", "<=") if descending else ("ASC", "<", ">=")
            boundary = (f'WITH b AS MATERIALIZED (SELECT "createdAt" AS t FROM {sc.MESSAGES} WHERE thread_id = ? '
                        f'ORDER BY "createdAt" {direction} LIMIT 1 OFFSET ?), ')
            if known is None:   # the total and the rows before the page's first createdAt: one index scan
                counts = (f'n AS MATERIALIZED (SELECT COUNT(*) AS total, COUNT(*) FILTER (WHERE "createdAt" {before} '
                          f'(SELECT t FROM b)) AS before FROM {sc.MESSAGES} WHERE thread_id = ?) ')
                count_params = [one_thread]
            else:   # the total remembered: only the rows before the page are counted (a range of the index)
                counts = (f'n AS MATERIALIZED (SELECT {recount} AS total, (SELECT COUNT(*) FROM {sc.MESSAGES} '
                          f'WHERE thread_id = ? AND "createdAt" {before} (SELECT t FROM b)) AS before) ')
                count_params = [known, *params, one_thread]
            source = (f'{boundary}{counts}SELECT *, {SNAPSHOT_SQL} AS "__snapshot", (SELECT total FROM n) AS "__total" '
                      f'FROM {sc.MESSAGES} WHERE thread_id = ? AND "createdAt" {after} (SELECT t FROM b) '
                      f"ORDER BY {order} LIMIT ? OFFSET ? - (SELECT before FROM n)")
            extra = '"__snapshot", "__total"'
            source_params = [one_thread, offset, *count_params, one_thread, limit, offset]
        else:  # the page is cut before its columns are rendered (an OFFSET of thousands renders none it skips)
            source = f"SELECT * FROM {sc.MESSAGES} {where} ORDER BY {order}{paging}"
            extra, source_params = f"{SNAPSHOT_SQL}, {recount}", [known, *params, *params, *bounds]
        present, fetched, decode = self.backend.select(
            sc.MESSAGES, MESSAGE_COLUMNS, f"ORDER BY {order}", source_params, lazy="content", extra=extra,
            source=source)
        if not fetched:
            return (0 if offset == 0 else int(self.rows(f"SELECT COUNT(*) FROM {sc.MESSAGES} {where}", params)[0][0]),
                    [])
        total = totals.total(key, fetched[0][-2], fetched[0][-1])
        read = message_reader(present, decode, self.backend.encoding)
        with bulk_decode():
            return total, [read(r[:-2]) for r in fetched]

    def select_messages(self, tail: str = "", params: Iterable[Any] = ()) -> list[Message]:
        """Return the messages of `SELECT … FROM mastra_messages TAIL` (a WHERE/ORDER tail, `?` params).

        Each message's content is decoded and parsed on first use (`Message.stored`). Raises StoreError.
        """
        present, fetched, decode = self.backend.select(sc.MESSAGES, MESSAGE_COLUMNS, tail, params, lazy="content")
        with bulk_decode():
            return messages_from_rows(present, fetched, decode, self.backend.encoding)

    # -- resources and threads -------------------------------------------------------------

    def resource_ids(self) -> list[str]:
        """Return every resource id that owns a thread, has a resources row or an OM record, sorted."""
        ids = {r[0] for r in self.rows('SELECT DISTINCT "resourceId" FROM mastra_threads') if r[0] is not None}
        if self.schema.has_table(sc.RESOURCES):
            ids |= {r[0] for r in self.rows("SELECT id FROM mastra_resources") if r[0] is not None}
        if self.schema.has_column(sc.OBSERVATIONAL_MEMORY, "resourceId"):
            ids |= {r[0] for r in self.rows('SELECT DISTINCT "resourceId" FROM mastra_observational_memory')
                    if r[0] is not None}
        return sorted(ids)

    def get_resource(self, resource_id: str) -> Resource | None:
        """Return the `mastra_resources` row for RESOURCE_ID, or None."""
        if not self.schema.has_table(sc.RESOURCES):
            return None
        rows = self.select_rows(sc.RESOURCES, "WHERE id = ?", (resource_id,), RESOURCE_COLUMNS)
        if not rows:
            return None
        row = rows[0]
        meta, err = parse_json(row.get("metadata"))
        return Resource(id=row["id"], working_memory=row.get("workingMemory"), metadata=meta,
                        created_at=row.get("createdAt"), updated_at=row.get("updatedAt"), metadata_error=err)

    def list_threads(self, resource_id: str | None = None, *, with_counts: bool = False) -> list[Thread]:
        """Return threads (all, or RESOURCE_ID's), newest `createdAt` first like Mastra's listThreads
        (ties: libSQL in insertion order, newest first; PostgreSQL by id, as MemoryPG.listThreads)."""
        where, params = ('WHERE "resourceId" = ?', (resource_id,)) if resource_id is not None else ("", ())
        threads = self.select_threads(f"{where} ORDER BY {self.sql.thread_order}", params)
        if with_counts:
            stats = self.message_stats()
            for t in threads:
                t.message_count, t.newest_message_at = stats.get(t.id, (0, None))
        return threads

    def get_thread(self, thread_id: str) -> Thread | None:
        """Return the thread THREAD_ID, or None if it does not exist."""
        threads = self.select_threads("WHERE id = ?", (thread_id,))
        return threads[0] if threads else None

    def message_counts(self) -> dict[str, int]:
        """Return {thread id: number of stored messages}."""
        rows = self.rows("SELECT thread_id, COUNT(*) FROM mastra_messages GROUP BY thread_id")
        return {r[0]: int(r[1]) for r in rows}

    def message_stats(self, thread_ids: Iterable[str] | None = None,
                      chunk: int = 400) -> dict[str, tuple[int, str | None]]:
        """Return {thread id: (number of stored messages, createdAt of the newest as an ISO string)} in one pass.

        The newest createdAt is the largest stored string on libSQL (Mastra writes ISO-8601 UTC, which
        sorts as time); the (thread_id, createdAt) index Mastra creates covers the query. THREAD_IDS:
        only those threads (CHUNK ids per statement; a thread without messages is left out), read
        through the index (the work of a live refresh grows with the threads it re-reads).
        """
        newest = self.sql.iso(f"MAX({self.sql.created(sc.MESSAGES)})")
        select = f"SELECT thread_id, COUNT(*), {newest} FROM mastra_messages"
        if thread_ids is None:
            return {r[0]: (int(r[1]), r[2]) for r in self.rows(f"{select} GROUP BY thread_id")}
        ids, out = list(dict.fromkeys(thread_ids)), {}
        for i in range(0, len(ids), chunk):
            part = ids[i:i + chunk]
            out.update({r[0]: (int(r[1]), r[2]) for r in self.rows(
                f"{select} WHERE thread_id IN ({', '.join('?' * len(part))}) GROUP BY thread_id", part)})
        return out

    def newest_message_at(self, thread_id: str) -> str | None:
        """Return the createdAt (ISO) of THREAD_ID's newest message, or None when it has none."""
        newest = self.sql.iso(f"MAX({self.sql.created(sc.MESSAGES)})")
        rows = self.rows(f"SELECT {newest} FROM mastra_messages WHERE thread_id = ?", (thread_id,))
        return rows[0][0] if rows else None

    def message_count(self, thread_id: str) -> int:
        """Return the number of stored messages of THREAD_ID (uses the thread_id index)."""
        return int(self.rows("SELECT COUNT(*) FROM mastra_messages WHERE thread_id = ?", (thread_id,))[0][0])

    def timestamp_twin_mismatches(self) -> list[dict]:
        """Return the rows whose `"<col>Z"` twin disagrees with its column (PostgreSQL; a libSQL store has no
        twins: []); see `studio.store.backends.pg.timestamp_twin_mismatches`."""
        if self.dialect != "postgresql":
            return []
        from studio.store.backends.pg import timestamp_twin_mismatches

        return timestamp_twin_mismatches(self.backend)

    # -- messages --------------------------------------------------------------------------

    def list_messages(self, thread_id: str, *, since: str | None = None, limit: int | None = None,
                      offset: int = 0) -> list[Message]:
        """Return THREAD_ID's messages in Mastra's storage order (`message_order`).

        SINCE (ISO string) keeps messages with `createdAt >= since` as Mastra's store compares its
        dateRange.start (libSQL: the stored strings; PostgreSQL: the TIMESTAMPTZ twin first).
        LIMIT/OFFSET page the result.
        """
        cond, params = self._since(since)
        tail = f"WHERE thread_id = ?{cond} ORDER BY {self.message_order}"
        params = [thread_id, *params]
        if limit is not None:
            tail += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return self.select_messages(tail, params)

    def list_resource_messages(self, resource_id: str, *, since: str | None = None) -> list[Message]:
        """Return every message of RESOURCE_ID across its threads, `createdAt` ASC (listMessagesByResourceId)."""
        cond, params = self._since(since)
        tail = f'WHERE "resourceId" = ?{cond} ORDER BY {self.message_order}'
        return self.select_messages(tail, [resource_id, *params])

    def _since(self, since: str | None) -> tuple[str, list]:
        """The ` AND …` condition and params keeping messages created at or after SINCE (an ISO string)."""
        if since is None:
            return "", []
        return f" AND {self.sql.created(sc.MESSAGES)} >= {self.sql.time_param}", [since]

    def messages_since_many(self, wanted: Iterable[tuple[str, str | None]], *, by: str = "thread") -> dict:
        """{(id, since): `list_messages(id, since=…)`} for WANTED (BY="resource": resource ids), one statement."""
        from studio.store import batch  # imported by the reads that batch (a `threads` command reads none)

        return batch.messages_since_many(self.fetch_messages, self.sql, wanted, by)

    def iter_messages_since_many(self, wanted: Iterable[tuple[str, str | None]], *,
                                 by: str = "thread") -> Iterator[tuple[tuple[str, str | None], list[Message]]]:
        """((id, since), `list_messages(id, since=…)`) for WANTED one pair at a time, one statement (batch)."""
        from studio.store import batch

        return batch.iter_messages_since_many(self.fetch_messages, self.sql, wanted, by)

    def message_rows(self, thread_ids: list[str], cursors: dict[str, str | None] | None = None, *,
                     invalid_json: bool = False) -> list[tuple]:
        """Return the rows of THREAD_IDS' messages, by thread then storage order: what the memory doctor reads.

        Each row a tuple of MESSAGE_COLUMNS' values (None for a column the table lacks), decoded as
        `select_rows` decodes them but for `content`, left as fetched (`Backend.select`'s LAZY: text,
        NULL, a number, or its bytes in the store's encoding; `studio.store.cells.decode_text` decodes
        them). Within a thread the order is `list_messages`' (createdAt, then id on PostgreSQL, rowid on
        SQLite, as `iter_messages_since_many` reads them). The columns are decoded a column at a time
        (`decode_all`), with no dict a row.

        CURSORS ({thread id: since, a `storage_cursor` or None}; SQL stores): each row then ends with
        whether `list_messages(thread, since=…)` returns it (1 or 0: the same comparison, made in the same
        statement; None for a thread CURSORS does not name), so that a status reads its messages from these
        rows (`studio.app.thread_results`). INVALID_JSON (SQLite): each row then ends (after that) with 1
        when its content is text SQLite's json_valid rejects (`invalid_json_message_ids`), else 0: one
        statement reads both. Raises StoreError.
        """
        if not thread_ids:
            return []
        marks = ", ".join("?" * len(thread_ids))
        tie = ", rowid" if self.sql.name == "sqlite" else ""
        extra, before = [], []
        if cursors:
            since = f"{self.sql.created(sc.MESSAGES)} >= {self.sql.time_param}"
            extra.append("CASE thread_id " + " ".join(
                f"WHEN ? THEN {'1' if cursor is None else f'CASE WHEN {since} THEN 1 ELSE 0 END'}"
                for cursor in cursors.values()) + " END")
            before = [x for thread, cursor in cursors.items()
                      for x in ((thread,) if cursor is None else (thread, cursor))]
        if invalid_json:
            if self.dialect != "sqlite":
                raise ValueError("invalid_json: SQLite stores only (json_valid)")
            extra.append("typeof(content) = 'text' AND json_valid(content) = 0")
        present, fetched, decode = self.backend.select(
            sc.MESSAGES, MESSAGE_COLUMNS, f"WHERE thread_id IN ({marks}) ORDER BY thread_id, {self.message_order}{tie}",
            [*before, *thread_ids], lazy="content", extra=", ".join(extra) or None)
        with bulk_decode():
            rows = decode_all(decode, fetched)
        if present != MESSAGE_COLUMNS:   # a column missing from an old schema: None in its place
            at = [present.index(c) if c in present else None for c in MESSAGE_COLUMNS]
            rows = [tuple(None if i is None else r[i] for i in at) + tuple(r[len(present):]) for r in rows]
        return rows

    def invalid_json_message_ids(self, thread_ids: list[str]) -> set[str]:
        """Return the ids of THREAD_IDS' messages whose text content is not JSON (Mastra's JSON.parse fails).

        libSQL: SQLite's json_valid() decides, in SQL; PostgreSQL (TEXT content, no json_valid): read and parsed here.
        """
        if not thread_ids:
            return set()
        marks = ", ".join("?" * len(thread_ids))
        if self.dialect != "postgresql":
            return {r[0] for r in self.rows(f"SELECT id FROM mastra_messages WHERE thread_id IN ({marks}) "
                                            "AND typeof(content) = 'text' AND json_valid(content) = 0", thread_ids)}
        import json

        bad = set()
        for message_id, content in self.rows(f"SELECT id, content FROM mastra_messages WHERE thread_id IN ({marks})",
                                             thread_ids):
            if content is None:
                continue
            try:
                json.loads(content)
            except ValueError:
                bad.add(message_id)
        return bad

    def message_threads(self, message_ids: list[str], chunk: int = 400) -> dict[str, str]:
        """Return {message id: thread id} for those of MESSAGE_IDS that exist (CHUNK ids per query)."""
        out: dict[str, str] = {}
        for i in range(0, len(message_ids), chunk):
            part = message_ids[i:i + chunk]
            out.update({r[0]: r[1] for r in self.rows(
                f"SELECT id, thread_id FROM mastra_messages WHERE id IN ({', '.join('?' * len(part))})", part)})
        return out

    # -- observational memory --------------------------------------------------------------

    def om_lookup_keys(self, only: list[str] | None = None) -> list[dict]:
        """Return one dict {lookupKey, scope, resourceId, threadId} per OM lookup key, sorted by key.

        ONLY: just these lookup keys (`thread:<id>` / `resource:<id>`; those without a record are left out),
        read in statements of KEYS_CHUNK keys: a live refresh's few threads cost their keys, not the store's."""
        if not self.schema.has_observational_memory:
            return []
        cols = [c for c in ("lookupKey", "scope", "resourceId", "threadId")
                if self.schema.has_column(sc.OBSERVATIONAL_MEMORY, c)]
        sel = ", ".join(sc.quote_ident(c) for c in cols)
        if only is None:
            rows = self.rows(f'SELECT DISTINCT {sel} FROM mastra_observational_memory ORDER BY "lookupKey"')
        else:
            wanted = sorted(set(only))
            rows = []
            for i in range(0, len(wanted), KEYS_CHUNK):
                part = wanted[i:i + KEYS_CHUNK]
                rows += self.rows(f'SELECT DISTINCT {sel} FROM mastra_observational_memory WHERE "lookupKey" IN '
                                  f'({", ".join("?" * len(part))}) ORDER BY "lookupKey"', part)
        out, seen = [], set()
        for r in rows:
            d = dict(zip(cols, r))  # noqa: B905  (per row: strict= slows zip)
            if d["lookupKey"] in seen:
                continue
            seen.add(d["lookupKey"])
            d.setdefault("scope", "resource" if str(d["lookupKey"]).startswith("resource:") else "thread")
            out.append(d)
        return out

    def om_history(self, lookup_key: str, limit: int | None = None) -> list[OMRecord]:
        """Return LOOKUP_KEY's generations, newest (highest generationCount) first."""
        if not self.schema.has_observational_memory:
            return []
        tail, params = 'WHERE "lookupKey" = ? ORDER BY "generationCount" DESC', [lookup_key]
        if limit is not None:
            tail += " LIMIT ?"
            params.append(limit)
        return [om_record_from_row(r) for r in self.select_rows(sc.OBSERVATIONAL_MEMORY, tail, params)]

    def om_histories(self, lookup_keys: Iterable[str] | None = None, chunk: int = 500) -> dict[str, list[OMRecord]]:
        """Return {lookup key: its generations, newest first} for LOOKUP_KEYS, CHUNK keys per query;
        None: every lookup key, in one statement (studio.store.batch).

        Every key asked for is in the result (an empty list when it has no row).
        """
        if lookup_keys is None:
            if not self.schema.has_observational_memory:
                return {}
            from studio.store import batch  # imported by the reads that batch (a `threads` command reads none)

            return batch.om_histories(self.select_rows, self.sql)
        keys = list(dict.fromkeys(lookup_keys))
        out: dict[str, list[OMRecord]] = {k: [] for k in keys}
        if not self.schema.has_observational_memory:
            return out
        for i in range(0, len(keys), chunk):
            part = keys[i:i + chunk]
            rows = self.select_rows(sc.OBSERVATIONAL_MEMORY, f'WHERE "lookupKey" IN ({", ".join("?" * len(part))}) '
                                    'ORDER BY "lookupKey", "generationCount" DESC', part)
            for row in rows:
                out.setdefault(row["lookupKey"], []).append(om_record_from_row(row))
        return out

    def om_current(self, lookup_key: str) -> OMRecord | None:
        """Return LOOKUP_KEY's current record (highest generationCount), or None."""
        rows = self.om_history(lookup_key, limit=1)
        return rows[0] if rows else None

    def om_record(self, record_id: str) -> OMRecord | None:
        """Return the OM generation with id RECORD_ID, or None."""
        if not self.schema.has_observational_memory:
            return None
        rows = self.select_rows(sc.OBSERVATIONAL_MEMORY, "WHERE id = ?", (record_id,))
        return om_record_from_row(rows[0]) if rows else None

    def om_current_all(self) -> dict[str, OMRecord]:
        """Return {lookupKey: current record} for every OM lookup key, in one query."""
        return self._om_current_where("", ())

    def om_current_many(self, lookup_keys: Iterable[str], chunk: int = 400) -> dict[str, OMRecord]:
        """Return {lookupKey: current record} for the LOOKUP_KEYS that have one (CHUNK keys per query)."""
        keys = list(dict.fromkeys(lookup_keys))
        out: dict[str, OMRecord] = {}
        for i in range(0, len(keys), chunk):
            part = keys[i:i + chunk]
            out.update(self._om_current_where(f'AND o."lookupKey" IN ({", ".join("?" * len(part))})', part))
        return out

    def _om_current_where(self, condition: str, params: Iterable[Any]) -> dict[str, OMRecord]:
        if not self.schema.has_observational_memory:
            return {}
        rows = self.select_rows(
            sc.OBSERVATIONAL_MEMORY,
            'AS o WHERE "generationCount" = (SELECT MAX(i."generationCount") FROM mastra_observational_memory AS i '
            f'WHERE i."lookupKey" = o."lookupKey") {condition} ORDER BY "lookupKey"', params)
        return {r["lookupKey"]: om_record_from_row(r) for r in rows}

    def lookup_key_for_thread(self, thread: Thread) -> str | None:
        """Return the OM lookup key that governs THREAD (thread scope first, then its resource), or None."""
        if not self.schema.has_column(sc.OBSERVATIONAL_MEMORY, "lookupKey"):
            return None
        candidates = [f"thread:{thread.id}", f"resource:{thread.resource_id}"]
        found = {r[0] for r in self.rows(
            'SELECT DISTINCT "lookupKey" FROM mastra_observational_memory WHERE "lookupKey" IN (?, ?)', candidates)}
        return next((key for key in candidates if key in found), None)

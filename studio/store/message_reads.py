"""The message reads of a store: storage-order lists, batched windows, raw rows for the doctor.

`MessageReads` is mixed into `MemoryStore` (studio.store.memory_store) and works through its
`_select`, `_select_undecoded`, `_decode_row`, `_rows`, `encoding` and `MESSAGE_ORDER`; PgStore and
RemoteStore share it (PgStore overrides the pieces whose SQL differs). A message's content is kept
as stored and parsed on first use (`Message.stored`).
"""

from __future__ import annotations

from studio.store import schema as sc
from studio.store.cells import DamagedText, bulk_decode
from studio.store.records import Message

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator

MESSAGE_COLUMNS = ["id", "thread_id", "content", "role", "type", "createdAt", "resourceId"]


def _damaged_columns(columns, values) -> tuple[str, ...]:
    """Return those of COLUMNS whose VALUES (same order) were read as DamagedText (bytes not valid UTF-8)."""
    values = list(values)
    if DamagedText not in set(map(type, values)):  # the common case, checked in C
        return ()
    return tuple(c for c, v in zip(columns, values) if isinstance(v, DamagedText))


def _damaged(row: dict) -> tuple[str, ...]:
    """Return the columns of ROW read as DamagedText (bytes that were not valid UTF-8)."""
    return _damaged_columns(row.keys(), row.values())


class MessageReads:
    """Message reads over the store's `_select` / `_select_undecoded` / `_rows` (see module doc)."""

    def _message(self, row: dict) -> Message:
        return Message.stored(row["id"], row.get("thread_id"), row.get("role") or "", row.get("content"),
                              row.get("createdAt"), row.get("resourceId"), row.get("type"), _damaged(row),
                              self.encoding)

    def _message_reader(self, present: list[str], decode: Callable[[tuple], list]) -> Callable[[tuple], Message]:
        """Return a function turning one fetched row of PRESENT message columns (`_select_undecoded`'s
        rows and DECODE) into a Message, as `_message` of the decoded row would, except that `content`
        stays as fetched: `Message.stored` decodes and parses it when it is first used (recall of
        20,007 messages looks at few of them)."""
        at = {c: i for i, c in enumerate(present)}
        i_id, i_thread, i_content, i_role, i_type, i_created, i_resource = (at.get(c, -1) for c in MESSAGE_COLUMNS)
        encoding = self.encoding
        if decode == self._decode_row and i_content >= 0:
            whole = self._decode_row

            def decode(row: tuple, whole=whole, at: int = i_content) -> list:  # noqa: F811
                values = whole((*row[:at], None, *row[at + 1:]))
                values[at] = row[at]
                return values

        def read(row: tuple) -> Message:
            v = decode(row)
            damaged = _damaged_columns(present, v)
            return Message.stored(v[i_id], v[i_thread] if i_thread >= 0 else None, (v[i_role] if i_role >= 0 else None) or "",
                                  v[i_content] if i_content >= 0 else None, v[i_created] if i_created >= 0 else None,
                                  v[i_resource] if i_resource >= 0 else None, v[i_type] if i_type >= 0 else None,
                                  damaged, encoding)
        return read

    def select_messages(self, tail: str = "", params: Iterable[Any] = ()) -> list[Message]:
        """Return the messages of `SELECT … FROM mastra_messages TAIL` (a WHERE/ORDER tail, `?` params).

        Each message's content is decoded and parsed on first use (`Message.stored`). Raises StoreError.
        """
        present, rows, decode = self._select_undecoded(sc.MESSAGES, MESSAGE_COLUMNS, tail, params)
        read = self._message_reader(present, decode)
        with bulk_decode():
            return [read(r) for r in rows]

    def list_messages(self, thread_id: str, *, since: str | None = None, limit: int | None = None,
                      offset: int = 0) -> list[Message]:
        """Return THREAD_ID's messages in Mastra's storage order (`createdAt` ASC, then insertion).

        SINCE (ISO string) keeps messages with `createdAt >= since`, compared as strings exactly as
        Mastra's libSQL store compares its dateRange.start. LIMIT/OFFSET page the result.
        """
        cond, params = self._since(since)
        tail = f"WHERE thread_id = ?{cond} ORDER BY {self.MESSAGE_ORDER}"
        params = [thread_id, *params]
        if limit is not None:
            tail += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return self.select_messages(tail, params)

    def list_resource_messages(self, resource_id: str, *, since: str | None = None) -> list[Message]:
        """Return every message of RESOURCE_ID across its threads, `createdAt` ASC (listMessagesByResourceId)."""
        cond, params = self._since(since)
        tail = f'WHERE "resourceId" = ?{cond} ORDER BY {self.MESSAGE_ORDER}'
        return self.select_messages(tail, [resource_id, *params])

    def _since(self, since: str | None) -> tuple[str, list]:
        """The ` AND …` condition and params keeping messages created at or after SINCE (an ISO string).

        libSQL compares the stored strings, as Mastra's libSQL store compares dateRange.start.
        """
        return ("", []) if since is None else (' AND "createdAt" >= ?', [since])

    def messages_since_many(self, wanted: Iterable[tuple[str, str | None]], *, by: str = "thread") -> dict:
        """{(id, since): `list_messages(id, since=…)`} for WANTED (BY="resource": resource ids), one statement."""
        from studio.store import batch  # imported by the reads that batch (a `threads` command reads none)

        return batch.messages_since_many(self, wanted, by)

    def iter_messages_since_many(self, wanted: Iterable[tuple[str, str | None]], *,
                                 by: str = "thread") -> Iterator[tuple[tuple[str, str | None], list[Message]]]:
        """((id, since), `list_messages(id, since=…)`) for WANTED one pair at a time, one statement (batch)."""
        from studio.store import batch

        return batch.iter_messages_since_many(self, wanted, by)

    def iter_all_messages(self, batch: int = 2000) -> Iterator[Message]:
        """Yield every message of the database ordered by thread then `createdAt`, BATCH rows at a time."""
        offset = 0
        while True:
            rows = self._select(sc.MESSAGES, MESSAGE_COLUMNS,
                                f"ORDER BY thread_id, {self.MESSAGE_ORDER} LIMIT ? OFFSET ?", (batch, offset))
            for r in rows:
                yield self._message(r)
            if len(rows) < batch:
                return
            offset += batch

    def message_rows(self, thread_ids: list[str]) -> list[dict]:
        """Return the raw rows {id, thread_id, content (JSON text), role, type, createdAt, resourceId} of
        THREAD_IDS' messages, by thread then createdAt (storage order): what the memory doctor reads."""
        if not thread_ids:
            return []
        marks = ", ".join("?" * len(thread_ids))
        return self._select(sc.MESSAGES, MESSAGE_COLUMNS,
                            f'WHERE thread_id IN ({marks}) ORDER BY thread_id, "createdAt" ASC', thread_ids)

    def invalid_json_message_ids(self, thread_ids: list[str]) -> set[str]:
        """Return the ids of THREAD_IDS' messages whose text content SQLite's json_valid() rejects."""
        if not thread_ids:
            return set()
        marks = ", ".join("?" * len(thread_ids))
        return {r[0] for r in self._rows(f"SELECT id FROM mastra_messages WHERE thread_id IN ({marks}) "
                                         "AND typeof(content) = 'text' AND json_valid(content) = 0", thread_ids)}

    def message_threads(self, message_ids: list[str], chunk: int = 400) -> dict[str, str]:
        """Return {message id: thread id} for those of MESSAGE_IDS that exist (CHUNK ids per query)."""
        out: dict[str, str] = {}
        for i in range(0, len(message_ids), chunk):
            part = message_ids[i:i + chunk]
            out.update({r[0]: r[1] for r in self._rows(
                f"SELECT id, thread_id FROM mastra_messages WHERE id IN ({', '.join('?' * len(part))})", part)})
        return out

"""Stored messages as the doctor reads them: raw content first, parsed only when a check needs it.

Parsing every message's JSON would dominate a run on a large file; most checks decide from the
raw text (duplicates compare it, the window needs only ids and times unless OM marker parts are
present, size checks bound the estimate from its length). `StoredMessage.message` parses on demand.
"""

from __future__ import annotations

from typing import Any

from studio.store.cells import DamagedText, damaged_columns, decode_text
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, iso_to_ms

_ALNUM = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123))
#: Per-message slack of the estimate bound: role, the 3.8 overhead, tool-call adjustments (tokens).
BOUND_SLACK = 200
#: The message columns but content, in the order `Message.stored` names damaged ones.
_NOT_CONTENT = ("id", "thread_id", "role", "type", "createdAt", "resourceId")


class StoredMessage:
    """One `mastra_messages` row: id, thread, role, createdAt and the raw content text.

    `message` is the row's Message as the store reads it (`Message.stored`: the content parsed
    once, on first use, the same object for every check and status that asks); `created_ms` epoch
    ms or None; `invalid_json` is set by the loader when SQLite's json_valid rejects the content.
    """

    __slots__ = (
        "_content",
        "_message",
        "_ms",
        "created_at",
        "id",
        "invalid_json",
        "raw",
        "resource_id",
        "role",
        "thread_id",
        "type",
    )

    def __init__(self, row: tuple, encoding: str = "utf-8"):
        """ROW: a `store.message_rows` row (MESSAGE_COLUMNS' values first, content as fetched, in ENCODING when
        bytes)."""
        self.id, self.thread_id, content, role = row[0], row[1], row[2], row[3]
        self.type, self.created_at, self.resource_id = row[4], row[5], row[6]
        self.role = role or ""
        if isinstance(content, (bytes, bytearray)):   # text as fetched: decoded as `select_rows` decodes it
            try:
                content = content.decode(encoding)
            except UnicodeDecodeError:
                content = decode_text(content, encoding)
        self._content = content
        self.raw = content if isinstance(content, str) else ("" if content is None else str(content))
        self.invalid_json = False
        self._ms: Any = False
        self._message: Message | None = None

    @property
    def created_ms(self) -> int | None:
        """Return createdAt as epoch milliseconds (None when missing or unparseable)."""
        if self._ms is False:
            self._ms = iso_to_ms(self.created_at)
        return self._ms

    @property
    def message(self) -> Message:
        """Return the parsed Message (`Message.stored` of the row: the content parsed as the store parses it)."""
        if self._message is None:
            damaged = damaged_columns(_NOT_CONTENT, (self.id, self.thread_id, self.role, self.type, self.created_at,
                                                     self.resource_id))
            if isinstance(self._content, DamagedText):   # named last, as `Message.stored` names it once decoded
                damaged = (*damaged, "content")
            self._message = Message.stored(self.id, self.thread_id, self.role, self._content, self.created_at,
                                           self.resource_id, self.type, damaged)
        return self._message

    def mastra(self, *, light: bool = False) -> dict:
        """Return the message as Mastra's dict; LIGHT leaves the content empty when no OM marker is in it.

        A light dict is enough for Mastra's unobserved rules (ids, times, observation markers).
        """
        if light and self.role != "signal" and "data-om-" not in self.raw:
            return {"id": self.id, "role": self.role, "content": {}, "createdAt": self.created_at,
                    "threadId": self.thread_id, "resourceId": self.resource_id}
        return self.message.as_mastra()

    def estimate_bound(self) -> float:
        """Return tokens no Mastra estimate of this message exceeds; infinite for attachments.

        tokenx prices the runs between whitespace and ASCII punctuation: a word of L units at most
        L/6 + 1 tokens (L/3 + 1 when accented letters appear anywhere), a punctuation run at most
        one per character, a CJK character one. So: ASCII letters and digits 1/6 (1/3), each
        whitespace character 1 (the +1 of the word after it), other ASCII characters 2, non-ASCII
        characters 2. The raw JSON holds every character of the text (escapes only add).
        """
        raw = self.raw
        if '"type":"file"' in raw or '"type":"image"' in raw:
            return float("inf")
        ascii_bytes = raw.encode("ascii", "ignore")
        non_ascii = len(raw) - len(ascii_bytes)
        other = len(ascii_bytes.translate(None, _ALNUM))
        spaces = ascii_bytes.count(b" ") + ascii_bytes.count(b"\n") + ascii_bytes.count(b"\t")
        per_letter = 1 / 6 if non_ascii == 0 else 1 / 3
        return (2 * non_ascii + (len(ascii_bytes) - other) * per_letter + spaces + 2 * (other - spaces)
                + BOUND_SLACK)


def load_messages(store: MemoryStore, thread_ids: list[str], rows: list[tuple] | None = None,
                  invalid: set[str] | None = None) -> dict[str, list[StoredMessage]]:
    """Return {thread id: its messages in storage order} for THREAD_IDS, raw.

    ROWS: `store.message_rows(thread_ids)` when the caller read them already (else read here).
    Rows whose content SQLite's json_valid rejects get `invalid_json`: INVALID, their ids when the
    caller read them with ROWS (`message_rows(…, invalid_json=True)`), else read here
    (`store.invalid_json_message_ids`). Raises StoreError.
    """
    out: dict[str, list[StoredMessage]] = {t: [] for t in thread_ids}
    if not thread_ids:
        return out
    encoding = store.encoding
    for row in store.message_rows(thread_ids) if rows is None else rows:
        mine = out.get(row[1])
        if mine is None:
            mine = out[row[1]] = []
        mine.append(StoredMessage(row, encoding))
    bad = store.invalid_json_message_ids(thread_ids) if invalid is None else invalid
    if bad:
        for messages in out.values():
            for m in messages:
                if m.id in bad:
                    m.invalid_json = True
    return out

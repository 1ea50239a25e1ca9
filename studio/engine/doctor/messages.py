"""Stored messages as the doctor reads them: raw content first, parsed only when a check needs it.

Parsing every message's JSON would dominate a run on a large file; most checks decide from the
raw text (duplicates compare it, the window needs only ids and times unless OM marker parts are
present, size checks bound the estimate from its length). `StoredMessage.message` parses on demand.
"""

from __future__ import annotations

from typing import Any

from studio.store.memory_store import MemoryStore
from studio.store.records import Message, iso_to_ms, parse_json

_ALNUM = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123))
#: Per-message slack of the estimate bound: role, the 3.8 overhead, tool-call adjustments (tokens).
BOUND_SLACK = 200


class StoredMessage:
    """One `mastra_messages` row: id, thread, role, createdAt and the raw content text.

    `message` is the parsed Message (parsed once, on first use); `created_ms` epoch ms or None;
    `invalid_json` is set by the loader when SQLite's json_valid rejects the content.
    """

    __slots__ = (
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

    def __init__(self, row: dict):
        self.id = row["id"]
        self.thread_id = row.get("thread_id")
        self.role = row.get("role") or ""
        self.created_at = row.get("createdAt")
        raw = row.get("content")
        if isinstance(raw, (bytes, bytearray)):
            raw = bytes(raw).decode("utf-8", "replace")
        self.raw = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
        self.type = row.get("type")
        self.resource_id = row.get("resourceId")
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
        """Return the parsed Message (content JSON parsed as the store parses it)."""
        if self._message is None:
            parsed, err = parse_json(self.raw)
            content = parsed if err is None and parsed is not None else self.raw
            self._message = Message(id=self.id, thread_id=self.thread_id, role=self.role, content=content,
                                    created_at=self.created_at, resource_id=self.resource_id, type=self.type,
                                    content_error=err)
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


def load_messages(store: MemoryStore, thread_ids: list[str], rows: list[dict] | None = None,
                  ) -> dict[str, list[StoredMessage]]:
    """Return {thread id: its messages in storage order (createdAt ASC)} for THREAD_IDS, raw.

    ROWS: `store.message_rows(thread_ids)` when the caller read them already (else read here).
    Rows whose content SQLite's json_valid rejects get `invalid_json`. Raises StoreError.
    """
    out: dict[str, list[StoredMessage]] = {t: [] for t in thread_ids}
    if not thread_ids:
        return out
    for row in store.message_rows(thread_ids) if rows is None else rows:
        out.setdefault(row.get("thread_id"), []).append(StoredMessage(row))
    bad = store.invalid_json_message_ids(thread_ids)
    if bad:
        for messages in out.values():
            for m in messages:
                if m.id in bad:
                    m.invalid_json = True
    return out

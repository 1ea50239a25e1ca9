"""Search every thread's messages for text (and message metadata), newest conversations first (no Qt).

A query is words and "quoted phrases"; a message matches when its text (the text parts Mastra stores, as the
Messages tab shows them raw) contains every one, compared after Unicode NFC normalization and case folding
(so "STRASSE" finds "Straße", "café" finds "CAFÉ"). METADATA is a message metadata filter with Mastra's rules
(`storageMessageMatchesMetadataFilter`: SQL on libSQL, after the read on PostgreSQL, as `recall` does).

Threads are searched in order of last activity (the thread's updatedAt, newest first), each thread's messages
newest first, a few threads a statement through the (thread_id, createdAt) index Mastra creates, so the first
results come from the conversations users look at first and the window can show them at once. Nothing is
written anywhere: no index is built in the user's database.

A message's stored JSON is parsed only when it can match: JavaScript's JSON.stringify (Mastra's writer) leaves
every character but `"`, `\\` and control characters as it is, so when the folded stored text does not contain a
term (and the text has no `\\u` escape), the parsed text cannot either. On SQLite and libSQL servers the same
test runs in the statement for ASCII terms (`LIKE`, which folds ASCII case), kept sound by letting through every
row that holds a character outside printable ASCII (where folding may turn "ß" into "ss") or a `\\u` escape: only
the rows that may match are read.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from studio.common.metadata_filter import message_metadata_matches, validate_metadata_filter
from studio.store import schema as sc
from studio.store.history import add_message_terms
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, Thread

#: Threads read per statement.
THREADS_PER_QUERY = 40
#: Characters of context shown on each side of the first match in a snippet.
SNIPPET_CONTEXT = 60
_TERMS = re.compile(r'"([^"]*)"|(\S+)')
_UNSAFE_IN_JSON = re.compile(r'["\\\x00-\x1f]')


def fold(text: str) -> str:
    """TEXT as the search compares it: NFC-normalized, then case-folded (Unicode's full case folding)."""
    return unicodedata.normalize("NFC", text).casefold()


def parse_query(text: str) -> list[str]:
    """Return the folded terms of a query: each "quoted phrase" whole, every other word alone; [] for a blank one."""
    terms = []
    for phrase, word in _TERMS.findall(text or ""):
        term = fold(phrase if phrase else word).strip()
        if term:
            terms.append(term)
    return terms


@dataclass(frozen=True)
class SearchHit:
    """A matching message: its thread (id, title, resource), id, role, createdAt (ISO) and a one-line snippet."""

    resource_id: str
    thread_id: str
    thread_title: str | None
    message_id: str
    role: str
    created_at: str | None
    snippet: str

    def as_json(self) -> dict:
        """The `search --json` entry: {thread_id, message_id, role, time, snippet, resource_id, thread_title}."""
        return {"thread_id": self.thread_id, "message_id": self.message_id, "role": self.role,
                "time": self.created_at, "snippet": self.snippet, "resource_id": self.resource_id,
                "thread_title": self.thread_title}


def snippet(text: str, term: str) -> str:
    """A one-line excerpt of TEXT around the first place TERM (folded) occurs, "…" where it was cut."""
    flat = " ".join(text.split())
    folded = fold(flat)
    at = folded.find(term) if term else -1
    if at < 0 or len(folded) != len(flat):   # folding changed lengths (ß -> ss): show the start instead
        at = max(0, flat.casefold().find(term)) if term else 0
    start, end = max(0, at - SNIPPET_CONTEXT), min(len(flat), at + len(term) + SNIPPET_CONTEXT)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def _parse(raw: object) -> object:
    """The stored content as Mastra reads it: parsed JSON, or the string itself when it is not JSON."""
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _text_of(content: object) -> str:
    return Message("", "", "", content, None).text


def _matches(raw: str, terms: list[str]) -> str | None:
    """Return the message text when every term is in it, else None (RAW: the stored JSON of its content)."""
    if isinstance(raw, str) and "\\u" not in raw:
        folded_raw = fold(raw)
        if any(not _UNSAFE_IN_JSON.search(t) and t not in folded_raw for t in terms):
            return None
    text = _text_of(_parse(raw))
    folded = fold(text)
    return text if all(t in folded for t in terms) else None


def _sql_prefilter(terms: list[str]) -> tuple[str, list[str]] | None:
    """(condition, params) keeping the rows whose stored content may hold every term, or None (no ASCII term)."""
    usable = [t for t in terms if t.isascii() and t.isprintable() and not _UNSAFE_IN_JSON.search(t)]
    if not usable:
        return None
    likes = " AND ".join("content LIKE ? ESCAPE '\\'" for _ in usable)
    patterns = ["%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for t in usable]
    return f"(({likes}) OR content GLOB '*[^ -~]*' OR instr(content, '\\u') > 0)", patterns


def iter_search(store: MemoryStore, query: str, *, metadata: dict | None = None,
                cancel: threading.Event | None = None) -> Iterator[tuple[list[SearchHit], int, int]]:
    """Yield (hits, threads searched so far, threads in all) a few threads at a time; see the module.

    QUERY: words and "phrases" (a blank query with METADATA lists every message the filter keeps; blank
    without it yields nothing). METADATA: Mastra's message metadata filter (validated: ValidationError).
    Stops when CANCEL is set. Raises StoreError.
    """
    terms = parse_query(query)
    metadata = validate_metadata_filter(metadata) if metadata else None
    if not terms and not metadata:
        return
    threads = [Thread(r["id"], r.get("resourceId") or "", r.get("title"), updated_at=r.get("updatedAt"))
               for r in store.select_rows(sc.THREADS, "", [], ["id", "resourceId", "title", "updatedAt"])]
    threads.sort(key=lambda t: (t.updated_at or "", t.id), reverse=True)
    total = len(threads)
    prefilter = _sql_prefilter(terms) if store.dialect != "postgresql" else None
    for i in range(0, total, THREADS_PER_QUERY):
        if cancel is not None and cancel.is_set():
            return
        chunk = threads[i:i + THREADS_PER_QUERY]
        by_id = {t.id: t for t in chunk}
        terms_sql, params = [f"thread_id IN ({', '.join('?' * len(chunk))})"], [t.id for t in chunk]
        post = add_message_terms(store, terms_sql, params, None, None, metadata)
        if prefilter is not None:
            terms_sql.append(prefilter[0])
            params += prefilter[1]
        rows = store.select_rows(sc.MESSAGES, f"WHERE {' AND '.join(terms_sql)} ORDER BY thread_id, "
                                 f'{store.sql.created(sc.MESSAGES)} DESC', params,
                                 ["id", "thread_id", "content", "role", "createdAt"])
        hits_by_thread: dict[str, list[SearchHit]] = {}
        for row in rows:
            raw = row.get("content")
            if post and not message_metadata_matches(_parse(raw), metadata):
                continue
            text = _matches(raw, terms) if terms else _text_of(_parse(raw))
            if text is None:
                continue
            thread = by_id[row["thread_id"]]
            hits_by_thread.setdefault(thread.id, []).append(SearchHit(
                thread.resource_id, thread.id, thread.title, row["id"], row.get("role") or "",
                row.get("createdAt"), snippet(text, terms[0] if terms else "")))
        yield [h for t in chunk for h in hits_by_thread.get(t.id, [])], min(i + len(chunk), total), total


def search(store: MemoryStore, query: str, *, metadata: dict | None = None, limit: int | None = None,
           cancel: threading.Event | None = None) -> list[SearchHit]:
    """Return the hits of `iter_search` in its order, at most LIMIT (None: all)."""
    out: list[SearchHit] = []
    for hits, _done, _total in iter_search(store, query, metadata=metadata, cancel=cancel):
        out += hits
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out

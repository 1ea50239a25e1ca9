"""Message history as Mastra's Memory serves it: listThreads, getThreadById, recall (no Qt, read-only).

Each function mirrors one Mastra method on the same file, with the same SQL where the result
depends on it (ties in `createdAt` come back in the order SQLite returns them, as in Mastra):

- `list_threads`   Memory.listThreads → MemoryLibSQL.listThreads (@mastra/libsql 1.23.1), from
                   studio.store.thread_list (with the argument checks both share)

On PostgreSQL the SQL is MemoryPG's; on MongoDB (`dialect == "mongodb"`) the queries are
MongoDBStore's (@mastra/mongodb 1.19.0: filter documents, `sort` without a tie-break, metadata of
messages filtered after the read), through `studio.store.mongo_store.MongoMemoryStore`.
- `get_thread_by_id` Memory.getThreadById → MemoryLibSQL.getThreadById
- `list_messages`  MemoryLibSQL.listMessages (the storage call, which applies `include`)
- `recall`         Memory.recall (@mastra/memory 1.31.0): the newest page first, returned in
                   chronological order, system messages and system reminders left out

Arguments use Python names; Mastra's camelCase spellings are accepted too (`resourceId`,
`dateRange`, `withPreviousMessages`, ...), so a call can be written from Mastra's documentation.
Bad arguments raise ValidationError (studio.common.metadata_filter); failed reads raise StoreError.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from datetime import UTC

from studio.common.metadata_filter import ValidationError, message_metadata_matches, validate_metadata_filter
from studio.store import schema as sc
from studio.store.backends import LIMIT_TO_COUNT
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, Thread, iso_to_ms, ms_to_iso
from studio.store.thread_list import (
    DEFAULT_LAST_MESSAGES,
    DEFAULT_STORAGE_PER_PAGE,
    Page,
    ThreadPage,
    _bind_number,
    _check_keys,
    _check_page,
    _is_int,
    _normalize_per_page,
    _parse_order_by,
    _pick,
    list_threads,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any, Literal

    PerPage = int | Literal[False] | None

__all__ = [
    "DEFAULT_LAST_MESSAGES",
    "MessagePage",
    "ThreadPage",
    "get_thread_by_id",
    "is_system_reminder",
    "js_date_iso",
    "list_messages",
    "list_threads",
    "message_metadata_sql",
    "recall",
]

#: NaN, what `new Date(x).getTime()` gives for a value that is not a date (no math import for it).
_NAN = float("nan")


class MessagePage(Page):
    """One page of recall / listMessages: messages in order, `total` matching, `has_more`."""

    __slots__ = ("messages",)

    def __init__(self, messages: list[Message], total: int, page: int, per_page: int | bool, has_more: bool):
        self.messages = messages
        self.total, self.page, self.per_page, self.has_more = total, page, per_page, has_more

    @property
    def message_ids(self) -> list[str]:
        """Return the ids of the messages, in order."""
        return [m.id for m in self.messages]

    def _values(self) -> tuple:
        return self.messages, self.total, self.page, self.per_page, self.has_more


# -- argument helpers ---------------------------------------------------------------------------

def js_date_iso(value: Any) -> str:
    """Return VALUE as `Date.prototype.toISOString()` prints it (`2026-01-02T03:04:05.678Z`).

    VALUE: a datetime (naive = UTC), epoch milliseconds, or a date string read as `new Date(s)`
    reads it (ISO 8601; a date-time without an offset is taken as UTC here). Raises
    ValidationError when it is not a date.
    """

    from studio.common.jsdates import normalize_created_at

    if isinstance(value, bool):
        raise ValidationError(f"{value!r} is not a date")
    dt = normalize_created_at(value, UTC)
    if dt is None:
        raise ValidationError(f"{value!r} is not a date (write ISO 8601, e.g. 2026-03-01T10:00:00Z)")
    ms = round(dt.timestamp() * 1000)
    try:
        return ms_to_iso(ms)
    except (ValueError, OverflowError) as exc:
        raise ValidationError(f"{value!r} is out of the range of dates") from exc


def _date_bound(value: Any) -> str | None:
    """A dateRange bound as Mastra binds it: a Date -> toISOString(); a string as given; falsy -> none."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    return js_date_iso(value)


# -- threads ------------------------------------------------------------------------------------

def get_thread_by_id(store: MemoryStore, thread_id: str, resource_id: str | None = None) -> Thread | None:
    """Return thread THREAD_ID (and, when given, of RESOURCE_ID), or None; Memory.getThreadById.

    MongoDB: `findOne({id})`, then None when RESOURCE_ID is given and differs (MongoDBStore.getThreadById).
    """
    if store.dialect == "mongodb":
        found = store.find_threads({"id": thread_id}, limit=1)
        return found[0] if found and (resource_id is None or found[0].resource_id == resource_id) else None
    where, params = "WHERE id = ?", [thread_id]
    if resource_id is not None:
        where += ' AND "resourceId" = ?'
        params.append(resource_id)
    threads = store.select_threads(where, params)
    return threads[0] if threads else None


# -- messages -----------------------------------------------------------------------------------

def message_metadata_sql(metadata: dict) -> tuple[list[str], list[Any]]:
    """Return (WHERE terms, parameters) of recall's message metadata filter (MemoryLibSQL's addSqliteMetadataFilter).

    Each key must exist in `content.metadata` (json_type not NULL) and hold the value with the same
    JSON type: null only matches an explicit null, true is not 1, "2" is not 2. METADATA must be validated.
    """
    terms, params = [], []
    for key, value in metadata.items():
        path = f"$.metadata.{key}"
        terms.append("CASE WHEN json_valid(content) THEN json_type(content, ?) IS NOT NULL ELSE 0 END")
        params.append(path)
        if value is None:
            terms.append("CASE WHEN json_valid(content) THEN json_type(content, ?) = 'null' ELSE 0 END")
            params.append(path)
        elif isinstance(value, str):
            terms.append("CASE WHEN json_valid(content) THEN json_type(content, ?) = 'text' "
                         "AND json_extract(content, ?) = ? ELSE 0 END")
            params += [path, path, value]
        elif isinstance(value, bool):
            terms.append("CASE WHEN json_valid(content) THEN json_type(content, ?) = ? "
                         "AND json_extract(content, ?) = ? ELSE 0 END")
            params += [path, "true" if value else "false", path, 1 if value else 0]
        else:
            terms.append("CASE WHEN json_valid(content) THEN json_type(content, ?) IN ('integer', 'real') "
                         "AND json_extract(content, ?) = ? ELSE 0 END")
            params += [path, path, _bind_number(value)]
    return terms, params


def add_message_terms(store: MemoryStore, terms: list[str], params: list[Any], start: str | None, end: str | None,
                       metadata: dict | None, *, start_excl: bool = False, end_excl: bool = False) -> bool:
    """Append to TERMS / PARAMS the date bounds and METADATA filter of a message query as Mastra's store runs them.

    libSQL compares the stored ISO strings and filters metadata in SQL (`message_metadata_sql`);
    PostgreSQL (MemoryPG) compares on the TIMESTAMPTZ twin first and filters metadata after the read
    (storageMessageMatchesMetadataFilter): then nothing is appended for it and True is returned, the
    caller applies `message_metadata_matches` to the rows.
    """
    pg = store.dialect == "postgresql"
    created, bound = store.sql.created(sc.MESSAGES), store.sql.time_param
    if start:
        terms.append(f'{created} {">" if start_excl else ">="} {bound}')
        params.append(start)
    if end:
        terms.append(f'{created} {"<" if end_excl else "<="} {bound}')
        params.append(end)
    if metadata and not pg:
        more_terms, more_params = message_metadata_sql(metadata)
        terms += more_terms
        params += more_params
    return bool(metadata and pg)


def _select_messages(store: MemoryStore, tail: str, params: list[Any]) -> list[Message]:
    return store.select_messages(tail, params)


@functools.lru_cache(maxsize=1 << 16)
def _time_of(created_at: Any) -> float:
    """`new Date(createdAt).getTime()` (NaN for a value that is not a date); remembered per stored string."""
    ms = iso_to_ms(created_at)
    return _NAN if ms is None else float(ms)


@functools.cache
def _canonical_run() -> re.Pattern:
    """A run of createdAt values each exactly as `Date.prototype.toISOString()` writes a date that exists
    (`2026-11-29T20:40:53.819Z`; years 0001-9999, each month's days, February 29th of leap years only,
    hours 00-23, no leap second): what `datetime.fromisoformat` accepts in that form, read in one C pass.
    Compiled on first use (0.4 ms a command that lists no message would pay)."""
    return re.compile(
        r"(?:(?!0000)(?:"
        r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
        r"|[0-9]{4}-(?:0[13-9]|1[0-2])-(?:29|30)"
        r"|[0-9]{4}-(?:0[13578]|1[02])-31"
        r"|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29"
        r")T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z)*+")


_STR_ONLY = {str}
_LEN_24 = {24}
_CREATED_AT = operator.attrgetter("created_at")
_ID, _ROLE, _THREAD_ID = operator.attrgetter("id"), operator.attrgetter("role"), operator.attrgetter("thread_id")


def _canonical(values: list[Any]) -> bool:
    """Return True when VALUES are all times in `Date.toISOString()`'s fixed-width form, of dates that exist.

    For that one form (`2026-11-29T20:40:53.819Z`) comparing the text compares the times and equal
    texts are equal times, so sorting by the text is `_js_sort`'s order and no time needs computing
    (none is NaN). Exactly str, 24 characters each, then one regular-expression pass over them all.
    """
    if not values:
        return True
    if set(map(type, values)) != _STR_ONLY or set(map(len, values)) != _LEN_24:
        return False
    return _canonical_run().fullmatch("".join(values)) is not None


def _js_sorted(messages: list[Message], descending: bool = False) -> tuple[list[Message], bool]:
    """Return (`_js_sort`'s order of MESSAGES, whether no createdAt was NaN).

    Array.prototype.sort (stable) with `a - b` (`b - a` DESCENDING) on createdAt times; NaN compares
    as equal. Without NaN the comparison is a total preorder, so a stable sort by time gives the very
    same order (one key per message instead of a comparison function), and sorting that result again
    in the same direction changes nothing: the flag says so (callers then skip their second sort).
    With a NaN (which is "equal" to everything) the comparison function itself is used, as V8's
    TimSort uses it. Canonical times (`_canonical`) are sorted by their text.
    """
    created = list(map(_CREATED_AT, messages))
    if _canonical(created):
        return sorted(messages, key=_CREATED_AT, reverse=descending), True
    times = [_time_of(c) if isinstance(c, str) else _time_of.__wrapped__(c) for c in created]
    if not any(t != t for t in times):
        if all(a <= b for a, b in itertools.pairwise(times)) if not descending else \
                all(a >= b for a, b in itertools.pairwise(times)):
            return list(messages), True  # already in order: a stable sort keeps it as it is (storage order is)
        order = sorted(range(len(messages)), key=(lambda i: -times[i]) if descending else times.__getitem__)
        return [messages[i] for i in order], True

    def compare(i: int, j: int) -> int:
        d = times[j] - times[i] if descending else times[i] - times[j]
        return 0 if d != d or d == 0 else (1 if d > 0 else -1)
    return [messages[i] for i in sorted(range(len(messages)), key=functools.cmp_to_key(compare))], False


def _js_sort(messages: list[Message], descending: bool = False) -> list[Message]:
    """Array.prototype.sort (stable) with `a - b` on createdAt times; NaN compares as equal (`_js_sorted`)."""
    return _js_sorted(messages, descending)[0]


def _kept(messages: list[Message]) -> list[Message]:
    """MESSAGES without system rows and repeated ids (the first kept), in their order (a copy)."""
    if "system" not in map(_ROLE, messages) and len(set(map(_ID, messages))) == len(messages):
        return list(messages)   # the common page: nothing to leave out (looked at in C)
    seen: set[str] = set()
    kept = []
    for m in messages:
        if m.role == "system" or m.id in seen:
            continue
        seen.add(m.id)
        kept.append(m)
    return kept


def _message_list(messages: list[Message]) -> list[Message]:
    """What `new MessageList().add(rows, 'memory').get.all.db()` keeps: no system rows, no repeats, by createdAt."""
    return _js_sort(_kept(messages))


def _include_items(include: Any) -> list[tuple[str, int, int]]:
    if include is None:
        return []
    if not isinstance(include, (list, tuple)):
        raise ValidationError("include must be a list of {id, with_previous_messages, with_next_messages}")
    items = []
    for item in include:
        if isinstance(item, str):
            item = {"id": item}
        item = _check_keys(item, ("id", "thread_id", "threadId", "with_previous_messages", "withPreviousMessages",
                                  "with_next_messages", "withNextMessages"), "an include item")
        before = _pick(item, "with_previous_messages", "withPreviousMessages", 0) or 0
        after = _pick(item, "with_next_messages", "withNextMessages", 0) or 0
        for name, n in (("with_previous_messages", before), ("with_next_messages", after)):
            if not _is_int(n) or n < 0:
                raise ValidationError(f"include {name} must be a whole number >= 0, not {n!r}")
        if item.get("id"):
            items.append((str(item["id"]), before, after))
    return items


def _included(store: MemoryStore, include: list[tuple[str, int, int]], resource_id: str | None) -> list[Message]:
    """The include targets with their neighbours, as MemoryLibSQL._getIncludedMessages reads them."""
    if not include:
        return []
    if store.dialect == "mongodb":
        return _included_mongo(store, include, resource_id)
    ids = [i for i, _, _ in include]
    res_sql = ' AND "resourceId" = ?' if resource_id else ""
    res_params = [resource_id] if resource_id else []
    found = store.rows(
        f'SELECT id, thread_id, "createdAt" FROM {sc.MESSAGES} WHERE id IN ({", ".join("?" * len(ids))}){res_sql}',
        [*ids, *res_params])
    targets = {r[0]: (r[1], r[2]) for r in found}
    parts: list[list[Message]] = []
    for message_id, before, after in include:
        if message_id not in targets:
            continue
        thread_id, created = targets[message_id]
        parts.append(_select_messages(
            store, f'WHERE thread_id = ? AND "createdAt" <= ?{res_sql} ORDER BY "createdAt" DESC, id DESC LIMIT ?',
            [thread_id, created, *res_params, before + 1]))
        if after > 0:
            parts.append(_select_messages(
                store, f'WHERE thread_id = ? AND "createdAt" > ?{res_sql} ORDER BY "createdAt" ASC, id ASC LIMIT ?',
                [thread_id, created, *res_params, after]))
    if not parts:
        return []
    rows = parts[0] if len(parts) == 1 else sorted(
        (m for part in parts for m in part), key=lambda m: (m.created_at or "", m.id))
    seen: set[str] = set()
    out = []
    for m in rows:
        if m.id not in seen:
            seen.add(m.id)
            out.append(m)
    return out


def _included_mongo(store: Any, include: list[tuple[str, int, int]], resource_id: str | None) -> list[Message]:
    """MongoDBStore._getIncludedMessages: the targets in one `$in` query, then per include the target and its
    previous messages (`sort({createdAt: -1, id: -1})`, limit) and the next ones (`sort({createdAt: 1, id: 1})`),
    first occurrence kept in that order (Mastra sorts them afterwards)."""
    res = {"resourceId": resource_id} if resource_id else {}
    targets = {m.id: m for m in store.find_messages({"id": {"$in": [i for i, _, _ in include]}, **res})}
    out: list[Message] = []
    seen: set[str] = set()
    for message_id, before, after in include:
        target = targets.get(message_id)
        if target is None or target.created_at is None:
            continue
        created = store.message_query(start=target.created_at)["createdAt"]["$gte"]
        part = store.find_messages({"thread_id": target.thread_id, "createdAt": {"$lte": created}, **res},
                                   [("createdAt", -1), ("id", -1)], limit=before + 1)
        if after > 0:
            part += store.find_messages({"thread_id": target.thread_id, "createdAt": {"$gt": created}, **res},
                                        [("createdAt", 1), ("id", 1)], limit=after)
        for m in part:
            if m.id not in seen:
                seen.add(m.id)
                out.append(m)
    return out


def _message_filter(filter: Any) -> tuple[dict | None, str | None, str | None, bool, bool]:
    flt = _check_keys(filter, ("metadata", "date_range", "dateRange"), "filter")
    metadata = validate_metadata_filter(flt.get("metadata"))
    rng = _check_keys(_pick(flt, "date_range", "dateRange"),
                      ("start", "end", "start_exclusive", "startExclusive", "end_exclusive", "endExclusive"),
                      "date_range")
    start, end = _date_bound(rng.get("start")), _date_bound(rng.get("end"))
    return (metadata, start, end, bool(_pick(rng, "start_exclusive", "startExclusive", False)),
            bool(_pick(rng, "end_exclusive", "endExclusive", False)))


def list_messages(store: MemoryStore, thread_id: str | list[str], *, resource_id: str | None = None,
                  include: list | None = None, filter: dict | None = None,
                  per_page: PerPage = None, page: int = 0, order_by: dict | None = None) -> MessagePage:
    """Return a page of THREAD_ID's messages as the libSQL store's listMessages does.

    FILTER: {date_range: {start, end, start_exclusive, end_exclusive}, metadata}. Dates are
    datetimes (sent as toISOString) or strings (compared as given with the stored ISO strings).
    INCLUDE: [{id, with_previous_messages, with_next_messages}] adds those messages and their
    neighbours (same thread, by createdAt) to the page. PER_PAGE default 40, False = all.
    ORDER_BY default createdAt ASC (messages have no updatedAt). Messages are sorted by createdAt in
    ORDER_BY's direction; `total` counts matching rows (without include); Mastra's `has_more`.
    Raises ValidationError for bad arguments.
    """
    return _list_messages(store, thread_id, resource_id, include, filter, per_page, page, order_by)[0]


def _list_messages(store: MemoryStore, thread_id: str | list[str], resource_id: str | None, include: list | None,
                   filter: dict | None, per_page: PerPage, page: int,
                   order_by: dict | None) -> tuple[MessagePage, str | None]:
    """`list_messages`, and the direction ("ASC" / "DESC") its messages are sorted in with no NaN time
    (`_js_sorted`: sorting them again that way changes nothing), or None when that is not known."""
    thread_ids = thread_id if isinstance(thread_id, list) else [thread_id]
    if not thread_ids or any(not isinstance(t, str) or not t.strip() for t in thread_ids):
        raise ValidationError("thread_id must be a non-empty string (or a list of them)")
    page = _check_page(page)
    limit = _normalize_per_page(per_page, DEFAULT_STORAGE_PER_PAGE)
    offset = 0 if per_page is False else page * limit
    response_per_page: int | bool = False if per_page is False else limit
    metadata, start, end, start_excl, end_excl = _message_filter(filter)
    items = _include_items(include)
    field, direction = _parse_order_by(order_by, "ASC", ("createdAt",))

    descending = direction == "DESC"
    mongo = store.dialect == "mongodb"
    pg = store.dialect == "postgresql"
    if mongo:  # MongoDBStore.listMessages: a filter document, sort({createdAt: ±1}) with no tie-break
        query = store.message_query(thread_ids, resource_id=resource_id, start=start, end=end,
                                    start_exclusive=start_excl, end_exclusive=end_excl)
        sort = [(field, -1 if descending else 1)]
    else:
        terms = [f"thread_id IN ({', '.join('?' * len(thread_ids))})"]
        params: list[Any] = list(thread_ids)
        if resource_id:
            terms.append('"resourceId" = ?')
            params.append(resource_id)
        add_message_terms(store, terms, params, start, end, metadata, start_excl=start_excl, end_excl=end_excl)
        where = f"WHERE {' AND '.join(terms)}"
        # PostgreSQL: MemoryPG breaks order ties by id
        order = f'"{field}" {direction}, "id" {direction}' if pg else f'"{field}" {direction}'

    if limit == 0 and not items:
        return MessagePage([], 0, page, response_per_page, False), direction
    if limit == 0:
        included = _message_list(_included(store, items, resource_id))
        return MessagePage(_js_sort(included, descending), 0, page, response_per_page, False), None

    if metadata and (pg or mongo):  # Mastra filters message metadata after the read on both
        candidates = (store.find_messages(query, sort) if mongo
                      else _select_messages(store, f"{where} ORDER BY {order}", params))
        matching = [m for m in candidates if message_metadata_matches(m.content, metadata)]
        total = len(matching)
        rows = matching if per_page is False else matching[offset:offset + limit]
    elif mongo:
        total = store.count_messages(query)
        rows = store.find_messages(query, sort, skip=offset, limit=0 if per_page is False else limit)
    elif pg:  # MemoryPG's page (or every row) and count in one statement
        alone = len(thread_ids) == 1 and len(terms) == 1   # one thread, no other term: its index finds the page
        total, rows = store.select_messages_counted(where, params, order, None if per_page is False else limit, offset,
                                                    one_thread=thread_ids[0] if alone else None, descending=descending)
    else:   # the count and the page together (perPage false: the page holds as many as counted)
        counted, rows = store.rows_and_messages(
            f"SELECT COUNT(*) FROM {sc.MESSAGES} {where}", params, f'{where} ORDER BY {order} LIMIT ? OFFSET ?',
            [*params, LIMIT_TO_COUNT if per_page is False else limit, offset])
        total = int(counted[0][0])
    paginated = len(rows)
    if total == 0 and not rows and not items:
        return MessagePage([], 0, page, response_per_page, False), direction
    if items:
        ids = {m.id for m in rows}
        for m in _included(store, items, resource_id):
            if m.id not in ids:
                rows.append(m)
                ids.add(m.id)
    # Mastra sorts twice: MessageList by createdAt ascending, then the page in ORDER_BY's direction. With no
    # NaN time that is one stable sort in ORDER_BY's direction (ties keep their order through both sorts).
    kept = _kept(rows)
    final, exact = _js_sorted(kept, descending)
    if not exact:
        final = _js_sort(_js_sort(kept), descending)
    if metadata:
        has_more = per_page is not False and offset + paginated < total
    else:
        wanted = set(thread_ids)   # final holds each id once: its messages of WANTED threads, counted
        returned = sum(map(wanted.__contains__, map(_THREAD_ID, final)))
        has_more = per_page is not False and returned < total and offset + limit < total
    return MessagePage(final, total, page, response_per_page, has_more), direction if exact else None


# -- recall -------------------------------------------------------------------------------------

#: What a user message's stored JSON must contain (unescaped) to be a system reminder: the
#: `systemReminder` / `dynamicAgentsMdReminder` metadata keys or a first text starting with the tag.
_REMINDER_MARKS = ('"systemReminder"', '"dynamicAgentsMdReminder"', '"<system-reminder')
#: The roles a system reminder can have (any other is not one: `is_system_reminder` says False at once).
_REMINDER_ROLES = frozenset(("user", "signal"))


def is_system_reminder(message: Message) -> bool:
    """Return True for a system-reminder message, which recall leaves out by default (isSystemReminderMessage).

    A user message whose stored JSON text (not parsed yet) holds none of the three marks is not one,
    without parsing it: each mark is written literally in the JSON unless escaped with `\\u`.
    """
    if message.role not in ("user", "signal"):
        return False
    if message.role == "user" and message.stored_lacks(_REMINDER_MARKS):
        return False
    content = message.content
    if not isinstance(content, dict):
        return False
    meta = content.get("metadata")
    if message.role == "signal":
        signal = meta.get("signal") if isinstance(meta, dict) else None
        return isinstance(signal, dict) and signal.get("type") in ("system-reminder", "reactive")
    if message.role != "user":
        return False
    if isinstance(meta, dict) and (isinstance(meta.get("systemReminder"), (dict, list))
                                   or "dynamicAgentsMdReminder" in meta):
        return True
    parts = content.get("parts")
    first = next((p for p in parts if isinstance(p, dict) and p.get("type") == "text"), None) \
        if isinstance(parts, list) else None
    return (isinstance(first, dict) and isinstance(first.get("text"), str)
            and first["text"].startswith("<system-reminder"))


def recall(store: MemoryStore, thread_id: str, *, resource_id: str | None = None, page: int | None = None,
           per_page: PerPage = None, order_by: dict | None = None, filter: dict | None = None,
           include: list | None = None, apply_include: bool = False,
           last_messages: int | Literal[False] = DEFAULT_LAST_MESSAGES,
           include_system_reminders: bool = False) -> MessagePage:
    """Return THREAD_ID's messages as Memory.recall does (@mastra/memory 1.31.0, no semantic recall).

    PER_PAGE defaults to LAST_MESSAGES (Mastra's `lastMessages`, default 10); with no ORDER_BY and a
    numeric PER_PAGE the *newest* page is read (createdAt DESC, page 0 = newest) and returned in
    chronological order; PER_PAGE False returns every message, oldest first. FILTER as in
    `list_messages`. With RESOURCE_ID the thread must exist and belong to it (ValidationError).
    System messages and system reminders are left out after paging (`total` still counts them).

    INCLUDE: Memory.recall 1.31.0 does *not* pass its `include` argument to storage (only
    semantic-recall hits become includes), so by default INCLUDE changes nothing, exactly as in
    Mastra; APPLY_INCLUDE=True applies it the way the storage call does (what the docs describe).
    LAST_MESSAGES False with no PER_PAGE returns nothing (history disabled).
    """
    if last_messages is not False and (not _is_int(last_messages) or last_messages < 0):
        raise ValidationError(f"last_messages must be a whole number >= 0 or False, not {last_messages!r}")
    if per_page is None and last_messages is False:
        return MessagePage([], 0, page or 0, 0, False)
    if resource_id:
        thread = get_thread_by_id(store, thread_id)
        if thread is None:
            raise ValidationError(f"No thread found with id {thread_id}")
        if thread.resource_id != resource_id:
            raise ValidationError(f"Thread with id {thread_id} is for resource with id {thread.resource_id} "
                                  f"but resource {resource_id} was queried.")
    size = per_page if per_page is not None else last_messages
    newest_first = order_by is None and size is not False
    effective_order = {"field": "createdAt", "direction": "DESC"} if newest_first else order_by
    result, settled = _list_messages(store, thread_id, resource_id, include if apply_include else None, filter, size,
                                     page or 0, effective_order)
    messages = result.messages[::-1] if newest_first else result.messages
    # MessageList again: the page holds no system message nor repeat already, and its ascending sort changes
    # nothing when the page is in time order with no NaN (the newest page reversed: ascending, ties in order)
    if settled != ("DESC" if newest_first else "ASC"):
        messages = _message_list(messages)
    if not include_system_reminders:
        messages = [m for m in messages if m.role not in _REMINDER_ROLES or not is_system_reminder(m)]
    return MessagePage(messages, result.total, result.page, result.per_page, result.has_more)


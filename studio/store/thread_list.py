"""Mastra's listThreads on a store, and the argument checks listThreads and recall share (no Qt, read-only).

- `list_threads`  Memory.listThreads → MemoryLibSQL.listThreads (@mastra/libsql 1.23.1) / MemoryPG.listThreads
- `ThreadPage`    its result; `Page`, the base it shares with studio.store.history's MessagePage

Split from studio.store.history so that `memory-studio threads` imports only this (history's recall
is the bigger module). Arguments use Python names; Mastra's camelCase spellings are accepted too
(`resourceId`). Bad arguments raise ValidationError (studio.common.metadata_filter); failed reads
raise StoreError.
"""

from __future__ import annotations

import json

from studio.common.metadata_filter import ValidationError, validate_metadata_filter
from studio.store import schema as sc
from studio.store.backends import LIMIT_TO_COUNT
from studio.store.records import Thread

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Literal

    from studio.store.memory_store import MemoryStore

    PerPage = int | Literal[False] | None

#: Mastra's defaults: listThreads pages of 100, the storage's listMessages pages of 40, and
#: Memory's `lastMessages` (the page size of recall) of 10.
DEFAULT_THREADS_PER_PAGE = 100
DEFAULT_STORAGE_PER_PAGE = 40
DEFAULT_LAST_MESSAGES = 10
MAX_SAFE_INTEGER = 2 ** 53 - 1
ORDER_FIELDS = ("createdAt", "updatedAt")
DIRECTIONS = ("ASC", "DESC")


class Page:
    """A page of results: its items (a subclass's), `total` matching, `page`, `per_page`, `has_more`.

    Compared by value. A plain class rather than a dataclass: importing dataclasses costs ~8 ms of
    every command's start.
    """

    __slots__ = ("has_more", "page", "per_page", "total")
    __hash__ = None  # type: ignore[assignment]

    def _values(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}{self._values()!r}"


class ThreadPage(Page):
    """One page of listThreads: `threads` in order, the number matching (`total`), and `has_more`.

    THREAD_IDS alone (no THREADS) is a page read with `ids_only`: `threads` is then made from the ids
    on first use, each Thread holding its id alone.
    """

    __slots__ = ("_ids", "_threads")

    def __init__(self, threads: list[Thread] | None, total: int, page: int, per_page: int | bool, has_more: bool,
                 thread_ids: list[str] | None = None):
        self._threads, self._ids = threads, thread_ids
        self.total, self.page, self.per_page, self.has_more = total, page, per_page, has_more

    @property
    def threads(self) -> list[Thread]:
        """Return the threads, in order."""
        if self._threads is None:
            self._threads = [Thread(id=i, resource_id="") for i in self._ids or ()]
        return self._threads

    @property
    def thread_ids(self) -> list[str]:
        """Return the ids of the threads, in order."""
        return self._ids if self._ids is not None else [t.id for t in self.threads]

    def _values(self) -> tuple:
        return self.threads, self.total, self.page, self.per_page, self.has_more


# -- argument helpers (listThreads and recall) --------------------------------------------------

def _pick(mapping: dict, snake: str, camel: str, default: Any = None) -> Any:
    if snake in mapping:
        return mapping[snake]
    return mapping.get(camel, default)


def _check_keys(mapping: Any, allowed: Iterable[str], what: str) -> dict:
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise ValidationError(f"{what} must be a mapping, not {type(mapping).__name__}")
    unknown = sorted(set(mapping) - set(allowed))
    if unknown:
        raise ValidationError(f"{what} has unknown key(s) {', '.join(map(repr, unknown))}")
    return mapping


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_page(page: Any) -> int:
    if page is None:
        return 0
    if not _is_int(page) or page < 0 or page > MAX_SAFE_INTEGER:
        raise ValidationError(f"page must be a whole number >= 0, not {page!r}")
    return page


def _normalize_per_page(per_page: PerPage, default: int) -> int:
    """Mastra's normalizePerPage: False -> every row, 0 -> none, a whole number >= 0 -> itself."""
    if per_page is False:
        return MAX_SAFE_INTEGER
    if per_page is None:
        return default
    if not _is_int(per_page) or per_page < 0 or per_page > MAX_SAFE_INTEGER:
        raise ValidationError(f"per_page must be a whole number >= 0 or False (all), not {per_page!r}")
    return per_page


def _parse_order_by(order_by: Any, default_direction: str, fields: tuple[str, ...] = ORDER_FIELDS) -> tuple[str, str]:
    """Return (field, direction) of ORDER_BY ({field, direction}); default createdAt, DEFAULT_DIRECTION."""
    if order_by is None:
        return "createdAt", default_direction
    order_by = _check_keys(order_by, ("field", "direction"), "order_by")
    field = order_by.get("field") or "createdAt"
    direction = order_by.get("direction") or default_direction
    if field not in fields:
        raise ValidationError(f"order_by field must be {' or '.join(fields)}, not {field!r}")
    if direction not in DIRECTIONS:
        raise ValidationError(f"order_by direction must be ASC or DESC, not {direction!r}")
    return field, direction


def _bind_number(value: int | float) -> int | float:
    """Bind a JSON number the way JavaScript holds it (a double beyond 2**53)."""
    if _is_int(value) and abs(value) > MAX_SAFE_INTEGER:
        return float(value)
    return value


# -- listThreads ---------------------------------------------------------------------------------

def _thread_metadata_sql(metadata: dict) -> tuple[list[str], list[Any]]:
    """WHERE terms of listThreads' metadata filter (MemoryLibSQL.listThreads), path bound as a parameter.

    A null filter value is `json_extract(...) IS NULL`, which a thread *without* the key matches
    too: that is what Mastra's libSQL store does for threads (recall's message filter differs).
    """
    terms, params = [], []
    for key, value in metadata.items():
        path = f"$.{key}"
        if value is None:
            terms.append("json_extract(metadata, ?) IS NULL")
            params.append(path)
        else:
            terms.append("json_extract(metadata, ?) = ?")
            bound = (1 if value else 0) if isinstance(value, bool) else value
            params += [path, _bind_number(bound) if not isinstance(bound, str) else bound]
    return terms, params


def _thread_metadata_pg(metadata: dict) -> tuple[list[str], list[Any]]:
    """WHERE terms of MemoryPG.listThreads' metadata filter: JSONB containment of {key: value} per key.

    Containment compares JSON values by type, so a null filter value matches only an explicit null
    (unlike the libSQL store), `true` is not 1 and "2" is not 2; 1 and 1.0 are one number.
    """
    terms, params = [], []
    for key, value in metadata.items():
        terms.append("metadata::jsonb @> ?::jsonb")
        params.append(json.dumps({key: value}, ensure_ascii=False))
    return terms, params


def list_threads(store: MemoryStore, *, filter: dict | None = None, order_by: dict | None = None,
                 page: int = 0, per_page: PerPage = None, ids_only: bool = False) -> ThreadPage:
    """Return a page of threads as Memory.listThreads does.

    FILTER: {resource_id, metadata} (metadata: key -> scalar, AND-ed; validated). ORDER_BY:
    {field: "createdAt"|"updatedAt", direction: "ASC"|"DESC"}, default createdAt DESC (no tie-break,
    as in Mastra). PAGE from 0; PER_PAGE default 100, 0 returns no threads, False returns all (then
    PAGE must be 0). `has_more` = offset + per_page < total (False when all). IDS_ONLY reads only the
    ids (what `threads --json` prints): `thread_ids` holds them, `threads` is made from them on first
    use, each Thread holding its id alone. Raises ValidationError.
    """
    flt = _check_keys(filter, ("resource_id", "resourceId", "metadata"), "filter")
    page = _check_page(page)
    if per_page is False and page != 0:
        raise ValidationError("page must be 0 when per_page is False (all threads)")
    limit = _normalize_per_page(per_page, DEFAULT_THREADS_PER_PAGE)
    if per_page is not False and limit and page * limit > MAX_SAFE_INTEGER:
        raise ValidationError("page value too large")
    metadata = validate_metadata_filter(flt.get("metadata"))
    field, direction = _parse_order_by(order_by, "DESC")
    offset = 0 if per_page is False else page * limit

    terms, params = [], []
    resource_id = _pick(flt, "resource_id", "resourceId")
    if resource_id:
        terms.append('"resourceId" = ?')
        params.append(resource_id)
    if store.dialect == "mongodb":
        return _list_threads_mongo(store, resource_id, metadata, field, direction, page, per_page, limit, offset,
                                   ids_only)
    pg = store.dialect == "postgresql"
    if metadata:
        more_terms, more_params = (_thread_metadata_pg(metadata) if pg else _thread_metadata_sql(metadata))
        terms += more_terms
        params += more_params
    where = f"WHERE {' AND '.join(terms)}" if terms else ""
    count_sql = f"SELECT COUNT(*) FROM {sc.THREADS} {where}"
    response_per_page: int | bool = False if per_page is False else limit
    if pg and not ids_only and (limit or per_page is False):  # the page and its count in one statement
        order = f'COALESCE("{field}Z", "{field}" AT TIME ZONE \'UTC\') {direction}, "id" {direction}'
        total, threads = store.select_threads_counted(where, params, order, None if per_page is False else limit,
                                                      offset)
        has_more = False if per_page is False else offset + limit < total
        return ThreadPage(threads, total, page, response_per_page, has_more)
    # PostgreSQL: MemoryPG orders by the TIMESTAMPTZ twin first and breaks ties by id
    order = (f'COALESCE("{field}Z", "{field}" AT TIME ZONE \'UTC\') {direction}, "id" {direction}' if pg
             else f'"{field}" {direction}')
    tail = f'{where} ORDER BY {order} LIMIT ? OFFSET ?'
    if not ids_only:   # the count and the page together (perPage false: the page holds as many as counted)
        counted, threads = store.rows_and_threads(
            count_sql, params, tail, [*params, LIMIT_TO_COUNT if per_page is False else limit, offset])
        total = int(counted[0][0])
        if total == 0:
            return ThreadPage([], 0, page, response_per_page, False)
        return ThreadPage(threads, total, page, response_per_page,
                          False if per_page is False else offset + limit < total)
    total = int(store.rows(count_sql, params)[0][0])
    if total == 0:
        return ThreadPage([], 0, page, response_per_page, False)
    bounds = [*params, total if per_page is False else limit, offset]
    has_more = False if per_page is False else offset + limit < total
    return ThreadPage(None, total, page, response_per_page, has_more,
                      store.select_column(sc.THREADS, "id", tail, bounds))


def _list_threads_mongo(store: Any, resource_id: str | None, metadata: dict | None, field: str, direction: str,
                        page: int, per_page: PerPage, limit: int, offset: int, ids_only: bool) -> ThreadPage:
    """MongoDBStore.listThreads: `{resourceId, "metadata.<key>": value}` (MongoDB's own matching: null also
    matches a missing key, a scalar matches inside an array), countDocuments, then
    `find().sort({FIELD: ±1}).skip().limit()` with no tie-break; perPage 0 reads no thread."""
    query: dict[str, Any] = {}
    if resource_id:
        query["resourceId"] = resource_id
    for key, value in (metadata or {}).items():
        query[f"metadata.{key}"] = value
    total = store.count_threads(query)
    response_per_page: int | bool = False if per_page is False else limit
    if limit == 0 and per_page is not False:
        return ThreadPage([], total, page, response_per_page, offset < total)
    threads = store.find_threads(query, [(field, 1 if direction == "ASC" else -1)], skip=offset,
                                 limit=0 if per_page is False else limit)
    has_more = False if per_page is False else offset + limit < total
    if ids_only:
        return ThreadPage(None, total, page, response_per_page, has_more, [t.id for t in threads])
    return ThreadPage(threads, total, page, response_per_page, has_more)

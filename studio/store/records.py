"""Typed records for what a Mastra memory.db holds: resources, threads, messages, OM generations.

Each record keeps the stored values as they are (ISO-8601 strings for times, parsed JSON for JSON
columns) and says when a JSON value could not be parsed instead of failing the whole read.
"""

from __future__ import annotations

import functools
import gc
import itertools
import json

from studio.store.cells import DamagedText, damaged_columns

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of every command's start)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


class _Record:
    """Base of the records: equality, repr and no hash as a `@dataclass` gives them, without importing
    dataclasses (it imports inspect: ~8 ms of every command's start). `_fields`: the constructor's
    parameters in order; a subclass writes its own `__init__` and `__slots__`."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  (mutable, compared by value: unhashable, as a dataclass)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, f) for f in self._fields) == tuple(getattr(other, f) for f in self._fields)

    def __repr__(self) -> str:
        values = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{self.__class__.__qualname__}({values})"


def _parsed_on_read(slot: str, doc: str, replaces_stored: bool = False) -> property:
    """Return the property of a record field whose value is parsed from the stored column on first use.

    The record keeps the stored value in its `_stored` slot (None: nothing left to parse; a stored NULL parses
    to the defaults the record already holds) and parses it with its `_parse()`, which fills the fields' slots
    (SLOT, e.g. `_metadata`) and sets `_stored` to None. Reading or setting the field parses first, except that
    a field made with REPLACES_STORED drops the stored value when set (setting a message's content makes the
    stored text moot). One mechanism for Thread.metadata and Message.content, as fast as a hand-written
    property: the getter is compiled with the slot's name in it (as namedtuple and dataclasses compile theirs),
    so the read of a parsed field is one specialised attribute load, not a `getattr` call (~25 ns less a read).
    """
    if not slot.isidentifier():
        raise ValueError(f"not a slot name: {slot!r}")
    namespace: dict = {}
    exec(f"def get(record):\n    if record._stored is not None:\n        record._parse()\n    return record.{slot}\n",
         namespace)
    get = namespace["get"]

    def put(record: Any, value: Any) -> None:
        if record._stored is not None:
            if replaces_stored:
                record._stored = None
            else:
                record._parse()
        setattr(record, slot, value)

    return property(get, put, doc=doc)


_scan_json = json.JSONDecoder().scan_once  # the scanner json.loads uses (same defaults)


def parse_json(value: Any) -> tuple[Any, str | None]:
    """Parse a JSON column value; return (parsed, None) or (None, error message).

    Accepts NULL (-> None), text, and bytes (JSON text stored as a blob). JSONB blobs must be
    decoded in SQL with `json(col)` before they reach here.
    """
    if value is None:
        return None, None
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None, "binary value that is neither JSON text nor SQLite JSONB"
    if not isinstance(value, str):
        return value, None
    if value == "":
        return None, None
    try:
        try:  # json.loads' own scanner called directly: a whole value without surrounding space, as stored
            parsed, end = _scan_json(value, 0)
        except (StopIteration, ValueError):
            end = -1
        return (parsed if end == len(value) else json.loads(value)), None  # anything else: loads' result or error
    except ValueError as exc:
        return None, f"malformed JSON: {exc}"
    except RecursionError:
        return None, "JSON nested too deeply to read"


def parse_json_many(values: list) -> tuple[list[Any], list[str | None]]:
    """Return `parse_json` of each of VALUES as two lists, (parsed values, errors), the cyclic collector held
    meanwhile.

    A parse makes only live containers (one dict or list per JSON object or array); a collection
    run for them would find nothing to free, and over thousands of values it runs again and again.
    Two lists rather than a pair a value: no container made for each.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        scan, parsed, errors = _scan_json, [], []
        for value in values:
            if value.__class__ is str and value:  # the usual stored text: json.loads' scanner itself
                try:
                    result, end = scan(value, 0)
                    if end == len(value):
                        parsed.append(result)
                        errors.append(None)
                        continue
                except (StopIteration, ValueError, RecursionError):
                    pass
            result, error = parse_json(value)  # anything else, as parse_json reads it (the same result, or its error)
            parsed.append(result)
            errors.append(error)
        return parsed, errors
    finally:
        if enabled:
            gc.enable()


#: datetime.datetime and datetime.timezone, imported by the first date conversion: a command that
#: converts no date (`threads`) does not pay the ~1.5 ms import.
datetime = timezone = None


def _import_datetime() -> None:
    global datetime, timezone
    from datetime import datetime, timezone


def iso_to_ms(value: Any) -> int | None:
    """Convert a stored timestamp (ISO-8601 string, epoch ms, or None) to epoch milliseconds.

    Mirrors JavaScript's `new Date(value).getTime()` for the forms Mastra writes; returns None when
    the value is missing or unparseable (JS would give NaN).
    """
    if value is None:
        return None
    if type(value) is str and len(value) == 24:   # exactly str: the shape toISOString writes
        fast = _js_iso_ms(value)
        if fast is not None:
            return fast
    try:
        if isinstance(value, (int, float)):
            return int(value) if abs(value) <= MAX_JS_DATE_MS else None
        text = str(value).strip()
        if not text:
            return None
        if text.isdigit():
            ms = int(text)
            return ms if ms <= MAX_JS_DATE_MS else None
        if datetime is None:
            _import_datetime()
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return round(dt.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None


#: JavaScript Dates span ±8.64e15 ms around the epoch.
MAX_JS_DATE_MS = 8_640_000_000_000_000
#: Epoch ms of midnight UTC of each `YYYY-MM-DD` met (None: not a date), for `_js_iso_ms`.
_DAY_MS: dict[str, int | None] = {}


def _js_iso_ms(text: str) -> int | None:
    """Return epoch ms of TEXT when it is exactly `YYYY-MM-DDTHH:MM:SS.mmmZ` with valid fields, else None.

    The shape Mastra writes (`Date.toISOString()`), converted without datetime: the date part once
    per day (through `iso_to_ms`'s own road), the time by arithmetic. Anything else returns None and
    takes `iso_to_ms`'s general road, so the result is always the general road's.
    """
    if (text[10] != "T" or text[23] != "Z" or text[13] != ":" or text[16] != ":" or text[19] != "."
            or not (text[11:13] + text[14:16] + text[17:19] + text[20:23]).isdigit()
            or not text[11:23].isascii()):
        return None
    hours, minutes, seconds = int(text[11:13]), int(text[14:16]), int(text[17:19])
    if hours > 23 or minutes > 59 or seconds > 59:
        return None
    day = text[:10]
    if day not in _DAY_MS:
        if len(_DAY_MS) > 100_000:
            _DAY_MS.clear()
        _DAY_MS[day] = iso_to_ms(f"{day}T00:00:00.000+00:00") if day.isascii() else None
    base = _DAY_MS[day]
    if base is None:
        return None
    return base + hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + int(text[20:23])


def ms_to_iso(ms: int) -> str:
    """Format epoch milliseconds as Mastra does (`Date.toISOString()`: `2026-11-29T20:40:53.819Z`).

    Raises ValueError/OverflowError for times Python's datetime cannot hold (beyond year 9999).
    """
    if datetime is None:
        _import_datetime()
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class Resource(_Record):
    """A row of `mastra_resources`: resource-scoped working memory (markdown) and metadata."""

    __slots__ = _fields = ("id", "working_memory", "metadata", "created_at", "updated_at", "metadata_error")

    def __init__(self, id: str, working_memory: str | None = None, metadata: Any = None,
                 created_at: str | None = None, updated_at: str | None = None, metadata_error: str | None = None):
        self.id = id
        self.working_memory = working_memory
        self.metadata = metadata
        self.created_at = created_at
        self.updated_at = updated_at
        self.metadata_error = metadata_error


class Thread(_Record):
    """A row of `mastra_threads`; `metadata` is the parsed JSON object (JSONB or text), or None.

    `message_count` / `newest_message_at`: the number of its messages and the createdAt of its newest
    (listings with counts), else None. `damaged_text`: the columns whose bytes were not valid UTF-8
    (shown with U+FFFD). A thread read from a row (`thread_from_row`) parses its stored metadata
    when `metadata` or `metadata_error` is first read: a listing of thousands of threads that shows
    titles and dates parses none.
    """

    _fields = ("id", "resource_id", "title", "metadata", "created_at", "updated_at", "metadata_error",
               "message_count", "newest_message_at", "damaged_text")
    __slots__ = ("_at", "_metadata", "_metadata_error", "_stored", "created_at", "damaged_text", "id",
                 "message_count", "newest_message_at", "resource_id", "title", "updated_at")

    def __init__(self, id: str, resource_id: str, title: str | None = None, metadata: Any = None,
                 created_at: str | None = None, updated_at: str | None = None, metadata_error: str | None = None,
                 message_count: int | None = None, newest_message_at: str | None = None,
                 damaged_text: tuple[str, ...] = ()):
        self.id = id
        self.resource_id = resource_id
        self.title = title
        self._metadata = metadata
        self.created_at = created_at
        self.updated_at = updated_at
        self._metadata_error = metadata_error
        self.message_count = message_count
        self.newest_message_at = newest_message_at
        self.damaged_text = damaged_text
        self._stored = None  # the stored metadata not parsed yet (None: nothing left to parse; see _parsed_on_read)

    def _parse(self) -> None:
        stored, self._stored = self._stored, None
        if stored.__class__ is _MetadataBlock:  # listed with its neighbours: the block is parsed at once
            parsed = stored.parsed
            if parsed is None:
                parsed = stored.parse()
            at = self._at
            self._metadata, self._metadata_error = parsed[at], stored.errors[at]  # type: ignore[index]
            return
        if not gc.isenabled():
            self._metadata, self._metadata_error = parse_json(stored)
            return
        # the cyclic collector held meanwhile: a parse makes only live containers, and reading the metadata of
        # every thread listed (5,007) ran it over and over (~40 of ~50 ms, issue 28)
        gc.disable()
        try:
            self._metadata, self._metadata_error = parse_json(stored)
        finally:
            gc.enable()

    def stored_state(self) -> dict:
        """Return {slot: value} in slot order, a metadata this thread has not read yet given as its own stored
        value (whether or not its listing's block was parsed): what pickling keeps, and what a thread's digest
        (studio.app.thread_results) reads, the same for a thread however its neighbours were read."""
        state = {name: getattr(self, name) for name in self.__slots__ if name != "_at"}
        block = state["_stored"]
        if block.__class__ is _MetadataBlock:
            state["_stored"] = block.values[self._at]
        return state

    __getstate__ = stored_state

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    metadata = _parsed_on_read("_metadata", "The parsed metadata (a dict, any JSON value, or None when absent or "
                               "unreadable).")
    metadata_error = _parsed_on_read("_metadata_error", "Why the stored metadata could not be read as JSON, or None.")

    @property
    def om_metadata(self) -> dict:
        """Return `metadata.mastra.om` (currentTask, suggestedResponse, …) or {} (Mastra's getThreadOMMetadata)."""
        meta = self.metadata if isinstance(self.metadata, dict) else {}
        mastra = meta.get("mastra")
        om = mastra.get("om") if isinstance(mastra, dict) else None
        return om if isinstance(om, dict) else {}

    @property
    def working_memory(self) -> str | None:
        """Return thread-scoped working memory (`metadata.workingMemory`), if any."""
        meta = self.metadata if isinstance(self.metadata, dict) else {}
        wm = meta.get("workingMemory")
        return wm if isinstance(wm, str) else None


def thread_from_row(row: dict) -> Thread:
    """Return the Thread of a `mastra_threads` ROW ({column: value as read}); metadata parsed on first read,
    damaged text named."""
    thread = Thread(id=row["id"], resource_id=row.get("resourceId"), title=row.get("title"),
                    created_at=row.get("createdAt"), updated_at=row.get("updatedAt"),
                    damaged_text=damaged_columns(row.keys(), row.values()))
    thread._stored = row.get("metadata")  # parsed on first read (Thread.metadata)
    return thread


def threads_from_values(columns: list[str], rows: Iterable[list]) -> list[Thread]:
    """Return the Threads of ROWS (values in COLUMNS' order, as `thread_from_row` takes them by name).

    The same Threads as `thread_from_row` of each row as a dict, without making the dicts. Their
    metadata is parsed on first read, METADATA_BLOCK neighbours at a time (`_MetadataBlock`): reading
    every listed thread's metadata costs one parse a thread and no call a thread beyond it; reading one
    parses its block alone (~0.1 ms). Damaged text is looked for once in all the values, not row by row.
    """
    at = {c: i for i, c in enumerate(columns)}
    if "id" not in at:
        return [thread_from_row(dict(zip(columns, r, strict=True))) for r in rows]
    rows = rows if isinstance(rows, list) else list(rows)
    i_id = at["id"]
    i_res, i_title, i_created, i_updated, i_meta = (at.get(c) for c in
                                                     ("resourceId", "title", "createdAt", "updatedAt", "metadata"))
    damaged = DamagedText in set(map(type, itertools.chain.from_iterable(rows)))  # one pass in C
    if not damaged and None not in (i_res, i_title, i_created, i_updated, i_meta):  # every column: the usual read
        out = [Thread(r[i_id], r[i_res], r[i_title], None, r[i_created], r[i_updated], None, None, None, ())
               for r in rows]
    else:
        out = [Thread(r[i_id], None if i_res is None else r[i_res], None if i_title is None else r[i_title],
                      None, None if i_created is None else r[i_created], None if i_updated is None else r[i_updated],
                      None, None, None, damaged_columns(columns, r) if damaged else ())
               for r in rows]
    if i_meta is not None:
        for start in range(0, len(out), METADATA_BLOCK):
            block = _MetadataBlock([r[i_meta] for r in rows[start:start + METADATA_BLOCK]])
            for n, thread in enumerate(out[start:start + METADATA_BLOCK]):
                thread._stored, thread._at = block, n  # parsed on first read (Thread.metadata)
    return out


#: Threads read together (`threads_from_values`) parse their stored metadata in blocks of this many.
METADATA_BLOCK = 64


class _MetadataBlock:
    """The stored metadata values of up to METADATA_BLOCK listed threads, parsed all together when one of
    them is first read (`parse_json` of each, the cyclic collector held once for the block).

    A thread holds its block in `_stored` and its index in `_at`; the block holds no thread (no cycle) and
    lives while one of its threads has not read its metadata.
    """

    __slots__ = ("errors", "parsed", "values")

    def __init__(self, values: list) -> None:
        #: The stored values (as read: text, bytes or NULL).
        self.values: list = values
        #: `parse_json` of each value, its value and its error, None until parsed (`parse`).
        self.parsed: list[Any] | None = None
        self.errors: list[str | None] | None = None

    def parse(self) -> list[Any]:
        """Parse every stored value of the block (once) and return `parsed` (the stored values are kept while a
        thread of the block has not read its own: `Thread.stored_state`)."""
        if self.parsed is None:
            self.parsed, self.errors = parse_json_many(self.values)  # type: ignore[arg-type]
        return self.parsed


@functools.lru_cache(maxsize=16)
def _utf8(marks: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(m.encode() for m in marks)


@functools.lru_cache(maxsize=16)
def _shared_core(marks: tuple[str, ...]) -> tuple[str, bytes]:
    """The longest text every one of MARKS contains ("" when they share none), as text and UTF-8.

    Text lacking it lacks every mark: one search instead of one per mark (`Message.stored_lacks`).
    """
    if not marks:
        return "", b""
    first = min(marks, key=len)
    for size in range(len(first), 0, -1):
        for start in range(len(first) - size + 1):
            core = first[start:start + size]
            if all(core in m for m in marks):
                return core, core.encode()
    return "", b""


#: A new instance with no __init__ run (`Message.stored` sets every field itself).
_new_object = object.__new__


class Message:
    """A row of `mastra_messages`. `content` is the parsed v2 object {format, parts, content, metadata}.

    When the stored content is not valid JSON, `content` holds the raw string (as Mastra's
    storage does) and `content_error` says why. `damaged_text` names the columns whose stored
    bytes were not valid UTF-8 (read with U+FFFD replacements, see studio.store.cells).

    A message read from the store (`Message.stored`) keeps its stored JSON text and parses it on
    first use of `content` or `content_error`: a read that needs only ids, roles and times (recall
    of 20,007 messages, the thread list) never pays for JSON it does not look at.
    """

    __slots__ = (
        "_content",
        "_content_error",
        "_damaged_text",
        "_encoding",
        "_stored",
        "created_at",
        "id",
        "resource_id",
        "role",
        "thread_id",
        "type",
    )

    def __init__(self, id: str, thread_id: str, role: str, content: Any, created_at: str | None,
                 resource_id: str | None = None, type: str | None = None,
                 content_error: str | None = None, damaged_text: tuple[str, ...] = ()) -> None:
        self.id, self.thread_id, self.role, self.created_at = id, thread_id, role, created_at
        self.resource_id, self.type, self._damaged_text = resource_id, type, damaged_text
        self._content, self._content_error, self._stored, self._encoding = content, content_error, None, "utf-8"

    @classmethod
    def stored(cls, id: str, thread_id: str, role: str, stored_content: Any, created_at: str | None,
               resource_id: str | None = None, type: str | None = None,
               damaged_text: tuple[str, ...] = (), encoding: str = "utf-8") -> Message:
        """Return the message of a stored row whose `content` column holds STORED_CONTENT, parsed when
        first asked for, as Mastra's storage parses it (malformed JSON: the raw text).

        STORED_CONTENT is text, NULL, or the column's bytes in the database's ENCODING, decoded on
        first use too (invalid bytes: U+FFFD and "content" added to `damaged_text`, see cells.decode_text).
        """
        message = _new_object(cls)   # the fields __init__ sets, set here at once (no second call a message)
        message.id, message.thread_id, message.role, message.created_at = id, thread_id, role, created_at
        message.resource_id, message.type, message._damaged_text = resource_id, type, damaged_text
        message._content, message._content_error, message._stored, message._encoding = None, None, stored_content, \
            encoding
        return message

    def _parse(self) -> None:
        raw, self._stored = self._stored, None
        if isinstance(raw, (bytes, bytearray)):
            from studio.store.cells import DamagedText, decode_text

            raw = decode_text(raw, self._encoding)
            if isinstance(raw, DamagedText) and "content" not in self._damaged_text:
                self._damaged_text = (*self._damaged_text, "content")
        parsed, err = parse_json(raw)
        content = parsed if err is None and parsed is not None else raw
        if isinstance(content, (bytes, bytearray)):
            content = bytes(content).decode("utf-8", "replace")
        self._content, self._content_error = content, err

    content = _parsed_on_read("_content", "The parsed content (a dict for Mastra's v2 format), or the stored text "
                              "when it is not JSON.", replaces_stored=True)
    content_error = _parsed_on_read("_content_error", "Why the stored content is not JSON (None when it is).")
    damaged_text = _parsed_on_read("_damaged_text", "The columns whose stored bytes were not valid UTF-8 (shown with "
                                   "U+FFFD).")

    def stored_lacks(self, marks: tuple[str, ...]) -> bool:
        """Return True when the content, not parsed yet, is known to hold none of MARKS, nor any `\\u`
        escape that could spell one (False when already parsed or not UTF-8 / text: look at `content`)."""
        # a text without a backslash (one memchr) holds no "\\u": only one with a backslash is searched for it
        stored = self._stored
        if isinstance(stored, str):
            core = _shared_core(marks)[0]
            return ("\\" not in stored or "\\u" not in stored) and \
                ((bool(core) and core not in stored) or not any(m in stored for m in marks))
        if isinstance(stored, (bytes, bytearray)) and self._encoding == "utf-8":
            core = _shared_core(marks)[1]
            return (b"\\" not in stored or b"\\u" not in stored) and \
                ((bool(core) and core not in stored) or not any(m in stored for m in _utf8(marks)))
        return False

    _FIELDS = ("id", "thread_id", "role", "content", "created_at", "resource_id", "type", "content_error",
               "damaged_text")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as the dataclass was)

    def __repr__(self) -> str:
        return "Message(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS) + ")"

    def __getstate__(self) -> dict:
        return {f: getattr(self, f) for f in self._FIELDS}

    def __setstate__(self, state: dict) -> None:
        content, error = state.pop("content"), state.pop("content_error")
        self.__init__(content=content, content_error=error, **state)

    @property
    def parts(self) -> list:
        """Return the message's parts ([] when there are none or content is not an object)."""
        if isinstance(self.content, dict) and isinstance(self.content.get("parts"), list):
            return self.content["parts"]
        return []

    @property
    def text(self) -> str:
        """Return the message's visible text: text parts joined, else `content.content`, else raw."""
        if isinstance(self.content, str):
            return self.content
        texts = [p.get("text", "") for p in self.parts if isinstance(p, dict) and p.get("type") == "text"]
        if texts:
            return "\n".join(t for t in texts if isinstance(t, str))
        if isinstance(self.content, dict) and isinstance(self.content.get("content"), str):
            return self.content["content"]
        return ""

    @property
    def created_ms(self) -> int | None:
        """Return createdAt as epoch milliseconds."""
        return iso_to_ms(self.created_at)

    def as_mastra(self) -> dict:
        """Return the message shaped like Mastra's MastraDBMessage (as its libSQL store's parseRow builds it)."""
        out = {
            "id": self.id,
            "role": self.role,
            "content": self.content,
            "createdAt": self.created_at,
            "threadId": self.thread_id,
            "resourceId": self.resource_id,
        }
        if self.type and self.type != "v2":
            out["type"] = self.type
        return out


OM_JSON_COLUMNS = {
    "config", "observedMessageIds", "bufferedObservationChunks", "bufferedMessageIds", "metadata",
}
OM_BOOL_COLUMNS = {"isObserving", "isReflecting", "isBufferingObservation", "isBufferingReflection"}


class OMRecord(_Record):
    """One row of `mastra_observational_memory`: one generation of a thread's or resource's OM.

    `columns` holds every stored column by its Mastra name, JSON columns parsed (`json_errors`
    names those that were not valid JSON). Typed accessors cover what the studio uses.
    """

    __slots__ = _fields = ("columns", "json_errors")

    def __init__(self, columns: dict[str, Any] | None = None, json_errors: dict[str, str] | None = None):
        self.columns = {} if columns is None else columns
        self.json_errors = {} if json_errors is None else json_errors

    def get(self, name: str, default: Any = None) -> Any:
        """Return column NAME (None-valued or missing -> DEFAULT)."""
        value = self.columns.get(name)
        return default if value is None else value

    def get_int(self, name: str, default: int = 0) -> int:
        """Return integer column NAME; missing, NULL or not a number -> DEFAULT."""
        value = self.columns.get(name)
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return value
        try:
            number = float(value)
        except (TypeError, ValueError):
            return default
        return int(number) if number == number and abs(number) != float("inf") else default

    @property
    def id(self) -> str:
        return self.columns["id"]

    @property
    def lookup_key(self) -> str:
        return self.columns.get("lookupKey") or ""

    @property
    def scope(self) -> str:
        return self.columns.get("scope") or ("resource" if self.lookup_key.startswith("resource:") else "thread")

    @property
    def resource_id(self) -> str | None:
        return self.columns.get("resourceId")

    @property
    def thread_id(self) -> str | None:
        return self.columns.get("threadId")

    @property
    def generation_count(self) -> int:
        return self.get_int("generationCount")

    @property
    def origin_type(self) -> str:
        return self.get("originType", "initial")

    @property
    def active_observations(self) -> str:
        value = self.get("activeObservations", "")
        return value if isinstance(value, str) else str(value)

    @property
    def observation_token_count(self) -> int:
        return self.get_int("observationTokenCount")

    @property
    def config(self) -> dict:
        cfg = self.columns.get("config")
        return cfg if isinstance(cfg, dict) else {}

    @property
    def last_observed_at(self) -> str | None:
        return self.columns.get("lastObservedAt")

    @property
    def observed_message_ids(self) -> list:
        ids = self.columns.get("observedMessageIds")
        return ids if isinstance(ids, list) else []

    @property
    def buffered_chunks(self) -> list[dict]:
        """Return `bufferedObservationChunks` as a list (Mastra's getBufferedChunks: bad JSON -> [])."""
        chunks = self.columns.get("bufferedObservationChunks")
        return [c for c in chunks if isinstance(c, dict)] if isinstance(chunks, list) else []

    @property
    def created_at(self) -> str | None:
        return self.columns.get("createdAt")

    @property
    def updated_at(self) -> str | None:
        return self.columns.get("updatedAt")

    def flag(self, name: str) -> bool:
        """Return boolean column NAME (stored as 0/1)."""
        return bool(self.get(name, 0))


def storage_cursor(last_observed_at: str | None) -> str | None:
    """Return the `createdAt >=` bound Mastra queries with: lastObservedAt + 1 ms, as ISO (or None)."""
    ms = iso_to_ms(last_observed_at)
    if ms is None:
        return None
    try:
        return ms_to_iso(ms + 1)
    except (ValueError, OverflowError, OSError):  # beyond year 9999: no stored message can be later
        return "9999-12-31T23:59:59.999Z"


#: {config text: parse_json(text)}: the config dicts are shared by the records read (never modified).
_CONFIG_MEMO: dict[str, tuple[Any, str | None]] = {}
_CONFIG_MEMO_ENTRIES = 256


def _parse_config(text: str) -> tuple[Any, str | None]:
    """Parse an OM `config` text once (every generation of a key repeats it); keep at most 256 of them."""
    found = _CONFIG_MEMO.get(text)
    if found is None:
        if len(_CONFIG_MEMO) >= _CONFIG_MEMO_ENTRIES:
            _CONFIG_MEMO.clear()
        found = _CONFIG_MEMO[text] = parse_json(text)
    return found


def om_record_from_row(row: dict) -> OMRecord:
    """Return the OMRecord of a `mastra_observational_memory` ROW ({column: stored value}).

    JSON columns are parsed (a malformed one becomes None and is named in `json_errors`), 0/1
    flags become booleans; other values are kept as stored.
    """
    rec = OMRecord()
    for col, value in row.items():
        if col in OM_JSON_COLUMNS:
            parsed, err = _parse_config(value) if col == "config" and isinstance(value, str) else parse_json(value)
            if err:
                rec.json_errors[col] = err
                parsed = None
            value = parsed
        elif col in OM_BOOL_COLUMNS and value is not None:
            value = bool(value)
        rec.columns[col] = value
    return rec


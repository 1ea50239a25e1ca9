"""Read every stored cell without letting the libSQL driver see text that is not UTF-8.

The `libsql` Python driver converts each TEXT value with Rust's `String::from_utf8(..).unwrap()`:
a cell whose bytes are not valid UTF-8 (a byte flip, a lone surrogate written by a buggy app)
raises `pyo3_runtime.PanicException`, which derives from BaseException, not Exception, so it
escapes every `except Exception`. The store therefore never asks the driver for TEXT: each
selected value goes through `text_safe(expr)` (TEXT arrives as its raw bytes, tagged by type),
and `decode_text` turns those bytes back into `str` here, replacing invalid sequences with
U+FFFD. Such a value is a `DamagedText` (a `str`), so the UI can mark it. SQLite itself (what
Mastra's Node driver reads through) keeps the bytes as they are; Node's decoder also replaces
invalid UTF-8 with U+FFFD, so the text shown is what Mastra would read.
"""

from __future__ import annotations

import gc

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any

#: What a damaged value is marked with in the UI and in notes about a record.
DAMAGED_TEXT_NOTE = "contains bytes that are not valid UTF-8 (shown as \N{REPLACEMENT CHARACTER})"


class DamagedText(str):
    """Stored text whose bytes were not valid UTF-8, decoded with U+FFFD for each invalid sequence."""

    __slots__ = ()


def is_driver_panic(exc: BaseException) -> bool:
    """Return True for a Rust panic surfacing from the libsql driver (`pyo3_runtime.PanicException`)."""
    return type(exc).__name__ == "PanicException"


def contained(exc: BaseException) -> bool:
    """Return True for what a read may turn into a StoreError: an Exception or a driver panic."""
    return isinstance(exc, Exception) or is_driver_panic(exc)


def damaged_columns(columns, values) -> tuple[str, ...]:
    """Return those of COLUMNS whose VALUES (same order) were read as DamagedText (bytes not valid UTF-8)."""
    values = list(values)
    if DamagedText not in set(map(type, values)):  # the common case, checked in C
        return ()
    return tuple(c for c, v in zip(columns, values, strict=True) if isinstance(v, DamagedText))


def text_safe(expr: str) -> str:
    """Return SQL that yields EXPR with TEXT turned into its bytes (BLOB); other types unchanged.

    Pair it with `typeof(EXPR)` (see `text_safe_pair`) when a BLOB must stay distinguishable.
    """
    return f"CASE WHEN typeof({expr}) = 'text' THEN CAST({expr} AS BLOB) ELSE {expr} END"


def text_safe_pair(expr: str) -> str:
    """Return two SQL result columns: `text_safe(EXPR)` and `typeof(EXPR)`."""
    return f"{text_safe(expr)}, typeof({expr})"


def decode_text(raw: bytes | bytearray | memoryview, encoding: str = "utf-8") -> str:
    """Decode stored text bytes RAW (ENCODING: the database's, "utf-8" or "utf-16le"/"utf-16be").

    Returns a plain `str` when the bytes are valid, else a `DamagedText` with U+FFFD replacements.
    """
    data = bytes(raw)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return DamagedText(data.decode(encoding, "replace"))


def decode_pairs(row: tuple, encoding: str = "utf-8") -> tuple:
    """Turn a row of (value, typeof) pairs from `text_safe_pair` columns into plain values."""
    out: list[Any] = []
    for i in range(0, len(row), 2):
        value, kind = row[i], row[i + 1]
        if kind == "text" and isinstance(value, (bytes, bytearray, memoryview)):
            value = decode_text(value, encoding)
        out.append(value)
    return tuple(out)


def decode_rows(rows: list, width: int, encoding: str = "utf-8") -> list[tuple]:
    """`decode_pairs` of every row of ROWS (WIDTH columns each, so 2*WIDTH pairs' cells per row).

    A one-column result (ids, counts) is decoded in one pass with no call per row: `threads --all`
    reads every thread id this way.
    """
    if width != 1:
        return [decode_pairs(r, encoding) for r in rows]
    out: list[tuple] = []
    append = out.append
    for value, kind in rows:
        if kind == "text" and isinstance(value, bytes):
            try:
                value = value.decode(encoding)
            except UnicodeDecodeError:
                value = DamagedText(value.decode(encoding, "replace"))
        elif kind == "text" and isinstance(value, (bytearray, memoryview)):
            value = decode_text(value, encoding)
        append((value,))
    return out


def sqlite_encoding_name(pragma_value: Any) -> str:
    """Map `PRAGMA encoding` output (bytes or str: "UTF-8", "UTF-16le", "UTF-16be") to a Python codec."""
    raw = pragma_value.decode("ascii", "replace") if isinstance(pragma_value, (bytes, bytearray)) else str(pragma_value)
    text = raw.lower()
    if "16le" in text:
        return "utf-16-le"
    if "16be" in text:
        return "utf-16-be"
    return "utf-8"


class bulk_decode:  # a lowercase name: used as `with bulk_decode():`, as the generator it replaces was
    """Hold Python's cyclic garbage collector while many rows are turned into objects.

    Decoding 200,000 rows allocates millions of containers, none of them cyclic garbage, and
    would run the collector thousands of times for nothing. Only an enabled collector is paused
    and re-enabled: the studio, which collects on the GUI thread only, keeps it disabled. A plain
    class, not a generator: entered around every page read (a generator's context costs ~1.5 us).
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        if self._was_enabled:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            gc.enable()


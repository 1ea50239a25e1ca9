"""JavaScript value semantics that Mastra's numbers and strings depend on, for JSON-like Python data.

One shared implementation used by the token counter (:mod:`studio.engine.tokens`), the observer
transcript (:mod:`studio.engine.observer_format`) and their helpers. Values are what ``json.loads``
yields (dict, list, str, int, float, bool, None) plus :data:`UNDEFINED` for a missing property and
``datetime`` for a JavaScript ``Date``.

Strings may be held in either of two forms and every helper here accepts both:

* *Python form*: an astral character (U+10000 and above) is one ``str`` item;
* *UTF-16 form*: it is a surrogate pair, so ``len()`` is JavaScript's ``.length``
  (see :func:`to_utf16` / :func:`from_utf16`).

Lone surrogates are kept as they are in both forms, as JavaScript keeps them.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from json.encoder import encode_basestring as _c_quote
from typing import Any

__all__ = [
    "JS_LINE_START",
    "JS_SPACE",
    "JS_SPACE_NOT_NEWLINE",
    "JS_WHITESPACE",
    "JS_WHITESPACE_CHARS",
    "UNDEFINED",
    "coalesce",
    "from_utf16",
    "get",
    "is_finite",
    "is_nonblank",
    "is_number",
    "iso_string",
    "js_items",
    "js_round",
    "js_string",
    "js_trim",
    "json_quote",
    "json_stringify",
    "node_utf8",
    "number_to_string",
    "property_key",
    "safe_slice",
    "safe_tail",
    "sha256_hex",
    "to_utf16",
    "truthy",
    "utf16_len",
]


class _Undefined:
    """JavaScript `undefined`: a missing property, told apart from JSON null (falsy, one instance)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEFINED = _Undefined()

# JavaScript's `\s` (WhiteSpace + LineTerminator) as a regex class body. Python's `\s` differs:
# it adds U+001C..U+001F and U+0085 and lacks U+FEFF.
JS_WHITESPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
#: JavaScript's `\s` as a whole class, and `[^\S\n]` (whitespace but a newline), for Python patterns.
JS_SPACE = f"[{JS_WHITESPACE}]"
JS_SPACE_NOT_NEWLINE = "[" + JS_WHITESPACE.replace("\n", "") + "]"
#: A regex `^` under JavaScript's `m` flag: the start, or after \n, \r, U+2028 or U+2029 (Python's
#: MULTILINE `^` follows \n only). Use it without re.MULTILINE.
JS_LINE_START = "(?:(?<=[\n\r\u2028\u2029])|\\A)"
# The same set spelled out, for str.strip / membership tests.
JS_WHITESPACE_CHARS = "".join(
    chr(c) for c in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B),
                     0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF)
)


# ----------------------------------------------------------------------------------- plain values

def is_number(value: Any) -> bool:
    """Return whether VALUE is a JavaScript number (int or float, never bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite(value: Any) -> bool:
    """Return `Number.isFinite(value)` (an int too large for a double counts as Infinity)."""
    try:
        return is_number(value) and math.isfinite(value)
    except OverflowError:
        return False


def truthy(value: Any) -> bool:
    """Return JavaScript truthiness of VALUE: {} and [] are truthy; 0, NaN, "", null, undefined are not."""
    if value is None or value is UNDEFINED or value is False:
        return False
    if is_number(value):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def coalesce(*values: Any) -> Any:
    """Return the first VALUES item that is neither null nor undefined, like `a ?? b ?? ...` (else None)."""
    for value in values:
        if value is not None and value is not UNDEFINED:
            return value
    return None


def get(obj: Any, key: str) -> Any:
    """Return `obj?.[key]` for JSON values: None when OBJ is not an object or lacks KEY."""
    return obj.get(key) if isinstance(obj, dict) else None


def js_trim(text: str) -> str:
    """Return `text.trim()`: TEXT without leading/trailing JavaScript whitespace."""
    return text.strip(JS_WHITESPACE_CHARS)


def is_nonblank(value: Any) -> bool:
    """Return whether VALUE is a string with something left after `trim()`."""
    return isinstance(value, str) and js_trim(value) != ""


def js_round(x: float) -> int:
    """Return `Math.round(x)` for a finite number: nearest integer, halves rounded up (towards +inf)."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


# ------------------------------------------------------------------------------- UTF-16 strings

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def utf16_len(text: str) -> int:
    """Return JavaScript's `text.length`: UTF-16 code units (astral characters count 2), in either form."""
    if text.isascii() or max(text) < "\U00010000":  # no astral character: one unit per char
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))  # an astral character is a surrogate pair: 2 units


def _pair(match: re.Match) -> str:
    cp = ord(match.group()) - 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def to_utf16(text: str) -> str:
    """Return TEXT in UTF-16 form: astral characters become surrogate pairs, so len() counts code units."""
    return text if text.isascii() else _ASTRAL.sub(_pair, text)


def from_utf16(text: str) -> str:
    """Return TEXT in Python form: surrogate pairs recombined, lone surrogates kept."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def safe_slice(text: str, end: int) -> str:
    """Return the first END code units of UTF-16-form TEXT, backing off one rather than end on a high surrogate."""
    if end <= 0:
        return ""
    if end >= len(text):
        return text
    return text[: end - 1] if "\ud800" <= text[end - 1] <= "\udbff" else text[:end]


def safe_tail(text: str, length: int) -> str:
    """Return the last LENGTH code units of UTF-16-form TEXT, skipping a leading low surrogate."""
    start = max(0, len(text) - length)
    if start > 0 and "\udc00" <= text[start] <= "\udfff":
        start += 1
    return text[start:]


def node_utf8(text: str) -> bytes:
    """Return Node's UTF-8 bytes of TEXT (`Buffer.from(text)`): pairs joined, lone surrogates as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return joined.encode("utf-8")


#: Texts at least this long (chars) have their SHA-256 remembered (the last _SHA_MEMO_ENTRIES of them):
#: a status, a message list and the health scan each key Mastra's estimate cache of one big message.
_SHA_MEMO_MIN_CHARS = 1 << 20
_SHA_MEMO_ENTRIES = 4
_SHA_MEMO: dict[str, str] = {}


def _builtin_sha256():
    try:
        from _sha256 import sha256  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # CPython 3.12+
        except ImportError:
            from hashlib import sha256
    return sha256


#: The SHA-256 constructor in use and what it may still hash. A run starts with CPython's built-in
#: one (no OpenSSL to load: hashlib's import costs ~2-3 ms, more than a small file's hashes) and
#: moves to OpenSSL's (several times faster per call and per byte) once it has hashed _SHA_BUILTIN_BUDGET
#: chars, one call counted as 256. Both give the same digest.
_SHA_BUILTIN_BUDGET = 1 << 18
_sha_state: list = [_builtin_sha256(), _SHA_BUILTIN_BUDGET]


def _sha256(size: int):
    state = _sha_state
    if state[1] > 0:
        state[1] -= size + 256
        if state[1] <= 0:
            import hashlib

            state[0] = hashlib.sha256
    return state[0]


def sha256_hex(text: str) -> str:
    """Return the hex SHA-256 of TEXT's Node UTF-8 bytes (`createHash('sha256').update(text)`)."""
    big = len(text) >= _SHA_MEMO_MIN_CHARS
    if big and (known := _SHA_MEMO.get(text)) is not None:
        return known
    digest = _sha256(len(text))(node_utf8(text)).hexdigest()
    if big:
        try:
            while len(_SHA_MEMO) >= _SHA_MEMO_ENTRIES:
                _SHA_MEMO.pop(next(iter(_SHA_MEMO)), None)
        except (StopIteration, RuntimeError):  # another thread changed it meanwhile
            _SHA_MEMO.clear()
        _SHA_MEMO[text] = digest
    return digest


# --------------------------------------------------------------------------- numbers and String()

def number_to_string(value: int | float) -> str:
    """Return `String(value)` for a number: shortest round-trip digits, exponent past 1e21 / below 1e-6."""
    if isinstance(value, int):
        if -(2**53) <= value <= 2**53:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    # repr() gives the same shortest round-trip digits as ECMAScript; only the layout differs.
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    raw = whole + frac.rstrip("0") if frac.strip("0") else whole
    digits = raw.lstrip("0")
    n = len(whole) + (int(exp) if exp else 0) - (len(raw) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    sign = "-" if value < 0 else ""
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    head = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def js_string(value: Any) -> str:
    """Return `String(value)` for a JSON value: "null", "undefined", "[object Object]", arrays comma-joined."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if is_number(value):
        return number_to_string(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None or v is UNDEFINED else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def property_key(key: Any) -> str:
    """Return KEY as a JavaScript property key (`String(key)`; a str key is returned unchanged)."""
    return key if isinstance(key, str) else js_string(key)


def _is_index(key: str) -> bool:
    return (key.isascii() and key.isdigit() and (key[0] != "0" or key == "0")
            and int(key) < 4294967295)


def js_items(obj: dict) -> list[tuple[str, Any]]:
    """Return OBJ's (key, value) pairs in JavaScript property order: array-index keys ascending, then insertion."""
    items = [(property_key(k), v) for k, v in obj.items()]
    index = [kv for kv in items if kv[0][:1].isdigit() and _is_index(kv[0])]
    if not index:
        return items
    index.sort(key=lambda kv: int(kv[0]))
    return index + [kv for kv in items if not (kv[0][:1].isdigit() and _is_index(kv[0]))]


# ---------------------------------------------------------------------------------- JSON.stringify

_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Characters JSON.stringify escapes: controls, quote, backslash and *lone* surrogates (a surrogate
# pair written as two items stays raw, as does an astral character).
_JSON_NEEDS_ESCAPE = re.compile(
    '[\x00-\x1f"\\\\]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]'
)


def _escape(match: re.Match) -> str:
    ch = match.group()
    return _JSON_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def json_quote(text: str) -> str:
    """Return TEXT as a JSON string literal exactly as JSON.stringify writes it (lone surrogates as \\uXXXX)."""
    if text.isascii() or not _SURROGATE.search(text):
        return _c_quote(text)  # escapes the same set, in the same spelling, when no surrogate is present
    return '"' + _JSON_NEEDS_ESCAPE.sub(_escape, text) + '"'


def iso_string(value: datetime) -> str:
    """Return `Date#toISOString()` of VALUE (UTC, millisecond precision; a naive datetime is taken as UTC)."""
    utc = value.astimezone(UTC) if value.tzinfo else value
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
            f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z")


def json_stringify(value: Any, indent: int | str = 0) -> str | None:
    """Return `JSON.stringify(value, null, indent)`: JS key order and number text; None for top-level undefined.

    INDENT is a count of spaces (at most 10) or a gap string (first 10 characters), as in JavaScript.
    Object members whose value is undefined are left out; undefined in an array is written `null`;
    NaN and Infinity are written `null`; a datetime is written as its ISO string (Date#toJSON).
    """
    gap = " " * max(0, min(10, indent)) if isinstance(indent, int) else indent[:10]
    colon = ": " if gap else ":"

    def emit(v: Any, pad: str) -> str | None:
        if isinstance(v, str):
            return json_quote(v)
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if is_number(v):
            return number_to_string(v) if is_finite(v) else "null"
        if v is UNDEFINED:
            return None
        if isinstance(v, dict):
            inner = pad + gap
            members = []
            for k, x in js_items(v):
                rendered = emit(x, inner)
                if rendered is not None:
                    members.append(json_quote(k) + colon + rendered)
            if not members:
                return "{}"
            if not gap:
                return "{" + ",".join(members) + "}"
            return "{\n" + inner + (",\n" + inner).join(members) + "\n" + pad + "}"
        if isinstance(v, (list, tuple)):
            if not v:
                return "[]"
            inner = pad + gap
            items = [emit(x, inner) or "null" for x in v]
            if not gap:
                return "[" + ",".join(items) + "]"
            return "[\n" + inner + (",\n" + inner).join(items) + "\n" + pad + "]"
        if isinstance(v, datetime):
            return json_quote(iso_string(v))
        return json_quote(str(v))

    return emit(value, "")

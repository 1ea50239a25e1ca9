"""Token figures for Mastra memory: Mastra's own estimates, reproduced exactly, and exact o200k counts.

Mastra (@mastra/memory 1.31.0) thresholds Observational Memory on *estimates* made by its
``TokenCounter`` (token-counter.ts), which prices text with the tokenx heuristic (ported in
:mod:`studio.engine.tokenx`). This module mirrors that class for the default counter
``new TokenCounter()`` and, optionally, for a counter built with a model string such as
``"openai/gpt-4o"`` (which only changes how image and file attachments are priced).

What a message costs (``countMessage``)::

    round(estimate(role) + sum(part costs) + 3.8 + 3.8 * extra_tool_messages + json_adjustments)

* ``text`` parts cost their tokenx estimate; ``reasoning`` and ``data-*`` parts cost 0;
* a tool invocation costs its name, its arguments (JSON arguments: -12 overhead) and, once it has
  an outcome, the outcome (result JSON pretty-printed with 2 spaces, -12 overhead for a non-string
  result) plus one extra message of 3.8;
* file and image parts are priced by provider-aware heuristics (85 tokens for a small image with
  the default counter, ``max(500, bytes/4)`` for a PDF, ...), never as their base64 text;
* any other part costs the estimate of its ``JSON.stringify``;
* a list of messages (``countMessages``) adds 24 once, and 0 for an empty list.

Each priced payload may carry a cached estimate in ``providerMetadata.mastra.tokenEstimate``
(``content.metadata.mastra.tokenEstimate`` for a message-level string). A cached entry is reused
only when ``v == 7``, ``source == "v7:tokenx"``, ``key == "<kind>:" + sha256(payload)`` and
``tokens`` is finite; a ``source == "client"`` entry on a file/image part always wins. By default
nothing is written back (Mastra stamps the entries into the message objects it counts); pass
``stamp=True`` to mutate the given dicts the way Mastra does.

``count_messages_for_status`` mirrors ``countMessagesAsync`` (what ``getStatus`` and the observer
use). Offline it equals ``count_messages`` except that, for a counter whose model names openai,
google or anthropic, an attachment's cached ``attachment-provider`` entry (an exact count a
provider endpoint once returned, or the stamped local fallback) is honoured. Mastra would also
call the provider's count-tokens endpoint when an API key is set and probe remote image URLs for
their size; neither is done here, which is exactly what Mastra falls back to without network.

Inline images (base64 / data URLs) are measured from their header bytes like probe-image-size's
sync parsers: PNG, JPEG, GIF, WebP, BMP, TIFF, ICO and PSD. AVIF and SVG are not measured (their
size is then unknown, which changes the estimate only for those formats).

JavaScript behaviour is reproduced where it changes a number: UTF-16 string lengths,
``JSON.stringify`` (key order with integer-like keys first, escapes, number formatting),
``Math.round`` (half up), JavaScript truthiness and whitespace, Node's lenient base64.

Exact counts (``exact_tokens``) use tiktoken's o200k_base built offline from the bundled ranks.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
import re
import threading
from typing import Any, Iterable
from urllib.parse import unquote_to_bytes, urlsplit

from studio.engine.tokenx import JS_WHITESPACE, estimate_token_count, utf16_len

__all__ = [
    "TOKENS_PER_MESSAGE", "TOKENS_PER_CONVERSATION", "TOKEN_ESTIMATE_CACHE_VERSION",
    "TOKEN_ESTIMATE_SOURCE", "estimate_text", "count_string", "count_observations",
    "count_message", "count_messages", "count_message_for_status", "count_messages_for_status",
    "estimate_key", "js_json_stringify", "image_dimensions", "exact_tokens",
    "exact_message_tokens", "model_visible_text",
]

TOKENS_PER_MESSAGE = 3.8
TOKENS_PER_CONVERSATION = 24
TOKEN_ESTIMATE_CACHE_VERSION = 7
TOKEN_ESTIMATE_SOURCE = f"v{TOKEN_ESTIMATE_CACHE_VERSION}:tokenx"
CLIENT_ESTIMATE_SOURCE = "client"

_MISSING = object()  # JavaScript `undefined` where it must be told apart from `null`
_IMAGE_EXTENSIONS = frozenset(
    "png jpg jpeg webp gif bmp tiff tif heic heif avif".split()
)


# ----------------------------------------------------------------------------- JavaScript helpers

def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    """Number.isFinite for a JSON number (an integer too big for a double is Infinity in JS)."""
    try:
        return _is_num(value) and math.isfinite(value)
    except OverflowError:
        return False


def _truthy(value: Any) -> bool:
    """JavaScript truthiness for JSON values: {} and [] are truthy, NaN is not."""
    if value is None or value is _MISSING or value is False:
        return False
    if _is_num(value):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def _get(obj: Any, key: str) -> Any:
    """`obj?.[key]` for JSON values (None when OBJ is not an object)."""
    return obj.get(key) if isinstance(obj, dict) else None


def _coalesce(*values: Any) -> Any:
    """JavaScript `a ?? b ?? ...`."""
    for value in values:
        if value is not None and value is not _MISSING:
            return value
    return None


_JS_TRIM = re.compile(f"^[{JS_WHITESPACE}]+|[{JS_WHITESPACE}]+$")
_JS_WS_RUN = re.compile(f"[{JS_WHITESPACE}]+")
_JS_WS = re.compile(f"[{JS_WHITESPACE}]")


def _js_trim(text: str) -> str:
    return _JS_TRIM.sub("", text)


def _nonblank_str(value: Any) -> bool:
    return isinstance(value, str) and _js_trim(value) != ""


_INDEX_KEY = re.compile(r"0|[1-9][0-9]*")


def _is_index(key: str) -> bool:
    return _INDEX_KEY.fullmatch(key) is not None and int(key) < 4294967295


def _js_items(obj: dict) -> list[tuple[str, Any]]:
    """Own properties in JavaScript order: array-index keys ascending, then insertion order."""
    items = [(str(k), v) for k, v in obj.items()]
    index = sorted(((k, v) for k, v in items if _is_index(k)), key=lambda kv: int(kv[0]))
    return index + [(k, v) for k, v in items if not _is_index(k)] if index else items


def _js_number(value: int | float) -> str | None:
    """ECMAScript Number::toString of VALUE (None for NaN/Infinity, which JSON writes as null)."""
    if isinstance(value, int) and -(2**53) <= value <= 2**53:
        return str(value)
    try:
        value = float(value)
    except OverflowError:
        return None
    if not math.isfinite(value):
        return None
    if value == 0:
        return "0"
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
    tail = f"e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + (digits if k == 1 else digits[0] + "." + digits[1:]) + tail


_ESCAPED = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _js_quote(text: str) -> str:
    return '"' + _ESCAPED.sub(lambda m: _ESCAPES.get(m.group()) or "\\u%04x" % ord(m.group()), text) + '"'


def js_json_stringify(value: Any, indent: int = 0) -> str:
    """Serialise a JSON value to the exact text JavaScript's `JSON.stringify(value, null, indent)` gives."""
    pad = " " * indent

    def emit(v: Any, depth: int) -> str:
        if v is None or v is _MISSING:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if _is_num(v):
            return _js_number(v) or "null"
        if isinstance(v, str):
            return _js_quote(v)
        if isinstance(v, dict):
            items = [(k, x) for k, x in _js_items(v) if x is not _MISSING]
            if not items:
                return "{}"
            if not indent:
                return "{" + ",".join(f"{_js_quote(k)}:{emit(x, depth)}" for k, x in items) + "}"
            inner = "\n" + pad * (depth + 1)
            body = ("," + inner).join(f"{_js_quote(k)}: {emit(x, depth + 1)}" for k, x in items)
            return "{" + inner + body + "\n" + pad * depth + "}"
        if isinstance(v, (list, tuple)):
            if not v:
                return "[]"
            if not indent:
                return "[" + ",".join(emit(x, depth) for x in v) + "]"
            inner = "\n" + pad * (depth + 1)
            return "[" + inner + ("," + inner).join(emit(x, depth + 1) for x in v) + "\n" + pad * depth + "]"
        return _js_quote(str(v))

    return emit(value, 0)


def _js_string(value: Any) -> str:
    """JavaScript `String(value)` for the template literal `part-${part.type}`."""
    if value is _MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_num(value):
        return _js_number(value) or "NaN"
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return ",".join("" if x is None else _js_string(x) for x in value)
    return str(value)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> bytes:
    """Node's UTF-8 encoding of a JS string: lone surrogates become U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(_utf8(text)).hexdigest()


def estimate_key(kind: str, payload: str) -> str:
    """Return Mastra's cache key for a priced payload: `"<kind>:" + sha256(utf-8 payload)` in hex."""
    return f"{kind}:{_sha256_hex(payload)}"


# ---------------------------------------------------------------------------- cached estimates

def _is_entry(value: Any) -> bool:
    return (isinstance(value, dict) and _is_num(value.get("v")) and isinstance(value.get("source"), str)
            and isinstance(value.get("key"), str) and _is_num(value.get("tokens")))


def _cache_lookup(cache: Any, key: str) -> dict | None:
    """A cache is one entry or a map key -> entry; return the entry stored under KEY."""
    if not isinstance(cache, dict):
        return None
    if _is_entry(cache):
        return cache if cache["key"] == key else None
    entry = cache.get(key)
    return entry if _is_entry(entry) else None


def _cache_merge(cache: Any, key: str, entry: dict) -> dict:
    if _is_entry(cache):
        return entry if cache["key"] == key else {cache["key"]: cache, key: entry}
    if isinstance(cache, dict):
        return {**cache, key: entry}
    return entry


def _is_valid(entry: dict | None, key: str) -> bool:
    return bool(entry and entry["v"] == TOKEN_ESTIMATE_CACHE_VERSION and entry["source"] == TOKEN_ESTIMATE_SOURCE
                and entry["key"] == key and _finite(entry["tokens"]))


def _part_mastra(part: Any) -> Any:
    return _get(_get(part, "providerMetadata"), "mastra")


def _ensure_mastra(holder: Any, field: str) -> dict | None:
    """Mastra's `holder[field] ??= {}; holder[field].mastra ??= {}` (None when it cannot apply)."""
    if not isinstance(holder, dict):
        return None
    if holder.get(field) is None:
        holder[field] = {}
    meta = holder[field]
    if not isinstance(meta, dict):
        return None
    if meta.get("mastra") is None:
        meta["mastra"] = {}
    return meta["mastra"] if isinstance(meta["mastra"], dict) else None


def _client_estimate(part: Any) -> dict | None:
    """A caller-supplied `{source: "client", tokens: N >= 0}` estimate on a file/image part."""
    cache = _get(_part_mastra(part), "tokenEstimate")
    if not isinstance(cache, (dict, list)):
        return None

    def matches(e: Any) -> bool:
        return _is_entry(e) and e["source"] == CLIENT_ESTIMATE_SOURCE and _finite(e["tokens"]) and e["tokens"] >= 0

    if matches(cache):
        return cache
    values = cache if isinstance(cache, list) else [v for _, v in _js_items(cache)]
    return next((v for v in values if matches(v)), None)


# ------------------------------------------------------------------------------ image dimensions

def _u16le(b: bytes, o: int) -> int:
    return b[o] | b[o + 1] << 8


def _u16be(b: bytes, o: int) -> int:
    return b[o] << 8 | b[o + 1]


def _u32le(b: bytes, o: int) -> int:
    return int.from_bytes(b[o:o + 4], "little")


def _u32be(b: bytes, o: int) -> int:
    return int.from_bytes(b[o:o + 4], "big")


def _i32(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def _probe_bmp(b: bytes):
    if len(b) < 26 or b[:2] != b"BM":
        return None
    header = _u32le(b, 14)
    if header == 12:
        w, h = (_u16le(b, 18) ^ 0x8000) - 0x8000, (_u16le(b, 20) ^ 0x8000) - 0x8000
    elif header > 12:
        w, h = _i32(_u32le(b, 18)), _i32(_u32le(b, 22))
    else:
        return None
    return w, abs(h)


def _probe_gif(b: bytes):
    if len(b) < 10 or b[:6] not in (b"GIF87a", b"GIF89a"):
        return None
    return _u16le(b, 6), _u16le(b, 8)


def _probe_ico(b: bytes):
    if len(b) < 6 or _u16le(b, 0) != 0 or _u16le(b, 2) != 1 or _u16le(b, 4) == 0:
        return None
    count, best = _u16le(b, 4), (0, 0)
    if len(b) < 6 + 16 * count:
        return None
    for i in range(count):
        w, h = b[6 + 16 * i] or 256, b[7 + 16 * i] or 256
        if w > best[0] or h > best[1]:
            best = (w, h)
    return best


def _probe_jpeg(b: bytes):
    if len(b) < 3 or b[:3] != b"\xff\xd8\xff":
        return None
    pos, n, want_code = 3, len(b), True
    while pos < n:
        byte = b[pos]
        pos += 1
        if not want_code:  # between segments: tolerate junk until the next 0xFF
            want_code = byte == 0xFF
            continue
        if byte == 0xFF:
            continue
        if byte in (0xD9, 0xDA) or not (0xC0 <= byte <= 0xFE or 0xD0 <= byte <= 0xD8 or byte == 0x01):
            return None
        if 0xD0 <= byte <= 0xD8 or byte == 0x01:
            want_code = False
            continue
        if pos + 2 > n:
            return None
        left = _u16be(b, pos) - 2
        pos += 2
        if left < 0:
            return None
        if left >= 5 and 0xC0 <= byte <= 0xCF and byte not in (0xC4, 0xC8, 0xCC):  # start of frame
            if pos + 5 > n:
                return None
            return _u16be(b, pos + 3), _u16be(b, pos + 1)
        pos += left  # APP1/Exif (orientation is not needed) and every other segment
        want_code = False
    return None


def _probe_png(b: bytes):
    if len(b) < 24 or b[:8] != b"\x89PNG\r\n\x1a\n" or b[12:16] != b"IHDR":
        return None
    return _u32be(b, 16), _u32be(b, 20)


def _probe_psd(b: bytes):
    if len(b) < 22 or b[:6] != b"8BPS\x00\x01":
        return None
    return _u32be(b, 18), _u32be(b, 14)


def _probe_tiff(b: bytes):
    if len(b) < 8 or b[:4] not in (b"II*\x00", b"MM\x00*"):
        return None
    order = "big" if b[0] == 0x4D else "little"

    def u(o: int, size: int) -> int:
        return int.from_bytes(b[o:o + size], order)

    offset = u(4, 4)
    if offset < 8 or offset + 2 > len(b) or u(offset, 2) == 0:
        return None
    count, width, height = u(offset, 2), 0, 0
    for i in range(count):
        o = offset + 2 + 12 * i
        if o + 12 > len(b):
            return None
        tag, kind, values = u(o, 2), u(o + 2, 2), u(o + 4, 4)
        value = None if values != 1 or kind not in (3, 4) else u(o + 8, 2 if kind == 3 else 4)
        if tag == 256:
            width = value
        elif tag == 257:
            height = value
    return (width, height) if width and height else None


def _probe_webp(b: bytes):
    if len(b) < 12 or b[:4] != b"RIFF" or b[8:12] != b"WEBP":
        return None
    end, pos, n, result = _u32le(b, 4) + 8, 12, len(b), None
    while True:
        while pos < n and b[pos] == 0 and pos + 8 < end:
            pos += 1
        if pos + 8 >= end:
            return result
        if pos + 8 > n:
            return None
        kind, size = b[pos:pos + 4], _u32le(b, pos + 4)
        pos += 8
        if kind == b"EXIF" and size >= 4:  # the last chunk the parser reads
            return result if pos + size <= n else None
        need = {b"VP8 ": 10, b"VP8L": 5, b"VP8X": 10}.get(kind)
        if need and size >= need:
            if pos + need > n:
                return None
            d = b[pos:pos + need]
            if result is None:
                if kind == b"VP8 " and d[3:6] == b"\x9d\x01\x2a":
                    result = (_u16le(d, 6) & 0x3FFF, _u16le(d, 8) & 0x3FFF)
                elif kind == b"VP8L" and d[0] == 0x2F:
                    bits = _u32le(d, 1)
                    result = ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
                elif kind == b"VP8X":
                    result = (int.from_bytes(d[4:7], "little") + 1, int.from_bytes(d[7:10], "little") + 1)
        if pos + size > n:
            return None
        pos += size


# probe-image-size 7.5 order (avif, bmp, gif, ico, jpeg, png, psd, svg, tiff, webp) minus AVIF and
# SVG, which are not measured here: the first parser that recognises the bytes decides.
_PROBES = (_probe_bmp, _probe_gif, _probe_ico, _probe_jpeg, _probe_png, _probe_psd, _probe_tiff, _probe_webp)


def image_dimensions(data: bytes) -> tuple[int, int] | None:
    """Return (width, height) in pixels read from an image file's header bytes, or None (probe-image-size/sync)."""
    for probe in _PROBES:
        found = probe(data)
        if found is not None:
            return found if found[0] > 0 and found[1] > 0 else None
    return None


# ------------------------------------------------------------------------- attachment descriptors

_HTTP = re.compile(r"https?://", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _is_http(value: Any) -> bool:
    return isinstance(value, str) and _HTTP.match(value) is not None


def _url_pathname(url: str) -> str | None:
    """WHATWG `new URL(url).pathname` for an http(s) URL; None where `new URL` would throw."""
    parts = urlsplit(_js_trim(url).replace("\\", "/"))
    host = parts.netloc.rpartition("@")[2]
    host, _, port = host.partition(":") if not host.startswith("[") else (host, "", "")
    if not host or _JS_WS.search(host) or (port and (not port.isdigit() or int(port) > 65535)):
        return None
    segments: list[str] = []
    for seg in parts.path.split("/")[1:]:
        if seg in (".", "%2e", "%2E"):
            continue
        if seg in ("..", ".%2e", "%2e.", "%2e%2e", ".%2E", "%2E.", "%2E%2E"):
            segments = segments[:-1]
            continue
        segments.append(seg)
    return "/" + "/".join(segments)


def _extension(value: str) -> str | None:
    match = re.search(r"\.([a-z0-9]+)$", value.split("#", 1)[0].split("?", 1)[0], re.IGNORECASE)
    return match.group(1).lower() if match else None


def _has_image_extension(name: Any) -> bool:
    return isinstance(name, str) and (_extension(name) or "") in _IMAGE_EXTENSIONS


def _is_image_like_file(part: Any) -> bool:
    if _get(part, "type") != "file":
        return False
    mime, data = _get(part, "mimeType"), _get(part, "data")
    if isinstance(mime, str) and mime.lower().startswith("image/"):
        return True
    if isinstance(data, str) and data.startswith("data:image/"):
        return True
    if _is_http(data):
        path = _url_pathname(data)
        if path is not None and _has_image_extension(path):
            return True
    return _has_image_extension(_get(part, "filename"))


def _filename_from_data(data: Any) -> str | None:
    if not _is_http(data):
        return None
    path = _url_pathname(data)
    name = next((s for s in reversed(path.split("/")) if s), None) if path else None
    if not name:
        return None
    try:
        return unquote_to_bytes(name).decode("utf-8")
    except UnicodeDecodeError:
        return name


def _attachment_filename(part: Any) -> str | None:
    explicit = _get(part, "filename")
    if _nonblank_str(explicit):
        return _js_trim(explicit)
    return _filename_from_data(_coalesce(_get(part, "data"), _get(part, "image")))


def _attachment_mime(part: Any, fallback: str) -> str:
    mime = _get(part, "mimeType")
    if _nonblank_str(mime):
        return _js_trim(mime)
    asset = _coalesce(_get(part, "data"), _get(part, "image"))
    if isinstance(asset, str) and asset.startswith("data:"):
        semi, comma = asset.find(";"), asset.find(",")
        end = comma if semi == -1 else min(semi, comma)
        if end > 5:
            return asset[5:end]
    return fallback


def _base64_size(text: str) -> int:
    clean = _JS_WS_RUN.sub("", text)
    padding = 2 if clean.endswith("==") else 1 if clean.endswith("=") else 0
    return max(0, utf16_len(clean) * 3 // 4 - padding)


def _source_stats(asset: Any) -> tuple[str, int | None]:
    """(`url` | `data-uri` | `binary`, byte size or None) of an attachment's payload."""
    if isinstance(asset, str):
        if _is_http(asset):
            return "url", None
        if asset.startswith("data:"):
            comma = asset.find(",")
            return "data-uri", _base64_size("" if comma == -1 else asset[comma + 1:])
        return "binary", _base64_size(asset)
    return "binary", None


def _node_base64(text: str) -> bytes:
    """Decode like Node's Buffer.from(text, 'base64'): lenient, url-safe too, stops at '='."""
    clean = re.sub(r"[^A-Za-z0-9+/\-_]", "", text.split("=", 1)[0]).translate(str.maketrans("-_", "+/"))
    if len(clean) % 4 == 1:
        clean = clean[:-1]
    return base64.b64decode(clean + "=" * (-len(clean) % 4))


def _looks_like_path(value: str) -> bool:
    return (value.startswith(("/", "./", "../", "~/")) or re.match(r"[A-Za-z]:[\\/]", value) is not None
            or "\\" in value)


def _decode_image(value: Any) -> bytes | None:
    if not isinstance(value, str) or _is_http(value):
        return None
    if value.startswith("data:"):
        comma = value.find(",")
        if comma == -1:
            return None
        header, payload = value[:comma], value[comma + 1:]
        if ";base64" in header.lower():
            return _node_base64(payload)
        if re.search(r"%(?![0-9A-Fa-f]{2})", payload):
            return None  # decodeURIComponent would throw
        return unquote_to_bytes(_utf8(payload))
    if (utf16_len(value) < 16 or utf16_len(value) % 4 or _JS_WS.search(value) or _looks_like_path(value)
            or not _BASE64.fullmatch(value)):
        return None
    return _node_base64(value)


def _positive(value: Any) -> Any:
    return value if _finite(value) and value > 0 else None


def _resolve_dimensions(part: Any, stamp: bool) -> tuple[Any, Any]:
    """Width/height from the part's fields or cached metadata, else measured from inline bytes."""
    dims = _get(_part_mastra(part), "imageDimensions")
    width = _coalesce(_positive(_get(part, "width")), _positive(_get(part, "imageWidth")),
                      _positive(_get(dims, "width")))
    height = _coalesce(_positive(_get(part, "height")), _positive(_get(part, "imageHeight")),
                       _positive(_get(dims, "height")))
    if width and height:
        return width, height
    data = _decode_image(_coalesce(_get(part, "image"), _get(part, "data")))
    measured = image_dimensions(data) if data else None
    if not measured:
        return width, height
    resolved = (_coalesce(width, measured[0]), _coalesce(height, measured[1]))
    if stamp and (meta := _ensure_mastra(part, "providerMetadata")) is not None:
        meta["imageDimensions"] = {"width": resolved[0], "height": resolved[1]}
    return resolved


def _image_detail(part: Any) -> str:
    openai_opts = _get(_get(part, "providerOptions"), "openai")
    openai_meta = _get(_get(part, "providerMetadata"), "openai")
    detail = _coalesce(_get(part, "detail"), _get(part, "imageDetail"), _get(openai_opts, "detail"),
                       _get(openai_opts, "imageDetail"), _get(openai_meta, "detail"),
                       _get(openai_meta, "imageDetail"), _get(_part_mastra(part), "imageDetail"))
    return detail if detail in ("low", "high") else "auto"


_GOOGLE_RESOLUTIONS = {"low": 280, "medium": 560, "high": 1120, "ultra_high": 2240, "unspecified": 1120}


def _google_resolution(part: Any) -> str:
    google_opts = _get(_get(part, "providerOptions"), "google")
    google_meta = _get(_get(part, "providerMetadata"), "google")
    for source in (part, google_opts, google_meta, _part_mastra(part)):
        value = _get(source, "mediaResolution")
        if isinstance(value, str) and value in _GOOGLE_RESOLUTIONS:
            return value
    return "unspecified"


def _js_round(x: float) -> int:
    return math.floor(x + 0.5)


def _openai_config(model_id: str) -> tuple[int, int, int]:
    """(base tokens, tokens per 512px tile, tiles when nothing is known) for an OpenAI-style model."""
    if model_id.startswith("gpt-5"):
        return 70, 140, 4
    if model_id.startswith("gpt-4o-mini"):
        return 2833, 5667, 1
    if model_id.startswith(("o1", "o3")):
        return 75, 150, 4
    if "computer-use" in model_id:
        return 65, 129, 4
    return 85, 170, 4


def _openai_high_tiles(width: Any, height: Any, size: int | None, fallback: int) -> int:
    if width and height:
        w, h = width, height
        if max(w, h) > 2048:
            ratio = 2048 / max(w, h)
            w, h = w * ratio, h * ratio
        if min(w, h) > 768:
            ratio = 768 / min(w, h)
            w, h = w * ratio, h * ratio
        w, h = max(1, _js_round(w)), max(1, _js_round(h))
        return max(1, math.ceil(w / 512) * math.ceil(h / 512))
    if size is not None:
        return 1 if size <= 512 * 1024 else 4 if size <= 2 * 1024**2 else 6 if size <= 4 * 1024**2 else 8
    return fallback


def _anthropic_image_tokens(width: Any, height: Any, size: int | None) -> int:
    if width and height:
        if max(width, height) > 1568:
            ratio = 1568 / max(width, height)
            width, height = max(1, _js_round(width * ratio)), max(1, _js_round(height * ratio))
        return max(1, math.ceil(width * height * (1 / 750)))
    if size is not None:
        return 341 if size <= 512 * 1024 else 1366 if size <= 2 * 1024**2 else 2048 if size <= 4 * 1024**2 else 2731
    return 1600


def _file_tokens_from_bytes(provider: str | None, mime: str, size: int) -> int:
    normalized = _js_trim(mime.lower().split(";", 1)[0])
    if normalized == "application/pdf":
        if provider == "google":
            return max(258, math.ceil(size / 20))
        if provider == "anthropic":
            return max(1500, math.ceil(size / 3))
        return max(500, math.ceil(size / 4))
    return max(1, math.ceil(size / 4))


def _parse_model(model: Any) -> dict | None:
    """Mastra's parseModelContext: "provider/model", a bare model id, or {provider, modelId}."""
    if not _truthy(model):
        return None
    if isinstance(model, dict):
        provider, model_id = model.get("provider"), model.get("modelId")
        return {"provider": provider, "modelId": model_id} if _truthy(provider) or _truthy(model_id) else None
    provider, slash, model_id = str(model).partition("/")
    return {"provider": provider, "modelId": model_id} if slash else {"provider": None, "modelId": model}


# ------------------------------------------------------------------------------------- the counter

def _sanitize_tool_result(value: Any) -> Any:
    if isinstance(value, list):
        return [_sanitize_tool_result(v) for v in value]
    if isinstance(value, dict):
        return {k: (f"[stripped encryptedContent: {utf16_len(v)} characters]"
                    if k == "encryptedContent" and isinstance(v, str) and utf16_len(v) > 256
                    else _sanitize_tool_result(v)) for k, v in _js_items(value)}
    return value


def _serialize_tool_result(value: Any) -> str:
    return value if isinstance(value, str) else js_json_stringify(_sanitize_tool_result(value), 2)


def _serialize_part(part: Any) -> str:
    """JSON.stringify(part) without its own providerMetadata.mastra.tokenEstimate."""
    meta = _get(part, "providerMetadata")
    if not _truthy(_get(_get(meta, "mastra"), "tokenEstimate")):
        return js_json_stringify(part)
    mastra = {k: v for k, v in meta["mastra"].items() if k != "tokenEstimate"}
    clone_meta = {**meta, "mastra": mastra} if mastra else {k: v for k, v in meta.items() if k != "mastra"}
    if clone_meta:
        return js_json_stringify({**part, "providerMetadata": clone_meta})
    clone = {k: v for k, v in part.items() if k != "providerMetadata"}
    return js_json_stringify(clone)


def _file_descriptor(part: Any) -> str:
    filename = _get(part, "filename")
    return js_json_stringify({
        "type": "file",
        "mimeType": _coalesce(_get(part, "mimeType")),
        "filename": _js_trim(filename) if _nonblank_str(filename) else _filename_from_data(_get(part, "data")),
    })


class _Counter:
    """One `TokenCounter` evaluation: its model context and whether estimates are stamped back."""

    def __init__(self, model: Any = None, stamp: bool = False):
        self.model = _parse_model(model) or {}
        self.stamp = stamp
        provider = self.model.get("provider")
        self.provider = provider.lower() if isinstance(provider, str) else None
        self.model_id = self.model.get("modelId")

    # -- cached estimates (readOrPersistPartEstimate / ...FixedPartEstimate / ...MessageEstimate)
    def _part_cached(self, part: Any, kind: str, payload: str, tokens: Any = None) -> Any:
        key = estimate_key(kind, payload)
        cached = _cache_lookup(_get(_part_mastra(part), "tokenEstimate"), key)
        if _is_valid(cached, key):
            return cached["tokens"]
        tokens = count_string(payload) if tokens is None else tokens
        self._stamp(part, "providerMetadata", key, tokens)
        return tokens

    def _message_cached(self, message: dict, kind: str, payload: str) -> Any:
        key = estimate_key(kind, payload)
        content = message.get("content")
        cached = (_cache_lookup(_get(_get(_get(content, "metadata"), "mastra"), "tokenEstimate"), key)
                  or _cache_lookup(_get(_get(message.get("metadata"), "mastra"), "tokenEstimate"), key))
        if _is_valid(cached, key):
            return cached["tokens"]
        tokens = count_string(payload)
        self._stamp(content if isinstance(content, dict) else message, "metadata", key, tokens)
        return tokens

    def _stamp(self, holder: Any, field: str, key: str, tokens: Any) -> None:
        if self.stamp and (meta := _ensure_mastra(holder, field)) is not None:
            entry = {"v": TOKEN_ESTIMATE_CACHE_VERSION, "source": TOKEN_ESTIMATE_SOURCE, "key": key, "tokens": tokens}
            meta["tokenEstimate"] = _cache_merge(meta.get("tokenEstimate"), key, entry)

    # -- attachments
    def _image_estimate(self, part: dict, asset: Any, kind: str) -> tuple[int, dict]:
        """(tokens, cache payload) of an image, priced for the counter's provider (estimateImageAssetTokens)."""
        provider, model_id = self.provider, self.model_id
        width, height = _resolve_dimensions(part, self.stamp)
        source, size = _source_stats(asset)
        tail = {"width": width, "height": height, "source": source, "sizeBytes": size,
                "mimeType": _get(part, "mimeType"), "filename": _get(part, "filename")}
        model_lower = model_id.lower() if isinstance(model_id, str) else ""
        if provider == "google":
            gemini3 = model_lower.startswith("gemini-3")
            resolution = _google_resolution(part) if gemini3 else "unspecified"
            tiles = max(1, math.ceil(width / 768) * math.ceil(height / 768)) if width and height else 1
            head = {"kind": kind, "provider": provider, "modelId": model_id,
                    "estimator": "google-gemini-3" if gemini3 else "google-legacy", "mediaResolution": resolution}
            return (_GOOGLE_RESOLUTIONS[resolution] if gemini3 else tiles * 258), {**head, **tail}
        if provider == "anthropic":
            head = {"kind": kind, "provider": provider, "modelId": model_id, "estimator": "anthropic"}
            return _anthropic_image_tokens(width, height, size), {**head, **tail}
        base, per_tile, fallback_tiles = _openai_config(model_lower)
        detail = _image_detail(part)
        if detail != "auto":
            effective = detail
        elif width and height:
            effective = "high" if max(width, height) > 768 else "low"
        else:
            effective = "high" if size is not None and size > 1024 * 1024 else "low"
        tiles = _openai_high_tiles(width, height, size, fallback_tiles) if effective == "high" else 0
        head = {"kind": kind, "provider": provider if provider is not None else _MISSING, "modelId": model_id,
                "estimator": "openai" if provider == "openai" else "fallback", "detail": detail,
                "effectiveDetail": effective}
        return base + tiles * per_tile, {**head, **tail}

    def _file_bytes_estimate(self, part: dict) -> tuple[int, dict] | None:
        """(tokens, cache payload) of a non-image file from its byte size; None without inline bytes."""
        source, size = _source_stats(_get(part, "data"))
        if size is None:
            return None
        mime = _attachment_mime(part, "application/octet-stream")
        payload = {"kind": "non-image-file", "provider": _coalesce(self.provider, "fallback"),
                   "modelId": self.model_id, "estimator": "bytes", "source": source, "sizeBytes": size,
                   "mimeType": mime, "filename": _attachment_filename(part)}
        return _file_tokens_from_bytes(self.provider, mime, size), payload

    def _attachment(self, part: Any) -> Any:
        """Cost of a file/image part, None for any other part (countAttachmentPartSync)."""
        ptype = _get(part, "type")
        if ptype not in ("image", "file"):
            return None
        if client := _client_estimate(part):
            return client["tokens"]
        if ptype == "image":
            tokens, payload = self._image_estimate(part, part.get("image"), "image")
            return self._part_cached(part, "image", js_json_stringify(payload), tokens)
        if _is_image_like_file(part):
            tokens, payload = self._image_estimate(part, part.get("data"), "file")
            return self._part_cached(part, "image-like-file", js_json_stringify(payload), tokens)
        if estimate := self._file_bytes_estimate(part):
            return self._part_cached(part, "non-image-file", js_json_stringify(estimate[1]), estimate[0])
        return self._part_cached(part, "file-descriptor", _file_descriptor(part))

    def _attachment_for_status(self, part: Any) -> Any:
        """countAttachmentPartAsync without network: a cached provider count, else the local estimate."""
        ptype = _get(part, "type")
        if ptype not in ("image", "file"):
            return None
        if client := _client_estimate(part):
            return client["tokens"]
        is_image = ptype == "image" or _is_image_like_file(part)
        remote = self._remote_payload(part, is_image)
        if remote is None:
            return self._attachment(part)
        key = estimate_key("attachment-provider", js_json_stringify(remote))
        if _is_valid(cached := _cache_lookup(_get(_part_mastra(part), "tokenEstimate"), key), key):
            return cached["tokens"]
        # Mastra would now ask the provider's count-tokens endpoint (only with an API key in the
        # environment) and probe remote images; offline it keeps the local estimate under this key.
        fallback = {**remote, "strategy": "local-fallback"}
        if is_image:  # unknown sides are `undefined` in Mastra, so JSON leaves them out
            width, height = _resolve_dimensions(part, self.stamp)
            fallback.update(width=_MISSING if width is None else width, height=_MISSING if height is None else height)
        key = estimate_key("attachment-provider", js_json_stringify(fallback))
        if _is_valid(cached := _cache_lookup(_get(_part_mastra(part), "tokenEstimate"), key), key):
            return cached["tokens"]
        tokens = self._attachment(part)
        self._stamp(part, "providerMetadata", key, tokens)
        return tokens

    def _remote_payload(self, part: dict, is_image: bool) -> dict | None:
        """buildRemoteAttachmentCachePayload: what identifies an attachment to a provider endpoint."""
        if self.provider not in ("openai", "google", "anthropic") or not _truthy(self.model_id):
            return None
        asset = _coalesce(part.get("image"), part.get("data"))
        source, size = _source_stats(asset)
        url = asset if isinstance(asset, str) and re.match(r"(?i)(https?://|data:)", asset) else None
        digest = _sha256_hex(asset) if isinstance(asset, str) and asset and url is None else None
        return {"strategy": "provider-endpoint", "provider": self.provider, "modelId": self.model_id,
                "type": _coalesce(part.get("type")), "detail": _image_detail(part) if is_image else None,
                "mediaResolution": _google_resolution(part) if self.provider == "google" and is_image else None,
                "mimeType": _attachment_mime(part, "image/png" if is_image else "application/pdf"),
                "filename": _attachment_filename(part), "source": source, "sizeBytes": size,
                "assetUrl": url, "assetHash": digest}

    def _multimodal_result(self, part: dict, result: Any) -> Any:
        """Price a tool result whose content items hold images/files; None when it holds none."""
        if not isinstance(result, dict):
            return None
        value = result.get("value")
        items = value if result.get("type") == "content" and isinstance(value, list) else result.get("content")
        if not isinstance(items, list):
            return None
        tokens, cache_parts, has_attachment = 0, [], False
        for item in items:
            if not isinstance(item, dict):
                continue
            kind, data = item.get("type", _MISSING), item.get("data")
            if kind == "text":
                text = item.get("text")
                text = text if isinstance(text, str) else _js_string(_coalesce(item.get("value"), ""))
                tokens += count_string(text)
                cache_parts.append({"type": "text", "textHash": _sha256_hex(text)})
                continue
            is_image = kind in ("image", "image-data") or (
                kind == "media" and _js_string(_coalesce(item.get("mediaType"), "")).startswith("image/"))
            if (is_image or kind in ("audio", "file-data", "media")) and isinstance(data, str):
                has_attachment = True
                att = {"type": "image", "image": data} if is_image else {"type": "file", "data": data}
                att["mimeType"] = _coalesce(item.get("mediaType"), item.get("mimeType"))
                if not is_image and "filename" in item:
                    att["filename"] = item["filename"]
                att.update({k: item[k] for k in ("providerOptions", "providerMetadata") if k in item})
                prefix = "image-data" if is_image else "file-data"
                if client := _client_estimate(att):
                    tokens += client["tokens"]
                    cache_parts.append({"type": f"{prefix}-client-estimate", "key": client["key"],
                                        "tokens": client["tokens"]})
                elif is_image or _is_image_like_file(att):
                    est, payload = self._image_estimate(att, data, "image" if is_image else "file")
                    tokens += est
                    cache_parts.append({"type": "image-data" if is_image else "image-like-file-data",
                                        "estimate": payload})
                elif estimate := self._file_bytes_estimate(att):
                    tokens += estimate[0]
                    cache_parts.append({"type": "file-data", "estimate": estimate[1]})
                else:
                    descriptor = _file_descriptor(att)
                    tokens += count_string(descriptor)
                    cache_parts.append({"type": "file-data-descriptor", "descriptor": descriptor})
                continue
            formatted = _serialize_tool_result(item)
            tokens += count_string(formatted)
            cache_parts.append({"type": "json", "valueHash": _sha256_hex(formatted)})
        if not has_attachment:
            return None
        payload = js_json_stringify({"type": "content", "value": cache_parts})
        return self._part_cached(part, "tool-result-multimodal-content", payload, tokens)

    # -- everything that is not an attachment (countNonAttachmentPart)
    def _signature(self, part: dict, inv: dict) -> tuple[Any, int]:
        """Tokens of a tool call's name and arguments, and the -12 overhead for JSON arguments."""
        tokens, delta = 0, 0
        if _truthy(inv.get("toolName")) and isinstance(inv["toolName"], str):
            tokens += self._part_cached(part, "tool-call-name", inv["toolName"])
        if "args" in inv:
            if isinstance(inv["args"], str):
                tokens += self._part_cached(part, "tool-call-args", inv["args"])
            else:
                tokens += self._part_cached(part, "tool-call-args-json", js_json_stringify(inv["args"]))
                delta -= 12
        return tokens, delta

    def _tool_outcome(self, part: dict, inv: dict, state: str) -> tuple[Any, int]:
        """Tokens of what a finished (or answered) tool invocation adds to the call, and its overhead delta."""
        approval = _get(inv, "approval")
        reason = _get(approval, "reason")
        error = inv.get("errorText")
        error = error if _nonblank_str(error) else "Tool execution failed"
        if state == "approval-responded":
            ok = _truthy(reason) and isinstance(reason, str)
            return (self._part_cached(part, "tool-approval-reason", reason) if ok else 0), 0
        if state == "output-denied":
            reason = reason if _nonblank_str(reason) else "Tool call was not approved by the user"
            return self._part_cached(part, "tool-result-denied", reason), 0
        if state == "output-error":
            return self._part_cached(part, "tool-result-error", error), 0
        mastra = _part_mastra(part)
        stored = isinstance(mastra, dict) and "modelOutput" in mastra
        value = mastra["modelOutput"] if stored else inv.get("result", _MISSING)
        if value is _MISSING or (isinstance(value, str) and not _js_trim(value)):
            if _truthy(inv.get("isError")):
                return self._part_cached(part, "tool-result-error", error), 0
            return self._part_cached(part, "tool-result-json", "[empty result]"), 0
        tokens = self._multimodal_result(part, value)
        if tokens is None:
            kind = "tool-result-model-output-json" if stored else "tool-result-json"
            tokens = self._part_cached(part, kind, _serialize_tool_result(value))
        return tokens, (0 if isinstance(value, str) else -12)

    def _non_attachment(self, part: Any) -> tuple[Any, int, int]:
        """(tokens, overhead delta, extra tool messages) of a part that is not an attachment."""
        ptype = part.get("type", _MISSING) if isinstance(part, dict) else _MISSING
        if ptype == "text":
            text = part.get("text")
            return (self._part_cached(part, "text", text) if isinstance(text, str) else 0), 0, 0
        inv = part.get("toolInvocation") if ptype == "tool-invocation" else None
        state = inv.get("state") if isinstance(inv, dict) else None
        if state in ("call", "partial-call", "approval-requested"):
            return (*self._signature(part, inv), 0)
        if state in ("approval-responded", "result", "output-denied", "output-error"):
            tokens, delta = self._signature(part, inv)
            more, more_delta = self._tool_outcome(part, inv, state)
            return tokens + more, delta + more_delta, 1
        if (isinstance(ptype, str) and ptype.startswith("data-")) or ptype == "reasoning":
            return 0, 0, 0
        return self._part_cached(part, f"part-{_js_string(ptype)}", _serialize_part(part)), 0, 0

    def count_message(self, message: dict, for_status: bool = False) -> int:
        """TokenCounter.countMessage (or countMessageAsync when FOR_STATUS) of one message."""
        role = message.get("role")
        payload: Any = count_string(role) if isinstance(role, str) else 0
        overhead, extra = TOKENS_PER_MESSAGE, 0
        content = message.get("content")
        if isinstance(content, str):
            payload += self._message_cached(message, "message-content", content)
        elif isinstance(content, dict):
            parts = content.get("parts")
            if _truthy(content.get("content")) and not isinstance(parts, list):
                if isinstance(content["content"], str):
                    payload += self._message_cached(message, "content-content", content["content"])
            elif isinstance(parts, list):
                for part in parts:
                    tokens = self._attachment_for_status(part) if for_status else self._attachment(part)
                    if tokens is not None:
                        payload += tokens
                        continue
                    tokens, delta, extra_messages = self._non_attachment(part)
                    payload += tokens
                    overhead += delta
                    extra += extra_messages
        if extra > 0:
            overhead += extra * TOKENS_PER_MESSAGE
        return _js_round(payload + overhead)


# ------------------------------------------------------------------------------------ public API

def estimate_text(text: str) -> int:
    """Estimate tokens (int) in TEXT with tokenx 1.3.0's `estimateTokenCount` (Mastra's estimator)."""
    return estimate_token_count(text)


def count_string(text: str) -> int:
    """Count tokens (int) in TEXT as Mastra's `TokenCounter.countString` does (0 for empty text)."""
    return estimate_token_count(text) if text else 0


def count_observations(text: str) -> int:
    """Count tokens (int) in an observations block as Mastra's `TokenCounter.countObservations` does."""
    return count_string(text)


def count_message(message: dict, *, model: Any = None, stamp: bool = False) -> int:
    """Count tokens (int) of one MastraDBMessage dict, without list overhead (`TokenCounter.countMessage`).

    MODEL is Mastra's `new TokenCounter({model})` option ("provider/modelId" or {provider, modelId});
    it only changes attachment pricing. STAMP writes tokenEstimate caches into MESSAGE like Mastra.
    """
    return _Counter(model, stamp).count_message(message)


def count_messages(messages: Iterable[dict], *, model: Any = None, stamp: bool = False) -> int:
    """Count tokens (int) of a list of MastraDBMessage dicts as `TokenCounter.countMessages` does.

    The list costs 24 once plus `count_message` of each message; an empty list costs 0.
    """
    counter, messages = _Counter(model, stamp), list(messages)
    if not messages:
        return 0
    return TOKENS_PER_CONVERSATION + sum(counter.count_message(m) for m in messages)


def count_message_for_status(message: dict, *, model: Any = None, stamp: bool = False) -> int:
    """Count tokens (int) of one message as `TokenCounter.countMessageAsync` (what getStatus uses), offline.

    Differs from `count_message` only for attachments when MODEL names openai/google/anthropic: a
    cached provider-endpoint count stored on the part is reused. No network is used: remote images
    are not probed and no provider endpoint is called, exactly what Mastra falls back to offline.
    """
    return _Counter(model, stamp).count_message(message, for_status=True)


def count_messages_for_status(messages: Iterable[dict], *, model: Any = None, stamp: bool = False) -> int:
    """Count tokens (int) of a list of messages as `TokenCounter.countMessagesAsync` does, offline.

    24 once plus `count_message_for_status` of each message; an empty list costs 0.
    """
    counter, messages = _Counter(model, stamp), list(messages)
    if not messages:
        return 0
    return TOKENS_PER_CONVERSATION + sum(counter.count_message(m, for_status=True) for m in messages)


# ------------------------------------------------------------------------- exact tiktoken counts

_ENCODING_LOCK = threading.Lock()
_RANK_HASHES = {"o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"}


@functools.lru_cache(maxsize=4)
def _encoding(name: str):
    """Build tiktoken encoding NAME from the bundled rank file; never touches the network."""
    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as openai_public
    from unittest import mock

    from studio.paths import TOKENIZERS

    constructor = openai_public.ENCODING_CONSTRUCTORS.get(name)
    rank_file = TOKENIZERS / f"{name}.tiktoken"
    if constructor is None or not rank_file.is_file():
        raise ValueError(f"no bundled tokenizer {name!r} in {TOKENIZERS}")

    def load_local(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # tiktoken's own definition (pattern, special tokens) over our local ranks, hash-checked.
        return tiktoken.load.load_tiktoken_bpe(str(rank_file), expected_hash=_RANK_HASHES.get(name, expected_hash))

    with _ENCODING_LOCK, mock.patch.object(openai_public, "load_tiktoken_bpe", load_local):
        spec = constructor()
    return tiktoken.Encoding(**spec)


def exact_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Count real tokens (int) in TEXT with tiktoken ENCODING (special-token text counts as plain text)."""
    return len(_encoding(encoding).encode_ordinary(text)) if text else 0


def model_visible_text(message: dict) -> str:
    """Return the text a model sees for one MastraDBMessage dict, one piece per line (no attachments).

    Pieces: the role; each text part; reasoning text; a tool call's name and arguments (JSON,
    compact) and its outcome (result as a string or compact JSON, preferring the stored
    `modelOutput` like Mastra, else the error/denial text). `data-*` parts never reach a model and
    file/image parts are not text, so both are left out.
    """
    pieces = [message.get("role") or ""]
    content = message.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if isinstance(content, str):
        pieces.append(content)
    elif not isinstance(parts, list) and isinstance(_get(content, "content"), str):
        pieces.append(content["content"])
    for part in parts if isinstance(parts, list) else []:
        ptype = _get(part, "type")
        if ptype == "text" and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif ptype == "reasoning":
            details = [d.get("text") for d in part.get("details") or [] if isinstance(d, dict)]
            texts = [t for t in details if isinstance(t, str)] or [part.get("reasoning")]
            pieces.extend(t for t in texts if isinstance(t, str))
        elif ptype == "tool-invocation" and isinstance(inv := part.get("toolInvocation"), dict):
            if isinstance(inv.get("toolName"), str):
                pieces.append(inv["toolName"])
            if "args" in inv:
                pieces.append(inv["args"] if isinstance(inv["args"], str) else js_json_stringify(inv["args"]))
            mastra = _part_mastra(part)
            result = mastra["modelOutput"] if isinstance(mastra, dict) and "modelOutput" in mastra \
                else inv.get("result", _MISSING)
            if inv.get("state") == "result" and result is not _MISSING:
                pieces.append(result if isinstance(result, str) else js_json_stringify(result))
            elif inv.get("state") in ("output-error", "result") and isinstance(inv.get("errorText"), str):
                pieces.append(inv["errorText"])
            elif isinstance(reason := _get(_get(inv, "approval"), "reason"), str):
                pieces.append(reason)
    return "\n".join(p for p in pieces if p)


def exact_message_tokens(message: dict, encoding: str = "o200k_base") -> int:
    """Count real tokens (int) of `model_visible_text(message)` with tiktoken ENCODING (no framing overhead)."""
    return exact_tokens(model_visible_text(message), encoding)

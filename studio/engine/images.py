"""Image facts Mastra reads from attachments: header-probed pixel sizes, inline bytes, image-like files.

* :func:`image_dimensions` reads (width, height) from an image file's first bytes the way
  probe-image-size 7.5's synchronous parsers do, for PNG, JPEG, GIF, WebP, BMP, TIFF, ICO and PSD
  (AVIF and SVG are not measured, so their size stays unknown).
* :func:`decode_image_bytes` turns an inline asset (a data URL or bare base64) into bytes like
  Mastra's decodeImageBuffer, with Node's lenient base64 decoder.
* :func:`is_image_like_file` says whether a ``file`` part is really an image (MIME type, data URL,
  URL path or filename extension), in the token counter's or the observer's variant.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from studio.common.jscompat import JS_WHITESPACE, get, node_utf8, utf16_len
from studio.common.jsurl import decode_uri_component, parse_url
from studio.engine.count_guards import require_decoded

__all__ = [
    "IMAGE_EXTENSIONS",
    "decode_image_bytes",
    "has_image_extension",
    "image_dimensions",
    "is_http_url",
    "is_image_like_file",
    "path_extension",
]

IMAGE_EXTENSIONS = frozenset(["png", "jpg", "jpeg", "webp", "gif", "bmp", "tiff", "tif", "heic", "heif", "avif"])
_EXTENSION = re.compile(r"\.([a-zA-Z0-9]+)\Z")
_HTTP = re.compile(r"https?://", re.IGNORECASE)


# ------------------------------------------------------------------------------ image-like files

def path_extension(value: str) -> str | None:
    """Return the lower-cased extension ending VALUE once `#...` and `?...` are cut off (None without one)."""
    match = _EXTENSION.search(value.split("#", 1)[0].split("?", 1)[0])
    return match.group(1).lower() if match else None


def has_image_extension(name: Any) -> bool:
    """Return whether NAME is a string whose extension is an image one (png, jpg, webp, heic...)."""
    return isinstance(name, str) and (path_extension(name) or "") in IMAGE_EXTENSIONS


def is_http_url(value: Any) -> bool:
    """Return whether VALUE is a string starting with http:// or https:// (any case), like isHttpUrlString."""
    return isinstance(value, str) and _HTTP.match(value) is not None


def is_image_like_file(part: Any, *, http_prefix_only: bool) -> bool:
    """Return whether a `file` PART holds an image: image/* MIME, data:image/ URL, image URL path or filename.

    HTTP_PREFIX_ONLY mirrors the token counter (isImageLikeFilePart), which parses only data that
    starts with http(s)://; the observer (isImageLikeObserverFilePart) parses any string and then
    requires an http(s) scheme.
    """
    if get(part, "type") != "file":
        return False
    mime, data = get(part, "mimeType"), get(part, "data")
    if isinstance(mime, str) and mime.lower().startswith("image/"):
        return True
    if isinstance(data, str):
        if data.startswith("data:image/"):
            return True
        if not http_prefix_only or is_http_url(data):
            url = parse_url(data)
            if url is not None and url[0] in ("http", "https") and has_image_extension(url[1]):
                return True
    return has_image_extension(get(part, "filename"))


# ----------------------------------------------------------------------------------- inline bytes

_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/\-_]")
_JS_WS = re.compile(f"[{JS_WHITESPACE}]")
_URL_SAFE = str.maketrans("-_", "+/")


def _node_base64(text: str) -> bytes:
    """Decode like Node's Buffer.from(text, 'base64'): lenient, url-safe too, stops at '='."""
    clean = _NOT_BASE64.sub("", text.split("=", 1)[0]).translate(_URL_SAFE)
    if len(clean) % 4 == 1:
        clean = clean[:-1]
    return base64.b64decode(clean + "=" * (-len(clean) % 4))


def _looks_like_path(value: str) -> bool:
    return (value.startswith(("/", "./", "../", "~/")) or re.match(r"[A-Za-z]:[\\/]", value) is not None
            or "\\" in value)


def decode_image_bytes(value: Any) -> bytes | None:
    """Return the bytes of an inline image asset (data URL or bare base64), or None (decodeImageBuffer).

    http(s) URLs, filesystem-looking paths and text that is not plausibly base64 give None; so does
    a percent-encoded data URL that decodeURIComponent rejects raises UncountableMessage (Mastra throws URIError).
    """
    if not isinstance(value, str) or is_http_url(value):
        return None
    if value.startswith("data:"):
        comma = value.find(",")
        if comma == -1:
            return None
        header, payload = value[:comma], value[comma + 1:]
        if ";base64" in header.lower():
            return _node_base64(payload)
        return node_utf8(require_decoded(decode_uri_component(payload), "its data URL"))
    length = utf16_len(value)
    if (length < 16 or length % 4 or _JS_WS.search(value) or _looks_like_path(value)
            or not _BASE64_TEXT.fullmatch(value)):
        return None
    return _node_base64(value)


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

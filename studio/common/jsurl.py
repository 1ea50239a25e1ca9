"""WHATWG URL parsing as far as Mastra's attachment handling reads it: `new URL(x)` and `decodeURIComponent`.

Mastra names attachments after the last path segment of their URL and treats a file as an image
when its URL path ends in an image extension. Both need `new URL(text).protocol` / `.pathname`
and whether `new URL` throws; :func:`parse_url` reproduces exactly that (Node 20 behaviour):

* leading/trailing C0 controls and spaces are stripped, tabs and newlines removed anywhere;
* special schemes (http, https, ws, wss, ftp, file) read backslashes as slashes and ignore extra
  slashes before the host; the host must be valid (forbidden code points, IPv4 numbers, IPv6
  brackets, ports up to 65535) or parsing fails;
* the path is percent-encoded (UTF-8, lone surrogates as U+FFFD) and its dot segments
  (``.``, ``..``, ``%2e``...) resolved; an opaque path (``mailto:x``) is only control-encoded.

Known approximation: a non-ASCII host is mapped with UTS #46 (the ``idna`` package, which httpx
brings; Python's IDNA 2003 codec when it is missing) but the Bidi and joiner rules are not
checked, so a few exotic hostnames that Node rejects are accepted.
"""

from __future__ import annotations

import encodings.idna
import ipaddress
import re

from studio.common.jscompat import from_utf16

__all__ = ["decode_uri_component", "parse_url"]

_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space
_TAB_OR_NEWLINE = re.compile("[\t\n\r]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
_FORBIDDEN_HOST = frozenset("\x00\t\n\r #/:<>?@[\\]^|")
_FORBIDDEN_DOMAIN = _FORBIDDEN_HOST | frozenset(chr(c) for c in range(0x20)) | {"%", "\x7f"}
_DRIVE_LETTER = re.compile(r"[A-Za-z][:|]")
_SINGLE_DOT = frozenset({".", "%2e"})
_DOUBLE_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
_PATH_SAFE = re.compile(r'[\x21\x24-\x3b\x3d\x40-\x5f\x61-\x7a\x7c\x7e]*')  # no space " # < > ? ` { }
_OPAQUE_SAFE = re.compile(r"[\x20-\x7e]*")
_PERCENT_BYTE = re.compile(b"%([0-9A-Fa-f]{2})")


def _percent_encode(text: str, safe: re.Pattern) -> str:
    if safe.fullmatch(text):
        return text
    out = []
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            ch = "\ufffd"
        out.append(ch if safe.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8")))
    return "".join(out)


def _ipv4_number(part: str) -> int | None:
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not part:
        return 0
    try:
        return int(part, radix) if part.isascii() and part.isalnum() else None
    except ValueError:
        return None


def _ends_in_number(host: str) -> bool:
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    if last.isascii() and last.isdigit():
        return True
    return last[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in last[2:])


def _valid_ipv4(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4 or "" in parts:
        return False
    numbers = [_ipv4_number(p) for p in parts]
    if None in numbers or any(n > 255 for n in numbers[:-1]):
        return False
    return numbers[-1] < 256 ** (5 - len(numbers))


def _valid_punycode_label(label: str) -> bool:
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
        return bool(decoded) and bool(encodings.idna.nameprep(decoded))
    except (UnicodeError, ValueError):
        return False


def _ascii_domain(domain: str) -> str | None:
    """UTS #46 ToASCII without Bidi/joiner checks (None where a code point is disallowed)."""
    try:
        import idna
    except ImportError:  # pragma: no cover - httpx depends on idna
        try:
            return domain.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    try:
        mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
        return ".".join(label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
                        for label in mapped.split("."))
    except (idna.IDNAError, UnicodeError, ValueError):
        return None


def _valid_domain(host: str) -> bool:
    """Special-scheme host: percent-decoded, IDNA-mapped, free of forbidden code points, IPv4 if numeric."""
    raw = _PERCENT_BYTE.sub(lambda m: bytes([int(m.group(1), 16)]), host.encode("utf-8", "surrogatepass"))
    domain = raw.decode("utf-8", "replace")
    domain = domain.lower() if domain.isascii() else _ascii_domain(domain)
    if domain is None:
        return False
    if not domain or any(ch in _FORBIDDEN_DOMAIN for ch in domain):
        return False
    if any(label.startswith("xn--") and not _valid_punycode_label(label) for label in domain.split(".")):
        return False
    return _valid_ipv4(domain) if _ends_in_number(domain) else True


def _valid_host(host: str, special: bool) -> bool:
    if host.startswith("["):
        if not host.endswith("]") or "%" in host:
            return False
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return False
        return True
    if not special:
        return not any(ch in _FORBIDDEN_HOST for ch in host)
    return _valid_domain(host)


def _valid_authority(authority: str, special: bool) -> bool:
    at = authority.rfind("@")
    hostport = authority[at + 1:]
    if at != -1 and not hostport:
        return False
    if hostport.startswith("["):
        close = hostport.find("]")
        host, rest = (hostport, "") if close == -1 else (hostport[: close + 1], hostport[close + 1:])
        if rest and not rest.startswith(":"):
            return False
        port = rest[1:]
    else:
        host, _, port = hostport.partition(":")
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        return False
    if not host:
        return not special
    return _valid_host(host, special)


def _path(path: str, file: bool = False) -> str:
    """Pathname of a hierarchical PATH (starting with '/'): segments encoded, dot segments resolved."""
    segments = path.split("/")[1:]
    out: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            if out and not (file and len(out) == 1 and _DRIVE_LETTER.fullmatch(out[0])):
                out.pop()
            if last:
                out.append("")
        elif lowered in _SINGLE_DOT:
            if last:
                out.append("")
        else:
            if file and not out and _DRIVE_LETTER.fullmatch(segment):
                segment = segment[0] + ":"
            out.append(_percent_encode(segment, _PATH_SAFE))
    return "/" + "/".join(out)


def _file_url(rest: str) -> str | None:
    if not rest.startswith("//"):
        return _path(rest if rest.startswith("/") else "/" + rest, file=True)
    host, slash, path = rest[2:].partition("/")
    if _DRIVE_LETTER.fullmatch(host):
        return _path("/" + host + slash + path, file=True)
    if host and not _valid_host(host, special=True):
        return None
    return _path(slash + path, file=True)


def parse_url(text: str) -> tuple[str, str] | None:
    """Return (scheme, pathname) of `new URL(text)` (scheme lower-case, no colon), or None where it throws.

    TEXT may be in Python or UTF-16 form; the pathname is ASCII (non-ASCII is percent-encoded).
    """
    text = _TAB_OR_NEWLINE.sub("", from_utf16(text).strip(_STRIP))
    match = _SCHEME.match(text)
    if not match:
        return None
    scheme = match.group()[:-1].lower()
    rest = re.split("[?#]", text[match.end():], maxsplit=1)[0]
    if scheme in _SPECIAL_SCHEMES:
        rest = rest.replace("\\", "/")
        if scheme == "file":
            path = _file_url(rest)
            return None if path is None else (scheme, path)
        authority, slash, path = rest.lstrip("/").partition("/")
        if not _valid_authority(authority, special=True):
            return None
        return scheme, _path(slash + path) if slash else "/"
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        if not _valid_authority(authority, special=False):
            return None
        return scheme, _path(slash + path) if slash else ""
    if rest.startswith("/"):
        return scheme, _path(rest)
    return scheme, _percent_encode(rest, _OPAQUE_SAFE)


def decode_uri_component(text: str) -> str | None:
    """Return `decodeURIComponent(text)`, or None where JavaScript throws URIError (bad escape or UTF-8).

    Decoded characters come back in Python form; the rest of TEXT is kept as it is.
    """
    if "%" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        raw = bytearray()
        while i < n and text[i] == "%":
            pair = text[i + 1: i + 3]
            if len(pair) < 2 or not all(c in "0123456789abcdefABCDEF" for c in pair):
                return None
            raw.append(int(pair, 16))
            i += 3
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return None
    return "".join(out)

"""xxHash32, as `xxhash-wasm`'s `h32ToString` computes it (Mastra uses it to obscure thread ids in tags)."""

from __future__ import annotations

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M, 13) * _P1) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """Return the 32-bit xxHash of DATA with SEED (the reference algorithm, little-endian lanes)."""
    n, i = len(data), 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M
        while i + 16 <= n:
            v1 = _round(v1, int.from_bytes(data[i:i + 4], "little"))
            v2 = _round(v2, int.from_bytes(data[i + 4:i + 8], "little"))
            v3 = _round(v3, int.from_bytes(data[i + 8:i + 12], "little"))
            v4 = _round(v4, int.from_bytes(data[i + 12:i + 16], "little"))
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[i:i + 4], "little") * _P3) & _M, 17) * _P4) & _M
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M, 11) * _P1) & _M
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    h ^= h >> 16
    return h


def h32_to_string(data: bytes, seed: int = 0) -> str:
    """Return xxh32(DATA) as 8 lowercase hex digits (`h32ToString`; DATA = the string's UTF-8 bytes)."""
    return f"{xxh32(data, seed):08x}"

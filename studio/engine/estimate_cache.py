"""Mastra's cached token estimates (``providerMetadata.mastra.tokenEstimate``): keys, lookup and stamping.

Mastra's TokenCounter stores what it estimated for a priced payload next to that payload, keyed by
``"<kind>:" + sha256(payload)``. A holder's cache is a single entry or a map key -> entry; an entry
is ``{v, source, key, tokens}``. An entry is reused only when ``v == 7``, ``source == "v7:tokenx"``,
its key matches and its tokens are finite; a ``source == "client"`` entry on a file/image part
(a caller-supplied count) always wins.
"""

from __future__ import annotations

from typing import Any

from studio.common.jscompat import get, is_finite, is_number, js_items, sha256_hex

__all__ = [
    "CLIENT_ESTIMATE_SOURCE",
    "TOKEN_ESTIMATE_CACHE_VERSION",
    "TOKEN_ESTIMATE_SOURCE",
    "cache_lookup",
    "cache_merge",
    "client_estimate",
    "ensure_mastra",
    "estimate_key",
    "forget_estimate_keys",
    "is_entry",
    "is_valid",
    "key_memo",
    "part_mastra",
]

TOKEN_ESTIMATE_CACHE_VERSION = 7
TOKEN_ESTIMATE_SOURCE = f"v{TOKEN_ESTIMATE_CACHE_VERSION}:tokenx"
CLIENT_ESTIMATE_SOURCE = "client"


#: Keys of payloads shorter than _KEY_MEMO_MAX_CHARS are remembered (kind -> payload -> key), up to
#: _KEY_MEMO_BUDGET chars of payload in all (then forgotten at once): counting messages again (a warm
#: estimate, a status computed again, the Context tab after the list) hashes each text once.
_KEY_MEMO_MAX_CHARS = 1 << 16
_KEY_MEMO_BUDGET = 1 << 23
_KEY_MEMO: dict[str, dict[str, str]] = {}
_key_memo_chars = [0]


def estimate_key(kind: str, payload: str) -> str:
    """Return Mastra's cache key for a priced payload: `"<kind>:" + sha256(utf-8 payload)` in hex."""
    memo = _KEY_MEMO.get(kind)
    if memo is not None and (known := memo.get(payload)) is not None:
        return known
    key = f"{kind}:{sha256_hex(payload)}"
    size = len(payload)
    if size < _KEY_MEMO_MAX_CHARS:
        if _key_memo_chars[0] + size > _KEY_MEMO_BUDGET:
            _KEY_MEMO.clear()
            _key_memo_chars[0] = 0
        _KEY_MEMO.setdefault(kind, {})[payload] = key
        _key_memo_chars[0] += size
    return key


def key_memo(kind: str) -> dict[str, str]:
    """Return the payload -> key memo `estimate_key` keeps for KIND (read-only for callers: a miss goes to
    `estimate_key`). A key is a function of its payload alone, so a memo read after it was forgotten still
    answers right."""
    memo = _KEY_MEMO.get(kind)
    if memo is None:
        memo = _KEY_MEMO[kind] = {}
    return memo


def forget_estimate_keys() -> None:
    """Forget the keys `estimate_key` remembers (a benchmark's cold start; keys are unchanged)."""
    _KEY_MEMO.clear()
    _key_memo_chars[0] = 0


def is_entry(value: Any) -> bool:
    """Return whether VALUE is one cache entry {v, source, key, tokens} (JSON types), not a key -> entry map."""
    return (isinstance(value, dict) and is_number(value.get("v")) and isinstance(value.get("source"), str)
            and isinstance(value.get("key"), str) and is_number(value.get("tokens")))


def cache_lookup(cache: Any, key: str) -> dict | None:
    """Return the entry stored under KEY in CACHE (one entry or a key -> entry map), or None."""
    if not isinstance(cache, dict):
        return None
    if is_entry(cache):
        return cache if cache["key"] == key else None
    entry = cache.get(key)
    return entry if is_entry(entry) else None


def cache_merge(cache: Any, key: str, entry: dict) -> dict:
    """Return CACHE with ENTRY stored under KEY, as Mastra writes it back (a lone entry becomes a map)."""
    if is_entry(cache):
        return entry if cache["key"] == key else {cache["key"]: cache, key: entry}
    if isinstance(cache, dict):
        return {**cache, key: entry}
    return entry


def is_valid(entry: dict | None, key: str) -> bool:
    """Return whether ENTRY is a current tokenx estimate for KEY (version 7, finite tokens)."""
    return bool(entry and entry["v"] == TOKEN_ESTIMATE_CACHE_VERSION and entry["source"] == TOKEN_ESTIMATE_SOURCE
                and entry["key"] == key and is_finite(entry["tokens"]))


def part_mastra(part: Any) -> Any:
    """Return `part?.providerMetadata?.mastra` (None when absent)."""
    return get(get(part, "providerMetadata"), "mastra")


def ensure_mastra(holder: Any, field: str) -> dict | None:
    """Return `holder[field].mastra`, creating `{}` objects on the way like Mastra's `??= {}` (None if impossible)."""
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


def _is_client_entry(value: Any) -> bool:
    return (is_entry(value) and value["source"] == CLIENT_ESTIMATE_SOURCE and is_finite(value["tokens"])
            and value["tokens"] >= 0)


def client_estimate(part: Any) -> dict | None:
    """Return a caller-supplied `{source: "client", tokens: N >= 0}` estimate on a file/image PART, or None."""
    cache = get(part_mastra(part), "tokenEstimate")
    if not isinstance(cache, (dict, list)):
        return None
    if _is_client_entry(cache):
        return cache
    values = cache if isinstance(cache, list) else [v for _, v in js_items(cache)]
    return next((v for v in values if _is_client_entry(v)), None)

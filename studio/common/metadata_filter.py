"""Metadata filters of listThreads and recall, validated by the rules Mastra documents and enforces.

A filter is a flat JSON object `{key: value}`; every key must hold (AND semantics). The rules
(@mastra/core 1.71.0 `validateStorageMetadataFilter`, and `MemoryStorage.validateMetadataKeys`
behind listThreads):

- a key starts with an ASCII letter or `_`, then ASCII letters, digits and `_` only, at most
  128 characters, and is not `__proto__`, `constructor` or `prototype`;
- a value is a shallow scalar: a string, a finite number, a boolean, or null.

Anything else raises ValidationError naming the key and the rule, so a bad filter is never a
silent empty result. listThreads in Mastra checks only that values are scalars; it is held to the
same finite-number rule here (a NaN or Infinity cannot match anything a JSON column holds).
"""

from __future__ import annotations

import json

from studio.errors import StudioError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_KEY_LENGTH",
    "RESERVED_KEYS",
    "ValidationError",
    "key_problem",
    "message_metadata_matches",
    "parse_key_value",
    "parse_key_values",
    "parse_metadata_json",
    "validate_metadata_filter",
]

MAX_KEY_LENGTH = 128
RESERVED_KEYS = frozenset({"__proto__", "constructor", "prototype"})
#: What a key may start with (an ASCII letter or "_"), and hold after that (ASCII letters, digits, "_").
_KEY_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_KEY_CHAR = _KEY_START | frozenset("0123456789")


class ValidationError(StudioError):
    """An argument breaks a documented rule (a metadata filter key or value, a page, a date range)."""


def key_problem(key: Any) -> str | None:
    """Return why KEY cannot be a metadata filter key (a sentence), or None when it can."""
    if not isinstance(key, str):
        return f"metadata filter keys are strings, not {type(key).__name__}"
    shown = json.dumps(key if len(key) <= 60 else key[:60] + "…", ensure_ascii=False)
    if key in RESERVED_KEYS:
        return f"metadata filter key {shown} is reserved (__proto__, constructor and prototype cannot be used)"
    if len(key) > MAX_KEY_LENGTH:
        return f"metadata filter key {shown} is {len(key)} characters long (at most {MAX_KEY_LENGTH})"
    if not key:
        return "a metadata filter key cannot be empty"
    if key[0] not in _KEY_START:
        return f"metadata filter key {shown} must start with a letter (A-Z, a-z) or an underscore"
    bad = next((c for c in key if c not in _KEY_CHAR), None)
    if bad is not None:
        return (f"metadata filter key {shown} contains {json.dumps(bad, ensure_ascii=False)}: only letters "
                "(A-Z, a-z), digits and underscores are allowed")
    return None


def _value_problem(key: str, value: Any) -> str | None:
    if value is None or isinstance(value, (str, bool)):
        return None
    if isinstance(value, int):
        return None
    if isinstance(value, float):
        import math  # not imported by every command that imports this module (~0.4 ms)

        return None if math.isfinite(value) else (
            f"metadata filter value of {json.dumps(key)} is {value!r}: numbers must be finite")
    kind = {dict: "an object", list: "an array", tuple: "an array"}.get(type(value), type(value).__name__)
    return (f"metadata filter value of {json.dumps(key)} is {kind}: values must be a string, a finite number, "
            "a boolean or null (shallow scalars only)")


def validate_metadata_filter(metadata: Any) -> dict | None:
    """Check METADATA against the rules above; return it (a dict), or None when absent or empty.

    Mirrors `validateStorageMetadataFilter` (recall) and listThreads' key checks: an empty object
    means "no filter". Raises ValidationError for a non-object, a bad key or a non-scalar value.
    """
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        kind = "an array" if isinstance(metadata, (list, tuple)) else type(metadata).__name__
        raise ValidationError(f"a metadata filter must be a JSON object of key: value pairs, not {kind}")
    for key, value in metadata.items():
        problem = key_problem(key) or _value_problem(key, value)
        if problem:
            raise ValidationError(problem)
    return dict(metadata) if metadata else None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_metadata_json(text: str) -> dict | None:
    """Parse a metadata filter given as JSON text (`{"category": "billing"}`) and validate it.

    Returns the filter, or None for `{}`. Raises ValidationError for text that is not JSON (NaN and
    Infinity included), not an object (`null` too: Mastra's validateStorageMetadataFilter treats only an
    absent filter as none and throws on null), or breaks a rule.
    """
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"the metadata filter is not valid JSON: {exc}") from exc
    if value is None:
        raise ValidationError("a metadata filter must be a JSON object of key: value pairs, not null "
                              "(leave the option out for no filter)")
    return validate_metadata_filter(value)


def parse_key_value(text: str) -> tuple[str, Any]:
    """Parse one `key=value` condition as typed in the studio; return (key, value).

    The value is read as JSON when it is a JSON scalar (`true`, `false`, `null`, `2`, `3.5`,
    `"2"`), otherwise taken as the literal string (`category=billing`). Raises ValidationError when
    there is no `=`, the key breaks a rule, or the value is a JSON object or array.
    """
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep:
        raise ValidationError(f"write a metadata condition as key=value, not {text.strip()!r}")
    problem = key_problem(key)
    if problem:
        raise ValidationError(problem)
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError:
        value = raw
    problem = _value_problem(key, value)
    if problem:
        raise ValidationError(problem)
    return key, value


def parse_key_values(text: str) -> dict | None:
    """Parse `key=value` conditions separated by commas or semicolons (AND-ed); None when TEXT is blank.

    A comma inside a double-quoted value does not split it (`note="a, b"`). Raises ValidationError
    as `parse_key_value` does.
    """
    parts, current, quoted = [], [], False
    for ch in text or "":
        if ch == '"':
            quoted = not quoted
        if ch in ",;" and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    out: dict[str, Any] = {}
    for part in parts:
        if part.strip():
            key, value = parse_key_value(part)
            out[key] = value
    return out or None


def _double(number: int | float) -> float:
    """NUMBER as JavaScript holds it: a double (an integer past 2**53 rounds; past the largest double, ±Infinity)."""
    try:
        return float(number)
    except OverflowError:
        return float("inf") if number > 0 else float("-inf")


def _same(stored: Any, expected: Any) -> bool:
    """JavaScript `===` between two JSON scalars (true is not 1; 2 equals 2.0; numbers compared as doubles,
    so 9007199254740993 equals 9007199254740992 as it does in JavaScript)."""
    if isinstance(stored, bool) or isinstance(expected, bool):
        return isinstance(stored, bool) and isinstance(expected, bool) and stored is expected
    if expected is None:
        return stored is None
    if isinstance(expected, str):
        return isinstance(stored, str) and stored == expected
    return isinstance(stored, (int, float)) and not isinstance(stored, bool) and _double(stored) == _double(expected)


def message_metadata_matches(content: Any, metadata_filter: dict | None) -> bool:
    """Return True when a message's CONTENT (parsed v2 object or JSON text) matches METADATA_FILTER.

    Mirrors `storageMessageMatchesMetadataFilter`: every key must be an own key of
    `content.metadata` and hold exactly the expected value; a missing key never matches, a null
    filter value matches only an explicit null. Content text JSON.parse rejects (NaN, Infinity
    included) matches nothing.
    """
    if not metadata_filter:
        return True
    if isinstance(content, (str, bytes)):
        try:
            content = json.loads(content, parse_constant=_reject_constant)
        except ValueError:
            return False
    if not isinstance(content, dict):
        return False
    meta = content.get("metadata")
    if not isinstance(meta, dict):
        return False
    return all(key in meta and _same(meta[key], value) for key, value in metadata_filter.items())

"""Where Mastra's TokenCounter throws: the checks that raise `UncountableMessage` instead of a number.

Mastra (@mastra/memory 1.31.0, token-counter.ts) hashes every payload it prices (`createHash("sha256")
.update(payload)`, a TypeError for anything but text), writes its estimate back into the part or the
message (`part.providerMetadata.mastra.tokenEstimate`: a TypeError when one of those holders is a
string, number or boolean), calls `.trim()` on a tool's error text or denial reason (a TypeError when
it is not text), reads `part.type` and `toolInvocation.state` (a TypeError on null), prices a truthy
role with tokenx (`text.split` is not a function), and URI-decodes an attachment URL's file name and a
percent-encoded data URL (`decodeURIComponent`: URIError on a bad escape). Each check below mirrors
one of those, with a reason worded for the user and the error Mastra raises.
"""

from __future__ import annotations

from typing import Any

from studio.common.jscompat import UNDEFINED
from studio.errors import UncountableMessage

HASH_ERROR = 'TypeError: The "data" argument must be of type string (Node\'s crypto hash)'
URI_ERROR = "URIError: URI malformed"

#: What each estimate kind prices, for the sentence ("a text part's text", ...).
_PAYLOAD_NAMES = {
    "text": "a text part's text",
    "tool-call-name": "a tool call's name",
    "tool-call-args": "a tool call's arguments",
    "tool-approval-reason": "a tool approval's reason",
    "tool-result-denied": "a tool denial's reason",
    "tool-result-error": "a tool's error text",
    "message-content": "its content",
    "content-content": "its content.content",
}


def js_type(value: Any) -> str:
    """Name VALUE's JSON type as a user reads it: "a number (3)", "true", "null", "an object"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "text"
    return "an array" if isinstance(value, list) else "an object"


def require_text(kind: str, payload: Any) -> str:
    """Return PAYLOAD when Mastra can hash it (text); else raise UncountableMessage naming KIND's payload."""
    if isinstance(payload, str):
        return payload
    what = _PAYLOAD_NAMES.get(kind, f"the {kind} payload")
    shown = "missing" if payload is UNDEFINED else js_type(payload)
    raise UncountableMessage(f"{what} is {shown}, not text", HASH_ERROR)


def require_stampable(holder: Any, field: str) -> None:
    """Raise UncountableMessage when Mastra cannot write its estimate into HOLDER[FIELD].mastra.

    Mastra runs `holder[field] ??= {}` then `holder[field].mastra ??= {}` and assigns into it; any step
    that lands on a string, number or boolean throws (ES modules are strict)."""
    if not isinstance(holder, (dict, list)):
        raise UncountableMessage(f"one of its parts is {js_type(holder)}, not an object",
                                 f"TypeError: Cannot create property '{field}' on {type(holder).__name__}")
    value = holder.get(field) if isinstance(holder, dict) else None
    if value is not None and not isinstance(value, (dict, list)):
        raise UncountableMessage(f"its {field} is {js_type(value)}, where Mastra stores its token estimate",
                                 "TypeError: Cannot create property 'mastra'")
    mastra = value.get("mastra") if isinstance(value, dict) else None
    if mastra is not None and not isinstance(mastra, (dict, list)):
        raise UncountableMessage(f"its {field}.mastra is {js_type(mastra)}, where Mastra stores its token estimate",
                                 "TypeError: Cannot create property 'tokenEstimate'")


def require_trimmable(value: Any, what: str, expression: str) -> None:
    """Raise UncountableMessage when Mastra's `VALUE?.trim()` would throw (VALUE neither text nor null)."""
    if value is not None and value is not UNDEFINED and not isinstance(value, str):
        raise UncountableMessage(f"{what} is {js_type(value)}, not text",
                                 f"TypeError: {expression}?.trim is not a function")


def require_object(value: Any, what: str, read: str) -> None:
    """Raise UncountableMessage when Mastra reads property READ of VALUE and VALUE is null or missing."""
    if value is None or value is UNDEFINED:
        raise UncountableMessage(f"{what} is {'null' if value is None else 'missing'}",
                                 f"TypeError: Cannot read properties of {'null' if value is None else 'undefined'} "
                                 f"(reading '{read}')")


def require_decoded(decoded: str | None, what: str) -> str:
    """Return DECODED (a decodeURIComponent result); None means JavaScript threw URIError on WHAT."""
    if decoded is None:
        raise UncountableMessage(f"{what} has a bad % escape", URI_ERROR)
    return decoded

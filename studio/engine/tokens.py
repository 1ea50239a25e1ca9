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

Attachment pricing lives in :mod:`studio.engine.attachments` (inline images are measured from
their header bytes by :mod:`studio.engine.images`), the cache entries in
:mod:`studio.engine.estimate_cache`, tool-result serialisation in :mod:`studio.engine.tool_results`.

JavaScript behaviour is reproduced where it changes a number (:mod:`studio.common.jscompat`):
UTF-16 string lengths, ``JSON.stringify`` (key order with integer-like keys first, escapes,
number formatting), ``Math.round`` (half up), JavaScript truthiness and whitespace.

Exact counts (``exact_tokens``, :mod:`studio.engine.exact_counts`) use tiktoken's o200k_base built
offline from the bundled ranks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from studio.common.jscompat import (
    UNDEFINED,
    coalesce,
    get,
    is_finite,
    is_nonblank,
    js_round,
    js_string,
    js_trim,
    json_stringify,
    sha256_hex,
    truthy,
)
from studio.engine.count_guards import js_type, require_object, require_stampable, require_text, require_trimmable
from studio.engine.estimate_cache import (
    TOKEN_ESTIMATE_CACHE_VERSION,
    TOKEN_ESTIMATE_SOURCE,
    cache_lookup,
    cache_merge,
    client_estimate,
    ensure_mastra,
    estimate_key,
    is_entry,
    is_valid,
    key_memo,
    part_mastra,
)
from studio.engine.tokenx import estimate_token_count
from studio.engine.tool_results import resolve_tool_result, stringify_tool_result
from studio.errors import UncountableMessage

if TYPE_CHECKING:  # the names `__getattr__` loads on first use (`_LAZY`), for type checkers and linters
    from studio.engine.exact_counts import exact_message_tokens, exact_tokens, model_visible_text
    from studio.engine.images import image_dimensions

__all__ = [
    "TOKENS_PER_CONVERSATION",
    "TOKENS_PER_MESSAGE",
    "TOKEN_ESTIMATE_CACHE_VERSION",
    "TOKEN_ESTIMATE_SOURCE",
    "UncountableMessage",
    "count_message",
    "count_message_for_status",
    "count_messages",
    "count_messages_for_status",
    "count_observations",
    "count_string",
    "estimate_key",
    "estimate_text",
    "exact_message_tokens",
    "exact_tokens",
    "image_dimensions",
    "js_json_stringify",
    "model_visible_text",
]

TOKENS_PER_MESSAGE = 3.8
TOKENS_PER_CONVERSATION = 24

js_json_stringify = json_stringify  # historical name, kept for callers and tests

#: Names re-exported from modules that only attachments (images, files) or exact counts need: they
#: load on first use, so a command that prices text alone (inspect, threads) does not import them.
_LAZY = {"image_dimensions": "studio.engine.images", "exact_tokens": "studio.engine.exact_counts",
         "exact_message_tokens": "studio.engine.exact_counts", "model_visible_text": "studio.engine.exact_counts"}


def __getattr__(name: str) -> Any:
    """Resolve a lazily re-exported name of `_LAZY` (PEP 562); AttributeError for any other."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _attachments():
    """The attachments module (image and file pricing), imported on the first image or file part."""
    from studio.engine import attachments

    return attachments


def _is_image_file(part: Any) -> bool:
    """Mastra's image-like file test (`studio.engine.attachments.is_image_file`), imported on first use."""
    return _attachments().is_image_file(part)


def _parse_model(model: Any) -> dict | None:
    """Mastra's parseModelContext: "provider/model", a bare model id, or {provider, modelId}."""
    if not truthy(model):
        return None
    if isinstance(model, dict):
        provider, model_id = model.get("provider"), model.get("modelId")
        return {"provider": provider, "modelId": model_id} if truthy(provider) or truthy(model_id) else None
    provider, slash, model_id = str(model).partition("/")
    return {"provider": provider, "modelId": model_id} if slash else {"provider": None, "modelId": model}


def _serialize_part(part: Any) -> str:
    """JSON.stringify(part) without its own providerMetadata.mastra.tokenEstimate."""
    meta = get(part, "providerMetadata")
    if not truthy(get(get(meta, "mastra"), "tokenEstimate")):
        return json_stringify(part)
    mastra = {k: v for k, v in meta["mastra"].items() if k != "tokenEstimate"}
    clone_meta = {**meta, "mastra": mastra} if mastra else {k: v for k, v in meta.items() if k != "mastra"}
    if clone_meta:
        return json_stringify({**part, "providerMetadata": clone_meta})
    clone = {k: v for k, v in part.items() if k != "providerMetadata"}
    return json_stringify(clone)


def _stored_text_estimate(part: dict) -> Any:
    """The tokens a text part's stored estimate gives when Mastra would reuse it (`_part_cached`'s hit), else None.

    Only a shortcut: None sends the part down the full path, which reaches the same figure.
    """
    text = part.get("text")
    meta = part.get("providerMetadata")
    if text.__class__ is not str or meta.__class__ is not dict:
        return None
    mastra = meta.get("mastra")
    if mastra.__class__ is not dict:
        return None
    key = estimate_key("text", text)
    stored = mastra.get("tokenEstimate")
    if (stored.__class__ is dict and stored.get("key") == key and stored.get("source") == TOKEN_ESTIMATE_SOURCE
            and stored.get("v") == TOKEN_ESTIMATE_CACHE_VERSION):  # one entry, as Mastra stamps a text part
        tokens = stored.get("tokens")
        if tokens.__class__ is int and -_SAFE_INTEGER <= tokens <= _SAFE_INTEGER:
            return tokens
    tokens = _fresh_tokens(stored, key)
    if tokens is None and stored.__class__ is dict and not is_entry(stored):
        tokens = _fresh_tokens(stored.get(key), key)  # a map key -> entry
    return tokens


def _fresh_tokens(entry: Any, key: str) -> Any:
    """ENTRY's tokens when it is a current estimate stored under KEY (`is_valid`, plain JSON types), else None."""
    if entry.__class__ is not dict or entry.get("key") != key or entry.get("source") != TOKEN_ESTIMATE_SOURCE:
        return None
    version, tokens = entry.get("v"), entry.get("tokens")
    if version.__class__ not in (int, float) or version != TOKEN_ESTIMATE_CACHE_VERSION:
        return None
    if tokens.__class__ is int and -_SAFE_INTEGER <= tokens <= _SAFE_INTEGER:  # a stamped count: finite
        return tokens
    return _js_number(tokens) if tokens.__class__ in (int, float) and is_finite(tokens) else None


def _js_number(value: Any) -> Any:
    """VALUE (a finite number) as JavaScript holds it: an integer past 2**53 becomes its nearest double, so that
    sums with it round as Mastra's do (Python would add the integers exactly)."""
    return float(value) if value.__class__ is int and not -_SAFE_INTEGER <= value <= _SAFE_INTEGER else value


_SAFE_INTEGER = 2 ** 53 - 1
#: Below this a whole number plus 3.8 keeps its fraction within 2**-12 of .8 (doubles carry 53 bits).
_EXACT_SUM = 2 ** 40


class _Counter:
    """One `TokenCounter` evaluation: its model context and whether estimates are stamped back."""

    def __init__(self, model: Any = None, stamp: bool = False):
        self.model = _parse_model(model) or {}
        self.stamp = stamp
        provider = self.model.get("provider")
        self.provider = provider.lower() if isinstance(provider, str) else None
        self.model_id = self.model.get("modelId")
        self.text_keys = key_memo("text")  # text -> its estimate key, read inline (`_count_message`)

    # -- cached estimates (readOrPersistPartEstimate / ...FixedPartEstimate / ...MessageEstimate)
    def _part_cached(self, part: Any, kind: str, payload: Any, tokens: Any = None) -> Any:
        payload = require_text(kind, payload)  # Mastra hashes every payload: anything but text throws
        stored = get(part_mastra(part), "tokenEstimate")
        if not isinstance(stored, dict) and not self.stamp:  # no cache to read or write: no key (sha256) needed
            require_stampable(part, "providerMetadata")  # where Mastra writes its estimate back
            return count_string(payload) if tokens is None else tokens
        key = estimate_key(kind, payload)
        cached = cache_lookup(stored, key)
        if is_valid(cached, key):
            return _js_number(cached["tokens"])
        require_stampable(part, "providerMetadata")
        tokens = count_string(payload) if tokens is None else tokens
        self._stamp(part, "providerMetadata", key, tokens)
        return tokens

    def _message_cached(self, message: dict, kind: str, payload: Any) -> Any:
        key = estimate_key(kind, require_text(kind, payload))
        content = message.get("content")
        cached = (cache_lookup(get(get(get(content, "metadata"), "mastra"), "tokenEstimate"), key)
                  or cache_lookup(get(get(message.get("metadata"), "mastra"), "tokenEstimate"), key))
        if is_valid(cached, key):
            return _js_number(cached["tokens"])
        require_stampable(content if isinstance(content, (dict, list)) else message, "metadata")
        tokens = count_string(payload)
        self._stamp(content if isinstance(content, dict) else message, "metadata", key, tokens)
        return tokens

    def _stamp(self, holder: Any, field: str, key: str, tokens: Any) -> None:
        if self.stamp and (meta := ensure_mastra(holder, field)) is not None:
            entry = {"v": TOKEN_ESTIMATE_CACHE_VERSION, "source": TOKEN_ESTIMATE_SOURCE, "key": key, "tokens": tokens}
            meta["tokenEstimate"] = cache_merge(meta.get("tokenEstimate"), key, entry)

    # -- attachments
    def _image(self, part: dict, asset: Any, kind: str) -> tuple[int, dict]:
        return _attachments().image_estimate(part, asset, kind, self.provider, self.model_id, self.stamp)

    def _local_attachment(self, part: dict, ptype: str) -> Any:
        """Cost of a file/image part without a client estimate (the rest of countAttachmentPartSync)."""
        if ptype == "image":
            tokens, payload = self._image(part, part.get("image"), "image")
            return self._part_cached(part, "image", json_stringify(payload), tokens)
        if _is_image_file(part):
            tokens, payload = self._image(part, part.get("data"), "file")
            return self._part_cached(part, "image-like-file", json_stringify(payload), tokens)
        if estimate := _attachments().file_bytes_estimate(part, self.provider, self.model_id):
            return self._part_cached(part, "non-image-file", json_stringify(estimate[1]), estimate[0])
        return self._part_cached(part, "file-descriptor", _attachments().file_descriptor(part))

    def _attachment(self, part: Any, for_status: bool = False) -> Any:
        """Cost of a file/image part, None for any other part (countAttachmentPartSync / ...Async offline)."""
        ptype = get(part, "type")
        if ptype not in ("image", "file"):
            return None
        if client := client_estimate(part):
            return _js_number(client["tokens"])
        if not for_status or self.provider not in ("openai", "google", "anthropic") or not truthy(self.model_id):
            return self._local_attachment(part, ptype)
        # Async path with a provider model: a cached provider-endpoint count wins. Mastra would now
        # ask the provider's count-tokens endpoint (only with an API key in the environment) and
        # probe remote images; offline it keeps the local estimate under a fallback key.
        is_image = ptype == "image" or _is_image_file(part)
        remote = _attachments().remote_payload(part, is_image, self.provider, self.model_id)
        key = estimate_key("attachment-provider", json_stringify(remote))
        if is_valid(cached := cache_lookup(get(part_mastra(part), "tokenEstimate"), key), key):
            return _js_number(cached["tokens"])
        fallback = {**remote, "strategy": "local-fallback"}
        if is_image:  # unknown sides are `undefined` in Mastra, so JSON leaves them out
            width, height = _attachments().resolve_dimensions(part, self.stamp)
            fallback.update(width=UNDEFINED if width is None else width, height=UNDEFINED if height is None else height)
        key = estimate_key("attachment-provider", json_stringify(fallback))
        if is_valid(cached := cache_lookup(get(part_mastra(part), "tokenEstimate"), key), key):
            return _js_number(cached["tokens"])
        tokens = self._local_attachment(part, ptype)
        self._stamp(part, "providerMetadata", key, tokens)
        return tokens

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
            kind, data = item.get("type", UNDEFINED), item.get("data")
            if kind == "text":
                text = item.get("text")
                text = text if isinstance(text, str) else js_string(coalesce(item.get("value"), ""))
                tokens += count_string(text)
                cache_parts.append({"type": "text", "textHash": sha256_hex(text)})
                continue
            is_image = kind in ("image", "image-data") or (
                kind == "media" and js_string(coalesce(item.get("mediaType"), "")).startswith("image/"))
            if (is_image or kind in ("audio", "file-data", "media")) and isinstance(data, str):
                has_attachment = True
                att = {"type": "image", "image": data} if is_image else {"type": "file", "data": data}
                att["mimeType"] = coalesce(item.get("mediaType"), item.get("mimeType"))
                if not is_image and "filename" in item:
                    att["filename"] = item["filename"]
                att.update({k: item[k] for k in ("providerOptions", "providerMetadata") if k in item})
                prefix = "image-data" if is_image else "file-data"
                if client := client_estimate(att):
                    tokens += _js_number(client["tokens"])
                    cache_parts.append({"type": f"{prefix}-client-estimate", "key": client["key"],
                                        "tokens": client["tokens"]})
                elif is_image or _is_image_file(att):
                    est, payload = self._image(att, data, "image" if is_image else "file")
                    tokens += est
                    cache_parts.append({"type": "image-data" if is_image else "image-like-file-data",
                                        "estimate": payload})
                elif estimate := _attachments().file_bytes_estimate(att, self.provider, self.model_id):
                    tokens += estimate[0]
                    cache_parts.append({"type": "file-data", "estimate": estimate[1]})
                else:
                    descriptor = _attachments().file_descriptor(att)
                    tokens += count_string(descriptor)
                    cache_parts.append({"type": "file-data-descriptor", "descriptor": descriptor})
                continue
            formatted = stringify_tool_result(item)
            tokens += count_string(formatted)
            cache_parts.append({"type": "json", "valueHash": sha256_hex(formatted)})
        if not has_attachment:
            return None
        payload = json_stringify({"type": "content", "value": cache_parts})
        return self._part_cached(part, "tool-result-multimodal-content", payload, tokens)

    # -- everything that is not an attachment (countNonAttachmentPart)
    def _signature(self, part: dict, inv: dict) -> tuple[Any, int]:
        """Tokens of a tool call's name and arguments, and the -12 overhead for JSON arguments."""
        tokens, delta = 0, 0
        if truthy(inv.get("toolName")):
            tokens += self._part_cached(part, "tool-call-name", inv["toolName"])
        if "args" in inv:
            if isinstance(inv["args"], str):
                tokens += self._part_cached(part, "tool-call-args", inv["args"])
            else:
                tokens += self._part_cached(part, "tool-call-args-json", json_stringify(inv["args"]))
                delta -= 12
        return tokens, delta

    def _tool_outcome(self, part: dict, inv: dict, state: str) -> tuple[Any, int]:
        """Tokens of what a finished (or answered) tool invocation adds to the call, and its overhead delta."""
        reason = get(get(inv, "approval"), "reason")
        if state == "approval-responded":
            return (self._part_cached(part, "tool-approval-reason", reason) if truthy(reason) else 0), 0
        if state == "output-denied":
            require_trimmable(reason, "a tool denial's reason", "invocation.approval?.reason")
            reason = reason if is_nonblank(reason) else "Tool call was not approved by the user"
            return self._part_cached(part, "tool-result-denied", reason), 0
        if state == "output-error":
            return self._part_cached(part, "tool-result-error", self._error_text(inv)), 0
        value, stored = resolve_tool_result(part, inv.get("result", UNDEFINED))
        if value is UNDEFINED or (isinstance(value, str) and not js_trim(value)):
            if truthy(inv.get("isError")):
                return self._part_cached(part, "tool-result-error", self._error_text(inv)), 0
            return self._part_cached(part, "tool-result-json", "[empty result]"), 0
        tokens = self._multimodal_result(part, value)
        if tokens is None:
            kind = "tool-result-model-output-json" if stored else "tool-result-json"
            tokens = self._part_cached(part, kind, stringify_tool_result(value))
        return tokens, (0 if isinstance(value, str) else -12)

    @staticmethod
    def _error_text(inv: dict) -> str:
        """A failed tool's error text, or Mastra's stand-in when it is blank (`errorText?.trim()`)."""
        error = inv.get("errorText")
        require_trimmable(error, "a tool's error text", "invocation.errorText")
        return error if is_nonblank(error) else "Tool execution failed"

    def _non_attachment(self, part: Any) -> tuple[Any, int, int]:
        """(tokens, overhead delta, extra tool messages) of a part that is not an attachment."""
        ptype = part.get("type", UNDEFINED) if isinstance(part, dict) else UNDEFINED
        if ptype == "text":
            return self._part_cached(part, "text", part.get("text", UNDEFINED)), 0, 0
        inv = part.get("toolInvocation", UNDEFINED) if ptype == "tool-invocation" else None
        if ptype == "tool-invocation":
            require_object(inv, "a tool-invocation part's toolInvocation", "state")
        state = inv.get("state") if isinstance(inv, dict) else None
        if state in ("call", "partial-call", "approval-requested"):
            return (*self._signature(part, inv), 0)
        if state in ("approval-responded", "result", "output-denied", "output-error"):
            tokens, delta = self._signature(part, inv)
            more, more_delta = self._tool_outcome(part, inv, state)
            return tokens + more, delta + more_delta, 1
        if (isinstance(ptype, str) and ptype.startswith("data-")) or ptype == "reasoning":
            return 0, 0, 0
        return self._part_cached(part, f"part-{js_string(ptype)}", _serialize_part(part)), 0, 0

    def count_message(self, message: dict, for_status: bool = False) -> int:
        """Count tokens (int) of one message like TokenCounter.countMessage (countMessageAsync when FOR_STATUS).

        Raises UncountableMessage (naming the message's id) where Mastra's count throws."""
        try:
            return self._count_message(message, for_status)
        except UncountableMessage as exc:
            raise _naming(exc, message) from None

    def _count_message(self, message: dict, for_status: bool) -> int:
        role = message.get("role")
        if role.__class__ is str:
            payload: Any = _MEMO.get(role)  # count_string's memo read inline (a role is short)
            if payload is None:
                payload = count_string(role)  # 0 for ""
        elif truthy(role):
            raise UncountableMessage(f"its role is {js_type(role)}, not text",
                                     "TypeError: text.split is not a function")
        else:
            payload = 0
        overhead, extra = TOKENS_PER_MESSAGE, 0
        content = message.get("content")
        if isinstance(content, str):
            payload += self._message_cached(message, "message-content", content)
        elif isinstance(content, dict):
            parts = content.get("parts")
            if not isinstance(parts, list):
                if truthy(content.get("content")):
                    payload += self._message_cached(message, "content-content", content["content"])
            else:
                text_keys = self.text_keys
                for part in parts:
                    if part.__class__ is dict:  # the common cases, read directly
                        ptype = part.get("type")
                        if ptype == "text":
                            # a stamped text part: `_stored_text_estimate`'s first road inline (no call a part)
                            text, meta = part.get("text"), part.get("providerMetadata")
                            if text.__class__ is str and meta.__class__ is dict:
                                stored = meta.get("mastra")
                                stored = stored.get("tokenEstimate") if stored.__class__ is dict else None
                                if stored.__class__ is dict:
                                    key = text_keys.get(text) or estimate_key("text", text)
                                    tokens = stored.get("tokens")
                                    if (stored.get("key") == key and stored.get("source") == TOKEN_ESTIMATE_SOURCE
                                            and stored.get("v") == TOKEN_ESTIMATE_CACHE_VERSION
                                            and tokens.__class__ is int and -_SAFE_INTEGER <= tokens <= _SAFE_INTEGER):
                                        payload += tokens
                                        continue
                            tokens = _stored_text_estimate(part)
                            if tokens is not None:
                                payload += tokens
                                continue
                        elif ptype.__class__ is str and (ptype.startswith("data-") or ptype == "reasoning"):
                            continue  # neither an attachment nor priced: 0 (countNonAttachmentPart)
                    require_object(part, "one of its parts", "type")
                    tokens = self._attachment(part, for_status)
                    if tokens is not None:
                        payload += tokens
                        continue
                    tokens, delta, extra_messages = self._non_attachment(part)
                    payload += tokens
                    overhead += delta
                    extra += extra_messages
        if extra > 0:
            overhead += extra * TOKENS_PER_MESSAGE
        elif payload.__class__ is int and overhead == TOKENS_PER_MESSAGE and -_EXACT_SUM < payload < _EXACT_SUM:
            return payload + 4  # Math.round(payload + 3.8): the sum's fraction is .8 while it is exact enough
        total = payload + overhead
        return total if total.__class__ is int else js_round(total)  # Math.round of a whole number is itself


# ------------------------------------------------------------------------------------ public API

def estimate_text(text: str) -> int:
    """Estimate tokens (int) in TEXT with tokenx 1.3.0's `estimateTokenCount` (Mastra's estimator)."""
    return estimate_token_count(text)


#: Texts shorter than this are remembered by `count_string` (the same text priced again: a role, a
#: message copied into many threads, a thread's status computed again), at most _MEMO_ENTRIES of them.
_MEMO_MAX_CHARS = 1 << 16
_MEMO_ENTRIES = 20_000
_MEMO: dict[str, int] = {}


def count_string(text: str) -> int:
    """Count tokens (int) in TEXT as Mastra's `TokenCounter.countString` does (0 for empty text)."""
    if not text:
        return 0
    if len(text) >= _MEMO_MAX_CHARS:
        return estimate_token_count(text)
    tokens = _MEMO.get(text)
    if tokens is None:
        tokens = estimate_token_count(text)
        if len(_MEMO) >= _MEMO_ENTRIES:
            _MEMO.clear()
        _MEMO[text] = tokens
    return tokens


def forget_counted_strings() -> None:
    """Forget the figures `count_string` remembers (a benchmark's cold start; figures are unchanged)."""
    _MEMO.clear()


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
    total = TOKENS_PER_CONVERSATION
    count = counter._count_message  # count_message without its wrapper call per message
    message = None
    try:
        for message in messages:
            total += count(message, False)
    except UncountableMessage as exc:
        raise _naming(exc, message) from None
    return total


def _naming(exc: UncountableMessage, message: Any) -> UncountableMessage:
    """EXC naming MESSAGE's id (when it is text and EXC names none yet)."""
    message_id = message.get("id") if isinstance(message, dict) else None
    return exc.for_message(message_id) if isinstance(message_id, str) and not exc.message_id else exc


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



def stamp_estimates(message: dict, model: Any = None) -> None:
    """Write into MESSAGE (in place) the tokenEstimate caches Mastra's counter stamps while counting it.

    What `countMessageAsync` leaves on a message it counted with a counter for MODEL (see
    `count_message_for_status`); the activation write (`studio.store.write.activation`) receives it
    for the message that gets its markers.
    """
    count_message_for_status(message, model=model, stamp=True)

"""The three wire formats: build a request and read an answer for each API (no I/O here).

* OpenAI-compatible Chat Completions: `POST {base}/chat/completions`, `Authorization: Bearer`,
  answer `choices[0].message.content`, usage `prompt_tokens` / `completion_tokens`.
* Anthropic Messages: `POST {base}/messages`, `x-api-key` + `anthropic-version: 2023-06-01`,
  `max_tokens` required, answer = the `text` blocks of `content`, usage `input_tokens` / `output_tokens`.
* Gemini generateContent: `POST {base}/models/{model}:generateContent`, `x-goog-api-key` header
  (never the `?key=` query, so URLs in messages hold no key), answer = the non-thought `text`
  parts of `candidates[0]`, usage from `usageMetadata`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from studio.llm.errors import ProviderResponseError
from studio.llm.keys import Secret
from studio.llm.providers import ANTHROPIC_MESSAGES, GEMINI_GENERATE, OPENAI_CHAT, ModelSpec

ANTHROPIC_VERSION = "2023-06-01"
#: Anthropic requires max_tokens; 8,192 output tokens fit every current Claude model.
ANTHROPIC_DEFAULT_MAX_TOKENS = 8192


@dataclass(frozen=True)
class Usage:
    """Token usage a provider reported (tokens; None when it did not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)
        return Usage(add(self.input_tokens, other.input_tokens), add(self.output_tokens, other.output_tokens),
                     add(self.total_tokens, other.total_tokens))

    def to_json(self) -> dict:
        """Return {input_tokens, output_tokens, total_tokens}."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "total_tokens": self.total_tokens}


@dataclass(frozen=True)
class WireRequest:
    """An HTTP POST to make: URL, headers (the key among them) and JSON body."""

    url: str
    headers: dict[str, str]
    body: dict


@dataclass(frozen=True)
class WireAnswer:
    """What a provider answered: the text, usage and its finish reason (provider's own word)."""

    text: str
    usage: Usage
    finish_reason: str | None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def build_request(spec: ModelSpec, system: str, prompt: str, *, api_key: Secret | None,
                  max_output_tokens: int | None = None, temperature: float | None = None) -> WireRequest:
    """Return the WireRequest asking SPEC's model for an answer to PROMPT under SYSTEM instructions."""
    headers = {"content-type": "application/json", "accept": "application/json"}
    api = spec.provider.api
    if api == OPENAI_CHAT:
        if api_key is not None:
            headers["authorization"] = f"Bearer {api_key.reveal()}"
        body: dict = {"model": spec.model_id, "stream": False,
                      "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]}
        if max_output_tokens:
            body["max_completion_tokens" if spec.provider.name == "openai" else "max_tokens"] = max_output_tokens
        if temperature is not None:
            body["temperature"] = temperature
        return WireRequest(f"{spec.base_url}/chat/completions", headers, body)
    if api == ANTHROPIC_MESSAGES:
        if api_key is not None:
            headers["x-api-key"] = api_key.reveal()
        headers["anthropic-version"] = ANTHROPIC_VERSION
        body = {"model": spec.model_id, "max_tokens": max_output_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
                "system": system, "messages": [{"role": "user", "content": prompt}]}
        if temperature is not None:
            body["temperature"] = temperature
        return WireRequest(f"{spec.base_url}/messages", headers, body)
    if api == GEMINI_GENERATE:
        if api_key is not None:
            headers["x-goog-api-key"] = api_key.reveal()
        model = spec.model_id.removeprefix("models/")
        body = {"systemInstruction": {"parts": [{"text": system}]},
                "contents": [{"role": "user", "parts": [{"text": prompt}]}]}
        config = {}
        if max_output_tokens:
            config["maxOutputTokens"] = max_output_tokens
        if temperature is not None:
            config["temperature"] = temperature
        if config:
            body["generationConfig"] = config
        return WireRequest(f"{spec.base_url}/models/{quote(model, safe='-._~')}:generateContent", headers, body)
    raise ProviderResponseError(f"No wire format for API {api!r}")


def _malformed(spec: ModelSpec, what: str) -> ProviderResponseError:
    return ProviderResponseError(f"{spec.provider.label or spec.provider.name} answered without {what}")


def parse_answer(spec: ModelSpec, data: Any) -> WireAnswer:
    """Read a successful JSON answer DATA; raise ProviderResponseError when it is not the API's shape."""
    if not isinstance(data, dict):
        raise _malformed(spec, "a JSON object")
    api = spec.provider.api
    if api == OPENAI_CHAT:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _malformed(spec, "choices")
        message = choices[0].get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # some servers send content parts
            content = "".join(p.get("text", "") for p in content
                              if isinstance(p, dict) and isinstance(p.get("text"), str))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return WireAnswer(content if isinstance(content, str) else "",
                          Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")),
                                _int(usage.get("total_tokens"))),
                          choices[0].get("finish_reason"))
    if api == ANTHROPIC_MESSAGES:
        content = data.get("content")
        if not isinstance(content, list):
            raise _malformed(spec, "content")
        text = "".join(b.get("text", "") for b in content
                       if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        i, o = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
        return WireAnswer(text, Usage(i, o, None if i is None and o is None else (i or 0) + (o or 0)),
                          data.get("stop_reason"))
    if api == GEMINI_GENERATE:
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = data.get("promptFeedback") if isinstance(data.get("promptFeedback"), dict) else {}
            if feedback.get("blockReason"):
                raise ProviderResponseError(f"Gemini refused the prompt (blockReason {feedback['blockReason']})")
            raise _malformed(spec, "candidates")
        first = candidates[0] if isinstance(candidates[0], dict) else {}
        parts = (first.get("content") or {}).get("parts") if isinstance(first.get("content"), dict) else None
        text = "".join(p.get("text", "") for p in (parts or [])
                       if isinstance(p, dict) and not p.get("thought") and isinstance(p.get("text"), str))
        usage = data.get("usageMetadata") if isinstance(data.get("usageMetadata"), dict) else {}
        return WireAnswer(text, Usage(_int(usage.get("promptTokenCount")), _int(usage.get("candidatesTokenCount")),
                                      _int(usage.get("totalTokenCount"))), first.get("finishReason"))
    raise ProviderResponseError(f"No wire format for API {api!r}")


def error_detail(data: Any) -> tuple[str, str]:
    """Return (message, code) from a provider's JSON error body (any of the three shapes), '' when absent."""
    if not isinstance(data, dict):
        return "", ""
    err = data.get("error")
    if isinstance(err, str):
        return err, ""
    if isinstance(err, dict):
        code = err.get("status") or err.get("type") or err.get("code") or ""
        reasons = [d.get("reason") for d in err.get("details", []) if isinstance(d, dict) and d.get("reason")] \
            if isinstance(err.get("details"), list) else []
        if reasons:
            code = f"{code} {' '.join(map(str, reasons))}".strip()
        return str(err.get("message") or ""), str(code)
    return str(data.get("message") or data.get("detail") or ""), str(data.get("type") or "")


# -- embeddings ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Embeddings:
    """What `/embeddings` answered: VECTORS (one list of floats per input, in input order) and USAGE."""

    vectors: list[list[float]]
    usage: Usage


def build_embeddings_request(spec: ModelSpec, values: list[str], *, api_key: Secret | None) -> WireRequest:
    """Return the OpenAI-compatible `POST {base}/embeddings` request for VALUES (float vectors asked for).

    Raises ProviderConfigError for a provider whose API is not OpenAI-compatible.
    """
    from studio.llm.errors import ProviderConfigError

    if spec.provider.api != OPENAI_CHAT:
        raise ProviderConfigError(f"{spec.provider.label or spec.provider.name} has no OpenAI-compatible "
                                  "/embeddings endpoint; use openai/…, ollama/…, lmstudio/…, vllm/… or "
                                  "openai-compatible/… with --base-url")
    headers = {"content-type": "application/json", "accept": "application/json"}
    if api_key is not None:
        headers["authorization"] = f"Bearer {api_key.reveal()}"
    return WireRequest(f"{spec.base_url}/embeddings", headers,
                       {"model": spec.model_id, "input": list(values), "encoding_format": "float"})


def parse_embeddings(data: Any, count: int) -> Embeddings:
    """Read an `/embeddings` answer ({data: [{index, embedding}], usage}) holding COUNT vectors, in input order.

    Raises ProviderResponseError when it does not hold COUNT vectors of numbers of one length.
    """
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != count:
        raise ProviderResponseError(f"The embeddings answer does not hold {count} vector(s)")
    ordered = sorted(items, key=lambda d: d.get("index", 0) if isinstance(d, dict) and _int(d.get("index")) is not None
                     else 0)
    vectors = []
    for item in ordered:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not vector or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
            raise ProviderResponseError("The embeddings answer holds a vector that is not a list of numbers")
        vectors.append([float(x) for x in vector])
    if len({len(v) for v in vectors}) > 1:
        raise ProviderResponseError("The embeddings answer holds vectors of different lengths")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return Embeddings(vectors, Usage(_int(usage.get("prompt_tokens")), None, _int(usage.get("total_tokens"))))

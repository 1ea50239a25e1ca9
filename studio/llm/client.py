"""Call a model over httpx: timeouts, retries with backoff on 429/5xx, cancellation, usage.

Use from any worker thread (synchronous `httpx.Client`, one per call). The retry policy follows
Mastra's transport retry (retry 408/425/429/5xx and dropped connections with exponential backoff
and jitter) with a shorter schedule for an interactive user: 4 retries after 1, 2, 4, 8 s
(cap 30 s). A `Retry-After` / `retry-after-ms` header is honoured when it asks for at most 60 s;
a longer wait fails at once with RateLimitedError saying how long the provider asked for.
Timeouts and refused connections are not retried (Mastra retries them; a user waiting at a
dialog is better served by the error).

Cancellation: the request runs on a helper thread while the caller waits on the CancelToken;
cancelling shuts the connection's socket down and closes the client, and the caller gets
`Cancelled` at once. The token is also checked before each attempt and while waiting to retry.

Every message this module builds goes through `keys.redact`: no key reaches an exception, a log
record or an event.
"""

from __future__ import annotations

import email.utils
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from studio.common.cancel import Cancelled, CancelToken
from studio.llm.errors import (
    AuthenticationError,
    ModelNotFoundError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
    ProviderUnreachableError,
    RateLimitedError,
)
from studio.llm.keys import OS_KEYRING, KeyringGetter, Secret, redact, require_key
from studio.llm.providers import GEMINI_GENERATE, ModelSpec, parse_model
from studio.llm.wire import (
    Embeddings,
    Usage,
    WireRequest,
    build_embeddings_request,
    build_request,
    error_detail,
    parse_answer,
    parse_embeddings,
)

log = logging.getLogger("studio.llm")

RETRYABLE_STATUS = frozenset({408, 425, 429})


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of one call: MAX_RETRIES after the first try; delays in seconds.

    delay(n) = min(initial_delay_s * backoff_factor**n, max_delay_s) * (1 ± jitter);
    a Retry-After up to max_retry_after_s replaces it.
    """

    max_retries: int = 4
    initial_delay_s: float = 1.0
    backoff_factor: float = 2.0
    max_delay_s: float = 30.0
    jitter: float = 0.2
    max_retry_after_s: float = 60.0

    def delay(self, retry_index: int, rng: random.Random | None = None) -> float:
        """Return the backoff (seconds) before retry number RETRY_INDEX (0-based)."""
        base = min(self.initial_delay_s * self.backoff_factor ** retry_index, self.max_delay_s)
        if self.jitter:
            base *= 1 + (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, base)


@dataclass(frozen=True)
class Timeouts:
    """Socket timeouts in seconds: connect, read (time to the whole answer for a non-streamed call), write."""

    connect_s: float = 10.0
    read_s: float = 300.0
    write_s: float = 60.0

    def to_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect_s, read=self.read_s, write=self.write_s, pool=self.connect_s)


@dataclass(frozen=True)
class ClientEvent:
    """Progress of one call. kind: "request" (attempt starts), "retry-wait" (DELAY_S before the next
    attempt, STATUS or the network error in MESSAGE), "response" (STATUS received)."""

    kind: str
    attempt: int
    status: int | None = None
    delay_s: float | None = None
    message: str = ""


@dataclass(frozen=True)
class Completion:
    """A model's answer: TEXT, provider-reported USAGE (tokens), FINISH_REASON, HTTP ATTEMPTS made, MODEL name."""

    text: str
    usage: Usage
    finish_reason: str | None
    attempts: int
    model: str
    elapsed_ms: int = 0


def _retry_after(response: httpx.Response) -> float | None:
    """Return the wait (seconds) a response asks for in retry-after-ms / Retry-After, or None."""
    ms = response.headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _shutdown_sockets(client: httpx.Client) -> None:
    """Best effort: shut down the sockets of CLIENT's pooled connections so a blocked read returns now."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    for conn in list(getattr(pool, "connections", None) or []):
        try:
            stream = getattr(getattr(conn, "_connection", None), "_network_stream", None)
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass


class LLMClient:
    """A model to call: `complete(system, prompt)` returns a Completion or raises a ProviderError.

    Errors: AuthenticationError (401/403), ModelNotFoundError (404), RateLimitedError (429 after
    retries), ProviderServerError (5xx after retries), ProviderUnreachableError (refused, DNS,
    dropped), ProviderTimeoutError, ProviderResponseError (other statuses, malformed JSON),
    Cancelled (studio.common.cancel).
    """

    def __init__(self, spec: ModelSpec, *, api_key: Secret | None = None, timeouts: Timeouts = Timeouts(),
                 retry: RetryPolicy = RetryPolicy(), transport: httpx.BaseTransport | None = None,
                 max_output_tokens: int | None = None, temperature: float | None = None,
                 rng: random.Random | None = None):
        self.spec = spec
        self._key = api_key
        self.timeouts = timeouts
        self.retry = retry
        self.transport = transport
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self._rng = rng or random.Random()

    @classmethod
    def for_model(cls, model: str, *, base_url: str | None = None, env: Mapping[str, str] | None = None,
                  keyring_get: KeyringGetter | None = OS_KEYRING, **kwargs) -> LLMClient:
        """Return a client for `provider/model` with its key from ENV or the keyring.

        Raises ProviderConfigError (unknown provider, bad URL) or MissingKeyError.
        """
        spec = parse_model(model, base_url)
        key = require_key(spec.provider, env=env, keyring_get=keyring_get)
        return cls(spec, api_key=key, **kwargs)

    @property
    def model(self) -> str:
        """Return the model as `provider/model-id`."""
        return self.spec.name

    def __repr__(self) -> str:
        return f"LLMClient({self.spec.name!r}, base_url={self.spec.base_url!r})"

    # -- one call ------------------------------------------------------------------------------

    def complete(self, system: str, prompt: str, *, cancel: CancelToken | None = None,
                 on_event: Callable[[ClientEvent], None] | None = None) -> Completion:
        """Ask the model; return its Completion. Retries 408/425/429/5xx and dropped connections."""
        started = time.monotonic()
        request = build_request(self.spec, system, prompt, api_key=self._key,
                                max_output_tokens=self.max_output_tokens, temperature=self.temperature)
        data, attempt = self._post(request, cancel, on_event)
        answer = parse_answer(self.spec, data)
        return Completion(answer.text, answer.usage, answer.finish_reason, attempt, self.spec.name,
                          int((time.monotonic() - started) * 1000))

    def embed(self, values: list[str], *, cancel: CancelToken | None = None,
              on_event: Callable[[ClientEvent], None] | None = None) -> Embeddings:
        """Embed VALUES through the OpenAI-compatible `POST {base}/embeddings` (OpenAI, Ollama, LM Studio, vLLM, …).

        Returns Embeddings (one vector of floats per value, in order, and the usage). Raises
        ProviderConfigError for a provider without that API (Anthropic, Gemini), the errors of
        `complete`, and ProviderResponseError for an answer without one vector per value.
        """
        request = build_embeddings_request(self.spec, values, api_key=self._key)
        data, _attempt = self._post(request, cancel, on_event)
        return parse_embeddings(data, len(values))

    def _post(self, request: WireRequest, cancel: CancelToken | None,
              on_event: Callable[[ClientEvent], None] | None) -> tuple[Any, int]:
        """POST REQUEST with retries; return (the answer's parsed JSON, attempts made)."""
        emit = on_event or (lambda event: None)
        with httpx.Client(timeout=self.timeouts.to_httpx(), transport=self.transport, follow_redirects=False,
                          trust_env=False) as client:
            attempt = 0
            while True:
                attempt += 1
                if cancel is not None:
                    cancel.raise_if_cancelled()
                emit(ClientEvent("request", attempt))
                log.debug("POST %s (attempt %d)", request.url, attempt)
                retry_index = attempt - 1
                try:
                    response = self._send(client, request, cancel)
                except Cancelled:
                    raise
                except httpx.TimeoutException as exc:
                    raise self._timeout_error(exc) from None
                except httpx.ConnectError as exc:
                    raise ProviderUnreachableError(self._unreachable(exc)) from None
                except httpx.TransportError as exc:  # connection dropped mid-call: transient
                    if retry_index >= self.retry.max_retries:
                        raise ProviderUnreachableError(self._unreachable(exc)) from None
                    self._wait(self.retry.delay(retry_index, self._rng), attempt, None,
                               self._say(f"connection lost ({exc.__class__.__name__})"), cancel, emit)
                    continue
                emit(ClientEvent("response", attempt, status=response.status_code))
                log.debug("HTTP %d from %s", response.status_code, self._host)
                status = response.status_code
                if 200 <= status < 300:
                    try:
                        return response.json(), attempt
                    except ValueError:
                        raise ProviderResponseError(self._say(f"{self._label} answered HTTP {status} with a body "
                                                              "that is not JSON"), status) from None
                retryable = status in RETRYABLE_STATUS or 500 <= status <= 599
                if not retryable:
                    raise self._status_error(response)
                asked = _retry_after(response)
                if asked is not None and asked > self.retry.max_retry_after_s:
                    raise RateLimitedError(self._say(
                        f"{self._label} answered HTTP {status} and asks to wait {asked:.0f} s before retrying "
                        f"(more than the {self.retry.max_retry_after_s:.0f} s we wait){self._detail(response)}"))
                if retry_index >= self.retry.max_retries:
                    raise self._status_error(response, retried=attempt - 1)
                delay = asked if asked is not None else self.retry.delay(retry_index, self._rng)
                self._wait(delay, attempt, status, self._say(f"HTTP {status}{self._detail(response)}"), cancel, emit)

    # -- helpers -------------------------------------------------------------------------------

    @property
    def _label(self) -> str:
        return self.spec.provider.label or self.spec.provider.name

    @property
    def _host(self) -> str:
        parts = urlsplit(self.spec.base_url)
        return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)

    def _say(self, text: str) -> str:
        return redact(text, self._key)

    def _send(self, client: httpx.Client, request: WireRequest, cancel: CancelToken | None) -> httpx.Response:
        """POST REQUEST and read the whole answer; with CANCEL, on a helper thread that cancelling abandons."""
        def do() -> httpx.Response:
            return client.post(request.url, headers=request.headers, json=request.body)

        if cancel is None:
            return do()
        box: dict = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["response"] = do()
            except BaseException as exc:  # handed to the caller below
                box["error"] = exc
            finally:
                done.set()

        def abort() -> None:
            _shutdown_sockets(client)  # first: once `done` is set the caller closes the client (no shutdown)
            done.set()
            with suppress(Exception):
                client.close()

        unregister = cancel.on_cancel(abort)
        try:
            if cancel.cancelled:
                raise Cancelled()
            threading.Thread(target=run, name="studio-llm-request", daemon=True).start()
            while not done.wait(0.25):  # short waits keep Ctrl+C (KeyboardInterrupt) responsive
                pass
        finally:
            unregister()
        if cancel.cancelled:
            raise Cancelled()
        if "error" in box:
            raise box["error"]
        return box["response"]

    def _wait(self, delay: float, attempt: int, status: int | None, message: str, cancel: CancelToken | None,
              emit: Callable[[ClientEvent], None]) -> None:
        emit(ClientEvent("retry-wait", attempt, status=status, delay_s=delay, message=message))
        log.debug("retrying after %.2f s: %s", delay, message)
        if cancel is not None:
            if cancel.wait(delay):
                raise Cancelled()
        else:
            time.sleep(delay)

    def _detail(self, response: httpx.Response) -> str:
        try:
            message, code = error_detail(response.json())
        except ValueError:
            message, code = response.text.strip()[:200], ""
        text = " ".join(x for x in (code, message) if x).strip()
        return f": {redact(text, self._key)[:300]}" if text else ""

    def _status_error(self, response: httpx.Response, retried: int = 0) -> Exception:
        status = response.status_code
        detail = self._detail(response)
        tried = f" after {retried} retries" if retried else ""
        if status in (401, 403) or (self.spec.provider.api == GEMINI_GENERATE and status == 400
                                    and ("API_KEY_INVALID" in detail or "API key not valid" in detail)):
            return AuthenticationError(self._say(
                f"{self._label} rejected the API key (HTTP {status}){detail}. "
                f"Check the key for {self.spec.provider.name}."))
        if status == 404:
            return ModelNotFoundError(self._say(
                f"{self._label} does not know model {self.spec.model_id!r} at {self.spec.base_url} "
                f"(HTTP 404){detail}. Check the model name and the base URL."))
        if status == 429:
            return RateLimitedError(self._say(f"{self._label} is rate limiting (HTTP 429){tried}{detail}"))
        if 500 <= status <= 599:
            return ProviderServerError(self._say(f"{self._label} failed (HTTP {status}){tried}{detail}"))
        return ProviderResponseError(self._say(f"{self._label} answered HTTP {status}{tried}{detail}"), status)

    def _timeout_error(self, exc: httpx.TimeoutException) -> ProviderTimeoutError:
        if isinstance(exc, httpx.ConnectTimeout):
            return ProviderTimeoutError(self._say(
                f"No connection to {self._host} within {self.timeouts.connect_s:g} s "
                "(network down or host unreachable)"))
        return ProviderTimeoutError(self._say(
            f"{self._label} did not answer within {self.timeouts.read_s:g} s ({exc.__class__.__name__})"))

    def _unreachable(self, exc: Exception) -> str:
        reason = str(exc) or exc.__class__.__name__
        low = reason.lower()
        if "refused" in low:
            hint = "connection refused: is the server running?"
        elif "name or service not known" in low or "nodename" in low or "getaddrinfo" in low or "resolution" in low:
            hint = "host name not found: network down or wrong base URL?"
        else:
            hint = reason
        return self._say(f"Cannot reach {self._label} at {self.spec.base_url} ({hint})")

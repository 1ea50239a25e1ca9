"""A fake LLM provider: a real HTTP server on 127.0.0.1 that answers like a model would.

    with FakeLLM() as fake:                       # or the `fake_llm` pytest fixture below
        fake.push(Reply(text="<observations>...</observations>"))
        fake.push(Reply(status=429, headers={"retry-after": "0"}))
        client = LLMClient.for_model("openai-compatible/m", base_url=fake.base_url)

It speaks the three wire formats by path: `/v1/chat/completions` (OpenAI-compatible),
`/v1/messages` (Anthropic), `/v1beta/models/<model>:generateContent` (Gemini); `base_url`,
`anthropic_url` and `gemini_url` give the matching base URLs. Scripted replies are served in
order (`push`); when none is left, `default` (a Reply or a function of the FakeRequest) answers,
else HTTP 500. A Reply can hold a status, body, headers, a delay (interrupted by `stop()`), or
`drop=True` (close the connection without answering). Every request is recorded in `requests`
(method, path, headers, parsed JSON body). The `fake_llm` fixture also refuses connections to any
host other than loopback for the whole test, so no test can reach the internet by mistake.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    """One scripted answer: TEXT as the model's answer, or STATUS + BODY (dict or str) for errors."""

    text: str | None = None
    status: int = 200
    body: Any = None
    headers: dict = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    usage: tuple[int, int] = (100, 50)


@dataclass
class FakeRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict
    body: Any

    @property
    def api(self) -> str:
        """Return "openai", "anthropic" or "gemini" from the path."""
        if self.path.endswith("/chat/completions"):
            return "openai"
        if self.path.endswith("/messages"):
            return "anthropic"
        if ":generateContent" in self.path:
            return "gemini"
        return "unknown"

    @property
    def system(self) -> str:
        """Return the system prompt the client sent (any format)."""
        b = self.body or {}
        if self.api == "openai":
            return next((m["content"] for m in b.get("messages", []) if m.get("role") == "system"), "")
        if self.api == "anthropic":
            return b.get("system", "")
        if self.api == "gemini":
            return "".join(p.get("text", "") for p in b.get("systemInstruction", {}).get("parts", []))
        return ""

    @property
    def prompt(self) -> str:
        """Return the user prompt the client sent (any format)."""
        b = self.body or {}
        if self.api == "openai":
            return next((m["content"] for m in b.get("messages", []) if m.get("role") == "user"), "")
        if self.api == "anthropic":
            return next((m["content"] for m in b.get("messages", []) if m.get("role") == "user"), "")
        if self.api == "gemini":
            return "".join(p.get("text", "") for c in b.get("contents", []) for p in c.get("parts", []))
        return ""


def _answer_body(api: str, reply: Reply) -> dict:
    i, o = reply.usage
    if api == "anthropic":
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
                "content": [{"type": "text", "text": reply.text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": i, "output_tokens": o}}
    if api == "gemini":
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": reply.text}]},
                                "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": i, "candidatesTokenCount": o, "totalTokenCount": i + o}}
    return {"id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}}


class FakeLLM:
    """The fake server (see module docstring). Start with `start()` or a `with` block."""

    def __init__(self) -> None:
        self.requests: list[FakeRequest] = []
        self.replies: list[Reply] = []
        self.default: Reply | Callable[[FakeRequest], Reply] | None = None
        self.release = threading.Event()
        self.handled = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------------
    def push(self, *replies: Reply) -> FakeLLM:
        """Queue REPLIES, served in order."""
        with self._lock:
            self.replies.extend(replies)
        return self

    def _next(self, request: FakeRequest) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.pop(0)
        if callable(self.default):
            return self.default(request)
        if isinstance(self.default, Reply):
            return self.default
        return Reply(status=500, body={"error": {"message": "no scripted answer left", "type": "server_error"}},
                     headers={"retry-after": "0"})

    # -- addresses -----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """Return the OpenAI-compatible base URL (…/v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def gemini_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1beta"

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = FakeRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with fake._lock:
                    fake.requests.append(request)
                reply = fake._next(request)
                if reply.delay_s and fake.release.wait(reply.delay_s):
                    self.close_connection = True
                    return
                if reply.drop:
                    self.close_connection = True
                    with suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.text is not None and reply.status == 200:
                    payload: Any = _answer_body(request.api, reply)
                else:
                    payload = reply.body if reply.body is not None else {"error": {"message": f"HTTP {reply.status}"}}
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass
                with fake._lock:
                    fake.handled += 1

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release delayed replies and shut the server down."""
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def refuse_remote_hosts(monkeypatch) -> None:
    """Make every connection to a host other than loopback fail (OSError) for the current test."""
    real_create = socket.create_connection
    real_getaddrinfo = socket.getaddrinfo

    def create_connection(address, *args, **kwargs):
        if address[0] not in LOOPBACK:
            raise ConnectionRefusedError(f"test guard: no connections to {address[0]!r}")
        return real_create(address, *args, **kwargs)

    def getaddrinfo(host, *args, **kwargs):
        if host not in LOOPBACK and host is not None:
            raise socket.gaierror(socket.EAI_NONAME, f"test guard: no lookups of {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def fake_llm(monkeypatch):
    """A started FakeLLM; no host but loopback is reachable during the test; no key env/keyring leaks in."""
    refuse_remote_hosts(monkeypatch)
    for var in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
                "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_COMPATIBLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("studio.llm.keys._keyring_get", lambda service, user: None)
    with FakeLLM() as fake:
        yield fake

"""The HTTP client against a real local fake provider: formats, usage, errors, retries, cancel, no leaks."""

from __future__ import annotations

import logging
import threading

import pytest

from studio.llm import (
    AuthenticationError,
    Cancelled,
    CancelToken,
    LLMClient,
    MissingKeyError,
    ModelNotFoundError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
    ProviderUnreachableError,
    RateLimitedError,
    RetryPolicy,
    Timeouts,
)
from tests.fake_llm import Reply

KEY = "sk-test-secret-0123456789"
FAST = RetryPolicy(max_retries=3, initial_delay_s=0.001, max_delay_s=0.01, jitter=0)


def client(fake, model="openai/gpt-test", base=None, key=KEY, **kw) -> LLMClient:
    env = {"OPENAI_API_KEY": key, "ANTHROPIC_API_KEY": key, "GEMINI_API_KEY": key}
    kw.setdefault("retry", FAST)
    return LLMClient.for_model(model, base_url=base or fake.base_url, env=env, keyring_get=None, **kw)


def test_openai_compatible_call(fake_llm):
    fake_llm.push(Reply(text="hello there", usage=(321, 12)))
    answer = client(fake_llm).complete("SYSTEM", "PROMPT")
    assert answer.text == "hello there" and answer.finish_reason == "stop" and answer.attempts == 1
    assert answer.usage.to_json() == {"input_tokens": 321, "output_tokens": 12, "total_tokens": 333}
    req = fake_llm.requests[0]
    assert req.path == "/v1/chat/completions" and req.api == "openai"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body["model"] == "gpt-test" and req.body["stream"] is False
    assert req.system == "SYSTEM" and req.prompt == "PROMPT"


def test_anthropic_messages_call(fake_llm):
    fake_llm.push(Reply(text="from claude", usage=(10, 5)))
    answer = client(fake_llm, "anthropic/claude-test", fake_llm.anthropic_url).complete("S", "P")
    assert answer.text == "from claude" and answer.usage.total_tokens == 15 and answer.finish_reason == "end_turn"
    req = fake_llm.requests[0]
    assert req.path == "/v1/messages" and req.headers["x-api-key"] == KEY
    assert req.headers["anthropic-version"] == "2023-06-01" and "authorization" not in req.headers
    assert req.body["max_tokens"] == 8192 and req.system == "S" and req.prompt == "P"


def test_gemini_generate_content_call(fake_llm):
    fake_llm.push(Reply(text="from gemini", usage=(7, 3)))
    answer = client(fake_llm, "google/gemini-2.5-flash", fake_llm.gemini_url).complete("S", "P")
    assert answer.text == "from gemini" and answer.usage.input_tokens == 7 and answer.finish_reason == "STOP"
    req = fake_llm.requests[0]
    assert req.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert req.headers["x-goog-api-key"] == KEY and "key=" not in req.path
    assert req.system == "S" and req.prompt == "P"


def test_local_server_needs_no_key(fake_llm):
    fake_llm.push(Reply(text="local"))
    answer = LLMClient.for_model("ollama/llama3.1:8b", base_url=fake_llm.base_url, env={}, keyring_get=None).complete(
        "S", "P")
    assert answer.text == "local" and "authorization" not in fake_llm.requests[0].headers
    assert fake_llm.requests[0].body["model"] == "llama3.1:8b"


def test_hosted_provider_without_key_is_refused_before_any_request(fake_llm):
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        LLMClient.for_model("openai/gpt-4o", base_url=fake_llm.base_url, env={}, keyring_get=None)
    assert fake_llm.requests == []


def test_retries_429_and_5xx_then_succeeds(fake_llm):
    fake_llm.push(Reply(status=429, headers={"retry-after": "0"}), Reply(status=500), Reply(status=503),
                  Reply(text="finally"))
    events = []
    answer = client(fake_llm).complete("S", "P", on_event=events.append)
    assert answer.text == "finally" and answer.attempts == 4 and len(fake_llm.requests) == 4
    assert [e.status for e in events if e.kind == "retry-wait"] == [429, 500, 503]
    assert next(e.delay_s for e in events if e.kind == "retry-wait") == 0.0  # Retry-After honoured


@pytest.mark.parametrize("status, error", [(429, RateLimitedError), (500, ProviderServerError),
                                           (502, ProviderServerError)])
def test_persistent_retryable_status_fails_after_the_retries(fake_llm, status, error):
    fake_llm.default = Reply(status=status, body={"error": {"message": "busy, try later"}})
    with pytest.raises(error, match="after 3 retries") as info:
        client(fake_llm).complete("S", "P")
    assert len(fake_llm.requests) == 4 and "busy, try later" in str(info.value)


def test_long_retry_after_fails_at_once(fake_llm):
    fake_llm.push(Reply(status=429, headers={"retry-after": "3600"}))
    with pytest.raises(RateLimitedError, match="3600 s"):
        client(fake_llm).complete("S", "P")
    assert len(fake_llm.requests) == 1


def test_retry_after_ms_header(fake_llm):
    fake_llm.push(Reply(status=429, headers={"retry-after-ms": "5"}), Reply(text="ok"))
    events = []
    client(fake_llm).complete("S", "P", on_event=events.append)
    assert [e.delay_s for e in events if e.kind == "retry-wait"] == [0.005]


def test_backoff_is_exponential_and_capped():
    policy = RetryPolicy(initial_delay_s=1, backoff_factor=2, max_delay_s=5, jitter=0)
    assert [policy.delay(i) for i in range(5)] == [1, 2, 4, 5, 5]
    jittered = RetryPolicy(initial_delay_s=1, jitter=0.2)
    assert all(0.8 <= jittered.delay(0) <= 1.2 for _ in range(50))


def test_401_is_a_bad_key_error_without_the_key(fake_llm, caplog):
    caplog.set_level(logging.DEBUG)
    fake_llm.push(Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {KEY}",
                                                    "type": "invalid_request_error"}}))
    with pytest.raises(AuthenticationError) as info:
        client(fake_llm).complete("S", "P")
    assert "rejected the API key" in str(info.value) and KEY not in str(info.value)
    assert len(fake_llm.requests) == 1  # never retried
    assert KEY not in caplog.text


def test_gemini_invalid_key_400_is_an_auth_error(fake_llm):
    fake_llm.push(Reply(status=400, body={"error": {"code": 400, "message": "API key not valid. Please pass a valid "
                                                    "API key.", "status": "INVALID_ARGUMENT",
                                                    "details": [{"reason": "API_KEY_INVALID"}]}}))
    with pytest.raises(AuthenticationError):
        client(fake_llm, "google/gemini-x", fake_llm.gemini_url).complete("S", "P")


def test_404_is_model_not_found(fake_llm):
    fake_llm.push(Reply(status=404, body={"error": {"message": "model 'nope' not found"}}))
    with pytest.raises(ModelNotFoundError, match="nope"):
        client(fake_llm, "ollama/nope").complete("S", "P")


def test_other_4xx_and_malformed_answers(fake_llm):
    fake_llm.push(Reply(status=400, body={"error": {"message": "context length exceeded"}}))
    with pytest.raises(ProviderResponseError, match="context length exceeded") as info:
        client(fake_llm).complete("S", "P")
    assert info.value.status == 400
    fake_llm.push(Reply(status=200, body="this is not json"))
    with pytest.raises(ProviderResponseError, match="not JSON"):
        client(fake_llm).complete("S", "P")
    fake_llm.push(Reply(status=200, body={"unexpected": True}))
    with pytest.raises(ProviderResponseError, match="without choices"):
        client(fake_llm).complete("S", "P")


def test_connection_refused_is_unreachable_and_not_retried():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = LLMClient.for_model("ollama/x", base_url=f"http://127.0.0.1:{port}/v1", env={}, keyring_get=None, retry=FAST)
    events = []
    with pytest.raises(ProviderUnreachableError, match="connection refused"):
        c.complete("S", "P", on_event=events.append)
    assert [e.kind for e in events] == ["request"]


def test_dropped_connection_is_retried(fake_llm):
    fake_llm.push(Reply(drop=True), Reply(text="second time lucky"))
    assert client(fake_llm).complete("S", "P").text == "second time lucky"
    assert len(fake_llm.requests) == 2


def test_timeout(fake_llm):
    fake_llm.push(Reply(text="too late", delay_s=30))
    with pytest.raises(ProviderTimeoutError, match=r"did not answer within 0\.2 s"):
        client(fake_llm, timeouts=Timeouts(read_s=0.2)).complete("S", "P")
    assert len(fake_llm.requests) == 1  # timeouts are not retried


def test_cancel_closes_the_request_in_flight(fake_llm):
    fake_llm.push(Reply(text="never seen", delay_s=30))
    token = CancelToken()
    seen = threading.Event()
    fake_llm.default = None

    def on_event(event):
        if event.kind == "request":
            threading.Timer(0.2, token.cancel).start()
            seen.set()

    with pytest.raises(Cancelled):
        client(fake_llm).complete("S", "P", cancel=token, on_event=on_event)
    assert seen.is_set() and fake_llm.handled == 0  # the server had not answered yet
    for t in threading.enumerate():
        if t.name == "studio-llm-request":
            t.join(5)
            assert not t.is_alive()  # the socket was shut down: the helper thread ended


def test_cancel_while_waiting_to_retry(fake_llm):
    fake_llm.push(Reply(status=503))
    token = CancelToken()

    def on_event(event):
        if event.kind == "retry-wait":
            token.cancel()

    slow = RetryPolicy(max_retries=3, initial_delay_s=60, jitter=0)
    with pytest.raises(Cancelled):
        client(fake_llm, retry=slow).complete("S", "P", cancel=token, on_event=on_event)
    assert len(fake_llm.requests) == 1


def test_already_cancelled_token_sends_nothing(fake_llm):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        client(fake_llm).complete("S", "P", cancel=token)
    assert fake_llm.requests == []


def test_no_remote_host_is_reachable_in_tests(fake_llm):
    c = LLMClient.for_model("openai/gpt-4o", env={"OPENAI_API_KEY": KEY}, keyring_get=None, retry=FAST)
    with pytest.raises(ProviderUnreachableError, match="test guard"):
        c.complete("S", "P")
    assert KEY not in repr(c)


def test_cancel_token_callbacks():
    token = CancelToken()
    hits = []
    unregister = token.on_cancel(lambda: hits.append("a"))
    token.on_cancel(lambda: hits.append("b"))
    unregister()
    token.cancel()
    token.cancel()
    assert hits == ["b"] and token.cancelled and token.wait(0)
    token.on_cancel(lambda: hits.append("late"))
    assert hits == ["b", "late"]

"""`LLMClient.embed`: the OpenAI-compatible `/embeddings` call against a real local fake server."""

from __future__ import annotations

import logging

import pytest

from studio.llm import AuthenticationError, LLMClient, ProviderConfigError, ProviderResponseError, RetryPolicy
from tests.fake_llm import Reply
from tests.semantic_cases import hash64_server

KEY = "sk-test-secret-0123456789"
FAST = RetryPolicy(max_retries=2, initial_delay_s=0.001, max_delay_s=0.01, jitter=0)


def client(fake, model="openai/text-embedding-3-small", key=KEY) -> LLMClient:
    return LLMClient.for_model(model, base_url=fake.base_url, env={"OPENAI_API_KEY": key, "ANTHROPIC_API_KEY": key},
                               keyring_get=None, retry=FAST)


def test_embed_sends_the_openai_request_and_reads_vectors_in_order(fake_llm):
    from tests.hash64 import hash64

    hash64_server(fake_llm)
    got = client(fake_llm).embed(["Lisbon budget", "sourdough"])
    assert got.vectors == [hash64("Lisbon budget"), hash64("sourdough")]
    assert got.usage.input_tokens == 2
    (request,) = fake_llm.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "text-embedding-3-small", "input": ["Lisbon budget", "sourdough"],
                            "encoding_format": "float"}
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_answer_out_of_order_is_put_back_in_input_order(fake_llm):
    fake_llm.push(Reply(status=200, body={"data": [{"index": 1, "embedding": [0.0, 1.0]},
                                                   {"index": 0, "embedding": [1.0, 0.0]}]}))
    assert client(fake_llm).embed(["a", "b"]).vectors == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("body", [{"data": []}, {"data": [{"index": 0, "embedding": "nope"}]}, {"nothing": 1},
                                  {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}])
def test_malformed_answers_are_named(fake_llm, body):
    fake_llm.push(Reply(status=200, body=body))
    with pytest.raises(ProviderResponseError):
        client(fake_llm).embed(["a", "b"] if len(body.get("data", [])) == 2 else ["a"])


def test_rejected_key_never_appears_in_the_error_or_the_log(fake_llm, caplog):
    fake_llm.push(Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(AuthenticationError) as info:
        client(fake_llm).embed(["a"])
    assert KEY not in str(info.value) and KEY not in caplog.text


def test_provider_without_embeddings_api_is_refused_before_any_call(fake_llm):
    with pytest.raises(ProviderConfigError, match="embeddings"):
        client(fake_llm, model="anthropic/claude-x").embed(["a"])
    assert fake_llm.requests == []

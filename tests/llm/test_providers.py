"""Model names, providers, keys (env / keyring / none) and redaction."""

from __future__ import annotations

import json

import pytest

from studio.llm import (
    MissingKeyError,
    ProviderConfigError,
    Secret,
    default_model_from_config,
    key_status,
    parse_model,
    redact,
)
from studio.llm.keys import KEYRING_SERVICE, find_key, require_key
from studio.llm.providers import ANTHROPIC_MESSAGES, GEMINI_GENERATE, OPENAI_CHAT, PROVIDERS
from studio.store import open_store
from tests.conftest import FIXTURE_NAMES


@pytest.mark.parametrize("name, provider, model_id, api, base", [
    ("openai/gpt-4o-mini", "openai", "gpt-4o-mini", OPENAI_CHAT, "https://api.openai.com/v1"),
    ("openrouter/anthropic/claude-3.5-sonnet", "openrouter", "anthropic/claude-3.5-sonnet", OPENAI_CHAT,
     "https://openrouter.ai/api/v1"),
    ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", ANTHROPIC_MESSAGES, "https://api.anthropic.com/v1"),
    ("google/gemini-2.5-flash", "google", "gemini-2.5-flash", GEMINI_GENERATE,
     "https://generativelanguage.googleapis.com/v1beta"),
    ("gemini/gemini-2.5-pro", "google", "gemini-2.5-pro", GEMINI_GENERATE,
     "https://generativelanguage.googleapis.com/v1beta"),
    ("ollama/llama3.1:8b", "ollama", "llama3.1:8b", OPENAI_CHAT, "http://localhost:11434/v1"),
    ("lmstudio/qwen2.5-7b", "lmstudio", "qwen2.5-7b", OPENAI_CHAT, "http://localhost:1234/v1"),
    ("vllm/meta-llama/Llama-3.1-8B", "vllm", "meta-llama/Llama-3.1-8B", OPENAI_CHAT, "http://localhost:8000/v1"),
    ("llama.cpp/any", "llamacpp", "any", OPENAI_CHAT, "http://localhost:8080/v1"),
    ("OpenAI.chat/gpt-4o", "openai", "gpt-4o", OPENAI_CHAT, "https://api.openai.com/v1"),
])
def test_parse_model(name, provider, model_id, api, base):
    spec = parse_model(name)
    assert (spec.provider.name, spec.model_id, spec.provider.api, spec.base_url) == (provider, model_id, api, base)
    assert spec.name == f"{provider}/{model_id}"


def test_base_url_overrides_and_is_required_for_generic_servers():
    assert parse_model("openai-compatible/m", "http://127.0.0.1:9999/v1/").base_url == "http://127.0.0.1:9999/v1"
    assert parse_model("ollama/x", "http://gpu-box:11434/v1").base_url == "http://gpu-box:11434/v1"
    with pytest.raises(ProviderConfigError, match="needs a base URL"):
        parse_model("openai-compatible/m")


@pytest.mark.parametrize("bad", ["gpt-4o", "/gpt-4o", "openai/", "", "nosuch/model"])
def test_bad_model_names(bad):
    with pytest.raises(ProviderConfigError):
        parse_model(bad)


@pytest.mark.parametrize("url", ["ftp://x/v1", "localhost:1234", "http://", "https://user:pw@host/v1"])
def test_bad_base_urls(url):
    with pytest.raises(ProviderConfigError):
        parse_model("ollama/x", url)


def test_default_model_from_config_forms():
    assert default_model_from_config({"reflection": {"model": "openai/gpt-4o-mini"}}) == "openai/gpt-4o-mini"
    assert default_model_from_config({"reflection": {"model": {"provider": "google.generative-ai",
                                                               "modelId": "gemini-2.5-flash"}}}) == \
        "google/gemini-2.5-flash"
    assert default_model_from_config({"model": "anthropic/claude-haiku-4-5"}) == "anthropic/claude-haiku-4-5"
    assert default_model_from_config({"reflection": {"model": {"provider": "scripted", "modelId": "x"}}}) is None
    assert default_model_from_config({"reflection": {"model": "gpt-4o"}}) is None  # no provider
    assert default_model_from_config({"reflection": {"model": "openai-compatible/x"}}) is None  # needs a URL
    assert default_model_from_config(None) is None
    assert default_model_from_config({}) is None


def test_fixture_configs_name_a_scripted_model_we_cannot_call(tmp_path):
    """Every fixture was written with corpus's scripted model ({provider: 'scripted'}): no default model."""
    from tests.conftest import copy_fixture

    seen = 0
    for name in FIXTURE_NAMES:
        with open_store(copy_fixture(name, tmp_path / name.replace("/", "_"))) as store:
            for record in store.om_current_all().values():
                model = record.config.get("reflection", {}).get("model")
                assert model["provider"] == "scripted"
                assert default_model_from_config(record.config) is None
                seen += 1
    assert seen > 5


def test_keys_from_env_first_then_keyring():
    openai = PROVIDERS["openai"]
    calls = []

    def ring(service, user):
        calls.append((service, user))
        return "from-keyring-123"

    key, status = find_key(openai, env={"OPENAI_API_KEY": " sk-env-key-1234 "}, keyring_get=ring)
    assert key.reveal() == "sk-env-key-1234" and status.source == "env" and status.env_var == "OPENAI_API_KEY"
    assert calls == []
    key, status = find_key(openai, env={}, keyring_get=ring)
    assert key.reveal() == "from-keyring-123" and status.source == "keyring"
    assert calls == [(KEYRING_SERVICE, "openai")]
    google = PROVIDERS["google"]
    key, status = find_key(google, env={"GEMINI_API_KEY": "g-key-5678"}, keyring_get=None)
    assert status.env_var == "GEMINI_API_KEY" and key.reveal() == "g-key-5678"


def test_key_status_for_the_ui():
    no_ring = None
    assert key_status("openai/gpt-4o", env={}, keyring_get=no_ring).source == "missing"
    assert not key_status("openai/gpt-4o", env={}, keyring_get=no_ring).usable
    assert "OPENAI_API_KEY" in key_status("openai/gpt-4o", env={}, keyring_get=no_ring).message
    assert key_status("ollama/llama3", env={}, keyring_get=no_ring).source == "not-needed"
    assert key_status("openai-compatible/m", base_url="http://127.0.0.1:1/v1", env={},
                      keyring_get=no_ring).source == "optional-missing"
    found = key_status("anthropic/claude", env={"ANTHROPIC_API_KEY": "sk-ant-secret-value"}, keyring_get=no_ring)
    assert found.source == "env" and found.usable
    assert "sk-ant-secret-value" not in json.dumps(found.to_json())


def test_a_broken_keyring_backend_counts_as_no_key(monkeypatch):
    import keyring

    def broken(*args):
        raise keyring.errors.NoKeyringError("no backend")

    monkeypatch.setattr(keyring, "get_password", broken)
    assert key_status("openai/gpt-4o", env={}).source == "missing"
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        require_key(PROVIDERS["openai"], env={})


def test_secret_never_shows_itself():
    secret = Secret("sk-very-secret-value")
    assert "very-secret" not in repr(secret) and "very-secret" not in str(secret)
    assert "very-secret" not in f"{secret}" and "very-secret" not in repr([secret])
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(secret)


def test_redact_scrubs_keys_and_key_shapes():
    text = ("key sk-very-secret-value sent; Bearer abcdefghijkl; url ?key=AIzaSyA-1234567890abcdef&x=1; "
            "custom zzzz-my-own-token-zzzz")
    out = redact(text, Secret("zzzz-my-own-token-zzzz"))
    for leaked in ("sk-very-secret-value", "abcdefghijkl", "AIzaSyA-1234567890abcdef", "zzzz-my-own-token-zzzz"):
        assert leaked not in out
    assert "sent" in out and "x=1" in out

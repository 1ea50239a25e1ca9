"""Providers we can call, and model names in Mastra's `provider/model` form.

A model name is `provider/model-id`; the model id may itself hold slashes
(`openrouter/anthropic/claude-3.5-sonnet`) or colons (`ollama/llama3.1:8b`). Three wire APIs
cover every provider: OpenAI-compatible Chat Completions (OpenAI, OpenRouter, Groq, DeepSeek,
xAI, Mistral and local servers: Ollama, vLLM, LM Studio, llama.cpp, or any server given with
`openai-compatible/<model>` and a base URL), Anthropic Messages and Google Gemini
generateContent. Mastra stores the Reflector's model in a record's `config` either as
`provider/model` or as `{provider, modelId}` where the provider may carry an AI SDK suffix
(`openai.chat`, `google.generative-ai`); `default_model_from_config` reads both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from studio.llm.errors import ProviderConfigError

OPENAI_CHAT = "openai-chat"
ANTHROPIC_MESSAGES = "anthropic-messages"
GEMINI_GENERATE = "gemini-generate-content"


@dataclass(frozen=True)
class Provider:
    """One provider: its wire API, default base URL, key env vars (first found wins) and key need.

    key_required: True (hosted), False (local server: no key sent unless one is set),
    `env_vars` may be empty. `local` marks servers on the user's own machine.
    """

    name: str
    api: str
    base_url: str | None
    env_vars: tuple[str, ...] = ()
    key_required: bool = True
    local: bool = False
    label: str = ""


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("openai", OPENAI_CHAT, "https://api.openai.com/v1", ("OPENAI_API_KEY",), label="OpenAI"),
    Provider("openrouter", OPENAI_CHAT, "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",), label="OpenRouter"),
    Provider("anthropic", ANTHROPIC_MESSAGES, "https://api.anthropic.com/v1", ("ANTHROPIC_API_KEY",),
             label="Anthropic"),
    Provider("google", GEMINI_GENERATE, "https://generativelanguage.googleapis.com/v1beta",
             ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"), label="Google Gemini"),
    Provider("groq", OPENAI_CHAT, "https://api.groq.com/openai/v1", ("GROQ_API_KEY",), label="Groq"),
    Provider("deepseek", OPENAI_CHAT, "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",), label="DeepSeek"),
    Provider("xai", OPENAI_CHAT, "https://api.x.ai/v1", ("XAI_API_KEY",), label="xAI"),
    Provider("mistral", OPENAI_CHAT, "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",), label="Mistral"),
    Provider("ollama", OPENAI_CHAT, "http://localhost:11434/v1", (), key_required=False, local=True, label="Ollama"),
    Provider("lmstudio", OPENAI_CHAT, "http://localhost:1234/v1", (), key_required=False, local=True,
             label="LM Studio"),
    Provider("vllm", OPENAI_CHAT, "http://localhost:8000/v1", ("VLLM_API_KEY",), key_required=False, local=True,
             label="vLLM"),
    Provider("llamacpp", OPENAI_CHAT, "http://localhost:8080/v1", ("LLAMACPP_API_KEY",), key_required=False,
             local=True, label="llama.cpp"),
    Provider("openai-compatible", OPENAI_CHAT, None, ("OPENAI_COMPATIBLE_API_KEY",), key_required=False,
             label="OpenAI-compatible server"),
)}

ALIASES = {
    "gemini": "google", "google-generative-ai": "google", "googleai": "google",
    "lm-studio": "lmstudio", "llama.cpp": "llamacpp", "llama-cpp": "llamacpp",
    "openai-compat": "openai-compatible", "x-ai": "xai", "grok": "xai",
}


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: provider entry, model id, and the base URL requests go to (no trailing /)."""

    provider: Provider
    model_id: str
    base_url: str

    @property
    def name(self) -> str:
        """Return the model as `provider/model-id`."""
        return f"{self.provider.name}/{self.model_id}"


def provider_named(name: str) -> Provider | None:
    """Return the provider NAME (case-insensitive, aliases and AI SDK suffixes like `openai.chat` accepted)."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key not in PROVIDERS and "." in key and key != "llama.cpp":
        key = ALIASES.get(key.split(".")[0], key.split(".")[0])
    return PROVIDERS.get(key)


def check_base_url(url: str) -> str:
    """Return URL without its trailing slash; raise ProviderConfigError unless it is an http(s) URL with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProviderConfigError(f"Not a usable base URL (want http:// or https:// with a host): {url!r}")
    if parts.username or parts.password:
        raise ProviderConfigError("Put credentials in an environment variable or the OS keyring, not in the base URL")
    return url.strip().rstrip("/")


def parse_model(model: str, base_url: str | None = None) -> ModelSpec:
    """Resolve `provider/model-id` (+ optional BASE_URL override) into a ModelSpec.

    Raises ProviderConfigError for a name without a provider, an unknown provider, an empty model
    id, a bad base URL, or `openai-compatible/...` without a base URL.
    """
    text = str(model or "").strip()
    provider_name, slash, model_id = text.partition("/")
    if not slash or not provider_name or not model_id.strip():
        raise ProviderConfigError(
            f"Model names look like provider/model (for example openai/gpt-4o-mini), not {model!r}")
    provider = provider_named(provider_name)
    if provider is None:
        known = ", ".join(sorted(PROVIDERS))
        raise ProviderConfigError(f"Unknown provider {provider_name!r} (known: {known}; any other OpenAI-compatible "
                                  "server: openai-compatible/<model> with --base-url)")
    url = base_url or provider.base_url
    if not url:
        raise ProviderConfigError(f"{provider.name}/<model> needs a base URL (for example http://localhost:8000/v1)")
    return ModelSpec(provider, model_id.strip(), check_base_url(url))


def default_model_from_config(config: Any, role: str = "reflection") -> str | None:
    """Return the Reflector model (ROLE "observation": the Observer model) stored in an OM record's
    `config` as `provider/model`, or None.

    Reads `config.<ROLE>.model`, then `config.model` (Mastra's shared model), in either
    stored form (`"provider/model"` or `{provider, modelId}`); returns None when absent or when
    the provider is not one we can call (e.g. a scripted test model).
    """
    if not isinstance(config, dict):
        return None
    section = config.get(role) if isinstance(config.get(role), dict) else {}
    for candidate in (section.get("model"), config.get("model")):
        if candidate is None:
            continue
        if isinstance(candidate, str):
            provider_name, slash, model_id = candidate.partition("/")
        elif isinstance(candidate, dict) and isinstance(candidate.get("modelId"), str):
            provider_name, slash, model_id = str(candidate.get("provider") or ""), "/", candidate["modelId"]
        else:
            return None
        provider = provider_named(provider_name) if slash else None
        if provider is None or not model_id.strip() or provider.base_url is None:
            return None
        return f"{provider.name}/{model_id.strip()}"
    return None

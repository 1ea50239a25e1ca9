"""LLM providers over httpx (no Qt): model names, keys, one synchronous client, cancellation.

    from studio.llm import LLMClient, CancelToken, key_status
    client = LLMClient.for_model("openai/gpt-4o-mini")          # key from $OPENAI_API_KEY or keyring
    answer = client.complete(system, prompt, cancel=token)       # Completion(text, usage, ...)

See studio.llm.providers (names, base URLs), studio.llm.keys (key lookup, redaction),
studio.llm.client (timeouts, retries, cancellation) and studio.llm.errors.
"""

from studio.common.cancel import Cancelled, CancelToken
from studio.llm.client import ClientEvent, Completion, LLMClient, RetryPolicy, Timeouts
from studio.llm.errors import (
    AuthenticationError,
    MissingKeyError,
    ModelNotFoundError,
    ProviderConfigError,
    ProviderResponseError,
    ProviderServerError,
    ProviderTimeoutError,
    ProviderUnreachableError,
    RateLimitedError,
)
from studio.llm.keys import KeyStatus, Secret, key_status, redact
from studio.llm.providers import PROVIDERS, ModelSpec, Provider, default_model_from_config, parse_model
from studio.llm.wire import Usage

__all__ = [
    "PROVIDERS",
    "AuthenticationError",
    "CancelToken",
    "Cancelled",
    "ClientEvent",
    "Completion",
    "KeyStatus",
    "LLMClient",
    "MissingKeyError",
    "ModelNotFoundError",
    "ModelSpec",
    "Provider",
    "ProviderConfigError",
    "ProviderResponseError",
    "ProviderServerError",
    "ProviderTimeoutError",
    "ProviderUnreachableError",
    "RateLimitedError",
    "RetryPolicy",
    "Secret",
    "Timeouts",
    "Usage",
    "default_model_from_config",
    "key_status",
    "parse_model",
    "redact",
]

"""Named errors of the LLM providers, all `ProviderError`s (studio.errors); messages never hold a key.

`ProviderConfigError` (unknown provider, missing key, bad base URL) is the caller's input being
wrong: the CLI exits 2 on it. Every other error is a failed call: the CLI exits 1.
"""

from __future__ import annotations

from studio.errors import ProviderError


class ProviderConfigError(ProviderError):
    """The model name, base URL or key setup is unusable (unknown provider, no key, bad URL)."""


class MissingKeyError(ProviderConfigError):
    """The provider needs an API key and none was found in the environment or the OS keyring."""


class AuthenticationError(ProviderError):
    """The provider rejected the API key (HTTP 401/403, or Gemini's 'API key not valid')."""


class ModelNotFoundError(ProviderError):
    """The provider does not know the model (HTTP 404)."""


class ProviderUnreachableError(ProviderError):
    """No connection to the provider: connection refused, host not found, network down."""


class ProviderTimeoutError(ProviderError):
    """The provider did not answer within the timeout."""


class RateLimitedError(ProviderError):
    """HTTP 429 persisted after the retries (or the provider asked to wait longer than allowed)."""


class ProviderServerError(ProviderError):
    """HTTP 5xx persisted after the retries."""


class ProviderResponseError(ProviderError):
    """Any other HTTP error (400, 413, ...) or an answer that is not the expected JSON."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status

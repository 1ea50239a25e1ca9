"""API keys: found in the environment or the OS keyring, held in a `Secret`, never written anywhere.

Lookup order for a provider: its environment variables (`Provider.env_vars`, first non-empty
wins), then the OS keyring through the `keyring` package under service `memory-studio` and the
provider's name as user (`keyring set memory-studio openai`). A missing or broken keyring
backend counts as "not found". Keys are only ever put into request headers; `redact` scrubs them
(and anything shaped like a key) from every message the client builds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from studio.common.keyring_lookup import KEYRING_SERVICE, KeyringGetter, os_keyring_get
from studio.llm.errors import MissingKeyError
from studio.llm.providers import ModelSpec, Provider


class Secret:
    """A string that does not show itself: repr/str give `Secret('***')`; `reveal()` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        """Return the secret value (only for building a request header)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self):  # never pickled into a worker process or a file
        raise TypeError("Secret values cannot be pickled")


@dataclass(frozen=True)
class KeyStatus:
    """Where a provider's key comes from, for the studio's dialog and the CLI.

    source: "env" | "keyring" | "missing" | "not-needed" | "optional-missing";
    `env_var` names the variable used (or tried first); `message` is one user-facing line;
    never holds the key itself.
    """

    provider: str
    source: str
    env_var: str | None
    message: str

    @property
    def usable(self) -> bool:
        """Return True when a call can be made (a key was found or none is needed)."""
        return self.source != "missing"

    def to_json(self) -> dict:
        """Return {provider, source, env_var, usable, message}."""
        return {"provider": self.provider, "source": self.source, "env_var": self.env_var,
                "usable": self.usable, "message": self.message}


#: Default for `keyring_get`: the OS keyring through the `keyring` package (looked up at call time).
OS_KEYRING: KeyringGetter = lambda service, user: _keyring_get(service, user)  # noqa: E731  (a constant: the default of every keyring_get)


def _keyring_get(service: str, user: str) -> str | None:
    return os_keyring_get(service, user, logger="studio.llm")


def find_key(provider: Provider, *, env: Mapping[str, str] | None = None,
             keyring_get: KeyringGetter | None = OS_KEYRING) -> tuple[Secret | None, KeyStatus]:
    """Return (key or None, status) for PROVIDER from ENV (default os.environ), then the keyring.

    KEYRING_GET=None skips the keyring (tests, or users who opt out).
    """
    env = os.environ if env is None else env
    for var in provider.env_vars:
        value = env.get(var, "")
        if value.strip():
            return Secret(value.strip()), KeyStatus(provider.name, "env", var, f"Key found in ${var}")
    if keyring_get is not None:
        value = keyring_get(KEYRING_SERVICE, provider.name)
        if value and value.strip():
            return Secret(value.strip()), KeyStatus(
                provider.name, "keyring", None, f"Key found in the OS keyring ({KEYRING_SERVICE} / {provider.name})")
    first = provider.env_vars[0] if provider.env_vars else None
    if not provider.key_required:
        if provider.local:
            return None, KeyStatus(provider.name, "not-needed", first, "No key needed (local server)")
        return None, KeyStatus(provider.name, "optional-missing", first,
                               "No key found; requests are sent without one" +
                               (f" (set ${first} if the server wants one)" if first else ""))
    where = " or ".join(f"${v}" for v in provider.env_vars)
    return None, KeyStatus(provider.name, "missing", first,
                           f"No key: set {where}, or store one with `keyring set {KEYRING_SERVICE} {provider.name}`")


def key_status(model: ModelSpec | str, *, base_url: str | None = None, env: Mapping[str, str] | None = None,
               keyring_get: KeyringGetter | None = OS_KEYRING) -> KeyStatus:
    """Return the KeyStatus of MODEL (`provider/model` or a ModelSpec); never returns the key.

    Raises ProviderConfigError for an unknown provider or malformed model name.
    """
    from studio.llm.providers import parse_model

    spec = model if isinstance(model, ModelSpec) else parse_model(model, base_url)
    return find_key(spec.provider, env=env, keyring_get=keyring_get)[1]


def require_key(provider: Provider, **kwargs) -> Secret | None:
    """Return PROVIDER's key (None when not needed and absent); raise MissingKeyError when required and absent."""
    secret, status = find_key(provider, **kwargs)
    if status.source == "missing":
        raise MissingKeyError(f"{provider.label or provider.name}: {status.message}")
    return secret


_KEY_SHAPES = re.compile(
    r"(sk-[A-Za-z0-9_\-]{6,}|AIza[0-9A-Za-z_\-]{10,}|(?i:bearer)\s+[A-Za-z0-9._\-]{6,}|"
    r"(?i:(?:api[_-]?key|key|token)=)[^&\s\"']+)")


def redact(text: str, *secrets: Secret | str | None) -> str:
    """Return TEXT with every given secret and anything shaped like an API key replaced by `***`."""
    out = str(text)
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value and len(value) >= 4:
            out = out.replace(value, "***")
    return _KEY_SHAPES.sub("***", out)

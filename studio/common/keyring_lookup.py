"""The one lookup of a secret in the OS keyring, shared by API keys (studio.llm.keys) and database
secrets (studio.store.credentials).

Secrets live under service `memory-studio` (KEYRING_SERVICE) through the `keyring` package,
imported on first use (its backends probe D-Bus and friends). A missing, locked or broken backend
counts as "nothing saved": the lookup returns None and logs only the exception's class name, never
a value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

KEYRING_SERVICE = "memory-studio"
#: A keyring lookup: (service, username) -> the secret or None.
KeyringGetter = Callable[[str, str], "str | None"]


def os_keyring_get(service: str, user: str, *, logger: str = "studio") -> str | None:
    """Return the secret SERVICE / USER holds in the OS keyring, or None (none saved, or no usable backend)."""
    try:
        import keyring

        return keyring.get_password(service, user)
    except Exception as exc:  # no backend, locked, D-Bus missing: a secret we cannot read is a missing one
        logging.getLogger(logger).debug("keyring lookup failed: %s", exc.__class__.__name__)
        return None

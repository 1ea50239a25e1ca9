"""An in-memory keyring backend for tests (`keyring.set_keyring(MemoryKeyring())`): never touches the OS keyring."""

from __future__ import annotations

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from keyring.errors import PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    """Secrets in a dict {(service, username): secret}; `secrets` is what a test inspects."""

    priority = 1

    def __init__(self):
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.secrets.get((service, username))

    def set_password(self, service, username, password):
        self.secrets[(service, username)] = password

    def delete_password(self, service, username):
        if self.secrets.pop((service, username), None) is None:
            raise PasswordDeleteError("not found")


@pytest.fixture
def memory_keyring():
    """Install a MemoryKeyring as the process's keyring for one test; restore the previous one after."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
def no_keyring():
    """Install keyring's "no backend" (fail.Keyring) for one test, as on a machine without a keyring."""
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)

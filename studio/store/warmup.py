"""Start loading a server store's driver in the background while the caller does other work.

Importing psycopg takes ~160 ms, httpx (the libSQL server transport) ~140 ms, and the keyring
(asked for a password or token when the URL, the environment and ~/.pgpass have none) ~120 ms to
import and choose its backend, on the development machine: the first things a PostgreSQL or
libSQL-server open does, so they delay the studio's first painted thread list by that much.
`warm_up(TARGET)` starts them in a daemon thread as soon as the target is known (before Qt is
imported and the window built); the open then finds them done, or waits on Python's import lock for
the rest. Nothing is connected to, and no secret is read (the keyring only picks its backend).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading

from studio.store.memory_store import REMOTE_LIBSQL_SCHEMES

#: The slow third-party import of a target's open, by URL scheme (a local file needs none: libsql is
#: loaded with the store). Only these: the studio's own modules are imported by the main thread, and two
#: threads importing the same module of ours meanwhile would only wait for each other.
_DRIVERS = {("postgresql://", "postgres://"): ("psycopg", "keyring"),
            REMOTE_LIBSQL_SCHEMES: ("httpx", "keyring")}


def driver_modules(target: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """Return the modules opening TARGET imports first (none for a local file or no target)."""
    lowered = os.fspath(target).lower() if target is not None else ""
    for schemes, modules in _DRIVERS.items():
        if lowered.startswith(schemes):
            return modules
    return ()


def warm_up(target: str | os.PathLike[str] | None) -> threading.Thread | None:
    """Import TARGET's driver modules in a daemon thread; return the thread (None when there is nothing to import).

    An import that fails here (driver not installed) is ignored: the open imports it again and reports it.
    """
    modules = [m for m in driver_modules(target) if m not in sys.modules]
    if not modules:
        return None

    def load() -> None:
        for name in modules:
            try:
                module = importlib.import_module(name)
                if name == "keyring":
                    module.get_keyring()   # the backend choice (probes D-Bus and the like); reads no secret
            except Exception:  # noqa: BLE001 - the open repeats it and says what is wrong (a keyring: none)
                continue

    thread = threading.Thread(target=load, name="studio-driver-import", daemon=True)
    thread.start()
    return thread

"""Start loading a server store's driver in the background while the caller does other work.

Importing psycopg takes ~160 ms and httpx (the libSQL server transport) ~140 ms on the development
machine: the first things a PostgreSQL or libSQL-server open does, so they delay the studio's first
painted thread list by that much. The keyring is not warmed up here: choosing its backend in this
thread while Qt loads made the studio's process die with SIGSEGV (2 of 27 `--screenshot` runs of
tests/server/test_pg_studio.py in CI, and again at the next try; none in 81 runs without it). A
PostgreSQL open asks the keyring only when the server wants a password nothing else gave
(`studio.store.backends.pg.connect_pg`), so a login the server trusts never loads it.
`warm_up(TARGET)` starts them in a daemon thread as soon as the target is known (before Qt is
imported and the window built); the open then finds them done, or waits on Python's import lock for
the rest. Nothing is connected to.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading

from studio.store.target import LIBSQL_SERVER, MONGODB, POSTGRESQL, target_kind

#: The slow third-party import of a target's open, by kind (a local file needs none: libsql is loaded
#: with the store). Only these: the studio's own modules are imported by the main thread, and two
#: threads importing the same module of ours meanwhile would only wait for each other.
_DRIVERS = {POSTGRESQL: ("psycopg",), LIBSQL_SERVER: ("httpx",), MONGODB: ("pymongo",)}


def driver_modules(target: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """Return the modules opening TARGET imports first (none for a local file or no target)."""
    return _DRIVERS.get(target_kind(target), ()) if target is not None else ()


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
                importlib.import_module(name)
            except Exception:
                continue

    thread = threading.Thread(target=load, name="studio-driver-import", daemon=True)
    thread.start()
    return thread

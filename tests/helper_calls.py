"""Module-level functions the helper-process tests send to the child (pickled by name, so importable there)."""

from __future__ import annotations

import os
import threading


def wait_for_cancel(_store, cancel: threading.Event, timeout_s: float) -> tuple[bool, int]:
    """Wait until CANCEL is set (at most TIMEOUT_S s); return (whether it was set, this process's id)."""
    return cancel.wait(timeout_s), os.getpid()


def process_id(_store) -> int:
    """Return this process's id."""
    return os.getpid()


def wait_for_cancel_then_fail(_store, *args):
    """Stand-in for `replay_in_store` (same arguments, the cancel event last): wait for the cancel
    (10 minutes at most), then fail as a cancelled replay does."""
    from studio.errors import EngineError

    if args[-1].wait(600):
        raise EngineError("Cancelled")
    raise AssertionError("never cancelled")

"""A thread-safe cancel token shared by the LLM client, the Reflector and the studio's dialog.

The studio's worker thread runs a reflection; the GUI thread calls `CancelToken.cancel()`. The
client checks the token before each HTTP attempt and while waiting between retries, and closes
the in-flight request's connection as soon as the token fires (see `studio.llm.client`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress

from studio.errors import StudioError


class Cancelled(StudioError):
    """The user cancelled the operation (nothing was written)."""

    def __init__(self, message: str = "Cancelled"):
        super().__init__(message)


class CancelToken:
    """A one-shot cancellation flag with callbacks; safe to use from any thread."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """Return True once `cancel()` was called."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Fire the token: wake every `wait()` and run each registered callback once."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            with suppress(Exception):  # a failing abort hook must not hide the cancellation
                callback()

    def wait(self, timeout: float | None) -> bool:
        """Sleep up to TIMEOUT seconds or until cancelled; return True if cancelled."""
        return self._event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        """Raise Cancelled if the token has fired."""
        if self._event.is_set():
            raise Cancelled()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run CALLBACK when the token fires (at once if it already has); return an unregister function."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)

                def unregister() -> None:
                    with self._lock:
                        if callback in self._callbacks:
                            self._callbacks.remove(callback)
                return unregister
        callback()
        return lambda: None

"""A helper Python process for CPU-heavy database work of big databases (no Qt; see `helper_command`).

Why a process: the studio's engine is pure Python and libSQL holds the GIL while it steps a
query, so a busy worker *thread* makes the GUI thread wait for the interpreter lock before every
paint, model call and slot (measured: a 12 ms repaint of the thread list took 230–310 ms while a
worker computed statuses). The helper runs the same loader functions (`studio.ui.loaders`)
against its own read-only connection, so the GUI process stays idle while it works.

Protocol: the parent writes pickled requests `(path, generation, function, args)` to the child's
stdin and reads pickled replies `(ok, value)` from a private copy of its stdout; one request at a
time. The child opens PATH read-only on first use and keeps it open while GENERATION (the parent's
count of opens) stays the same, then calls `function(store, *args)`.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from studio.errors import StoreError, StudioError
from studio.store.credentials import load_session_secrets, session_secrets

#: Seconds to wait for the child to leave after its stdin closed, before it is killed.
EXIT_TIMEOUT = 2.0


class HelperUnavailable(StudioError):
    """The helper process could not be started or died; the caller runs the work itself."""


class HelperProcess:
    """Own one child process and run calls in it, one at a time (thread-safe, blocking)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._broken = False
        self._closed = False

    @property
    def available(self) -> bool:
        """Return False once the child could not start, died, or the helper was closed."""
        return not (self._broken or self._closed)

    @property
    def pid(self) -> int | None:
        """Return the child's process id while it runs (tests), else None."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def call(self, path: str, generation: int, fn: Callable[..., Any], *args: Any) -> Any:
        """Run FN(store of PATH, *ARGS) in the child and return its result; re-raise its StudioError.

        GENERATION changes when the parent re-opens a database: the child then re-opens PATH too.

        FN must be a module-level function (it is pickled by name). Raises HelperUnavailable when the
        child cannot run the call (not started, died, closed), so the caller can do the work itself.
        """
        with self._lock:
            if not self.available:
                raise HelperUnavailable("the helper process is not available")
            try:
                proc = self._ensure()
                # the secrets typed in Connect… this session go along (over the pipe, never to disk)
                pickle.dump((path, generation, fn, args, session_secrets()), proc.stdin,
                            protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.flush()
                ok, value = pickle.load(proc.stdout)
            except (OSError, EOFError, pickle.PickleError, AttributeError, ValueError) as exc:
                self._broken = True
                self._kill()
                raise HelperUnavailable(f"the helper process failed: {exc}") from exc
        if ok:
            return value
        raise value

    def close(self) -> None:
        """Stop the child (a call in progress ends with HelperUnavailable) and refuse later calls."""
        self._closed = True
        if self._lock.acquire(blocking=False):
            try:
                self._kill()
            finally:
                self._lock.release()
        else:
            proc = self._proc  # read once: the calling thread may clear it meanwhile
            if proc is not None:
                try:
                    proc.terminate()  # the calling thread reads end-of-file, then cleans up
                except OSError:
                    pass

    def _ensure(self) -> subprocess.Popen:
        if self._proc is None:
            package_root = str(Path(__file__).resolve().parents[2])
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
            self._proc = subprocess.Popen(helper_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        return self._proc

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def helper_command() -> list[str]:
    """Return the command that starts the helper: `python -m studio.ui.helper_process`, or in the frozen
    app (sys.frozen; `sys.executable` is the app itself) `memory-studio --studio-child helper`."""
    if getattr(sys, "frozen", False):
        from studio.paths import CHILD_FLAG

        return [sys.executable, CHILD_FLAG, "helper"]
    return [sys.executable, "-m", "studio.ui.helper_process"]


def _reply_error(exc: BaseException) -> StudioError:
    """Return EXC as something picklable the parent can raise (a StudioError keeps its class)."""
    if isinstance(exc, StudioError):
        try:
            pickle.dumps(exc)
            return exc
        except Exception:
            pass
    return StoreError(str(exc) or exc.__class__.__name__)


def serve(requests, replies) -> None:
    """Answer pickled requests from REQUESTS on REPLIES until end of input (the child's main loop)."""
    from studio.store.memory_store import MemoryStore

    stores: dict[tuple[str, int], MemoryStore] = {}
    while True:
        try:
            path, generation, fn, args, secrets = pickle.load(requests)
        except EOFError:
            break
        try:
            load_session_secrets(secrets)
            store = stores.get((path, generation))
            if store is None:
                for old in stores.values():
                    old.close()
                stores = {}
                store = stores[(path, generation)] = MemoryStore.open(path)
            with store.snapshot():   # one load, as on the database worker (studio.ui.tasks.run_load)
                reply = (True, fn(store, *args))
        except BaseException as exc:  # the task boundary: every failure (a driver panic too) goes back to the parent
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            reply = (False, _reply_error(exc if isinstance(exc, Exception) else StoreError(
                f"the read failed inside a driver ({exc.__class__.__name__}: {exc})")))
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            data = pickle.dumps((False, StoreError(f"unpicklable result: {exc}")))
        replies.write(data)
        replies.flush()
    for store in stores.values():
        store.close()


def main() -> None:
    """Serve requests on stdin; replies go to a private copy of stdout (stray prints go to stderr)."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()

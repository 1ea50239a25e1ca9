"""A helper Python process for CPU-heavy database work of big databases (no Qt; see `helper_command`).

Why a process: the studio's engine is pure Python and libSQL holds the GIL while it steps a
query, so a busy worker *thread* makes the GUI thread wait for the interpreter lock before every
paint, model call and slot (measured: a 12 ms repaint of the thread list took 230–310 ms while a
worker computed statuses). The helper runs the same loads (`studio.app`: listing, statuses, …)
against its own read-only connection, so the GUI process stays idle while it works.

Protocol: the parent writes pickled requests `(seq, path, generation, function, args)` to the
child's stdin and reads pickled replies `(seq, ok, value)` from a private copy of its stdout; one
request at a time. The child opens PATH read-only on first use and keeps it open while GENERATION
(the parent's count of opens) stays the same, then calls `function(store, *args)`.

Cancelling: an argument that is the `CANCEL` placeholder reaches the function as a
`threading.Event`. While the parent waits for a reply it watches the caller's cancel event and,
once it is set, writes `("cancel", seq)`; a reader thread in the child sets that call's event, so
a long computation that checks it (the What-if replay) stops early instead of making every later
call wait behind it. Calls that never look at the event simply finish.
"""

from __future__ import annotations

import itertools
import os
import pickle
import queue
import selectors
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from studio.errors import StoreError, StudioError
from studio.store.credentials import load_session_secrets, session_secrets

#: Seconds to wait for the child to leave after its stdin closed, before it is killed.
EXIT_TIMEOUT = 2.0
#: How often (s) the parent looks at a call's cancel event while it waits for the reply.
CANCEL_POLL_S = 0.02


class _CancelSlot:
    """The placeholder for a call's cancel event among its arguments (pickled by name: one object)."""

    def __reduce__(self):
        return "CANCEL"

    def __repr__(self) -> str:
        return "CANCEL"


#: Put this among a call's arguments where the function takes its cancel event (`threading.Event`):
#: the helper passes its own event, set when the parent cancels; an in-process run passes the task's.
CANCEL = _CancelSlot()


def bind_cancel(args: tuple, cancel: threading.Event | None) -> tuple:
    """Return ARGS with every `CANCEL` placeholder replaced by CANCEL (the event; None when there is none)."""
    return tuple(cancel if a is CANCEL else a for a in args)


class HelperUnavailable(StudioError):
    """The helper process could not be started or died; the caller runs the work itself."""


class HelperProcess:
    """Own one child process and run calls in it, one at a time (thread-safe, blocking)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._broken = False
        self._closed = False
        self._seq = itertools.count(1)

    @property
    def available(self) -> bool:
        """Return False once the child could not start, died, or the helper was closed."""
        return not (self._broken or self._closed)

    @property
    def pid(self) -> int | None:
        """Return the child's process id while it runs (tests), else None."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def call(self, path: str, generation: int, fn: Callable[..., Any], *args: Any,
             cancel: threading.Event | None = None) -> Any:
        """Run FN(store of PATH, *ARGS) in the child and return its result; re-raise its StudioError.

        GENERATION changes when the parent re-opens a database: the child then re-opens PATH too.
        A `CANCEL` among ARGS reaches FN as the child's event for this call, set once CANCEL (the
        caller's event) is set while the call runs; FN then raises (its error comes back as usual).

        FN must be a module-level function (it is pickled by name). Raises HelperUnavailable when the
        child cannot run the call (not started, died, closed), so the caller can do the work itself.
        """
        with self._lock:
            if not self.available:
                raise HelperUnavailable("the helper process is not available")
            seq = next(self._seq)
            try:
                proc = self._ensure()
                # the secrets typed in Connect… this session go along (over the pipe, never to disk)
                pickle.dump((seq, path, generation, fn, args, session_secrets()), proc.stdin,
                            protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.flush()
                self._wait_for_reply(proc, seq, cancel)
                got, ok, value = pickle.load(proc.stdout)
                if got != seq:
                    raise ValueError(f"reply {got} to request {seq}")
            except (OSError, EOFError, pickle.PickleError, AttributeError, ValueError) as exc:
                self._broken = True
                self._kill()
                raise HelperUnavailable(f"the helper process failed: {exc}") from exc
        if ok:
            return value
        raise value

    def _wait_for_reply(self, proc: subprocess.Popen, seq: int, cancel: threading.Event | None) -> None:
        """Return once the reply to SEQ can be read; tell the child to cancel SEQ when CANCEL is set meanwhile."""
        if cancel is None:
            return
        sent = False
        # a selector (epoll / poll), not select.select: that one refuses descriptors past 1,023, which a
        # process holding many files reaches, and the call would then wait with its cancel unwatched
        with selectors.DefaultSelector() as watch:
            try:
                watch.register(proc.stdout, selectors.EVENT_READ)
            except (OSError, ValueError, TypeError):  # no way to watch this pipe: wait without watching
                return
            while True:
                if not sent and cancel.is_set():
                    pickle.dump(("cancel", seq), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                    proc.stdin.flush()
                    sent = True
                if watch.select(CANCEL_POLL_S):
                    return

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
                with suppress(OSError):
                    proc.terminate()  # the calling thread reads end-of-file, then cleans up

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
            with suppress(OSError):
                stream.close()
        try:
            proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def helper_command() -> list[str]:
    """Return the command that starts the helper: `python -m studio.app.helper_process`, or in the frozen
    app (sys.frozen; `sys.executable` is the app itself) `memory-studio --studio-child helper`."""
    if getattr(sys, "frozen", False):
        from studio.paths import CHILD_FLAG

        return [sys.executable, CHILD_FLAG, "helper"]
    return [sys.executable, "-m", "studio.app.helper_process"]


def _reply_error(exc: BaseException) -> StudioError:
    """Return EXC as something picklable the parent can raise (a StudioError keeps its class)."""
    if isinstance(exc, StudioError):
        try:
            pickle.dumps(exc)
            return exc
        except Exception:
            pass
    return StoreError(str(exc) or exc.__class__.__name__)


class _Inbox:
    """The child's side of stdin: a reader thread queues requests and applies cancels at once."""

    def __init__(self, requests) -> None:
        self._requests = requests
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._current: tuple[int, threading.Event] | None = None
        self._cancelled: set[int] = set()
        threading.Thread(target=self._read, name="helper-inbox", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                message = pickle.load(self._requests)
            except Exception:  # end of input, or the parent went away mid-message
                self._queue.put(None)
                return
            if isinstance(message, tuple) and len(message) == 2 and message[0] == "cancel":
                with self._lock:
                    if self._current is not None and self._current[0] == message[1]:
                        self._current[1].set()
                    else:
                        self._cancelled.add(message[1])   # queued, not started yet
                continue
            self._queue.put(message)

    def next(self):
        """Return the next request with its cancel event, `(seq, path, generation, fn, args, secrets, event)`;
        None at the end."""
        message = self._queue.get()
        if message is None:
            return None
        seq = message[0]
        event = threading.Event()
        with self._lock:
            if seq in self._cancelled:
                event.set()
            self._cancelled = {s for s in self._cancelled if s > seq}
            self._current = (seq, event)
        return (*message, event)


def serve(requests, replies) -> None:
    """Answer pickled requests from REQUESTS on REPLIES until end of input (the child's main loop)."""
    from studio.store import open_store
    from studio.store.memory_store import MemoryStore

    stores: dict[tuple[str, int], MemoryStore] = {}
    inbox = _Inbox(requests)
    while True:
        request = inbox.next()
        if request is None:
            break
        seq, path, generation, fn, args, secrets, cancel = request
        try:
            load_session_secrets(secrets)
            store = stores.get((path, generation))
            if store is None:
                for old in stores.values():
                    old.close()
                stores = {}
                store = stores[(path, generation)] = open_store(path)
            with store.snapshot():   # one load, as on the database worker (studio.ui.tasks.run_load)
                reply = (seq, True, fn(store, *bind_cancel(args, cancel)))
        except BaseException as exc:  # the task boundary: every failure (a driver panic too) goes back to the parent
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            reply = (seq, False, _reply_error(exc if isinstance(exc, Exception) else StoreError(
                f"the read failed inside a driver ({exc.__class__.__name__}: {exc})")))
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            data = pickle.dumps((seq, False, StoreError(f"unpicklable result: {exc}")))
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
    # Serve from the imported module, not from __main__: `CANCEL` placeholders are unpickled as
    # `studio.app.helper_process.CANCEL`, which must be the object `bind_cancel` looks for.
    from studio.app.helper_process import main as serve_main

    serve_main()

"""A small TCP proxy for the fault tests: it forwards 127.0.0.1 traffic to a server and "kills" it on cue.

The studio talks to the proxy's port as if it were the server. Armed with a fault, the proxy counts the
chunks the client sends (one query or one HTTP request each, for PostgreSQL's and Hrana's
request/answer protocols) and, at the chosen one, cuts every connection at once, as a server that dies
would look to the client:

* `before=True`: the chunk is not forwarded (the server never sees that statement);
* `before=False`: the chunk is forwarded and the answer is dropped (the server ran it, the client never
  hears back) — with a chunk holding `COMMIT` this is the point between COMMIT sent and its answer;
* `on_commit=True`: the chunk is the first one holding `COMMIT` (forwarded, answer dropped).

After the cut the proxy either accepts new connections again (`dead=False`: the server "came back", as
a restarted server or a network blip) or refuses them (`dead=True`: the listening socket is closed and
connections are refused until `revive()`).
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from dataclasses import dataclass

#: The COMMIT statement (not "READ COMMITTED" of a BEGIN): PostgreSQL's query text, or Hrana's JSON "sql" value.
_COMMIT = re.compile(rb'(?<![A-Za-z_])COMMIT(?:\x00|")')


@dataclass
class Fault:
    """Where to cut: at client chunk number AT (1-based, counted from `arm`), or at the first COMMIT."""

    at: int = 0
    before: bool = False
    on_commit: bool = False
    dead: bool = False
    #: After forwarding the chunk, answers are dropped for this long before the cut (s): the server has time
    #: to finish the statement (sqld drops a request whose connection closes before it ran).
    hold_s: float = 0.0


class FaultProxy:
    """Forward 127.0.0.1:`port` to 127.0.0.1:TARGET_PORT; cut the connections when the armed fault fires."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._fault: Fault | None = None
        self.chunks = 0
        self.fired = False
        self._muted = False
        self.port = 0
        self._listener: socket.socket | None = None
        self._listen()

    # -- control ----------------------------------------------------------------------------

    def arm(self, fault: Fault | None) -> None:
        """Count chunks from zero and cut at FAULT (None: forward everything, just count)."""
        with self._lock:
            self._fault, self.chunks, self.fired, self._muted = fault, 0, False, False

    def revive(self) -> None:
        """Accept connections again after a `dead` fault (on the same port)."""
        with self._lock:
            if self._listener is None:
                self._listen()

    def close(self) -> None:
        """Stop listening and cut every connection."""
        with self._lock:
            self._cut()
            self._stop_listening()

    # -- the proxy --------------------------------------------------------------------------

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _stop_listening(self) -> None:
        """Close the listening socket so that connects are refused (shutdown first: it wakes the blocked accept)."""
        if self._listener is None:
            return
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._listener = None

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _cut(self) -> None:
        """Close both ends of every connection (the caller holds the lock)."""
        for client, server in self._pairs:
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self._pairs.clear()

    def _fire(self) -> None:
        """The fault fires (the caller holds the lock): cut everything; a dead server stops listening."""
        self.fired = True
        self._cut()
        self._muted = False
        if self._fault is not None and self._fault.dead:
            self._stop_listening()

    def _pump(self, src: socket.socket, dst: socket.socket, upstream: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                for sock in (src, dst):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                return
            if upstream:
                with self._lock:
                    self.chunks += 1
                    fault = None if self.fired else self._fault
                    hit = fault is not None and ((fault.on_commit and _COMMIT.search(data) is not None)
                                                 or (not fault.on_commit and self.chunks == fault.at))
                    if hit and fault.before:
                        self._fire()
                        return
                    if hit:
                        # muted before the chunk goes out: the server's answer can reach the other pump
                        # before sendall returns here, and must already be dropped
                        self._muted = True
                        with contextlib.suppress(OSError):
                            dst.sendall(data)
                        if not fault.hold_s:
                            self._fire()
                            return
                if hit:
                    time.sleep(fault.hold_s)   # the server runs the statement; its answer is dropped meanwhile
                    with self._lock:
                        self._fire()
                    return
            if self._muted:
                continue   # the answer to the chunk the fault fired on: lost
            try:
                dst.sendall(data)
            except OSError:
                return

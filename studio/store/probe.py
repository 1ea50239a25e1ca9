"""Test a server target before opening it (File ▸ Connect… ▸ Test connection): one sentence and a thread count.

`check_connection(url)` opens the target read-only exactly as the studio will (same URL, same secret
lookup: `studio.store.credentials`), counts its threads, closes it, and sorts any failure into an
outcome the dialog can explain. It is bounded by the store's connect timeout (PostgreSQL: 10 s) and
statement timeout; the caller runs it off the GUI thread. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.errors import StoreError, store_error_kind
from studio.store.credentials import secret_kind
from studio.store.target import redact_url

#: outcome → what the user should do about it (the sentence starts with what happened).
OUTCOMES = ("ok", "auth", "no-secret", "unreachable", "not-mastra", "no-database", "login-refused",
            "too-many-connections", "error")


@dataclass(frozen=True)
class ConnectionCheck:
    """The result of `check_connection`.

    outcome: one of OUTCOMES; sentence: one line for the user (the target redacted, never a secret);
    threads: the number of threads (Mastra's `listThreads` over every resource) when outcome is "ok".
    """

    outcome: str
    sentence: str
    threads: int | None = None

    @property
    def ok(self) -> bool:
        """True when the target opened as a Mastra memory."""
        return self.outcome == "ok"


def classify_failure(url: str, exc: BaseException) -> ConnectionCheck:
    """Return the ConnectionCheck for the error EXC raised while opening URL (see OUTCOMES).

    The outcome is the error's `StoreError.kind` (`store_error_kind`: EXC's or its causes'), which the backends
    set from the driver's codes; an error without a kind is "error" with its first line.
    """
    shown = redact_url(url)
    secret = secret_kind(url) or "password"
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    kind = store_error_kind(exc)
    if kind == "not-mastra":
        return ConnectionCheck("not-mastra", f"Connected, but this is not a Mastra database: {detail}")
    if kind == "no-secret":
        return ConnectionCheck("no-secret", f"The server asks for a {secret} and none was given: type it below "
                                            f"(or set it in the environment / the system keyring). {shown}")
    if kind == "auth":
        return ConnectionCheck("auth", f"Wrong {secret}: the server refused the login to {shown}")
    if kind == "no-database":
        return ConnectionCheck("no-database", f"The server answered, but the database does not exist: {detail}")
    if kind == "unreachable":
        return ConnectionCheck("unreachable", f"The server is down or unreachable: {detail}")
    if kind == "login-refused":
        return ConnectionCheck("login-refused", f"The server refused this user (not a {secret} matter): {detail}")
    if kind == "too-many-connections":
        return ConnectionCheck("too-many-connections", f"The server answered but took no new connection: {detail}")
    return ConnectionCheck("error", detail if shown in detail else f"{shown}: {detail}")


def check_connection(url: str) -> ConnectionCheck:
    """Open URL read-only as the studio would, count its threads, close it; never raises for a store failure.

    Raises nothing but programming errors: every StoreError (unreachable, refused, not Mastra, not
    supported) becomes a ConnectionCheck. Takes at most the store's connect timeout when the server
    does not answer.
    """
    from studio.store import open_store

    try:
        store = open_store(url)
    except StoreError as exc:
        return classify_failure(url, exc)
    try:
        threads = len(store.list_threads())
        schema = store.location.schema
        noun_of = "database" if store.dialect == "mongodb" else "schema"
        where = f" ({noun_of} {schema})" if schema else ""
        noun = "thread" if threads == 1 else "threads"
        return ConnectionCheck("ok", f"Connected: a Mastra database with {threads:,} {noun}{where}.", threads)
    except StoreError as exc:
        return classify_failure(url, exc)
    finally:
        store.close()


__all__ = ["OUTCOMES", "ConnectionCheck", "check_connection", "classify_failure"]

"""Test a server target before opening it (File ▸ Connect… ▸ Test connection): one sentence and a thread count.

`check_connection(url)` opens the target read-only exactly as the studio will (same URL, same secret
lookup: `studio.store.credentials`), counts its threads, closes it, and sorts any failure into an
outcome the dialog can explain. It is bounded by the store's connect timeout (PostgreSQL: 10 s) and
statement timeout; the caller runs it off the GUI thread. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.errors import SchemaError, StoreError, cause_chain
from studio.store.credentials import secret_kind
from studio.store.target import redact_url

#: outcome → what the user should do about it (the sentence starts with what happened).
OUTCOMES = ("ok", "auth", "no-secret", "unreachable", "not-mastra", "no-database", "error")

# libpq's words, and the sentences `studio.store.backends.pg.describe_pg_error` makes of them
_AUTH = ("password authentication failed", "authentication failed", "401", "unauthorized", "forbidden",
         "invalid token", "jwt", "refused the password")
_NO_SECRET = ("no password supplied", "fe_sendauth", "requires authentication", "asks for a password")
_UNREACHABLE = ("connection refused", "nothing accepts connections", "is not known (check the url's host)",
                "could not connect", "timeout expired", "timed out",
                "name or service not known", "could not translate host name", "no route to host",
                "network is unreachable", "connection reset", "server closed the connection",
                "temporary failure in name resolution", "nodename nor servname", "down or unreachable")


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
    """Return the ConnectionCheck for the error EXC raised while opening URL (see OUTCOMES)."""
    shown = redact_url(url)
    kind = secret_kind(url) or "password"
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    causes = [detail.lower()] + [str(cause).lower() for cause in cause_chain(exc.__cause__, limit=4)]
    text = " ".join(causes)
    if isinstance(exc, SchemaError):
        return ConnectionCheck("not-mastra", f"Connected, but this is not a Mastra database: {detail}")
    if any(s in text for s in _NO_SECRET):
        return ConnectionCheck("no-secret", f"The server asks for a {kind} and none was given: type it below "
                                            f"(or set it in the environment / the system keyring). {shown}")
    if any(s in text for s in _AUTH):
        return ConnectionCheck("auth", f"Wrong {kind}: the server refused the login to {shown}")
    if ("does not exist" in text and "database" in text) or "has no database named" in text:
        return ConnectionCheck("no-database", f"The server answered, but the database does not exist: {detail}")
    if any(s in text for s in _UNREACHABLE):
        return ConnectionCheck("unreachable", f"The server is down or unreachable: {detail}")
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

"""Errors survive the helper process's pickle (studio/app/helper_process.py sends them back pickled).

Exception's default pickle rebuilds an error by calling its class with `args` alone: `WriteRefused(reason,
message)` keeps only the message in args and `OutcomeFoundAfterReconnect` has a keyword-only `written`,
so both raised TypeError on unpickling before StudioError.__reduce__."""

from __future__ import annotations

import pickle

import pytest

from studio.errors import (
    STORE_ERROR_KINDS,
    OutcomeFoundAfterReconnect,
    SchemaError,
    ServerUnreachable,
    StoreError,
    StudioError,
    UncountableMessage,
    WriteRefused,
    store_error_kind,
)

ERRORS = [
    StudioError("plain"),
    StoreError("no such file"),
    ServerUnreachable("the server went away", outcome="unknown", backup="/tmp/b.json"),
    OutcomeFoundAfterReconnect("found after reconnecting", written=True, backup="/tmp/b.json"),
    OutcomeFoundAfterReconnect("nothing there", written=False),
    WriteRefused("busy", "another process holds the write lock"),
    UncountableMessage("its attachment URL's file name has a bad % escape", "URIError: URI malformed",
                       message_id="m-1"),
    *(StoreError(f"Cannot connect: {kind}", kind=kind) for kind in sorted(STORE_ERROR_KINDS)),
    SchemaError("no Mastra tables"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: f"{type(e).__name__}-{e.kind or ''}"
                         if isinstance(e, StoreError) else type(e).__name__)
def test_an_error_comes_back_from_pickle_with_its_message_and_fields(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error) and back.args == error.args
    assert back.__dict__ == error.__dict__
    if isinstance(error, StoreError):   # the kind File ▸ Connect…, exit 6 and the password prompt sort by
        assert back.kind == error.kind and store_error_kind(back) == store_error_kind(error)


def test_the_kind_of_a_wrapped_error_is_its_cause_s():
    """A StoreError wrapping another (a write's around the connect's) is sorted by the first kind in its chain."""
    try:
        try:
            raise StoreError("Cannot connect to postgresql://u@h/db", kind="auth")
        except StoreError as inner:
            raise StoreError("Writing failed") from inner
    except StoreError as outer:
        assert outer.kind is None and store_error_kind(outer) == "auth"
    assert ServerUnreachable("gone").kind == "unreachable" and SchemaError("x").kind == "not-mastra"
    with pytest.raises(ValueError, match="unknown StoreError kind"):
        StoreError("x", kind="wrong-password")

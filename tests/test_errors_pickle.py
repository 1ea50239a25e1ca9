"""Errors survive the helper process's pickle (studio/app/helper_process.py sends them back pickled).

Exception's default pickle rebuilds an error by calling its class with `args` alone: `WriteRefused(reason,
message)` keeps only the message in args and `OutcomeFoundAfterReconnect` has a keyword-only `written`,
so both raised TypeError on unpickling before StudioError.__reduce__."""

from __future__ import annotations

import pickle

import pytest

from studio.errors import (
    OutcomeFoundAfterReconnect,
    ServerUnreachable,
    StoreError,
    StudioError,
    UncountableMessage,
    WriteRefused,
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
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_comes_back_from_pickle_with_its_message_and_fields(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error) and back.args == error.args
    assert back.__dict__ == error.__dict__

"""The studio's faces say a failed write's true outcome (issue 22): never "Nothing was written" for a committed one.

The outcomes are made on real servers under faults in tests/server/test_write_faults.py; here the studio is
handed each outcome as its write task reports it (the exception of `studio.errors`) and shows it.
"""

from __future__ import annotations

from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable, WriteRefused


def test_the_status_bar_says_written_unknown_or_nothing_written(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("history"), thread_id="hist-1")
    actions = window.history_actions
    cases = [
        (OutcomeFoundAfterReconnect("The connection dropped after COMMIT was sent; it IS written.", written=True,
                                    backup="/b.json"), "Written (found after reconnecting)"),
        (ServerUnreachable("The server could not be asked again: unknown.", outcome="unknown", backup="/b.json"),
         "Outcome unknown"),
        (ServerUnreachable("Cannot connect: nothing was written."), "Nothing was written (the server is unreachable)"),
        (WriteRefused("busy", "locked"), "Nothing was written"),
    ]
    for exc, heading in cases:
        actions.dialog = None
        actions._on_write_failed(exc)
        message = window.statusBar().currentMessage()
        assert message.startswith(heading), message
        if isinstance(exc, OutcomeFoundAfterReconnect) or getattr(exc, "outcome", "") == "unknown":
            assert "Nothing was written" not in message

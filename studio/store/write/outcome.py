"""What became of a server write whose COMMIT answer was lost: found by re-reading after reconnecting.

A write on PostgreSQL or a libSQL server ends in one of three ways, and every face says which:

* written: COMMIT answered; the row backup is kept and `memory-studio undo` restores it;
* not written: the write failed before COMMIT was sent, or the server refused the COMMIT; no backup is left;
* COMMIT was sent and the connection dropped before its answer: the outcome is unknown to the client
  until the server is asked again. `resolve_commit` reconnects (trying for up to `RESOLVE_WAIT_S`) and
  asks: the backend's `probe` returns "written", "not-written" or None (not decided yet: the server
  still runs the transaction, or cannot be reached). Decided, the write raises
  `OutcomeFoundAfterReconnect` (exit 5; backup kept when written, deleted when not); never decided
  (the server stays dead), it raises `ServerUnreachable(outcome="unknown")` (exit 6) and keeps the
  backup: `undo` later tells a write that happened from one that did not (`journal_outcome`).

`journal_outcome` is the probe by rows, what a libSQL server is asked (PostgreSQL asks `txid_status`
of the transaction first, exact, and falls back to rows): the rows the write changed, read again, are
compared with the journal's images before and after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable, StoreError

__all__ = ["RESOLVE_WAIT_S", "journal_outcome", "resolve_commit"]

#: How long (s) a write whose COMMIT answer was lost keeps trying to reach the server again to find out.
RESOLVE_WAIT_S = 15.0
#: Pause between two tries (s).
_RETRY_PAUSE_S = 0.5


def journal_outcome(journal: list[dict], current: Callable[[str, str], dict | None]) -> str | None:
    """Decide from rows whether the write of JOURNAL (`[{table, id, before, after}]`) is in the store.

    CURRENT(table, id) returns the row's image now (None: no such row), in the journal's form.
    Returns "written" when some row is as the write left it and none as it found it, "not-written"
    in the opposite case, None when undecided (no row tells the images apart, or another writer
    changed them since: rows of both kinds, or of neither).
    """
    after = before = 0
    for row in journal:
        now = current(row["table"], row["id"])
        if row["before"] == row["after"]:
            continue
        if now == row["after"]:
            after += 1
        elif now == row["before"]:
            before += 1
        else:
            return None
    if after and not before:
        return "written"
    if before and not after:
        return "not-written"
    return None


def resolve_commit(display: str, probe: Callable[[], str | None], *, backup: str | None) -> StoreError:
    """Return the error that reports a write whose COMMIT answer was lost, after finding out its outcome.

    PROBE() reconnects and answers "written", "not-written" or None (undecided); it may raise
    StoreError (the server is still unreachable). It is tried until decided or `RESOLVE_WAIT_S` ran
    out. BACKUP: the row backup saved before COMMIT (kept unless the write is found not written:
    the caller deletes it then). Returns OutcomeFoundAfterReconnect (written or not) or
    ServerUnreachable(outcome="unknown"); the caller raises it.
    """
    deadline = time.monotonic() + RESOLVE_WAIT_S
    last = ""
    while True:
        try:
            found = probe()
        except StoreError as exc:
            found, last = None, str(exc)
        if found == "written":
            undo = f" Its backup is kept ({backup}): `memory-studio undo` restores it." if backup else ""
            return OutcomeFoundAfterReconnect(
                f"The connection to {display} dropped after the write's COMMIT was sent; re-reading the server "
                f"after reconnecting found the write there: it IS written.{undo}", written=True, backup=backup)
        if found == "not-written":
            return OutcomeFoundAfterReconnect(
                f"The connection to {display} dropped after the write's COMMIT was sent; re-reading the server "
                "after reconnecting found nothing of it: nothing was written.", written=False)
        if time.monotonic() + _RETRY_PAUSE_S > deadline:
            break
        time.sleep(_RETRY_PAUSE_S)
    why = f" ({last})" if last else ""
    kept = (f" Its backup is kept ({backup}): `memory-studio undo` restores the write if it happened and says "
            "so if it did not.") if backup else ""
    return ServerUnreachable(
        f"The connection to {display} dropped after the write's COMMIT was sent, and the server could not be "
        f"asked again within {RESOLVE_WAIT_S:g} s{why}: whether the write happened is unknown.{kept}",
        outcome="unknown", backup=backup)

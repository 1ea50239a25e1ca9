"""The OM write protocol on the command line (`reflect`, `revert`): quiet period, wait, watch, repair.

Options added to each OM-writing command (see `add_protocol_arguments`):

    --quiet-period S   refuse while the record, its thread(s) or their messages were written by
                       another program less than S seconds ago (default 30; 0 = off); checked
                       before the model is called and again inside the write transaction
    --wait-idle S      wait up to S seconds for that quiet period instead of refusing at once
    --force            write although the agent is active (live busy flags still refuse)
    --watch S|auto     after the commit, watch the record S seconds for an overtaking write (auto:
                       two of the thread's longest recent turns + 5 s, 10 s to 10 min, and no
                       watch when the conversation had been quiet for longer than that window)
    --on-overtaken repair|revert|report
                       what to do when a running turn overtook the write: repair (a new
                       generation carrying the overtaking observations and cursor forward,
                       default), revert (a new generation with the agent's version), report only

The JSON document gets `"activity"` (the quiet check), `"overtaken"` (findings, see
`studio.store.write.protocol.OvertakingWrite.to_json`) and `"repairs"` (generations written to repair
them). Exit 3 when the agent is active and the wait ran out, or when an overtaking write is left
unrepaired (`report`, or a repair that was refused).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["add_protocol_arguments", "ProtocolOutcome", "preflight", "write_with_protocol", "watch_after_commit",
           "report_write"]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 or more seconds")
    return value


def _watch(text: str) -> float | str:
    return "auto" if text == "auto" else _seconds(text)


def add_protocol_arguments(p: argparse.ArgumentParser) -> None:
    """Add --quiet-period, --wait-idle, --force, --watch and --on-overtaken to the OM-writing command P."""
    from studio.store.write.protocol import DEFAULT_QUIET_MS

    p.add_argument("--quiet-period", type=_seconds, default=DEFAULT_QUIET_MS / 1000, metavar="SECONDS",
                   help="refuse while the conversation was written less than this long ago (default "
                        f"{DEFAULT_QUIET_MS // 1000}; 0 = off)")
    p.add_argument("--wait-idle", type=_seconds, default=0.0, metavar="SECONDS",
                   help="wait up to this long for the quiet period instead of refusing at once")
    p.add_argument("--force", action="store_true", help="write although the agent is active (busy flags still refuse)")
    p.add_argument("--watch", type=_watch, default="auto", metavar="SECONDS|auto",
                   help="after the commit, watch this long for a running turn overtaking it (default auto: "
                        "from the thread's stored turn timings)")
    p.add_argument("--on-overtaken", choices=["repair", "revert", "report"], default="repair",
                   help="when a turn overtook the write: write a repair generation (default), take the agent's "
                        "version, or only report it (exit 3)")


def _say(text: str) -> None:
    print(f"memory-studio: {text}", file=sys.stderr)


@dataclass
class ProtocolOutcome:
    """What the protocol did around one write: the quiet check, the watch, the repairs (JSON-ready)."""

    activity: dict | None = None
    watched_s: float = 0.0
    overtaken: list[dict] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    unrepaired: int = 0

    def to_json(self) -> dict:
        """The document's protocol fields."""
        return {"activity": self.activity, "watched_s": round(self.watched_s, 3), "overtaken": self.overtaken,
                "repairs": self.repairs}


def _activity_json(activity) -> dict | None:
    if activity is None:
        return None
    return {"active": activity.active, "last_write_ago_s": None if activity.ago_ms is None else activity.ago_ms / 1000,
            "quiet_period_s": activity.quiet_ms / 1000, "live_flags": list(activity.live_flags),
            "message": activity.message()}


def preflight(args, path: str, lookup_key: str, outcome: ProtocolOutcome) -> bool:
    """Check the quiet period before the model call (waiting up to --wait-idle); False when the write must not go on."""
    from studio.store.write.protocol import store_activity, wait_for_quiet

    quiet_ms = int(args.quiet_period * 1000)
    probe = lambda: store_activity(path, lookup_key, quiet_ms)  # noqa: E731
    activity = probe()
    if activity is None:
        return True
    if activity.active and not args.force and args.wait_idle > 0:
        _say(activity.message().replace("wait until it is quiet, or force the write",
                                        f"waiting up to {args.wait_idle:g} s"))
        activity = wait_for_quiet(probe, args.wait_idle)
    outcome.activity = _activity_json(activity)
    if activity.live_flags or (activity.active and not args.force and quiet_ms > 0):
        _say(activity.message() + " Nothing was written (use --wait-idle SECONDS to wait, --force to write anyway).")
        return False
    return True


def write_with_protocol(args, write: Callable[[int], dict]) -> dict:
    """Call WRITE(quiet_ms) (it re-checks the quiet period inside its transaction); retry within --wait-idle.

    Raises the last WriteRefused when the agent stays active.
    """
    import time

    from studio.store.writes import WriteRefused

    quiet_ms = 0 if args.force else int(args.quiet_period * 1000)
    deadline = time.monotonic() + args.wait_idle
    while True:
        try:
            return write(quiet_ms)
        except WriteRefused as exc:
            if exc.reason != "busy" or "agent is active" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))


def watch_after_commit(args, path: str, lookup_key: str, outcome: ProtocolOutcome,
                       sleep: Callable[[float], None] | None = None) -> None:
    """Watch LOOKUP_KEY after a commit for --watch seconds; repair or report what overtook it (fills OUTCOME)."""
    import time

    from studio.store.write.protocol import (
        find_overtaking_writes,
        history_reader,
        store_turn_ms,
        unrepaired,
        watch_window_ms,
    )
    from studio.engine.tokens import count_observations
    from studio.store.write.repair import repair_overtaken_writes
    from studio.store.writes import WriteRefused

    if args.watch == "auto":
        window_ms = watch_window_ms(store_turn_ms(path, lookup_key))
        before = outcome.activity or {}
        ago = before.get("last_write_ago_s")
        if ago is None or ago * 1000 > window_ms:
            window_ms = 0  # quiet for longer than a turn takes: nothing can still be in flight
    else:
        window_ms = int(args.watch * 1000)
    read = history_reader(path, lookup_key)
    started = time.monotonic()
    deadline = started + window_ms / 1000
    seen: set[str] = set()
    while True:
        found = unrepaired(find_overtaking_writes(read()))
        for f in found:
            if f.record_id + f.observations_hash not in seen:
                seen.add(f.record_id + f.observations_hash)
                outcome.overtaken.append(f.to_json())
                _say(f.describe())
        if found and args.on_overtaken != "report":
            try:
                row = repair_overtaken_writes(path, lookup_key=lookup_key, count_observations=count_observations,
                                              prefer="carry" if args.on_overtaken == "repair" else "revert")
            except WriteRefused as exc:
                _say(f"The repair was refused: {exc}")
                row = None
            if row is not None:
                outcome.repairs.append(row["id"])
                _say(f"Wrote generation {row['generationCount']} to repair it (record {row['id']}).")
                continue
        if time.monotonic() >= deadline:
            break
        (sleep or time.sleep)(min(0.5, max(0.0, deadline - time.monotonic())))
    outcome.watched_s = time.monotonic() - started
    outcome.unrepaired = len(unrepaired(find_overtaking_writes(read())))


def protocol_fields(outcome: ProtocolOutcome) -> dict[str, Any]:
    """Return OUTCOME's JSON fields for a command's document."""
    return outcome.to_json()


def report_write(args, doc: dict, outcome: ProtocolOutcome, summary: str) -> int:
    """Print a written command's result and return its exit code.

    --json prints DOC with the protocol's fields (`ProtocolOutcome.to_json`, added to DOC); otherwise
    the one-line SUMMARY and DOC["backup"] when there is one. Returns 0, or 3 (refused) when an
    overtaking write was left unrepaired.
    """
    from studio.cli import EXIT_OK, EXIT_REFUSED, _dump

    doc.update(outcome.to_json())
    if args.json:
        _dump(doc)
    else:
        print(summary + (f"; backup: {doc['backup']}" if doc["backup"] else ""))
    return EXIT_REFUSED if outcome.unrepaired else EXIT_OK

"""The OM write protocol on the command line (`reflect`, `revert`, `observe`, `activate`): its options and report.

The protocol itself is `studio.app.write_protocol` (the studio runs the same one); this module
adds its options to a command, checks the quiet period before the model is called, runs the write
through it with the terminal's answers (`studio.cli.interaction.TerminalInteraction`) and prints
what it did. Options added to each OM-writing command (see `add_protocol_arguments`):

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
`studio.store.write.protocol.OvertakingWrite.to_json`), `"repairs"` (generations written to repair
them) and `"watched_s"`. Exit 3 when the agent is active and the wait ran out, or when an
overtaking write is left unrepaired (`report`, or a repair that was refused).
"""

from __future__ import annotations

import argparse
from typing import Any

from studio.app.failures import EXIT_OK, EXIT_REFUSED, exit_code_for, say
from studio.app.write_protocol import (
    ProtocolOptions,
    ProtocolOutcome,
    WriteJob,
    activity_json,
    preflight,
    protocol_steps,
    refuses,
    run_steps,
)
from studio.cli.interaction import TerminalInteraction
from studio.cli.output import print_json

__all__ = [
    "add_protocol_arguments",
    "check_quiet",
    "positive_seconds",
    "protocol_options",
    "refused_document",
    "report_write",
    "write_refused",
    "write_through_protocol",
]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 or more seconds")
    return value


def positive_seconds(text: str) -> float:
    """Parse a `--timeout` value: a number of seconds above 0 (argparse's type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
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


def protocol_options(args) -> ProtocolOptions:
    """Return the write protocol's options of a command's ARGS (seconds turned into ms)."""
    return ProtocolOptions(quiet_ms=int(args.quiet_period * 1000), force=args.force, wait_s=args.wait_idle,
                           watch_ms=None if args.watch == "auto" else int(args.watch * 1000))


def check_quiet(args, lookup_key: str, outcome: ProtocolOutcome, *, in_place: bool = False):
    """Check the quiet period before the model is called (waiting up to --wait-idle); IN_PLACE: an observe or
    activate (refused first on a store it is not built for).

    Returns the AgentActivity read (None: no record), or False when the write must not go on (said
    on stderr). OUTCOME gets the activity.
    """
    options = protocol_options(args)

    def waiting(activity) -> None:
        say(activity.message().replace("wait until it is quiet, or force the write",
                                       f"waiting up to {args.wait_idle:g} s"))

    activity = preflight(args.path, lookup_key, options, on_wait=waiting, in_place=in_place)
    outcome.activity = activity_json(activity)
    if refuses(activity, options):
        say(activity.message() + " Nothing was written (use --wait-idle SECONDS to wait, --force to write anyway).")
        return False
    return activity


def write_through_protocol(args, job: WriteJob, outcome: ProtocolOutcome, activity=None) -> Any:
    """Run JOB's write through the OM write protocol with ARGS' options; return what the write returned.

    ACTIVITY: `check_quiet`'s. Raises the write's WriteRefused (nothing written) when it stays refused.
    """
    interaction = TerminalInteraction(assume_yes=True, on_overtaken=args.on_overtaken)
    return run_steps(protocol_steps(job, protocol_options(args), interaction, outcome, activity=activity or None),
                     job)


def report_write(args, doc: dict, outcome: ProtocolOutcome, summary: str) -> int:
    """Print a written command's result and return its exit code.

    --json prints DOC with the protocol's fields (`ProtocolOutcome.to_json`, added to DOC); otherwise
    the one-line SUMMARY and DOC["backup"] when there is one. Returns 0, or 3 (refused) when an
    overtaking write was left unrepaired.
    """
    doc.update(outcome.to_json())
    if args.json:
        print_json(doc)
    else:
        print(summary + (f"; backup: {doc['backup']}" if doc["backup"] else ""))
    return EXIT_REFUSED if outcome.unrepaired else EXIT_OK


def write_refused(exc) -> int:
    """Say why a write was refused (WriteRefused: nothing written) and return its exit code (2 or 3)."""
    say(str(exc))
    return exit_code_for(exc)


def refused_document(args, outcome: ProtocolOutcome, doc: dict) -> int:
    """Print DOC with the protocol's fields (--json) for a write that did not happen; return exit 3."""
    doc.update(outcome.to_json())
    if args.json:
        print_json(doc)
    return EXIT_REFUSED


def atomicity(path: str) -> tuple[bool, str]:
    """(atomic, the sentence to add to a confirmation: "" when atomic) of a write to PATH; the sentence is also
    said on stderr, so a --yes write tells it too (`studio.store.write.transaction.atomicity_note`)."""
    from studio.store.write.transaction import atomicity_note

    note = atomicity_note(path)
    if note:
        say(note)
    return note is None, f" {note}" if note else ""

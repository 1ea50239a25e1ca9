"""`memory-studio reflect` and `memory-studio revert`: a manual reflection, previewed, confirmed, undoable.

    memory-studio reflect PATH --thread ID [--model PROVIDER/MODEL] [--base-url URL]
                          [--strategy llm|rule-based] [--timeout S] [--dry-run] [--yes] [--json]
    memory-studio revert  PATH --thread ID --to-generation N [--yes] [--json]

`reflect` reads the thread's OM record read-only, proposes a new generation (the Reflector against a
model, studio.engine.reflector; or the offline condenser), and writes it only after a yes: `--yes`,
or an answer on a terminal (without a terminal and without --yes it refuses). The write is
`studio.app.reflection.commit` (`studio.store.writes.commit_reflection`: one transaction, refused
when the generation changed since the preview or a live process is reflecting), after a backup of
the file (`WriteSession`); the studio's Reflect now… and Revert write the same way. The model
defaults to the Reflector model stored in the record's config when it names a provider we support.
`--json` prints:

    {"reflected", "dry_run", "thread_id", "lookup_key", "from_generation", "record_id",
     "generation_count", "input_tokens", "observation_token_count", "reflection_threshold",
     "attempts": [{"level", "tokens", "degenerate", "empty"}], "diff": {"kept", "added", "removed"},
     "observations", + "strategy", "model", "from_record_id", "reached_target", "current_task",
     "suggested_response", "high_priority_losses", "usage", "notes", "backup"}

(`record_id` is the written row's id, null when nothing was written; `generation_count` the new
generation's number, proposed or written; tokens are Mastra's estimate.) `revert` writes
generation latest+1 holding generation N's observations (history stays append-only) and prints
{"reverted", "thread_id", "lookup_key", "from_generation", "to_generation", "record_id",
"generation_count", "observation_token_count", "diff", "observations", "backup"}.

Both follow the OM write protocol (studio.cli.write_options: --quiet-period, --wait-idle, --force,
--watch, --on-overtaken; the document gains "activity", "watched_s", "overtaken", "repairs").

Exit codes (studio.app.failures): 0 written (or previewed with --dry-run); 1 unexpected failure
(provider error, degenerate or empty answers); 2 bad input (missing file or thread, no OM record,
unknown provider, missing key, no --yes without a terminal); 3 refused (busy, locked, changed since
read, nothing to condense: the proposal is the current generation unchanged, the agent is active, an
overtaking write left unrepaired, declined at the prompt); 4 I/O (disk full, read-only); 5 the
connection dropped after COMMIT was sent and a re-read after reconnecting found the outcome (JSON
`outcome`: "written" or "not-written"); 6 dead server (JSON `outcome`: "not-written" or "unknown").
Except for 0, 5 "written" and an unrepaired overtaking write, the database is unchanged.
"""

from __future__ import annotations

import sys

from studio.app.failures import EXIT_FAILURE, EXIT_OK, EXIT_REFUSED, BadInput, say
from studio.cli import add_write_arguments
from studio.cli import interaction as tty
from studio.cli.interaction import TerminalInteraction, run_cancellable, stdout_to_stderr
from studio.cli.output import print_json
from studio.cli.write_options import (
    add_protocol_arguments,
    atomicity,
    check_quiet,
    positive_seconds,
    refused_document,
    report_write,
    write_refused,
    write_through_protocol,
)
from studio.errors import StoreError, StudioError

__all__ = ["add_reflect_command", "add_revert_command"]


def _confirm_generation(stale: str | None, question: str) -> bool:
    """Ask STALE (clear a stale isReflecting), when given, then QUESTION on the terminal; a no says so (False)."""
    terminal = TerminalInteraction()
    if (stale is None or terminal.confirm("Clear isReflecting?", stale)) and terminal.confirm("Write", question):
        return True
    say("Nothing was written.")
    return False


def _progress_printer(enabled: bool):
    if not enabled:
        return None

    def show(p) -> None:
        print(f"  {p.message}", file=sys.stderr)
    return show


# -- reflect ------------------------------------------------------------------------------------

def _print_summary(doc: dict) -> None:
    verb = "Wrote" if doc["reflected"] else "Proposed"
    print(f"{verb} generation {doc['generation_count']} of {doc['lookup_key']} "
          f"(from generation {doc['from_generation']}, {doc['strategy']}"
          f"{', ' + doc['model'] if doc['model'] else ''})")
    print(f"  tokens: {doc['input_tokens']:,} -> {doc['observation_token_count']:,} "
          f"(reflection threshold {doc['reflection_threshold']:,}"
          f"{'' if doc['reached_target'] else ', NOT below it'})")
    print("  attempts: " + ", ".join(
        f"level {a['level']}: {a['tokens']:,}{' degenerate' if a['degenerate'] else ''}{' empty' if a['empty'] else ''}"
        for a in doc["attempts"]))
    d = doc["diff"]
    print(f"  lines: {d['kept']} kept, {d['added']} added, {d['removed']} removed")
    if doc["high_priority_losses"]:
        print(f"  🔴 lines lost ({len(doc['high_priority_losses'])}):")
        for text in doc["high_priority_losses"]:
            print(f"    {text}")
    for note in doc["notes"]:
        print(f"  note: {note}")
    if doc["backup"]:
        print(f"  backup: {doc['backup']}")
    print()
    print(doc["observations"])


def _run_reflect(args) -> int:
    from studio.app.reflection import (
        PreviewRequest,
        commit,
        load_input,
        make_client,
        propose,
        reflect_document,
        still_current,
    )
    from studio.app.write_protocol import ProtocolOutcome, WriteJob
    from studio.engine.reflector import (
        ReflectionInputError,
        ReflectionRejected,
        nothing_to_condense,
        proposal_changes_nothing,
    )
    from studio.llm.errors import ProviderConfigError
    from studio.store import writes

    if args.strategy == "rule-based" and (args.model or args.base_url):
        raise BadInput("--model and --base-url apply to --strategy llm only")
    try:
        inp = load_input(args.path, args.thread)
    except ReflectionInputError as exc:
        raise BadInput(str(exc)) from exc
    client = None
    model = None
    if args.strategy == "llm":
        model = args.model or inp.default_model
        if not model:
            raise BadInput("No model: the record's config names none we can call. Pass --model PROVIDER/MODEL "
                           "(e.g. openai/gpt-4o-mini, ollama/llama3.1 --base-url ...) or --strategy rule-based")
        try:
            client = make_client(model, args.base_url, args.timeout)
        except ProviderConfigError as exc:
            raise BadInput(str(exc)) from exc
    if inp.reflecting == "live":
        say(f"Another process is reflecting {inp.lookup_key} right now; nothing was done. Try again later.")
        return EXIT_REFUSED
    outcome = ProtocolOutcome()
    activity = None
    if not args.dry_run:
        activity = check_quiet(args, inp.lookup_key, outcome)
        if activity is False:
            return refused_document(args, outcome, {"reflected": False, "refused": "agent-active"})
    request = PreviewRequest(args.path, args.thread, args.strategy, model, args.base_url, inp.lookup_key, args.timeout)
    try:
        p = run_cancellable(lambda cancel: propose(request, inp, client,
                                                   _progress_printer(not args.json and tty.is_terminal()), cancel))
    except ReflectionRejected as exc:
        say(f"{exc}.")
        return EXIT_FAILURE
    except ReflectionInputError as exc:
        raise BadInput(str(exc)) from exc
    if p is None:
        return EXIT_FAILURE
    unchanged = proposal_changes_nothing(inp, p.result)

    if args.dry_run:
        doc = reflect_document(p, dry_run=True, written=None)
        doc["unchanged"] = unchanged
        if args.json:
            print_json(doc)
        else:
            _print_summary(doc)
            say(f"Dry run: {nothing_to_condense(p.result.strategy)} (reflect would write nothing either)." if unchanged
                else "Dry run: nothing was written (without --dry-run, reflect writes this generation after asking).")
        return EXIT_OK
    if unchanged:  # a copy of the current generation is not written, nor backed up for
        if args.json:
            print_json({**reflect_document(p, dry_run=False, written=None), "refused": "unchanged", "unchanged": True})
        say(f"{nothing_to_condense(p.result.strategy)}.")
        return EXIT_REFUSED

    clear_stale = inp.reflecting == "stale"
    atomic, note = atomicity(args.path)
    if not args.yes:
        if not tty.is_terminal():
            raise BadInput("reflect writes a new generation: add --yes to confirm (not a terminal), "
                           "or --dry-run to preview")
        with stdout_to_stderr():
            _print_summary(reflect_document(p, dry_run=True, written=None))
        if not _confirm_generation("isReflecting is set but looks stale (left by a process that stopped). Clear it?"
                                   if clear_stale else None,
                                   f"Write generation {inp.generation_count + 1} to {inp.path}?{note}"):
            return EXIT_REFUSED

    try:
        if not still_current(args.path, inp.lookup_key, inp.record_id):
            say(f"The latest generation of {inp.lookup_key} changed since it was read; nothing was written.")
            return EXIT_REFUSED
        session = writes.WriteSession(full_backup=args.full_backup)
        job = WriteJob(args.path, inp.lookup_key, session=session, write=lambda quiet_ms: commit(
            p, clear_stale_reflecting=clear_stale, session=session, quiet_ms=quiet_ms, via="cli"))
        written = write_through_protocol(args, job, outcome, activity)
    except writes.WriteRefused as exc:
        return write_refused(exc)
    doc = reflect_document(p, dry_run=False, written=written.result, backup=session.backup_for(args.path))
    doc.update(outcome.to_json())
    doc["atomic"] = atomic
    print_json(doc) if args.json else _print_summary(doc)
    return EXIT_REFUSED if outcome.unrepaired else EXIT_OK


def _guard(run):
    """Turn the errors of one subcommand into exit codes (provider and engine failures exit 1)."""
    def wrapped(args) -> int:
        try:
            return run(args)
        except (BadInput, StoreError):
            raise  # studio.cli.main reports it: exit 2 (WriteRefused is handled where it is raised)
        except StudioError as exc:
            say(str(exc))
            return EXIT_FAILURE
    return wrapped


def add_reflect_command(subparsers) -> None:
    """Register `reflect PATH --thread ID [--model M] [--base-url URL] [--strategy S] [--dry-run] [--yes] [--json]`."""
    p = subparsers.add_parser("reflect", help="propose a new OM generation (Reflector or offline) and write it after "
                                              "confirmation")
    add_write_arguments(p, help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread whose OM record to reflect")
    p.add_argument("--model", metavar="PROVIDER/MODEL",
                   help="e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, google/gemini-2.5-flash, "
                        "ollama/llama3.1 (default: the Reflector model in the record's config)")
    p.add_argument("--base-url", metavar="URL", help="the provider's base URL (local servers, proxies, "
                                                      "openai-compatible/<model>)")
    p.add_argument("--strategy", choices=["llm", "rule-based"], default="llm",
                   help="llm: Mastra's Reflector against the model (default); rule-based: offline, no model")
    p.add_argument("--timeout", type=positive_seconds, default=300.0, metavar="SECONDS",
                   help="longest wait for one model answer (default %(default)g)")
    p.add_argument("--dry-run", action="store_true", help="show the proposal; write nothing")
    add_protocol_arguments(p)
    p.set_defaults(run=_guard(_run_reflect))


# -- revert -------------------------------------------------------------------------------------

def _run_revert(args) -> int:
    from studio.app.reflection import plan_revert, revert, revert_document
    from studio.app.write_protocol import ProtocolOutcome, WriteJob
    from studio.store import writes

    if args.to_generation < 0:
        raise BadInput("--to-generation must be 0 or more")
    plan = plan_revert(args.path, args.thread, args.to_generation)
    key = plan.lookup_key
    if plan.reflecting == "live":
        say(f"Another process is reflecting {key} right now; nothing was done. Try again later.")
        return EXIT_REFUSED
    clear_stale = plan.reflecting == "stale"
    outcome = ProtocolOutcome()
    activity = check_quiet(args, key, outcome)
    if activity is False:
        return refused_document(args, outcome, {"reflected": False, "refused": "agent-active"})
    atomic, note = atomicity(args.path)
    if not args.yes:
        if not tty.is_terminal():
            raise BadInput("revert writes a new generation: add --yes to confirm (not a terminal)")
        preview = revert_document(plan, written=None)
        say(f"Generation {preview['generation_count']} would restore generation {args.to_generation}'s "
            f"{preview['observation_token_count']:,} tokens (lines: {preview['diff']['kept']} kept, "
            f"{preview['diff']['added']} added, {preview['diff']['removed']} removed).")
        if not _confirm_generation("isReflecting is set but looks stale. Clear it?" if clear_stale else None,
                                   f"Write generation {preview['generation_count']} to {args.path}?{note}"):
            return EXIT_REFUSED
    try:
        session = writes.WriteSession(full_backup=args.full_backup)
        job = WriteJob(args.path, key, session=session, write=lambda quiet_ms: revert(
            args.path, lookup_key=key, generation_count=args.to_generation, expected_record_id=plan.current.id,
            session=session, quiet_ms=quiet_ms, clear_stale_reflecting=clear_stale))
        written = write_through_protocol(args, job, outcome, activity)
    except writes.WriteRefused as exc:
        return write_refused(exc)
    doc = revert_document(plan, written=written.result, backup=session.backup_for(args.path))
    doc["atomic"] = atomic
    return report_write(args, doc, outcome, f"Wrote generation {doc['generation_count']} of {key}: generation "
                                            f"{args.to_generation}'s log ({doc['observation_token_count']:,} tokens)")


def add_revert_command(subparsers) -> None:
    """Register `revert PATH --thread ID --to-generation N [--yes] [--json]`."""
    p = subparsers.add_parser("revert", help="undo: write a new generation restoring generation N's observations")
    add_write_arguments(p, help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread whose OM record to revert")
    p.add_argument("--to-generation", required=True, type=int, metavar="N", help="the generation to restore")
    add_protocol_arguments(p)
    p.set_defaults(run=_guard(_run_revert))

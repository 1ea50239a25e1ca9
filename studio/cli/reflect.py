"""`memory-studio reflect` and `memory-studio revert`: a manual reflection, previewed, confirmed, undoable.

    memory-studio reflect PATH --thread ID [--model PROVIDER/MODEL] [--base-url URL]
                          [--strategy llm|rule-based] [--timeout S] [--dry-run] [--yes] [--json]
    memory-studio revert  PATH --thread ID --to-generation N [--yes] [--json]

`reflect` reads the thread's OM record read-only, proposes a new generation (the Reflector
against a model, studio.engine.reflector; or the offline condenser), and writes it only after a
yes: `--yes`, or an answer on a terminal (without a terminal and without --yes it refuses). The
write is `studio.store.writes.commit_reflection` (one transaction, refused when the generation
changed since the preview or a live process is reflecting), after a backup of the file
(`WriteSession`). The model defaults to the Reflector model stored in the record's config when it
names a provider we support. `--json` prints:

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

Exit codes (studio.cli): 0 written (or previewed with --dry-run); 1 unexpected failure (provider
error, degenerate or empty answers); 2 bad input (missing file or thread, no OM record, unknown
provider, missing key, no --yes without a terminal); 3 refused (busy, locked, changed since read,
nothing to condense: the proposal is the current generation unchanged, the agent is active, an overtaking write left unrepaired, declined at the prompt); 4 I/O (disk
full, read-only). Except for 0 and an unrepaired overtaking write, the database is unchanged.
"""

from __future__ import annotations

import sys

from studio.cli import EXIT_FAILURE, EXIT_OK, EXIT_REFUSED, JSON_HELP, BadInput, _dump, exit_code_for
from studio.cli.write_options import (
    ProtocolOutcome,
    add_protocol_arguments,
    preflight,
    report_write,
    watch_after_commit,
    write_with_protocol,
)
from studio.errors import StoreError, StudioError

__all__ = ["add_reflect_command", "add_revert_command", "reflect_document", "revert_document"]


def _say(text: str) -> None:
    print(f"memory-studio: {text}", file=sys.stderr)


def _is_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _confirm(question: str) -> bool:
    """Ask QUESTION on the terminal; True only for an explicit yes."""
    try:
        sys.stderr.write(f"{question} [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline()
    except (EOFError, OSError):
        return False
    return answer.strip().lower() in ("y", "yes")


def _write_refused(exc) -> int:
    _say(str(exc))
    return exit_code_for(exc)


def _current_record_id(path: str, lookup_key: str) -> str | None:
    from studio.store.memory_store import MemoryStore

    with MemoryStore.open(path) as store, store.snapshot():
        record = store.om_current(lookup_key)
        return record.id if record is not None else None


def _progress_printer(enabled: bool):
    if not enabled:
        return None

    def show(p) -> None:
        print(f"  {p.message}", file=sys.stderr)
    return show


def _run_cancellable(run):
    """Return RUN(cancel) (a proposal: model calls or offline work), or None when it was cancelled.

    Ctrl+C sets the CancelToken (a model request in flight is aborted) and is raised again; a
    cancelled proposal says "Cancelled; nothing was written." (the command then exits 1).
    """
    from studio.common.cancel import Cancelled, CancelToken

    cancel = CancelToken()
    try:
        return run(cancel)
    except KeyboardInterrupt:
        cancel.cancel()
        raise
    except Cancelled:
        _say("Cancelled; nothing was written.")
        return None


# -- reflect ------------------------------------------------------------------------------------

def reflect_document(inp, result, *, dry_run: bool, written: dict | None, backup=None) -> dict:
    """Return the `reflect --json` document for a proposal RESULT of INP (WRITTEN: the new row, or None)."""
    from studio.engine.reflector import proposal_diff

    diff = proposal_diff(inp, result)
    return {
        "reflected": written is not None,
        "dry_run": dry_run,
        "thread_id": inp.thread_id,
        "lookup_key": inp.lookup_key,
        "from_generation": inp.generation_count,
        "record_id": written["id"] if written else None,
        "generation_count": int(written["generationCount"]) if written else inp.generation_count + 1,
        "input_tokens": inp.input_tokens,
        "observation_token_count": int(written["observationTokenCount"]) if written else result.observation_token_count,
        "reflection_threshold": inp.reflection_threshold,
        "attempts": [a.to_json() for a in result.attempts],
        "diff": {"kept": diff.kept, "added": diff.added, "removed": diff.removed},
        "observations": result.observations,
        "strategy": result.strategy,
        "model": result.model,
        "from_record_id": inp.record_id,
        "reached_target": result.reached_target,
        "current_task": result.current_task,
        "suggested_response": result.suggested_response,
        "high_priority_losses": [r.text for r in diff.high_priority_losses],
        "usage": result.usage.to_json(),
        "notes": list(result.notes),
        "backup": str(backup) if backup is not None else None,
    }


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
    from studio.engine.reflector import (
        ReflectionInputError,
        ReflectionRejected,
        load_reflection_input,
        nothing_to_condense,
        proposal_changes_nothing,
        run_reflection,
    )
    from studio.llm.client import LLMClient, Timeouts
    from studio.llm.errors import ProviderConfigError
    from studio.store import writes

    if args.strategy == "rule-based" and (args.model or args.base_url):
        raise BadInput("--model and --base-url apply to --strategy llm only")
    try:
        inp = load_reflection_input(args.path, thread_id=args.thread)
    except ReflectionInputError as exc:
        raise BadInput(str(exc)) from exc
    client = None
    if args.strategy == "llm":
        model = args.model or inp.default_model
        if not model:
            raise BadInput("No model: the record's config names none we can call. Pass --model PROVIDER/MODEL "
                           "(e.g. openai/gpt-4o-mini, ollama/llama3.1 --base-url ...) or --strategy rule-based")
        try:
            client = LLMClient.for_model(model, base_url=args.base_url,
                                         timeouts=Timeouts(read_s=args.timeout, write_s=min(60.0, args.timeout)))
        except ProviderConfigError as exc:
            raise BadInput(str(exc)) from exc
    if inp.reflecting == "live":
        _say(f"Another process is reflecting {inp.lookup_key} right now; nothing was done. Try again later.")
        return EXIT_REFUSED
    outcome = ProtocolOutcome()
    if not args.dry_run and not preflight(args, args.path, inp.lookup_key, outcome):
        return _refused_document(args, outcome)
    try:
        result = _run_cancellable(lambda cancel: run_reflection(
            inp, strategy=args.strategy, client=client, cancel=cancel,
            progress=_progress_printer(not args.json and _is_terminal())))
    except ReflectionRejected as exc:
        _say(f"{exc}.")
        return EXIT_FAILURE
    except ReflectionInputError as exc:
        raise BadInput(str(exc)) from exc
    if result is None:
        return EXIT_FAILURE
    unchanged = proposal_changes_nothing(inp, result)

    if args.dry_run:
        doc = reflect_document(inp, result, dry_run=True, written=None)
        doc["unchanged"] = unchanged
        if args.json:
            _dump(doc)
        else:
            _print_summary(doc)
            _say(f"Dry run: {nothing_to_condense(result.strategy)} (reflect would write nothing either)." if unchanged
                 else "Dry run: nothing was written (without --dry-run, reflect writes this generation after asking).")
        return EXIT_OK
    if unchanged:  # a copy of the current generation is not written, nor backed up for
        if args.json:
            _dump({**reflect_document(inp, result, dry_run=False, written=None), "refused": "unchanged",
                   "unchanged": True})
        _say(f"{nothing_to_condense(result.strategy)}.")
        return EXIT_REFUSED

    clear_stale = False
    if not args.yes:
        if not _is_terminal():
            raise BadInput("reflect writes a new generation: add --yes to confirm (not a terminal), "
                           "or --dry-run to preview")
        preview = reflect_document(inp, result, dry_run=True, written=None)
        with _stdout_to_stderr():
            _print_summary(preview)
        if inp.reflecting == "stale" and not _confirm(
                "isReflecting is set but looks stale (left by a process that stopped). Clear it?"):
            _say("Nothing was written.")
            return EXIT_REFUSED
        if not _confirm(f"Write generation {inp.generation_count + 1} to {inp.path}?"):
            _say("Nothing was written.")
            return EXIT_REFUSED
        clear_stale = inp.reflecting == "stale"
    else:
        clear_stale = inp.reflecting == "stale"

    try:
        if _current_record_id(args.path, inp.lookup_key) != inp.record_id:
            _say(f"The latest generation of {inp.lookup_key} changed since it was read; nothing was written.")
            return EXIT_REFUSED
        session = writes.WriteSession()
        row = write_with_protocol(args, lambda quiet_ms: session.commit_reflection(
            args.path, lookup_key=inp.lookup_key, expected_record_id=inp.record_id,
            expected_active_observations=inp.observations, observations=result.observations,
            observation_tokens=result.observation_token_count,
            current_task=result.current_task, suggested_response=result.suggested_response,
            thread_id=inp.thread_id, clear_stale_reflecting=clear_stale, idle_ms=quiet_ms,
            studio_metadata={"kind": "reflection", "strategy": result.strategy, "model": result.model,
                             "via": "cli"}))
    except writes.WriteRefused as exc:
        return _write_refused(exc)
    watch_after_commit(args, args.path, inp.lookup_key, outcome)
    doc = reflect_document(inp, result, dry_run=False, written=row, backup=session.backup_for(args.path))
    doc.update(outcome.to_json())
    _dump(doc) if args.json else _print_summary(doc)
    return EXIT_REFUSED if outcome.unrepaired else EXIT_OK


def _refused_document(args, outcome: ProtocolOutcome) -> int:
    """Print the --json document of a write refused by the quiet check; return exit 3."""
    if getattr(args, "json", False):
        _dump({"reflected": False, "refused": "agent-active", **outcome.to_json()})
    return EXIT_REFUSED


class _stdout_to_stderr:
    """Send print() output to stderr for a while (the preview shown before a terminal question)."""

    def __enter__(self):
        self._saved, sys.stdout = sys.stdout, sys.stderr

    def __exit__(self, *exc):
        sys.stdout = self._saved


def _guard(run):
    """Turn the errors of one subcommand into exit codes (provider and engine failures exit 1)."""
    def wrapped(args) -> int:
        try:
            return run(args)
        except (BadInput, StoreError):
            raise  # cli.main: exit 2 (WriteRefused is handled where it is raised)
        except StudioError as exc:
            _say(str(exc))
            return EXIT_FAILURE
    return wrapped


def _positive_seconds(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def add_reflect_command(subparsers) -> None:
    """Register `reflect PATH --thread ID [--model M] [--base-url URL] [--strategy S] [--dry-run] [--yes] [--json]`."""
    p = subparsers.add_parser("reflect", help="propose a new OM generation (Reflector or offline) and write it after "
                                              "confirmation")
    p.add_argument("path", help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread whose OM record to reflect")
    p.add_argument("--model", metavar="PROVIDER/MODEL",
                   help="e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, google/gemini-2.5-flash, ollama/llama3.1 "
                        "(default: the Reflector model in the record's config)")
    p.add_argument("--base-url", metavar="URL", help="the provider's base URL (local servers, proxies, "
                                                      "openai-compatible/<model>)")
    p.add_argument("--strategy", choices=["llm", "rule-based"], default="llm",
                   help="llm: Mastra's Reflector against the model (default); rule-based: offline, no model")
    p.add_argument("--timeout", type=_positive_seconds, default=300.0, metavar="SECONDS",
                   help="longest wait for one model answer (default %(default)g)")
    p.add_argument("--dry-run", action="store_true", help="show the proposal; write nothing")
    p.add_argument("--yes", action="store_true", help="write without asking")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    add_protocol_arguments(p)
    p.set_defaults(run=_guard(_run_reflect))


# -- revert -------------------------------------------------------------------------------------

def revert_document(*, thread_id, lookup_key, current, target, written: dict | None, backup=None) -> dict:
    """Return the `revert --json` document (CURRENT / TARGET: OMRecords; WRITTEN: the new row or None)."""
    from studio.engine.diff import diff_logs
    from studio.engine.tokens import count_observations

    tokens = int(written["observationTokenCount"]) if written else count_observations(target.active_observations)
    diff = diff_logs(current.active_observations, target.active_observations, current.observation_token_count, tokens)
    return {
        "reverted": written is not None, "thread_id": thread_id, "lookup_key": lookup_key,
        "from_generation": current.generation_count, "to_generation": target.generation_count,
        "record_id": written["id"] if written else None,
        "generation_count": int(written["generationCount"]) if written else current.generation_count + 1,
        "observation_token_count": tokens,
        "diff": {"kept": diff.kept, "added": diff.added, "removed": diff.removed},
        "observations": target.active_observations,
        "backup": str(backup) if backup is not None else None,
    }


def _run_revert(args) -> int:
    from studio.engine.status import flag_states
    from studio.engine.tokens import count_observations
    from studio.store import writes
    from studio.store.memory_store import MemoryStore

    if args.to_generation < 0:
        raise BadInput("--to-generation must be 0 or more")
    with MemoryStore.open(args.path) as store, store.snapshot():
        thread = store.get_thread(args.thread)
        if thread is None:
            raise BadInput(f"No thread {args.thread!r} in {store.location.display}")
        key = store.lookup_key_for_thread(thread)
        history = store.om_history(key) if key else []
    if not history:
        raise BadInput(f"Thread {args.thread!r} has no observational memory")
    current = history[0]
    target = next((h for h in history if h.generation_count == args.to_generation), None)
    if target is None:
        raise BadInput(f"{key} has no generation {args.to_generation} "
                       f"(generations: {', '.join(str(h.generation_count) for h in reversed(history))})")
    if target.id == current.id:
        raise BadInput(f"Generation {args.to_generation} is already the current one of {key}")
    flag = next((f for f in flag_states(current) if f.name == "isReflecting" and f.set), None)
    if flag is not None and not flag.stale:
        _say(f"Another process is reflecting {key} right now; nothing was done. Try again later.")
        return EXIT_REFUSED
    clear_stale = flag is not None
    outcome = ProtocolOutcome()
    if not preflight(args, args.path, key, outcome):
        return _refused_document(args, outcome)
    if not args.yes:
        if not _is_terminal():
            raise BadInput("revert writes a new generation: add --yes to confirm (not a terminal)")
        preview = revert_document(thread_id=args.thread, lookup_key=key, current=current, target=target, written=None)
        _say(f"Generation {preview['generation_count']} would restore generation {args.to_generation}'s "
             f"{preview['observation_token_count']:,} tokens (lines: {preview['diff']['kept']} kept, "
             f"{preview['diff']['added']} added, {preview['diff']['removed']} removed).")
        if clear_stale and not _confirm("isReflecting is set but looks stale. Clear it?"):
            _say("Nothing was written.")
            return EXIT_REFUSED
        if not _confirm(f"Write generation {preview['generation_count']} to {args.path}?"):
            _say("Nothing was written.")
            return EXIT_REFUSED
    try:
        session = writes.WriteSession()
        row = write_with_protocol(args, lambda quiet_ms: session.revert_to_generation(
            args.path, lookup_key=key, generation_count=args.to_generation, expected_record_id=current.id,
            count_observations=count_observations, clear_stale_reflecting=clear_stale, idle_ms=quiet_ms))
    except writes.WriteRefused as exc:
        return _write_refused(exc)
    watch_after_commit(args, args.path, key, outcome)
    doc = revert_document(thread_id=args.thread, lookup_key=key, current=current, target=target, written=row,
                          backup=session.backup_for(args.path))
    return report_write(args, doc, outcome, f"Wrote generation {doc['generation_count']} of {key}: generation "
                                            f"{args.to_generation}'s log ({doc['observation_token_count']:,} tokens)")


def add_revert_command(subparsers) -> None:
    """Register `revert PATH --thread ID --to-generation N [--yes] [--json]`."""
    p = subparsers.add_parser("revert", help="undo: write a new generation restoring generation N's observations")
    p.add_argument("path", help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread whose OM record to revert")
    p.add_argument("--to-generation", required=True, type=int, metavar="N", help="the generation to restore")
    p.add_argument("--yes", action="store_true", help="write without asking")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    add_protocol_arguments(p)
    p.set_defaults(run=_guard(_run_revert))

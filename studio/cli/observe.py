"""`memory-studio activate` and `memory-studio observe`: Mastra's observation writes, by hand.

`activate PATH --thread ID [--dry-run] [--yes] [--json]` moves the record's buffered observation
chunks into the active log exactly as Mastra's activate() does at the threshold (no model call;
thread and resource scope); --dry-run shows what would move (studio.store.write.activation.
activation_plan) and writes nothing, not even a backup.
`observe PATH --thread ID [--model PROVIDER/MODEL | --strategy rule-based | --answer-file FILE]
[--base-url URL] [--timeout S] [--below-threshold] [--dry-run] [--yes] [--json]` runs the Observer
(studio.engine.observer: a model, default the record's stored Observer model; the offline
rule-based Observer, thread scope; or a given answer: `<observations>` and optional
`<current-task>`, `<suggested-response>`, `<thread-title>`, in resource scope inside
`<thread id="T">` blocks) and writes its answer as the synchronous observation of the thread's
unobserved window, exactly as Mastra's observe() writes it. Exit 1 when the model failed, its
answer was degenerate or empty, or the preview was cancelled (nothing written).

Both are `studio.app.observation`'s (the studio's Observe now… and Activate write the same way): they
back the file up first (`WriteSession`), follow the OM write protocol's quiet period and
busy flags (`--quiet-period`, `--wait-idle`, `--force`; see studio.cli.write_options), and
exit with the CLI's codes: 0 written (or dry run; `observe --dry-run` previews below the threshold
too and says a write would refuse), 2 bad input (no thread, no record, no chunks, empty answer,
below the threshold without --below-threshold), 3 refused (busy, changed, the
agent is active, answer no, or the write was overwritten during the watch), 4 I/O. These writes
update Mastra's own row in place and carry no studio mark (see studio.store.write.observation), so
the watch after the commit (`--watch`) checks that the written text survives
(`studio.app.write_protocol.watch_in_place`);
`--on-overtaken` does not apply (there is no repair generation: observe again).
"""

from __future__ import annotations

from pathlib import Path

from studio.app.failures import EXIT_FAILURE, EXIT_OK, BadInput, say
from studio.app.observation import ChunkPlan, pending_difference
from studio.cli import add_write_arguments
from studio.cli import interaction as tty
from studio.cli.interaction import TerminalInteraction, run_cancellable
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


def _run_activate(args) -> int:
    from studio.app.observation import activate, chunk_plan
    from studio.app.write_protocol import ProtocolOutcome, WriteJob
    from studio.errors import WriteRefused
    from studio.store.write.transaction import refuse_read_only_store

    try:
        refuse_read_only_store(args.path, "activate")   # a store it is not built for: said before anything is read
    except WriteRefused as exc:
        return write_refused(exc)
    plan = chunk_plan(args.path, args.thread)
    key = plan.lookup_key
    doc = {"activated": False, "thread_id": args.thread, "lookup_key": key, "record_id": plan.record_id,
           "chunks_before": len(plan.chunks), "backup": None}
    if not plan.chunks:
        raise BadInput(f"{key} has no buffered observation chunks to activate")
    if args.dry_run:
        return _activate_dry_run(args, key, plan, doc)
    outcome = ProtocolOutcome()
    activity = check_quiet(args, key, outcome, in_place=True)
    if activity is False:
        return refused_document(args, outcome, doc)
    atomic, note = atomicity(args.path)   # a standalone MongoDB server: the sentence that the write is not atomic
    doc["atomic"] = atomic
    if not TerminalInteraction(assume_yes=args.yes).confirmed(
            f"Activate buffered observations of {key} ({len(plan.chunks)} chunk(s) pending) in {args.path}?{note}",
            "activate writes to the database: add --yes to confirm (not a terminal)"):
        return refused_document(args, outcome, doc)
    from studio.store.writes import WriteSession

    session = WriteSession(full_backup=args.full_backup)
    job = WriteJob(args.path, key, in_place=True, session=session,
                   write=lambda quiet_ms: activate(args.path, plan, session=session, quiet_ms=quiet_ms))
    try:
        result = write_through_protocol(args, job, outcome, activity).result
    except WriteRefused as exc:
        return write_refused(exc)
    row = result["row"]
    doc.update({"activated": True, "chunks_after": result["chunks_after"],
                "activated_cycle_ids": result["activated_cycle_ids"],
                "activated_message_ids": result["activated_message_ids"],
                "observation_token_count": row["observationTokenCount"],
                "pending_message_tokens": row["pendingMessageTokens"], "last_observed_at": row["lastObservedAt"],
                "backup": str(session.backup_for(args.path) or "") or None})
    return report_write(args, doc, outcome, f"Activated {len(result['activated_cycle_ids'])} of {len(plan.chunks)} "
                                            f"buffered chunk(s) of {key}: {row['observationTokenCount']:,} "
                                            "observation tokens")


def _activate_dry_run(args, key: str, chunks: ChunkPlan, doc: dict) -> int:
    """Print what `activate` would move (CHUNKS: the plan as read); nothing is written or backed up."""
    plan, log_tokens = chunks.moves, chunks.observation_token_count
    moved = len(plan["activated_cycle_ids"])
    doc.update({"dry_run": True, "chunks_after": plan["chunks_after"],
                "activated_cycle_ids": plan["activated_cycle_ids"],
                "activated_message_ids": plan["activated_message_ids"],
                "message_tokens": plan["message_tokens"], "observation_tokens": plan["observation_tokens"],
                "observation_token_count": log_tokens + plan["observation_tokens"],
                "pending_message_tokens": plan["pending_message_tokens"], "threshold": plan["threshold"],
                "window_pending_tokens": chunks.window_tokens, "observations": plan["observations"]})
    if args.json:
        print_json(doc)
    else:
        print(f"Would activate {moved} of {plan['chunks_before']} buffered chunk(s) of {key}: "
              f"{len(plan['activated_message_ids']):,} message(s), {plan['message_tokens']:,} message tokens, "
              f"{plan['observation_tokens']:,} observation tokens "
              f"(log {log_tokens:,} -> {doc['observation_token_count']:,} tokens; "
              f"{plan['chunks_after']} chunk(s) stay buffered; Mastra's rule: "
              f"{plan['pending_message_tokens']:,} pending message tokens, threshold {plan['threshold']:,})."
              + (f" {why}" if (why := pending_difference(chunks)) else "") + "\n")
        print(plan["observations"])
    say("Dry run: nothing was written.")
    return EXIT_OK


def _progress(enabled: bool):
    if not enabled:
        return None
    return lambda p: say(p.message)


def _run_observe(args) -> int:
    from studio.app.observation import ObserveRequest, commit, load_window, propose, stored_model
    from studio.app.reflection import make_client
    from studio.app.write_protocol import ProtocolOutcome, WriteJob
    from studio.engine.observer import ObservationInputError, ObservationRejected
    from studio.errors import WriteRefused
    from studio.llm.errors import ProviderConfigError, ProviderError
    from studio.store.write.transaction import refuse_read_only_store

    try:
        refuse_read_only_store(args.path, "observe")   # a store it is not built for: said before a model is called
    except WriteRefused as exc:
        return write_refused(exc)
    if args.answer_file is not None and (args.strategy or args.model):
        raise BadInput("give one of --answer-file FILE, --strategy rule-based or --model PROVIDER/MODEL")
    if args.strategy == "rule-based" and (args.model or args.base_url):
        raise BadInput("--model and --base-url apply to --strategy llm only")
    try:
        window = load_window(args.path, args.thread)
    except ObservationInputError as exc:
        raise BadInput(str(exc)) from exc
    key = window.lookup_key
    if not window.message_ids:
        raise BadInput(f"Thread {args.thread!r} has no unobserved messages")
    answer = None
    if args.answer_file is not None:
        try:
            answer = Path(args.answer_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"Cannot read the answer file {args.answer_file}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from exc
    strategy = args.strategy or "llm"
    client, model = None, None
    if answer is None and strategy == "llm":
        model = args.model or stored_model(window)
        if not model:
            raise BadInput("No model: the record's config names none we can call. Pass --model PROVIDER/MODEL "
                           "(e.g. openai/gpt-4o-mini, ollama/llama3.1 --base-url ...), --strategy rule-based, "
                           "or --answer-file FILE")
        try:
            client = make_client(model, args.base_url, args.timeout)
        except ProviderConfigError as exc:
            raise BadInput(str(exc)) from exc
    below = not window.meets and not args.below_threshold   # a write refuses; a dry run previews and says so
    if below and not args.dry_run:
        raise BadInput(f"The window holds {window.gate_text()}: Mastra would not observe yet; nothing was written "
                       "(--below-threshold observes anyway, --dry-run previews)")
    outcome = ProtocolOutcome()
    activity = None
    if not args.dry_run:
        activity = check_quiet(args, key, outcome, in_place=True)
        if activity is False:
            return refused_document(args, outcome, {"observed": False, "lookup_key": key, "window": window.to_json()})
    request = ObserveRequest(args.path, args.thread, strategy, model, args.base_url, answer, args.timeout)
    try:
        proposal = run_cancellable(lambda cancel: propose(request, window, client,
                                                          _progress(not args.json and tty.is_terminal()), cancel))
    except ObservationRejected as exc:
        if answer is not None or strategy == "rule-based":
            raise BadInput(str(exc)) from exc
        say(f"{exc}.")
        return EXIT_FAILURE
    except ObservationInputError as exc:
        raise BadInput(str(exc)) from exc
    except ProviderError as exc:
        say(f"{exc}; nothing was written.")
        return EXIT_FAILURE
    if proposal is None:
        return EXIT_FAILURE
    doc = {"observed": False, "lookup_key": key, "window": window.to_json(), "backup": None, **proposal.to_json()}
    if args.dry_run:
        doc.update({"dry_run": True, "below_threshold": not window.meets})
        if args.json:
            print_json(doc)
        else:
            print(f"Would observe {len(window.message_ids)} message(s) of {key} (window: {window.tokens:,} tokens; "
                  f"observations {proposal.tokens_before:,} -> {proposal.tokens_after:,} tokens):\n")
            print(proposal.new_lines)
        if not window.meets:
            say(f"The window holds {window.gate_text()}: Mastra would not observe yet; "
                + ("observe without --dry-run refuses unless --below-threshold is given." if below
                   else "--below-threshold writes it anyway."))
        say("Dry run: nothing was written.")
        return EXIT_OK
    atomic, note = atomicity(args.path)   # a standalone MongoDB server: the sentence that the write is not atomic
    doc["atomic"] = atomic
    if not TerminalInteraction(assume_yes=args.yes).confirmed(
            f"Observe {len(window.message_ids)} message(s) of {key} in {args.path}?{note}",
            "observe writes to the database: add --yes to confirm (not a terminal), or --dry-run",
            shown=proposal.new_lines):
        return refused_document(args, outcome, doc)
    from studio.store.writes import WriteSession

    session = WriteSession(full_backup=args.full_backup)
    job = WriteJob(args.path, key, in_place=True, session=session, write=lambda quiet_ms: commit(
        args.path, proposal, below_threshold=args.below_threshold, session=session, quiet_ms=quiet_ms))
    try:
        row = write_through_protocol(args, job, outcome, activity).result
    except WriteRefused as exc:
        return write_refused(exc)
    doc.update({"observed": True, "record_id": row["id"], "observation_token_count": row["observationTokenCount"],
                "last_observed_at": row["lastObservedAt"],
                "backup": str(session.backup_for(args.path) or "") or None})
    return report_write(args, doc, outcome, f"Observed {len(window.message_ids)} message(s) of {key}: "
                                            f"{row['observationTokenCount']:,} observation tokens")


def add_activate_command(subparsers) -> None:
    """Register `activate PATH --thread ID [--dry-run] [--yes] [--json]` (+ the write protocol's options)."""
    p = subparsers.add_parser("activate", help="activate buffered observation chunks now, as Mastra does at the "
                                               "threshold (no model call)")
    add_write_arguments(p, help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread whose OM record to activate")
    p.add_argument("--dry-run", action="store_true", help="show what would move; write nothing (no backup)")
    add_protocol_arguments(p)
    p.set_defaults(run=_run_activate)


def add_observe_command(subparsers) -> None:
    """Register `observe PATH --thread ID [--model M | --strategy rule-based | --answer-file FILE] [--base-url URL]
    [--timeout S] [--below-threshold] [--dry-run] [--yes] [--json]`."""
    p = subparsers.add_parser("observe", help="write an Observer answer as the observation of the unobserved window")
    add_write_arguments(p, help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread to observe")
    p.add_argument("--answer-file", metavar="FILE", help="the Observer's answer (<observations>…)")
    p.add_argument("--model", metavar="PROVIDER/MODEL",
                   help="the Observer model (default: the record's stored Observer model when we can call it)")
    p.add_argument("--base-url", metavar="URL", help="the provider's base URL (local or OpenAI-compatible servers)")
    p.add_argument("--timeout", type=positive_seconds, default=120.0, metavar="SECONDS",
                   help="longest wait for one model answer (default %(default)g)")
    p.add_argument("--strategy", choices=["llm", "rule-based"],
                   help="llm (default: a model observes) or rule-based (offline, deterministic, thread scope)")
    p.add_argument("--below-threshold", action="store_true",
                   help="observe although the window is below Mastra's threshold")
    p.add_argument("--dry-run", action="store_true",
                   help="show the window and the proposed lines; write nothing (also below the threshold)")
    add_protocol_arguments(p)
    p.set_defaults(run=_run_observe)

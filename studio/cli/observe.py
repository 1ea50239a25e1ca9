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

Both back the file up first (`WriteSession`), follow the OM write protocol's quiet period and
busy flags (`--quiet-period`, `--wait-idle`, `--force`; see studio.cli.write_options), and
exit with the CLI's codes: 0 written (or dry run; `observe --dry-run` previews below the threshold
too and says a write would refuse), 2 bad input (no thread, no record, no chunks, empty answer,
below the threshold without --below-threshold), 3 refused (busy, changed, the
agent is active, answer no, or the write was overwritten during the watch), 4 I/O. These writes
update Mastra's own row in place and carry no studio mark (see studio.store.write.observation), so
the watch after the commit (`--watch`) checks that the written text survives (`watch_in_place`);
`--on-overtaken` does not apply (there is no repair generation: observe again).
"""

from __future__ import annotations

import re

from studio.cli import EXIT_OK, EXIT_REFUSED, JSON_HELP, BadInput, _dump
from studio.cli.reflect import (  # one terminal prompt for every write command
    _confirm,
    _is_terminal,
    _positive_seconds,
    _run_cancellable,
    _write_refused,
)
from studio.cli.write_options import (
    ProtocolOutcome,
    _say,
    add_protocol_arguments,
    preflight,
    report_write,
    write_with_protocol,
)

_TAG = r"<{0}>(.*?)</{0}>"


def parse_observer_answer(text: str, config: dict | None = None):
    """Return an ObserverOutput from an Observer answer TEXT, parsed as Mastra's parseObserverOutput does.

    Uses studio.engine.observer_parse (sections at line start, list-line fallback, overlong lines
    cut) with the inline extractors of the record CONFIG (its stored config; None: Mastra's
    defaults, no thread-title); raises BadInput when Mastra would reject the answer as degenerate repetition.
    """
    from studio.cli import BadInput
    from studio.engine.observer_parse import observer_slugs, parse_observer_output
    from studio.store.write.observation import ObserverOutput

    parsed = parse_observer_output(text, observer_slugs(config))
    if parsed.degenerate:
        raise BadInput("the Observer answer repeats itself (Mastra rejects it as degenerate); nothing written")
    return ObserverOutput(observations=parsed.observations, current_task=parsed.current_task,
                          suggested_response=parsed.suggested_response, thread_title=parsed.thread_title,
                          extracted=parsed.extracted)


def _section(text: str, tag: str) -> str | None:
    """Return the trimmed content of TEXT's first non-empty <TAG>…</TAG>, else None."""
    found = [m.strip() for m in re.findall(_TAG.format(tag), text, flags=re.S | re.I)]
    return next((f for f in found if f), None)


def parse_multi_thread_answer(text: str, config: dict | None = None) -> dict:
    """Return {thread id: ObserverOutput} from a resource-scope answer's `<thread id="T">…</thread>` blocks.

    Read as Mastra's parseMultiThreadObserverOutput reads it (studio.engine.observer_parse.
    parse_multi_thread_output) with the inline extractors of the record CONFIG (None: Mastra's
    defaults); raises BadInput when Mastra would reject the answer as degenerate.
    """
    from studio.cli import BadInput
    from studio.engine.observer_parse import observer_slugs, parse_multi_thread_output
    from studio.store.write.observation import ObserverOutput

    parsed, degenerate = parse_multi_thread_output(text, observer_slugs(config))
    if degenerate:
        raise BadInput("the Observer answer repeats itself (Mastra rejects it as degenerate); nothing written")
    return {t: ObserverOutput(p.observations, p.current_task, p.suggested_response, p.thread_title, p.extracted)
            for t, p in parsed.items()}


def _lookup(path: str, thread_id: str):
    from studio.store.memory_store import MemoryStore

    with MemoryStore.open(path) as store, store.snapshot():
        thread = store.get_thread(thread_id)
        if thread is None:
            raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
        key = store.lookup_key_for_thread(thread)
        current = store.om_current(key) if key else None
    if current is None:
        raise BadInput(f"Thread {thread_id!r} has no observational memory")
    return key, current


def watch_in_place(args, path: str, lookup_key: str, record_id: str, written: str, outcome: ProtocolOutcome,
                   sleep=None) -> None:
    """Watch the row RECORD_ID for --watch seconds (auto: as the protocol's watch) after an in-place write.

    The write carries no studio mark (it is Mastra's own row, updated as Mastra updates it), so
    what is watched is the text it WROTE (`activeObservations` as committed): a turn that read the
    row before the commit rewrites it from its own copy and drops the new lines. When that happens OUTCOME gets an
    "observation-overwritten" finding and `unrepaired` = 1 (exit 3); there is no automatic
    repair: the messages are still unobserved by the agent's row, so observing again repairs it.
    """
    import time

    from studio.store.write.observation import observation_survived
    from studio.store.write.protocol import store_turn_ms, watch_window_ms

    if args.watch == "auto":
        window_ms = watch_window_ms(store_turn_ms(path, lookup_key))
        ago = (outcome.activity or {}).get("last_write_ago_s")
        if ago is None or ago * 1000 > window_ms:
            window_ms = 0  # quiet for longer than a turn takes: nothing can still be in flight
    else:
        window_ms = int(args.watch * 1000)
    started = time.monotonic()
    deadline = started + window_ms / 1000
    while True:
        if not observation_survived(path, record_id, written):
            outcome.overtaken.append({"kind": "observation-overwritten", "record_id": record_id,
                                      "message": "A running agent rewrote the observations of record "
                                                 f"{record_id} from an older copy: the studio's new lines are gone. "
                                                 "Observe again."})
            outcome.unrepaired = 1
            _say(outcome.overtaken[-1]["message"])
            break
        if time.monotonic() >= deadline:
            break
        (sleep or time.sleep)(min(0.5, max(0.0, deadline - time.monotonic())))
    outcome.watched_s = time.monotonic() - started


def _refused(args, outcome: ProtocolOutcome, doc: dict) -> int:
    doc.update(outcome.to_json())
    if args.json:
        _dump(doc)
    return EXIT_REFUSED


def _confirmed(args, question: str, no_terminal: str, shown: str | None = None) -> bool:
    """Return True when the write may go on: --yes, or a yes to QUESTION on the terminal (after SHOWN, if any).

    Without --yes and without a terminal raises BadInput(NO_TERMINAL); a no says "Nothing was written.".
    """
    if args.yes:
        return True
    if not _is_terminal():
        raise BadInput(no_terminal)
    if shown is not None:
        _say(shown)
    if _confirm(question):
        return True
    _say("Nothing was written.")
    return False


def _backed_up_write(args, write):
    """Back ARGS.path up (`WriteSession`), then run WRITE(quiet_ms) with the write protocol.

    Returns (WRITE's result, the session); raises WriteRefused when nothing was written.
    """
    from studio.store import writes

    session = writes.WriteSession()
    session.before_destructive_write(args.path)
    with session.routed(args.path):
        return write_with_protocol(args, write), session


def _run_activate(args) -> int:
    from studio.engine.tokens import stamp_estimates
    from studio.errors import WriteRefused
    from studio.store.write.activation import activate_buffered

    key, current = _lookup(args.path, args.thread)
    chunks = current.buffered_chunks
    doc = {"activated": False, "thread_id": args.thread, "lookup_key": key, "record_id": current.id,
           "chunks_before": len(chunks), "backup": None}
    if not chunks:
        raise BadInput(f"{key} has no buffered observation chunks to activate")
    if args.dry_run:
        return _activate_dry_run(args, key, current, doc)
    outcome = ProtocolOutcome()
    if not preflight(args, args.path, key, outcome):
        return _refused(args, outcome, doc)
    if not _confirmed(args, f"Activate buffered observations of {key} ({len(chunks)} chunk(s) pending) in {args.path}?",
                      "activate writes to the database: add --yes to confirm (not a terminal)"):
        return _refused(args, outcome, doc)
    try:
        result, session = _backed_up_write(args, lambda quiet_ms: activate_buffered(
            args.path, thread_id=args.thread, lookup_key=key, stamp_estimates=stamp_estimates,
            expected_record_id=current.id, idle_ms=quiet_ms))
    except WriteRefused as exc:
        return _write_refused(exc)
    row = result["row"]
    watch_in_place(args, args.path, key, row["id"], row["activeObservations"], outcome)
    doc.update({"activated": True, "chunks_after": result["chunks_after"],
                "activated_cycle_ids": result["activated_cycle_ids"],
                "activated_message_ids": result["activated_message_ids"],
                "observation_token_count": row["observationTokenCount"],
                "pending_message_tokens": row["pendingMessageTokens"], "last_observed_at": row["lastObservedAt"],
                "backup": str(session.backup_for(args.path) or "") or None})
    return report_write(args, doc, outcome, f"Activated {len(result['activated_cycle_ids'])} of {len(chunks)} "
                                            f"buffered chunk(s) of {key}: {row['observationTokenCount']:,} "
                                            "observation tokens")


def _activate_dry_run(args, key: str, current, doc: dict) -> int:
    """Print what `activate` would move from CURRENT (the OM record as read); nothing is written or backed up."""
    from studio.store.write.activation import activation_plan

    plan = activation_plan(current.columns)
    moved = len(plan["activated_cycle_ids"])
    doc.update({"dry_run": True, "chunks_after": plan["chunks_after"],
                "activated_cycle_ids": plan["activated_cycle_ids"],
                "activated_message_ids": plan["activated_message_ids"],
                "message_tokens": plan["message_tokens"], "observation_tokens": plan["observation_tokens"],
                "observation_token_count": current.observation_token_count + plan["observation_tokens"],
                "pending_message_tokens": plan["pending_message_tokens"], "threshold": plan["threshold"],
                "observations": plan["observations"]})
    if args.json:
        _dump(doc)
    else:
        print(f"Would activate {moved} of {plan['chunks_before']} buffered chunk(s) of {key}: "
              f"{len(plan['activated_message_ids']):,} message(s), {plan['message_tokens']:,} message tokens, "
              f"{plan['observation_tokens']:,} observation tokens "
              f"(log {current.observation_token_count:,} -> {doc['observation_token_count']:,} tokens; "
              f"{plan['chunks_after']} chunk(s) stay buffered; Mastra's rule: "
              f"{plan['pending_message_tokens']:,} pending message tokens, threshold {plan['threshold']:,}):\n")
        print(plan["observations"])
    _say("Dry run: nothing was written.")
    return EXIT_OK


def _observer_client(args, window):
    """Return the LLMClient for --model (default: the record's stored Observer model), or raise BadInput."""
    from studio.llm.client import LLMClient, Timeouts
    from studio.llm.errors import ProviderConfigError
    from studio.engine.observer import default_observer_model

    model = args.model or default_observer_model(window)
    if not model:
        raise BadInput("No model: the record's config names none we can call. Pass --model PROVIDER/MODEL "
                       "(e.g. openai/gpt-4o-mini, ollama/llama3.1 --base-url ...), --strategy rule-based, "
                       "or --answer-file FILE")
    try:
        return LLMClient.for_model(model, base_url=args.base_url,
                                   timeouts=Timeouts(read_s=args.timeout, write_s=min(60.0, args.timeout)))
    except ProviderConfigError as exc:
        raise BadInput(str(exc)) from exc


def _progress(enabled: bool):
    if not enabled:
        return None
    return lambda p: _say(p.message)


def _run_observe(args) -> int:
    from studio.cli import EXIT_FAILURE
    from studio.engine.observer import (
        ObservationInputError, ObservationRejected, commit_proposal, load_observation_window, run_observation,
    )
    from studio.errors import WriteRefused
    from studio.llm.errors import ProviderError

    if args.answer_file is not None and (args.strategy or args.model):
        raise BadInput("give one of --answer-file FILE, --strategy rule-based or --model PROVIDER/MODEL")
    if args.strategy == "rule-based" and (args.model or args.base_url):
        raise BadInput("--model and --base-url apply to --strategy llm only")
    try:
        window = load_observation_window(args.path, args.thread)
    except ObservationInputError as exc:
        raise BadInput(str(exc)) from exc
    key = window.lookup_key
    if not window.message_ids:
        raise BadInput(f"Thread {args.thread!r} has no unobserved messages")
    answer = None
    if args.answer_file is not None:
        try:
            answer = open(args.answer_file, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"Cannot read the answer file {args.answer_file}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from exc
    strategy = args.strategy or "llm"
    client = _observer_client(args, window) if answer is None and strategy == "llm" else None
    below = not window.meets and not args.below_threshold   # a write refuses; a dry run previews and says so
    if below and not args.dry_run:
        raise BadInput(f"The window holds {window.gate_text()}: Mastra would not observe yet; nothing was written "
                       "(--below-threshold observes anyway, --dry-run previews)")
    outcome = ProtocolOutcome()
    if not args.dry_run and not preflight(args, args.path, key, outcome):
        return _refused(args, outcome, {"observed": False, "lookup_key": key, "window": window.to_json()})
    try:
        proposal = _run_cancellable(lambda cancel: run_observation(
            window, strategy=strategy, client=client, answer=answer, path=args.path, cancel=cancel,
            progress=_progress(not args.json and _is_terminal())))
    except ObservationRejected as exc:
        if answer is not None or strategy == "rule-based":
            raise BadInput(str(exc)) from exc
        _say(f"{exc}.")
        return EXIT_FAILURE
    except ObservationInputError as exc:
        raise BadInput(str(exc)) from exc
    except ProviderError as exc:
        _say(f"{exc}; nothing was written.")
        return EXIT_FAILURE
    if proposal is None:
        return EXIT_FAILURE
    doc = {"observed": False, "lookup_key": key, "window": window.to_json(), "backup": None, **proposal.to_json()}
    if args.dry_run:
        doc.update({"dry_run": True, "below_threshold": not window.meets})
        if args.json:
            _dump(doc)
        else:
            print(f"Would observe {len(window.message_ids)} message(s) of {key} (window: {window.tokens:,} tokens; "
                  f"observations {proposal.tokens_before:,} -> {proposal.tokens_after:,} tokens):\n")
            print(proposal.new_lines)
        if not window.meets:
            _say(f"The window holds {window.gate_text()}: Mastra would not observe yet; "
                 + ("observe without --dry-run refuses unless --below-threshold is given." if below
                    else "--below-threshold writes it anyway."))
        _say("Dry run: nothing was written.")
        return EXIT_OK
    if not _confirmed(args, f"Observe {len(window.message_ids)} message(s) of {key} in {args.path}?",
                      "observe writes to the database: add --yes to confirm (not a terminal), or --dry-run",
                      shown=proposal.new_lines):
        return _refused(args, outcome, doc)
    try:
        row, session = _backed_up_write(args, lambda quiet_ms: commit_proposal(
            args.path, proposal, force=args.below_threshold, idle_ms=quiet_ms))
    except WriteRefused as exc:
        return _write_refused(exc)
    watch_in_place(args, args.path, key, row["id"], row["activeObservations"], outcome)
    doc.update({"observed": True, "record_id": row["id"], "observation_token_count": row["observationTokenCount"],
                "last_observed_at": row["lastObservedAt"],
                "backup": str(session.backup_for(args.path) or "") or None})
    return report_write(args, doc, outcome, f"Observed {len(window.message_ids)} message(s) of {key}: "
                                            f"{row['observationTokenCount']:,} observation tokens")


def add_activate_command(subparsers) -> None:
    """Register `activate PATH --thread ID [--dry-run] [--yes] [--json]` (+ the write protocol's options)."""
    p = subparsers.add_parser("activate", help="activate buffered observation chunks now, as Mastra does at the "
                                               "threshold (no model call)")
    p.add_argument("path", help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread whose OM record to activate")
    p.add_argument("--dry-run", action="store_true", help="show what would move; write nothing (no backup)")
    p.add_argument("--yes", action="store_true", help="write without asking")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    add_protocol_arguments(p)
    p.set_defaults(run=_run_activate)


def add_observe_command(subparsers) -> None:
    """Register `observe PATH --thread ID [--model M | --strategy rule-based | --answer-file FILE] [--base-url URL]
    [--timeout S] [--below-threshold] [--dry-run] [--yes] [--json]`."""
    p = subparsers.add_parser("observe", help="write an Observer answer as the observation of the unobserved window")
    p.add_argument("path", help="memory.db path (read-only until the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread to observe")
    p.add_argument("--answer-file", metavar="FILE", help="the Observer's answer (<observations>…)")
    p.add_argument("--model", metavar="PROVIDER/MODEL",
                   help="the Observer model (default: the record's stored Observer model when we can call it)")
    p.add_argument("--base-url", metavar="URL", help="the provider's base URL (local or OpenAI-compatible servers)")
    p.add_argument("--timeout", type=_positive_seconds, default=120.0, metavar="SECONDS",
                   help="longest wait for one model answer (default %(default)g)")
    p.add_argument("--strategy", choices=["llm", "rule-based"],
                   help="llm (default: a model observes) or rule-based (offline, deterministic, thread scope)")
    p.add_argument("--below-threshold", action="store_true",
                   help="observe although the window is below Mastra's threshold")
    p.add_argument("--dry-run", action="store_true",
                   help="show the window and the proposed lines; write nothing (also below the threshold)")
    p.add_argument("--yes", action="store_true", help="write without asking")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    add_protocol_arguments(p)
    p.set_defaults(run=_run_observe)

"""Command line of the timeline area: `timeline` (OM series and events) and `whatif` (replay with other settings).

  memory-studio timeline PATH --thread ID --json
      {"points": [{"at", "turn", "message_tokens", "observation_tokens", "buffered_tokens",
                   "threshold", "reflection_threshold", "reconstructed"}],
       "events": [{"type", "at", "turn", "cycle_id", "tokens", "generation"}]}
  memory-studio whatif PATH --thread ID [--message-tokens N] [--observation-tokens N]
                [--buffer-tokens N|RATIO|off] [--buffer-activation X] [--block-after X]
                [--share-token-budget | --no-share-token-budget]
                [--observation-ratio R] [--reflection-ratio R] [--no-real-sizes] --json

Settings left out keep the thread's stored ones. Exit codes as `memory-studio`: 2 for a missing
file, an unknown thread, a thread without OM, or settings Mastra would reject.
"""

from __future__ import annotations

import argparse
import sys

from studio.app.failures import EXIT_OK, BadInput
from studio.app.timeline import thread_timeline, timeline_document, whatif_document
from studio.cli import JSON_HELP, READ_PATH_HELP, add_target_argument, reading
from studio.cli.output import print_json

#: The `whatif` option that sets each of Mastra's observationalMemory settings named in its errors.
OPTION_OF_SETTING = {
    "blockAfter": "--block-after", "bufferActivation": "--buffer-activation", "bufferTokens": "--buffer-tokens",
    "messageTokens": "--message-tokens", "observationTokens": "--observation-tokens",
    "shareTokenBudget": "--share-token-budget",
}


def name_options(message: str) -> str:
    """Return MESSAGE (a Mastra-worded settings error) followed by the `whatif` options that set what it names.

    A setting the user did not pass comes from the stored record, so the message alone ("blockAfter (4800)
    must be >= messageTokens (8000)") does not say which option fixes it; this adds "(options: --block-after,
    --message-tokens)" in the order the settings appear. Messages naming no setting come back unchanged.
    """
    import re

    named = [OPTION_OF_SETTING[m] for m in re.findall(r"\b(" + "|".join(OPTION_OF_SETTING) + r")\b", message)]
    options = list(dict.fromkeys(named))
    return f"{message} (options: {', '.join(options)})" if options else message


def _buffer_value(text: str) -> float:
    if text.lower() in ("off", "false", "none", "0"):
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected tokens, a ratio below 1, or 'off', got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("bufferTokens must not be negative")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("expected a positive number of tokens")
    return value


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError("expected a ratio >= 0")
    return value


def add_timeline_command(subparsers) -> None:
    """Register `timeline PATH --thread ID --json`."""
    p = subparsers.add_parser("timeline", help="a thread's OM token series and events over time, as JSON")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_timeline)


def _run_timeline(args) -> int:
    with reading(args.path) as store:
        doc = timeline_document(store, args.thread)
    print_json(doc)
    if "uncountable" in doc:  # said in the JSON too; the terminal reader learns why the series stops early
        print("memory-studio: warning: the timeline stops before the message Mastra cannot count: "
              f"{doc['uncountable']['sentence']}", file=sys.stderr)
    return EXIT_OK


def add_whatif_command(subparsers) -> None:
    """Register `whatif PATH --thread ID [settings] --json`."""
    p = subparsers.add_parser("whatif",
                              help="replay a thread through OM's trigger rules with other settings (estimate)")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--message-tokens", type=_positive_int, metavar="N", help="observation threshold (tokens)")
    p.add_argument("--observation-tokens", type=_positive_int, metavar="N", help="reflection threshold (tokens)")
    p.add_argument("--buffer-tokens", type=_buffer_value, metavar="N",
                   help="async buffering interval: tokens, a ratio of messageTokens below 1, or off")
    p.add_argument("--buffer-activation", type=_ratio, metavar="X",
                   help="share of the threshold to activate (<= 1) or tokens to keep (>= 1000)")
    p.add_argument("--block-after", type=_ratio, metavar="X", help="multiple of messageTokens (1-100) or tokens")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--share-token-budget", dest="share_token_budget", action="store_true", default=None,
                        help="Mastra's shareTokenBudget: the observation threshold becomes a range from messageTokens "
                             "up to messageTokens + observationTokens (default: the record's stored setting)")
    budget.add_argument("--no-share-token-budget", dest="share_token_budget", action="store_false",
                        help="each threshold on its own budget")
    p.add_argument("--observation-ratio", type=_ratio, metavar="R",
                   help="observation tokens per message token observed (default: measured on the thread)")
    p.add_argument("--reflection-ratio", type=_ratio, metavar="R",
                   help="reflection tokens per observation token (default: measured on the thread)")
    p.add_argument("--no-real-sizes", action="store_true",
                   help="model every output size, even when replaying with the stored settings")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_whatif)


def _run_whatif(args) -> int:
    from studio.engine.whatif import WhatIfSettingsError

    with reading(args.path) as store:
        timeline = thread_timeline(store, args.thread)
    try:
        doc = whatif_document(
            timeline, message_tokens=args.message_tokens, observation_tokens=args.observation_tokens,
            buffer_tokens=args.buffer_tokens, buffer_activation=args.buffer_activation, block_after=args.block_after,
            share_token_budget=args.share_token_budget, observation_ratio=args.observation_ratio,
            reflection_ratio=args.reflection_ratio, use_real_sizes=False if args.no_real_sizes else None)
    except WhatIfSettingsError as exc:
        raise BadInput(name_options(str(exc))) from exc
    print_json(doc)
    return EXIT_OK

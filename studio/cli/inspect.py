"""`memory-studio inspect` and `memory-studio tokens`: what a memory.db holds, with Mastra's figures, as JSON.

    memory-studio inspect PATH --json [--recount]   threads, OM records with Mastra's status figures and history
    memory-studio tokens PATH THREAD_ID --json      Mastra's per-message token estimates and exact o200k counts

The documents are `studio.app.inspection`'s; without `--json`, `inspect` prints them as text (`studio.cli.human`).
"""

from __future__ import annotations

import sys

from studio.app.failures import EXIT_OK, BadInput
from studio.app.inspection import inspect_document, tokens_document
from studio.cli import JSON_HELP, READ_PATH_HELP, add_target_argument, reading
from studio.cli.output import print_json


def add_inspect_command(subparsers) -> None:
    """Register `inspect PATH --json`."""
    p = subparsers.add_parser("inspect", help="threads and OM status of a memory.db (--json: every figure, as JSON)")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--recount", action="store_true",
                   help="recount every generation's log (tokenx and exact o200k) and say which the stored count "
                        "matches")
    p.set_defaults(run=_run_inspect)


def _run_inspect(args) -> int:
    with reading(args.path) as store:
        doc = inspect_document(store, recount=args.recount)
    if not args.json:
        from studio.cli.human import inspect_text

        print(inspect_text(doc))
        return EXIT_OK
    print_json(doc)
    return EXIT_OK


def add_tokens_command(subparsers) -> None:
    """Register `tokens PATH THREAD_ID --json` (`--thread ID` accepted too, as every other command takes it)."""
    p = subparsers.add_parser("tokens", help="token counts of a thread's messages, as JSON")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("thread_id", nargs="?", help="the thread's id")
    p.add_argument("--thread", dest="thread_option", metavar="ID", help="the thread's id (same as THREAD_ID)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_tokens)


def _run_tokens(args) -> int:
    if args.thread_id and args.thread_option and args.thread_id != args.thread_option:
        raise BadInput(f"two thread ids given: {args.thread_id!r} and --thread {args.thread_option!r}")
    thread_id = args.thread_id or args.thread_option
    if not thread_id:
        raise BadInput("name the thread: tokens PATH THREAD_ID (or --thread ID)")
    with reading(args.path) as store:
        doc = tokens_document(store, thread_id)
    print_json(doc)
    for note in doc["uncountable"]:  # the JSON says it too; a person reading the terminal sees why the nulls
        print(f"memory-studio: warning: {note['sentence']}", file=sys.stderr)
    return EXIT_OK

"""Command line of message history: `threads`, `recall`, `speakers` (read-only) and `clone` (a write).

Without `--json`, `threads` and `recall` print lines to read (`studio.cli.human`); with it, these documents:

    memory-studio threads PATH [--resource ID] [--metadata JSON] [--order-by createdAt|updatedAt]
                          [--direction ASC|DESC] [--page N] [--per-page M | --all] --json
        -> {"thread_ids": [...], "total": N, "has_more": bool}          (Memory.listThreads)
    memory-studio recall PATH --thread ID [--page N] [--per-page M | --all] [--from ISO] [--to ISO]
                         [--metadata JSON] [--include ID[:PREV[:NEXT]]]... [--apply-include] --json
        -> {"message_ids": [...], "total": N, "has_more": bool}         (Memory.recall)
    memory-studio speakers PATH --thread ID --json
        -> {"speakers": [{"author_id", "author_name", "functional_role", "messages", "tokens"}],
            "untagged_messages": N}
    memory-studio clone PATH --thread ID [--new-id ID] [--title T] [--message-limit N] [--yes] --json

Validation errors (a bad metadata filter, page, date) and unknown threads exit 2 with a message.
`clone` changes the file: it refuses without --yes, and backs the file up before the first write.
"""

from __future__ import annotations

import argparse

from studio.app.failures import EXIT_OK, EXIT_REFUSED, BadInput, say
from studio.app.history import recall_document, speakers_document, threads_document
from studio.cli import JSON_HELP, READ_PATH_HELP, reading
from studio.cli.output import print_json
from studio.common.metadata_filter import ValidationError, parse_metadata_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any

INCLUDE_HELP = ("a message to add with its neighbours: ID, ID:PREV or ID:PREV:NEXT (previous/next message "
                "counts). Mastra's Memory.recall ignores include (only semantic-recall hits are included); "
                "--apply-include applies it the way the storage call does")


#: The page sizes the help names (Mastra's defaults: listThreads' perPage 100, recall's lastMessages 10); the
#: store applies them (studio.store.thread_list.DEFAULT_THREADS_PER_PAGE, studio.store.history's LAST_MESSAGES).
THREADS_PER_PAGE, RECALL_PER_PAGE = 100, 10

def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, not {value}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        # Mastra's listThreads takes perPage 0 (LIMIT 0: no threads, hasMore true while any exist);
        # a command line asking for pages of nothing is a typo, so say so instead.
        raise argparse.ArgumentTypeError("expected a number >= 1 (use --all for every one), not 0")
    return value


def parse_include(text: str) -> dict:
    """Parse `ID[:PREV[:NEXT]]` into {id, with_previous_messages, with_next_messages}.

    Trailing `:N` parts are counts only when they are whole numbers, so an id may hold colons.
    """
    parts = text.split(":")
    counts: list[int] = []
    while len(parts) > 1 and len(counts) < 2 and parts[-1].isdigit():
        counts.insert(0, int(parts.pop()))
    message_id = ":".join(parts)
    if not message_id:
        raise BadInput(f"--include needs a message id: {text!r}")
    item: dict[str, Any] = {"id": message_id}
    if counts:
        item["with_previous_messages"] = counts[0]
    if len(counts) > 1:
        item["with_next_messages"] = counts[1]
    return item


def _metadata(text: str | None) -> dict | None:
    return None if text is None else parse_metadata_json(text)


def _page_args(p: argparse.ArgumentParser, what: str, *, default: int, allow_zero: bool = True) -> None:
    p.add_argument("--page", type=_non_negative, default=None, help="page number, from 0 (default 0)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--per-page", type=_non_negative if allow_zero else _positive, default=None, metavar="M",
                      help=f"{what} per page (default {default}, as Mastra's)")
    size.add_argument("--all", action="store_true", help=f"every {what[:-1]} (Mastra's perPage: false)")


def _per_page(args) -> int | bool | None:
    return False if args.all else args.per_page


# -- threads ------------------------------------------------------------------------------------

def add_threads_command(subparsers) -> None:
    """Register `threads PATH ... --json`."""
    p = subparsers.add_parser("threads", help="list threads as Mastra's listThreads does (--json: as JSON)")
    p.add_argument("path", help=READ_PATH_HELP)
    p.add_argument("--resource", metavar="ID", help="only this resource's threads")
    p.add_argument("--metadata", metavar="JSON", help='thread metadata filter, e.g. \'{"category": "billing"}\'')
    p.add_argument("--order-by", choices=["createdAt", "updatedAt"], help="sort field (default createdAt)")
    p.add_argument("--direction", choices=["ASC", "DESC"], help="sort direction (default DESC)")
    _page_args(p, "threads", default=THREADS_PER_PAGE, allow_zero=False)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_threads)


def _validated(run):
    """Run the command RUN with its arguments checked: a ValidationError (metadata, page, date) is bad input (2)."""
    def checked(args) -> int:
        try:
            return run(args)
        except ValidationError as exc:
            raise BadInput(str(exc)) from exc
    return checked


@_validated
def _run_threads(args) -> int:
    metadata = _metadata(args.metadata)
    # one sorted scan of the threads: a 256 KiB page cache (SQLite's default is 2,000 KiB) spares the
    # fresh memory of pages read once
    with reading(args.path, cache_kib=256) as store:
        doc = threads_document(store, resource_id=args.resource, metadata=metadata, order_by=args.order_by,
                               direction=args.direction, page=args.page, per_page=_per_page(args))
        if not args.json:
            from studio.cli.human import threads_text

            print(threads_text(store, doc))
            return EXIT_OK
    print_json(doc)
    return EXIT_OK


# -- recall -------------------------------------------------------------------------------------

def add_recall_command(subparsers) -> None:
    """Register `recall PATH --thread ID ... --json`."""
    p = subparsers.add_parser("recall", help="a thread's messages as Mastra's Memory.recall returns them, newest "
                                             "first, 10 a page (--json: as JSON)")
    p.add_argument("path", help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--resource", metavar="ID", help="check that the thread belongs to this resource")
    _page_args(p, "messages", default=RECALL_PER_PAGE)
    p.add_argument("--from", dest="start", metavar="ISO", help="only messages created at or after this time")
    p.add_argument("--to", dest="end", metavar="ISO", help="only messages created at or before this time")
    p.add_argument("--metadata", metavar="JSON", help='message metadata filter, e.g. \'{"category": "billing"}\'')
    p.add_argument("--include", action="append", default=[], metavar="ID[:PREV[:NEXT]]", help=INCLUDE_HELP)
    p.add_argument("--apply-include", action="store_true",
                   help="apply --include as MemoryLibSQL.listMessages does (Memory.recall itself ignores it)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_recall)


@_validated
def _run_recall(args) -> int:
    include = [parse_include(text) for text in args.include] or None
    if include and not args.apply_include:
        say("note: Mastra's Memory.recall ignores include; the result is what Mastra returns "
            "(add --apply-include to apply it as the storage's listMessages does)")
    metadata = _metadata(args.metadata)
    with reading(args.path) as store:
        doc = recall_document(store, args.thread, page=args.page, per_page=_per_page(args), start=args.start,
                              end=args.end, metadata=metadata, include=include,
                              apply_include=args.apply_include, resource_id=args.resource)
        if not args.json:
            from studio.cli.human import recall_text

            print(recall_text(store, args.thread, doc))
            return EXIT_OK
    print_json(doc)
    return EXIT_OK


# -- speakers -----------------------------------------------------------------------------------

def add_speakers_command(subparsers) -> None:
    """Register `speakers PATH --thread ID --json`."""
    p = subparsers.add_parser("speakers", help="participants of a multi-user thread (<turn> tags), as JSON")
    p.add_argument("path", help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_speakers)


def _run_speakers(args) -> int:
    with reading(args.path) as store:
        doc = speakers_document(store, args.thread)
    print_json(doc)
    return EXIT_OK


# -- clone --------------------------------------------------------------------------------------

def add_clone_command(subparsers) -> None:
    """Register `clone PATH --thread ID [--new-id ID] [--title T] [--message-limit N] [--yes] --json`."""
    p = subparsers.add_parser("clone", help="clone a thread as Mastra's cloneThread does "
                                            "(writes: asks on a terminal, or --yes)")
    p.add_argument("path", help="memory.db path (opened for writing once the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread to clone")
    p.add_argument("--new-id", metavar="ID", help="the new thread's id (default: a new UUID)")
    p.add_argument("--title", metavar="T", help="the new thread's title")
    p.add_argument("--message-limit", type=_non_negative, metavar="N", help="clone only the last N messages")
    p.add_argument("--yes", action="store_true", help="write without asking")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_clone)


@_validated
def _run_clone(args) -> int:
    from studio.app.thread_writes import clone_thread
    from studio.cli.interaction import TerminalInteraction

    if not TerminalInteraction(assume_yes=args.yes).confirmed(
            f"Clone thread {args.thread!r} into a new thread in {args.path} (a backup is made first)?",
            f"clone writes a new thread into {args.path}; add --yes to confirm (not a terminal; a backup is made "
            "first)"):
        return EXIT_REFUSED
    cloned = clone_thread(args.path, args.thread, new_thread_id=args.new_id, title=args.title,
                          message_limit=args.message_limit)
    print_json(cloned.to_json())
    return EXIT_OK

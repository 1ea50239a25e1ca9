"""Command line of message history: `threads`, `recall`, `speakers` (read-only) and `clone` (a write).

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
import sys

from studio.cli import EXIT_OK, EXIT_REFUSED, JSON_HELP, READ_PATH_HELP, BadInput, _dump
from studio.common.metadata_filter import ValidationError, parse_metadata_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any

INCLUDE_HELP = ("a message to add with its neighbours: ID, ID:PREV or ID:PREV:NEXT (previous/next message "
                "counts). Mastra's Memory.recall ignores include (only semantic-recall hits are included); "
                "--apply-include applies it the way the storage call does")


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


def _page_args(p: argparse.ArgumentParser, what: str, *, allow_zero: bool = True) -> None:
    p.add_argument("--page", type=_non_negative, default=None, help="page number, from 0 (default 0)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--per-page", type=_non_negative if allow_zero else _positive, default=None, metavar="M", help=f"{what} per page")
    size.add_argument("--all", action="store_true", help=f"every {what[:-1]} (Mastra's perPage: false)")


def _per_page(args) -> int | bool | None:
    return False if args.all else args.per_page


# -- threads ------------------------------------------------------------------------------------

def list_threads_json(path: str, *, resource_id: str | None = None, metadata: dict | None = None,
                      order_by: str | None = None, direction: str | None = None, page: int | None = None,
                      per_page: int | bool | None = None) -> dict:
    """Return the `threads --json` document for the database at PATH (Memory.listThreads)."""
    from studio.store.thread_list import list_threads  # not history: recall's module is the bigger import
    from studio.store.memory_store import MemoryStore

    flt: dict[str, Any] = {}
    if resource_id is not None:
        flt["resource_id"] = resource_id
    if metadata is not None:
        flt["metadata"] = metadata
    order = None
    if order_by is not None or direction is not None:
        order = {"field": order_by or "createdAt", "direction": direction or "DESC"}
    # one sorted scan of the threads: a 256 KiB page cache (SQLite's default is 2,000 KiB) spares the
    # fresh memory of pages read once
    with MemoryStore.open(path, cache_kib=256) as store, store.snapshot():
        result = list_threads(store, filter=flt or None, order_by=order, page=page or 0, per_page=per_page,
                              ids_only=True)
    return {"thread_ids": result.thread_ids, "total": result.total, "has_more": result.has_more}


def add_threads_command(subparsers) -> None:
    """Register `threads PATH ... --json`."""
    p = subparsers.add_parser("threads", help="list threads as Mastra's listThreads does, as JSON")
    p.add_argument("path", help=READ_PATH_HELP)
    p.add_argument("--resource", metavar="ID", help="only this resource's threads")
    p.add_argument("--metadata", metavar="JSON", help='thread metadata filter, e.g. \'{"category": "billing"}\'')
    p.add_argument("--order-by", choices=["createdAt", "updatedAt"], help="sort field (default createdAt)")
    p.add_argument("--direction", choices=["ASC", "DESC"], help="sort direction (default DESC)")
    _page_args(p, "threads", allow_zero=False)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_threads)


def _run_threads(args) -> int:
    try:
        doc = list_threads_json(args.path, resource_id=args.resource, metadata=_metadata(args.metadata),
                                order_by=args.order_by, direction=args.direction, page=args.page,
                                per_page=_per_page(args))
    except ValidationError as exc:
        raise BadInput(str(exc)) from exc
    _dump(doc)
    return EXIT_OK


# -- recall -------------------------------------------------------------------------------------

def recall_json(path: str, thread_id: str, *, page: int | None = None, per_page: int | bool | None = None,
                start: str | None = None, end: str | None = None, metadata: dict | None = None,
                include: list[dict] | None = None, apply_include: bool = False,
                resource_id: str | None = None) -> dict:
    """Return the `recall --json` document (Memory.recall with Mastra's defaults: 10 per page, newest first).

    START/END are dates as `new Date(...)` reads them (ISO 8601), sent as toISOString; raises
    BadInput for an unknown thread, ValidationError for bad arguments.
    """
    from studio.store.history import get_thread_by_id, js_date_iso, recall
    from studio.store.memory_store import MemoryStore

    flt: dict[str, Any] = {}
    if start is not None or end is not None:
        flt["date_range"] = {k: js_date_iso(v) for k, v in (("start", start), ("end", end)) if v is not None}
    if metadata is not None:
        flt["metadata"] = metadata
    with MemoryStore.open(path) as store, store.snapshot():
        if get_thread_by_id(store, thread_id) is None:
            raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
        result = recall(store, thread_id, resource_id=resource_id, page=page, per_page=per_page,
                        filter=flt or None, include=include, apply_include=apply_include)
    return {"message_ids": result.message_ids, "total": result.total, "has_more": result.has_more}


def add_recall_command(subparsers) -> None:
    """Register `recall PATH --thread ID ... --json`."""
    p = subparsers.add_parser("recall", help="a thread's messages as Mastra's Memory.recall returns them, as JSON")
    p.add_argument("path", help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--resource", metavar="ID", help="check that the thread belongs to this resource")
    _page_args(p, "messages")
    p.add_argument("--from", dest="start", metavar="ISO", help="only messages created at or after this time")
    p.add_argument("--to", dest="end", metavar="ISO", help="only messages created at or before this time")
    p.add_argument("--metadata", metavar="JSON", help='message metadata filter, e.g. \'{"category": "billing"}\'')
    p.add_argument("--include", action="append", default=[], metavar="ID[:PREV[:NEXT]]", help=INCLUDE_HELP)
    p.add_argument("--apply-include", action="store_true",
                   help="apply --include as MemoryLibSQL.listMessages does (Memory.recall itself ignores it)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_recall)


def _run_recall(args) -> int:
    include = [parse_include(text) for text in args.include] or None
    if include and not args.apply_include:
        print("memory-studio: note: Mastra's Memory.recall ignores include; the result is what Mastra returns "
              "(add --apply-include to apply it as the storage's listMessages does)", file=sys.stderr)
    try:
        doc = recall_json(args.path, args.thread, page=args.page, per_page=_per_page(args), start=args.start,
                          end=args.end, metadata=_metadata(args.metadata), include=include,
                          apply_include=args.apply_include, resource_id=args.resource)
    except ValidationError as exc:
        raise BadInput(str(exc)) from exc
    _dump(doc)
    return EXIT_OK


# -- speakers -----------------------------------------------------------------------------------

def speakers_document(path: str, thread_id: str) -> dict:
    """Return the `speakers --json` document: participants from `<turn>` tags, messages and tokens each."""
    from studio.engine.speakers import speakers_json, thread_speakers
    from studio.store.memory_store import MemoryStore

    with MemoryStore.open(path) as store, store.snapshot():
        if store.get_thread(thread_id) is None:
            raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
        return speakers_json(thread_speakers(store, thread_id))


def add_speakers_command(subparsers) -> None:
    """Register `speakers PATH --thread ID --json`."""
    p = subparsers.add_parser("speakers", help="participants of a multi-user thread (<turn> tags), as JSON")
    p.add_argument("path", help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=lambda a: (_dump(speakers_document(a.path, a.thread)), EXIT_OK)[1])


# -- clone --------------------------------------------------------------------------------------

def clone_document(path: str, thread_id: str, *, new_id: str | None = None, title: str | None = None,
                   message_limit: int | None = None, confirmed: bool = False) -> dict:
    """Clone THREAD_ID in PATH as Memory.cloneThread does, after a backup; return the `clone --json` document.

    Refuses (BadInput, nothing written) unless CONFIRMED. The write is `studio.store.writes`'
    WriteSession.clone_thread: a verified backup of the file first, then one transaction.
    Returns {"thread": {id, resource_id, title, metadata}, "message_ids": [new ids, createdAt order],
    "source_message_ids": [the ids they copy, same order], "om_record_id": copied OM record or null,
    "backup": path of the backup}. WriteRefused (exit 2) when the thread is missing or the id is taken:
    checked before the backup (WriteSession.clone_thread), so a refused clone leaves no backup behind.
    """
    if not confirmed:
        raise BadInput(f"clone writes a new thread into {path}; add --yes to confirm (not a terminal; a backup is "
                       "made first)")
    from studio.store.writes import WriteSession

    session = WriteSession()
    result = session.clone_thread(path, thread_id, new_thread_id=new_id, title=title, message_limit=message_limit)
    thread = result["thread"]
    back = {new: old for old, new in result.get("messageIdMap", {}).items()}
    ids = [m["id"] for m in result["messages"]]
    backup = session.backup_for(path)
    return {"thread": {"id": thread["id"], "resource_id": thread["resourceId"], "title": thread["title"],
                       "metadata": thread["metadata"]},
            "message_ids": ids, "source_message_ids": [back.get(i) for i in ids],
            "om_record_id": result.get("omRecordId"), "backup": str(backup) if backup is not None else None}


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


def _run_clone(args) -> int:
    confirmed = args.yes
    if not confirmed:
        from studio.cli import reflect as cli_reflect   # the one terminal prompt of every write command

        if cli_reflect._is_terminal():
            if not cli_reflect._confirm(f"Clone thread {args.thread!r} into a new thread in {args.path} "
                                        "(a backup is made first)?"):
                print("memory-studio: Nothing was written.", file=sys.stderr)
                return EXIT_REFUSED
            confirmed = True
    try:
        doc = clone_document(args.path, args.thread, new_id=args.new_id, title=args.title,
                             message_limit=args.message_limit, confirmed=confirmed)
    except ValidationError as exc:
        raise BadInput(str(exc)) from exc
    _dump(doc)
    return EXIT_OK

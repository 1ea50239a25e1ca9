"""Command line of message history: `threads`, `recall`, `speakers` (read-only) and `clone` (a write).

Without `--json`, `threads` and `recall` print lines to read (`studio.cli.human`); with it, these documents:

    memory-studio threads PATH [--resource ID] [--metadata JSON] [--order-by createdAt|updatedAt]
                          [--direction ASC|DESC] [--page N] [--per-page M | --all] --json
        -> {"thread_ids": [...], "total": N, "has_more": bool}          (Memory.listThreads)
    memory-studio recall PATH --thread ID [--page N] [--per-page M | --all] [--from ISO] [--to ISO]
                         [--metadata JSON] [--include ID[:PREV[:NEXT]]]... [--apply-include] --json
        -> {"message_ids": [...], "total": N, "has_more": bool}         (Memory.recall)
    memory-studio recall PATH --thread ID [--resource ID] (--vector-search TEXT --embedder PROVIDER/MODEL
                         [--base-url URL] | --vector-of MESSAGE_ID) [--top-k K] [--message-range N]
                         [--scope thread|resource] [--last-messages N] [--exact] [--per-page M | --all]
                         [--vector-store PATH|URL] --json
        -> {"message_ids", "total", "has_more", "index_name", "semantic_recall", "vector_search": "ann"|"exact",
            "vector_hits": [{"id", "message_id", "thread_id", "score", "text"}]}   (semantic recall)
    memory-studio speakers PATH --thread ID --json
        -> {"speakers": [{"author_id", "author_name", "functional_role", "messages", "tokens"}],
            "untagged_messages": N}
    memory-studio clone PATH --thread ID [--new-id ID] [--title T] [--message-limit N] [--yes] --json
    memory-studio delete-thread PATH --thread ID [--yes] [--json]
        -> {"thread_ids", "messages", "threads", "om_records", "vectors", "backup"}   (Memory.deleteThread)
    memory-studio update-thread PATH --thread ID [--title T] [--metadata JSON] [--yes] [--json]
        -> the thread after: {"id", "resourceId", "title", "metadata", "updatedAt", "backup"}  (Memory.updateThread)
    memory-studio search PATH QUERY [--metadata JSON] [--limit N] [--json]
        -> [{"thread_id", "message_id", "role", "time", "snippet", "resource_id", "thread_title"}, ...]
    memory-studio working-memory PATH --thread ID [--scope resource|thread (--text T | --file F) [--yes]] [--json]
        -> without --text/--file: {"thread_text", "resource_text", "applies", ...}; with: the write
    memory-studio lineage PATH --thread ID [--json]
    memory-studio export PATH --thread ID [--format json|markdown] [--output FILE]
        -> the thread and its messages as Mastra's objects (json), or a Markdown transcript
        -> {"thread", "is_clone", "source", "cloned_at", "last_message_id", "last_message_position",
            "source_message_count", "clones", "history", "cycle"}   (isClone, getSourceThread, listClones,
                                                                     getCloneHistory)

Validation errors (a bad metadata filter, page, date) and unknown threads exit 2 with a message.
`clone` changes the file: it refuses without --yes, and backs the file up before the first write.
"""

from __future__ import annotations

import argparse
import sys

from studio.app.failures import EXIT_OK, EXIT_REFUSED, BadInput, say
from studio.app.history import recall_document, speakers_document, threads_document
from studio.cli import JSON_HELP, READ_PATH_HELP, add_target_argument, add_write_arguments, reading
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
    add_target_argument(p, help=READ_PATH_HELP)
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
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--resource", metavar="ID", help="check that the thread belongs to this resource")
    _page_args(p, "messages", default=RECALL_PER_PAGE)
    p.add_argument("--from", dest="start", metavar="ISO", help="only messages created at or after this time")
    p.add_argument("--to", dest="end", metavar="ISO", help="only messages created at or before this time")
    p.add_argument("--metadata", metavar="JSON", help='message metadata filter, e.g. \'{"category": "billing"}\'')
    p.add_argument("--include", action="append", default=[], metavar="ID[:PREV[:NEXT]]", help=INCLUDE_HELP)
    p.add_argument("--apply-include", action="store_true",
                   help="apply --include as MemoryLibSQL.listMessages does (Memory.recall itself ignores it)")
    meaning = p.add_argument_group("semantic recall (Memory's semanticRecall; defaults are Mastra's)")
    query = meaning.add_mutually_exclusive_group()
    query.add_argument("--vector-search", metavar="TEXT",
                       help="recall by meaning: TEXT is embedded with --embedder and queries the vector index")
    query.add_argument("--vector-of", metavar="MESSAGE_ID",
                       help="recall by meaning with MESSAGE_ID's stored vector as the query (no embedder: a turn's "
                            "user message is the query that turn's agent used)")
    meaning.add_argument("--embedder", metavar="PROVIDER/MODEL",
                         help="the embedding model (OpenAI-compatible /embeddings; key from the usual variable or "
                              "the keyring), e.g. openai/text-embedding-3-small, ollama/nomic-embed-text")
    meaning.add_argument("--base-url", metavar="URL", help="the embedder's base URL (e.g. http://localhost:11434/v1)")
    meaning.add_argument("--top-k", type=_positive, default=4, metavar="K", help="hits per query (default 4)")
    meaning.add_argument("--message-range", type=_non_negative, default=1, metavar="N",
                         help="messages kept before and after each hit (default 1)")
    meaning.add_argument("--scope", choices=["resource", "thread"], default="resource",
                         help="search the resource's messages (default) or the thread's")
    meaning.add_argument("--last-messages", type=_non_negative, default=10, metavar="N",
                         help="Memory's lastMessages, the default page size (default 10)")
    meaning.add_argument("--vector-store", metavar="PATH|URL",
                         help="the database of Memory's vector store when it is not PATH (a libSQL file or server "
                              "holding LibSQLVector's memory_messages tables)")
    meaning.add_argument("--exact", action="store_true",
                         help="score every vector of the scope instead of libSQL's ANN candidates (Mastra's query "
                              "uses the ANN index: compare both to see whether it missed a neighbour)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_recall)


def _semantic_recall(args) -> int:
    from studio.app.semantic import recall_by_meaning, recall_with_vector
    from studio.engine.semantic import SemanticConfig

    if args.include or args.start or args.end or args.metadata or args.page:
        raise BadInput("--vector-search / --vector-of take no --include, --from, --to, --metadata or --page "
                       "(Memory.recall's semantic path here reads the newest page)")
    config = SemanticConfig(args.top_k, args.message_range, args.scope)
    per_page = _per_page(args)
    from studio.app.vector_store import vector_store_attached

    with reading(args.path) as opened, vector_store_attached(opened, args.vector_store) as store:
        if args.vector_of:
            doc = recall_with_vector(store, args.thread, args.vector_of, config, resource_id=args.resource,
                                     per_page=per_page, last_messages=args.last_messages, exact=args.exact)
        else:
            embed = _embedder(args)
            doc = recall_by_meaning(store, args.thread, args.vector_search, embed, config, resource_id=args.resource,
                                    per_page=per_page, last_messages=args.last_messages, model_id=args.embedder,
                                    exact=args.exact)
    print_json(doc)
    return EXIT_OK


def _embedder(args):
    """The embed function of --embedder (a client made now; the model is called only when recall asks)."""
    from studio.llm import LLMClient, ProviderConfigError

    if not args.embedder:
        raise BadInput("--vector-search needs --embedder PROVIDER/MODEL (the model that embedded the messages)")
    try:
        client = LLMClient.for_model(args.embedder, base_url=args.base_url)
    except ProviderConfigError as exc:
        raise BadInput(str(exc)) from exc
    return lambda values: client.embed(values).vectors


@_validated
def _run_recall(args) -> int:
    if args.vector_search is not None or args.vector_of is not None:
        return _semantic_recall(args)
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
    add_target_argument(p, help=READ_PATH_HELP)
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
    add_write_arguments(p, help="memory.db path (opened for writing once the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread to clone")
    p.add_argument("--new-id", metavar="ID", help="the new thread's id (default: a new UUID)")
    p.add_argument("--title", metavar="T", help="the new thread's title")
    p.add_argument("--message-limit", type=_non_negative, metavar="N", help="clone only the last N messages")
    p.set_defaults(run=_run_clone)


@_validated
def _run_clone(args) -> int:
    from studio.app.thread_writes import clone_thread
    from studio.cli.interaction import TerminalInteraction

    if not TerminalInteraction(assume_yes=args.yes).confirmed(
            f"Clone thread {args.thread!r} into a new thread in {args.path} (its rows are backed up first)?",
            f"clone writes a new thread into {args.path}; add --yes to confirm (not a terminal; its rows are backed "
            "up first)"):
        return EXIT_REFUSED
    from studio.store.writes import WriteSession

    cloned = clone_thread(args.path, args.thread, new_thread_id=args.new_id, title=args.title,
                          message_limit=args.message_limit, session=WriteSession(full_backup=args.full_backup))
    print_json(cloned.to_json())
    return EXIT_OK


# -- lineage ------------------------------------------------------------------------------------

def add_lineage_command(subparsers) -> None:
    """Register `lineage PATH --thread ID [--json]`."""
    p = subparsers.add_parser("lineage", help="a thread's clone lineage as Mastra's clone utilities report it "
                                              "(isClone, getSourceThread, listClones, getCloneHistory)")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_lineage)


def _named(link) -> str:
    title = f" ({link.title})" if link.title else ""
    return f"{link.id}{title}" + ("" if link.exists else " — deleted")


def lineage_lines(lineage) -> list[str]:
    """The human-readable text of a Lineage (studio.app.lineage), one line per fact."""
    lines = [f"thread {_named(lineage.thread)}"]
    if lineage.is_clone:
        source = _named(lineage.source) if lineage.source else "an unknown thread (no sourceThreadId)"
        at = ""
        if lineage.last_message_position is not None:
            at = f" at message {lineage.last_message_position:,} of {lineage.source_message_count:,}"
        elif lineage.last_message_id:
            at = f" at message {lineage.last_message_id} (no longer in the source)"
        when = f", cloned {lineage.cloned_at}" if lineage.cloned_at else ""
        lines.append(f"clone of {source}{at}{when}")
    else:
        lines.append("not a clone")
    lines.append("clones: " + (", ".join(_named(c) for c in lineage.clones) if lineage.clones else "none"))
    if len(lineage.history) > 1 or lineage.cycle:
        chain = " -> ".join(h.id for h in lineage.history)
        lines.append(f"history: {chain}" + (" (the chain comes back on itself here)" if lineage.cycle else ""))
    return lines


def _run_lineage(args) -> int:
    from studio.app.lineage import load_lineage

    with reading(args.path) as store:
        lineage = load_lineage(store, args.thread)
    if lineage is None:
        raise BadInput(f"No thread {args.thread!r} in {args.path}")
    if args.json:
        print_json(lineage.as_json())
    else:
        print("\n".join(lineage_lines(lineage)))
    return EXIT_OK


# -- export -------------------------------------------------------------------------------------

def add_export_command(subparsers) -> None:
    """Register `export PATH --thread ID [--format json|markdown] [--output FILE]`."""
    p = subparsers.add_parser("export", help="a thread and its messages as Mastra's objects (JSON) or a Markdown "
                                             "transcript, to stdout or a file")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--format", choices=["json", "markdown"], default=None, help="json (default) or markdown")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    p.add_argument("--json", action="store_true", help=JSON_HELP + " (the same as --format json, the default)")
    p.set_defaults(run=_run_export)


def _run_export(args) -> int:
    from studio.app.export import export_text, write_export

    if args.json and args.format == "markdown":
        raise BadInput("--json and --format markdown ask for two formats: give one")
    args.format = args.format or "json"
    with reading(args.path) as store:
        text = export_text(store, args.thread, args.format)
    if args.output:
        try:
            write_export(text, args.output, store_path=str(args.path))
        except OSError as exc:
            from studio.errors import StoreError

            # exit 4 for a disk or permission refusal, 2 for a folder that does not exist (exit_code_for)
            raise StoreError(f"Writing the export to {args.output} failed: {exc.strerror or exc}") from exc
        say(f"exported thread {args.thread} ({args.format}) to {args.output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


# -- confirmed writes of a thread (delete-thread, update-thread, working-memory) -------------------

def _confirmed_write(args, question: str, refusal: str, write, human) -> int:
    """Ask QUESTION (or take --yes; REFUSAL off a terminal), run WRITE(session) -> Written through a WriteSession
    (--full-backup honoured), and print its result with the backup: the JSON document (--json), else
    HUMAN(result) and the backup's path. Returns EXIT_REFUSED when not confirmed, else EXIT_OK; a refused or
    failed write raises as every write does."""
    from studio.cli.interaction import TerminalInteraction
    from studio.cli.write_options import atomicity
    from studio.store.writes import WriteSession

    atomic, note = atomicity(args.path)
    if not TerminalInteraction(assume_yes=args.yes).confirmed(question + note, refusal):
        return EXIT_REFUSED
    session = WriteSession(full_backup=args.full_backup)
    written = write(session)
    backup = session.backup_for(args.path)
    if args.json:
        print_json({**written.result, "backup": str(backup) if backup is not None else None, "atomic": atomic})
    else:
        print(human(written.result) + (f"; backup {backup}" if backup is not None else ""))
    return EXIT_OK


# -- delete-thread ------------------------------------------------------------------------------

def add_delete_thread_command(subparsers) -> None:
    """Register `delete-thread PATH --thread ID [--yes] [--json]`."""
    p = subparsers.add_parser("delete-thread", help="delete a thread as Mastra's Memory.deleteThread does "
                                                    "(writes: asks on a terminal, or --yes)")
    add_write_arguments(p, help="memory.db path or server URL (opened for writing once the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread to delete")
    p.set_defaults(run=_run_delete_thread)


def _run_delete_thread(args) -> int:
    from studio.app.thread_writes import delete_thread

    def human(r: dict) -> str:
        return (f"deleted thread {args.thread}: {r['messages']:,} messages, {r['om_records']:,} OM records, "
                f"{r['vectors']:,} vectors" + (", its reminder thread" if len(r["thread_ids"]) > 1 else ""))

    return _confirmed_write(
        args, f"Delete thread {args.thread!r} from {args.path} with its messages, thread-scope OM records, vectors "
              "and owned reminder thread (a backup is made first)?",
        f"delete-thread removes thread {args.thread!r} from {args.path}; add --yes to confirm (not a terminal; "
        "a backup is made first)",
        lambda session: delete_thread(args.path, args.thread, session=session), human)


# -- update-thread ------------------------------------------------------------------------------

def add_update_thread_command(subparsers) -> None:
    """Register `update-thread PATH --thread ID [--title T] [--metadata JSON] [--yes] [--json]`."""
    p = subparsers.add_parser("update-thread", help="set a thread's title and merge keys into its metadata as "
                                                    "Mastra's Memory.updateThread does (writes: asks, or --yes)")
    add_write_arguments(p, help="memory.db path or server URL (opened for writing once the write is confirmed)")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread to update")
    p.add_argument("--title", metavar="T", help="the new title (default: keep it)")
    p.add_argument("--metadata", metavar="JSON", help='keys to set in the metadata, merged into it as Mastra does '
                                                      '(a key is replaced or added, never removed), e.g. '
                                                      '\'{"category": "billing"}\'')
    p.set_defaults(run=_run_update_thread)


def _run_update_thread(args) -> int:
    import json

    from studio.app.thread_writes import update_thread

    metadata = None
    if args.metadata is not None:
        try:
            metadata = json.loads(args.metadata)
        except ValueError as exc:
            raise BadInput(f"--metadata is not valid JSON: {exc}") from exc
        if not isinstance(metadata, dict):
            raise BadInput('--metadata must be a JSON object, e.g. \'{"category": "billing"}\'')
    if args.title is None and metadata is None:
        raise BadInput("Nothing to update: give --title, --metadata or both")
    return _confirmed_write(
        args, f"Update thread {args.thread!r} in {args.path} (a backup is made first)?",
        f"update-thread writes thread {args.thread!r} in {args.path}; add --yes to confirm (not a terminal; a "
        "backup is made first)",
        lambda session: update_thread(args.path, args.thread, title=args.title, metadata=metadata, session=session),
        lambda r: f"updated thread {args.thread}: title {r['title']!r}, metadata {json.dumps(r['metadata'])}")


# -- search -------------------------------------------------------------------------------------

def add_search_command(subparsers) -> None:
    """Register `search PATH QUERY [--metadata JSON] [--limit N] [--json]`."""
    p = subparsers.add_parser("search", help="find messages across every thread by text (words, \"phrases\"; "
                                             "Unicode case folding) and message metadata")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("query", help='words and "quoted phrases", all required; case and accents folded as Unicode '
                                 'does ("" with --metadata lists every message the filter keeps)')
    p.add_argument("--metadata", metavar="JSON", help='message metadata filter (Mastra\'s rules), e.g. '
                                                      '\'{"source": "email"}\'')
    p.add_argument("--limit", type=_non_negative, metavar="N", help="at most N results (default: all)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_search)


@_validated
def _run_search(args) -> int:
    from studio.app import text as fmt
    from studio.app.search import parse_query, search

    metadata = _metadata(args.metadata)
    if not parse_query(args.query) and not metadata:
        raise BadInput("Give words to search for (or --metadata to list the messages it keeps)")
    with reading(args.path) as store:
        hits = search(store, args.query, metadata=metadata, limit=args.limit)
    if args.json:
        print_json([h.as_json() for h in hits])
        return EXIT_OK
    if not hits:
        print("no message matches")
        return EXIT_OK
    last = None
    for h in hits:
        if (h.resource_id, h.thread_id) != last:
            last = (h.resource_id, h.thread_id)
            print(f"\n{h.resource_id} / {h.thread_title or h.thread_id} ({h.thread_id})")
        print(f"  {fmt.local_time(h.created_at, seconds=True)}  {h.role:<9} {h.snippet}")
    print(f"\n{len(hits):,} message{'s' if len(hits) != 1 else ''}")
    return EXIT_OK


# -- working-memory -----------------------------------------------------------------------------

def add_working_memory_command(subparsers) -> None:
    """Register `working-memory PATH --thread ID [--scope S (--text T | --file F) [--yes]] [--json]`."""
    p = subparsers.add_parser("working-memory", help="show a thread's and its resource's working memory, or write "
                                                     "one as Mastra's Memory.updateWorkingMemory does (asks, or --yes)")
    add_write_arguments(p, help="memory.db path or server URL")
    p.add_argument("--thread", required=True, metavar="ID", help="the thread")
    p.add_argument("--scope", choices=["resource", "thread"],
                   help="write this scope (Mastra's workingMemory.scope; its default is resource)")
    text = p.add_mutually_exclusive_group()
    text.add_argument("--text", metavar="T", help="the new working memory")
    text.add_argument("--file", metavar="F", help="read the new working memory from F (UTF-8; - for stdin)")
    p.set_defaults(run=_run_working_memory)


def _run_working_memory(args) -> int:
    if args.text is None and args.file is None:
        from studio.app.thread_detail import load_working_memory

        if args.scope is not None:
            raise BadInput("--scope writes: give the new working memory with --text or --file")
        with reading(args.path) as store:
            info = load_working_memory(store, args.thread)
        if info is None:
            raise BadInput(f"No thread {args.thread!r} in {args.path}")
        doc = {"thread_id": info.thread_id, "resource_id": info.resource_id, "thread_text": info.thread_text,
               "resource_text": info.resource_text, "applies": info.applies, "explanation": info.explanation}
        if args.json:
            print_json(doc)
        else:
            print(info.explanation)
            for label, value in (("thread", info.thread_text), ("resource", info.resource_text)):
                print(f"\n-- {label} working memory --\n{value if value else '(none stored)'}")
        return EXIT_OK
    if args.scope is None:
        raise BadInput("Say which working memory to write: --scope resource (Mastra's default) or --scope thread")
    if args.file is not None:
        try:
            value = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()  # noqa: SIM115
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"Cannot read {args.file}: {exc}") from exc
    else:
        value = args.text
    from studio.app.thread_writes import update_working_memory

    return _confirmed_write(
        args, f"Write the {args.scope}-scope working memory of thread {args.thread!r} in {args.path} (a backup is "
              "made first)?",
        f"working-memory writes to {args.path}; add --yes to confirm (not a terminal; a backup is made first)",
        lambda session: update_working_memory(args.path, args.thread, scope=args.scope, text=value, session=session),
        lambda _r: f"wrote the {args.scope}-scope working memory of {args.thread}")

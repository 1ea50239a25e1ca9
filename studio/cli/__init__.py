"""The command line of Memory Studio: `memory-studio COMMAND …` prints what a memory store holds, or writes to it.

Each command is a module of this package (`add_<name>_command(subparsers)` registers it): a store
opened read-only plus one call of the application layer (`studio.app`), whose document it prints
as JSON (`studio.cli.output`) or as text; a write command asks first (`studio.cli.interaction`)
and goes through the OM write protocol (`studio.app.write_protocol`, options in
`studio.cli.write_options`). Exit codes are `studio.app.failures`': 0 done, 1 unexpected failure,
2 bad input, 3 refused (nothing written), 4 I/O, 5 a write's outcome found after reconnecting, 6 dead
server, 130 on Ctrl-C; a write command's JSON says the outcome on 5 and 6 (`_print_write_outcome`).

`memory-studio` without a command starts the studio: `studio.main` picks the face, and this
package never imports `studio.ui`. A command imports only its own module (`build_parser(only=…)`),
so `memory-studio threads` loads neither Qt nor psycopg nor httpx.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager

from studio import __version__
from studio.app.failures import BadInput, report_failures, show_notices
from studio.common.help_format import HelpFormatter as _Formatter
from studio.errors import StudioError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from studio.store.memory_store import MemoryStore

#: The help of every command's `--json` (one wording everywhere; a command without a text form prints JSON anyway).
JSON_HELP = "print the result as JSON (commands without a text output print JSON either way)"
#: The help of a read command's PATH: it names how to reach the bundled sample (`sample-path`).
READ_PATH_HELP = ("memory.db path, file: URL or server URL (opened read-only); the bundled sample's path: "
                  "memory-studio sample-path")

#: The help of `--password-stdin` (every command that takes a target: `add_target_argument`).
PASSWORD_STDIN_HELP = ("read the server's password (PostgreSQL) or auth token (libSQL) from the first line of "
                       "standard input instead of the URL, where every user of this machine could read it (ps); "
                       "on a terminal it is asked for without echo")


def add_target_argument(parser: argparse.ArgumentParser, name: str = "path", *, help: str) -> None:
    """Add the positional target NAME (with HELP) and `--password-stdin` to a command's PARSER."""
    parser.add_argument(name, help=help)
    parser.add_argument("--password-stdin", action="store_true", help=PASSWORD_STDIN_HELP)
    parser.set_defaults(target_argument=name)


#: The help of `--full-backup` (every write command: `add_write_arguments`).
FULL_BACKUP_HELP = ("also copy the whole file (SQLite online backup, verified) beside it before writing; every "
                    "write saves the rows it changes anyway (memory-studio undo PATH restores them)")


def add_write_arguments(parser: argparse.ArgumentParser, *, help: str) -> None:
    """Add the options every write command shares to its PARSER: the positional target `path` (with HELP) and
    `--password-stdin` (`add_target_argument`), `--yes` (write without asking), `--full-backup`
    (`WriteSession(full_backup=…)`) and `--json`.

    The write commands: reflect, revert, observe, activate, clone, delete-thread, update-thread, working-memory;
    the OM-writing ones add the write protocol's options too (`studio.cli.write_options.add_protocol_arguments`).
    """
    add_target_argument(parser, help=help)
    parser.add_argument("--yes", action="store_true", help="write without asking")
    parser.add_argument("--full-backup", action="store_true", help=FULL_BACKUP_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)


@contextmanager
def reading(path: str, **options) -> Iterator[MemoryStore]:
    """Open PATH read-only for one command and hold one snapshot (all its reads see one state); OPTIONS: the store's.

    Raises StoreError (exit 2, or 3 for a lock, 4 for I/O) when it cannot be opened.
    """
    from studio.store import open_store

    with open_store(path, **options) as store, store.snapshot():
        yield store


def _from_module(module: str, function: str) -> Callable:
    """Return a registrar that imports MODULE only when the parser is built, then calls FUNCTION."""
    def add(subparsers) -> None:
        import importlib

        getattr(importlib.import_module(module), function)(subparsers)
    return add


# One line per command; each command group is a module of this package.
COMMANDS: dict[str, Callable] = {
    "inspect": _from_module("studio.cli.inspect", "add_inspect_command"),
    "tokens": _from_module("studio.cli.inspect", "add_tokens_command"),
    "timeline": _from_module("studio.cli.timeline", "add_timeline_command"),
    "whatif": _from_module("studio.cli.timeline", "add_whatif_command"),
    "threads": _from_module("studio.cli.history", "add_threads_command"),
    "recall": _from_module("studio.cli.history", "add_recall_command"),
    "speakers": _from_module("studio.cli.history", "add_speakers_command"),
    "clone": _from_module("studio.cli.history", "add_clone_command"),
    "delete-thread": _from_module("studio.cli.history", "add_delete_thread_command"),
    "update-thread": _from_module("studio.cli.history", "add_update_thread_command"),
    "lineage": _from_module("studio.cli.history", "add_lineage_command"),
    "working-memory": _from_module("studio.cli.history", "add_working_memory_command"),
    "search": _from_module("studio.cli.history", "add_search_command"),
    "export": _from_module("studio.cli.history", "add_export_command"),
    "reflect": _from_module("studio.cli.reflect", "add_reflect_command"),
    "revert": _from_module("studio.cli.reflect", "add_revert_command"),
    "trace": _from_module("studio.cli.trace", "add_trace_command"),
    "context": _from_module("studio.cli.trace", "add_context_command"),
    "doctor": _from_module("studio.cli.doctor", "add_doctor_command"),
    "activate": _from_module("studio.cli.observe", "add_activate_command"),
    "observe": _from_module("studio.cli.observe", "add_observe_command"),
    "undo": _from_module("studio.cli.undo", "add_undo_command"),
    "sample-path": _from_module("studio.cli.sample", "add_sample_path_command"),
}


def _words_as_written(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


def _untranslated_argparse() -> None:
    """Have argparse take its own words ("usage: ", "options", the help of -h) as written.

    argparse looks each one up in gettext's default "messages" catalogue, and every lookup imports
    `locale` and probes the disk for catalogue files again (~1 ms of every command's start). Python
    installs no catalogue of that domain and the studio's own help is English: nothing on screen
    changes (gettext's answer without a catalogue is the word as written, which this gives at once).
    """
    argparse._ = str  # type: ignore[attr-defined]  (str(text) is text itself)
    argparse.ngettext = _words_as_written  # type: ignore[attr-defined]


class _Parser(argparse.ArgumentParser):
    """ArgumentParser with `_Formatter` unless told otherwise (the subcommands' parsers too)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """Exit 2 with MESSAGE, which names the sample's command when a read command's PATH is missing."""
        if "required" in message and any(a.dest == "path" and a.help == READ_PATH_HELP and a.dest in message
                                         for a in self._actions):
            message += '; to read the bundled sample, give "$(memory-studio sample-path)" as PATH'
        super().error(message)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the parser of the subcommands (ONLY: of that one alone, importing no other command's module)."""
    _untranslated_argparse()
    parser = _Parser(prog="memory-studio", description="Look inside a Mastra memory.db.")
    parser.add_argument("--version", action="version", version=f"memory-studio {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_parser = sub.add_parser

    def add_described(name, **kwargs):   # `memory-studio CMD --help` opens with the command's one-line help
        kwargs.setdefault("description", kwargs.get("help"))
        return add_parser(name, **kwargs)

    sub.add_parser = add_described
    for name, add in COMMANDS.items():
        if only is None or name == only:
            add(sub)
    parser.set_defaults(_parsers=sub.choices)   # each command's own parser, for its own usage line
    return parser


def parse_command_line(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Return ARGV parsed; an unknown option exits 2 with the command's own usage line, not the top-level one.

    argparse hands a subcommand's unrecognised arguments back to the top-level parser, whose usage
    (`memory-studio [-h] [--version] {threads} ...`) says nothing about the command typed.
    """
    args, extras = parser.parse_known_args(argv)
    if extras:
        own = vars(args).get("_parsers", {}).get(vars(args).get("command"))
        (own or parser).error(f"unrecognized arguments: {' '.join(extras)}")
    vars(args).pop("_parsers", None)
    return args


def takes(word: str) -> bool:
    """True when WORD (the first argument) is for the command line: a command, or a mistyped one.

    A bare lowercase word that is neither a command nor a file reads as a mistyped command: the
    command line says so (`main`), instead of the studio taking it for a PATH and refusing the
    real path as an "unrecognized argument". A file of that name still opens in the studio.
    """
    if word in COMMANDS:
        return True
    import os
    import re

    return bool(re.fullmatch(r"[a-z][a-z-]*", word)) and not os.path.lexists(word)


def _refuse_unknown_command(word: str) -> None:
    """Raise BadInput naming the closest command to WORD, if any (`takes` sends the studio's files elsewhere)."""
    import difflib
    import os

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    where = "" if os.path.lexists(word) else " nor a file"
    raise BadInput(f"{word!r} is not a command{hint}{where}; commands: {', '.join(COMMANDS)} (memory-studio --help)")


def _run(argv: list[str]) -> int:
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        _refuse_unknown_command(argv[0])
    # a command is one short process that builds millions of acyclic objects (its modules' code,
    # rows, parsed JSON): the cyclic collector would walk them again and again for nothing
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        only = argv[0] if argv and argv[0] in COMMANDS else None
        args = parse_command_line(build_parser(only), argv)  # a command imports only its own module
        options = vars(args)
        if options.get("password_stdin"):
            from studio.app.password_input import read_secret_from_stdin

            read_secret_from_stdin(options[options["target_argument"]])
        try:
            return args.run(args)
        except StudioError as exc:
            if only in WRITE_COMMANDS and (vars(args).get("json") or only == "clone"):
                _print_write_outcome(exc)
            raise
    finally:
        if collecting:
            gc.enable()


#: The commands that write (their JSON says what became of a write that did not end normally).
WRITE_COMMANDS = frozenset({"clone", "reflect", "revert", "observe", "activate", "undo"})


def _print_write_outcome(exc: BaseException) -> None:
    """Print the JSON of a write that ended with a lost connection: `{"outcome", "found_after_reconnecting",
    "backup", "error"}` (outcome "written", "not-written" or "unknown"; exit 5 or 6). Other failures print
    nothing (their exit code says that nothing was written)."""
    from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable

    if isinstance(exc, OutcomeFoundAfterReconnect):
        doc = {"outcome": exc.outcome, "found_after_reconnecting": True, "backup": exc.backup, "error": str(exc)}
    elif isinstance(exc, ServerUnreachable):
        doc = {"outcome": exc.outcome, "found_after_reconnecting": False, "backup": exc.backup, "error": str(exc)}
    else:
        return
    from studio.cli.output import print_json

    print_json(doc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ARGV (default: the process's arguments); return its exit code (`studio.app.failures`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    show_notices()
    return report_failures(lambda: _run(argv))

"""Command line of Memory Studio: `memory-studio [PATH]` starts the studio; subcommands print JSON.

Subcommands (each added by an `add_<name>_command(subparsers)` function):
  inspect PATH --json [--recount] threads, OM records with Mastra's status figures and history
  tokens PATH THREAD_ID --json   Mastra's per-message token estimates and exact o200k counts

Exit codes, the same for every command (`exit_code_for` maps an error to one):
  0 done; 1 unexpected failure (a bug, a provider/engine failure); 2 bad input (missing file or
  thread, not SQLite, not a Mastra database, a damaged file where the command reads, invalid arguments); 3 refused, nothing written (the
  file is busy or locked, changed since it was read, the agent is active, a write was overtaken
  and left unrepaired, or the answer at a prompt was no); 4 I/O (disk full, read-only file or
  folder, disk I/O error). 130 on Ctrl-C.
The core (store, engine) is imported here; Qt only when the studio itself starts.
"""

from __future__ import annotations

import argparse
import json
import sys

from studio import __version__
from studio.errors import StoreError, StoreNotice, StudioError
from studio.paths import CHILD_FLAG  # the hidden first argument of the studio's own child processes

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Callable, Sequence

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_REFUSED, EXIT_IO = 0, 1, 2, 3, 4
#: The help of every command's `--json` (one wording everywhere; a command without a text form prints JSON anyway).
JSON_HELP = "print the result as JSON (commands without a text output print JSON either way)"
#: The help of a read command's PATH: it names how to reach the bundled sample (`sample-path`).
READ_PATH_HELP = ("memory.db path, file: URL or server URL (opened read-only); the bundled sample's path: "
                  "memory-studio sample-path")

#: Words of an SQLite / OS error that mean the disk or the file system refused the bytes (exit 4).
_IO_WORDS = ("database or disk is full", "disk is full", "no space left", "readonly", "read-only", "disk i/o error",
             "errno 28", "errno 30", "permission denied", "errno 13")
#: Words that mean another process holds the file (exit 3).
_LOCK_WORDS = ("database is locked", "is locked by another process", "database is busy")


class BadInput(StudioError):
    """The command's arguments name something that does not exist (exit 2)."""


def exit_code_for(exc: BaseException) -> int:
    """Return the documented exit code for EXC (see the module docstring).

    WriteRefused: "invalid" / "not-found" / "conflict" -> 2, the others (busy, reflecting,
    generation-changed) -> 3. StoreError: an I/O cause (disk full, read-only, I/O error; the
    message or any chained cause) -> 4, a lock -> 3, otherwise 2. BadInput -> 2. Any other
    StudioError -> 1.
    """
    from studio.errors import WriteRefused

    if isinstance(exc, WriteRefused):
        return EXIT_BAD_INPUT if exc.reason in ("invalid", "not-found", "conflict") else EXIT_REFUSED
    if isinstance(exc, BadInput):
        return EXIT_BAD_INPUT
    if isinstance(exc, StoreError):
        texts, seen = [], exc
        while seen is not None and len(texts) < 8:
            texts.append(str(seen).lower())
            seen = seen.__cause__ or seen.__context__
        text = " ".join(texts)
        # SQLite's own "disk I/O error" under a read that the store explained is a damaged file (bad
        # input, 2); it means I/O (4) only when the studio's message itself says so
        if any(w in text for w in _IO_WORDS if w != "disk i/o error") or "disk i/o error" in texts[0]:
            return EXIT_IO
        if any(w in text for w in _LOCK_WORDS):
            return EXIT_REFUSED
        return EXIT_BAD_INPUT
    return EXIT_FAILURE


_FLAT = (str, int, float)  # with None: the values json writes without nesting (bool is an int)
_FLAT_TYPES = frozenset({str, int, float, bool, type(None)})
_ENCODER = json.JSONEncoder(ensure_ascii=False)  # one encoder: json.dumps(..., ensure_ascii=False) builds one per call
_STRING = json.encoder.encode_basestring  # a str as json writes it with ensure_ascii=False (C)
_FLAT_ENCODERS: dict[int, json.JSONEncoder] = {}


def _scalar(value: object) -> str:
    """`json.dumps(VALUE, ensure_ascii=False)` of a str, int, float, bool or None."""
    if value.__class__ is str:
        return _STRING(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return _ENCODER.encode(value)


def pretty_json(data: object, level: int = 0) -> str:
    """Return `json.dumps(DATA, ensure_ascii=False, indent=2)` byte for byte (LEVEL: the nesting depth).

    json's pretty printer runs in Python, one call per value; here every list or object whose values
    are all scalars is written by json's C encoder in one call (its separators carry the line breaks
    and indentation), keys and other scalars by one shared encoder: ~10x faster on `threads --all`'s
    5,007 ids and on inspect's per-thread rows. Raises TypeError for a value json cannot write, as
    json.dumps does.
    """
    if isinstance(data, dict):
        if not data:
            return "{}"
        values = data.values()
    elif isinstance(data, (list, tuple)):
        if not data:
            return "[]"
        values = data
    else:
        return _scalar(data) if data is None or isinstance(data, _FLAT) else json.dumps(data, ensure_ascii=False)
    inner = "\n" + "  " * (level + 1)
    if _FLAT_TYPES.issuperset(map(type, values)) or all(v is None or isinstance(v, _FLAT) for v in values):
        encoder = _FLAT_ENCODERS.get(level)
        if encoder is None:
            encoder = _FLAT_ENCODERS[level] = json.JSONEncoder(ensure_ascii=False, separators=("," + inner, ": "))
        text = encoder.encode(data)
        return text[0] + inner + text[1:-1] + "\n" + "  " * level + text[-1]
    if isinstance(data, dict):
        if not all(k.__class__ is str for k in data):  # json's own key conversions (numbers, null...)
            return json.dumps(data, ensure_ascii=False, indent=2).replace("\n", "\n" + "  " * level)
        body = ("," + inner).join(
            f"{_STRING(k)}: {_scalar(v) if v is None or isinstance(v, _FLAT) else pretty_json(v, level + 1)}"
            for k, v in data.items())
        return "{" + inner + body + "\n" + "  " * level + "}"
    body = ("," + inner).join(_scalar(v) if v is None or isinstance(v, _FLAT) else pretty_json(v, level + 1)
                              for v in data)
    return "[" + inner + body + "\n" + "  " * level + "]"


def _dump(data: object) -> None:
    # one write of the whole text: json.dump to a stream writes every token separately (1.1 M writes
    # for inspect of the benchmark file)
    sys.stdout.write(pretty_json(data) + "\n")


# -- inspect ----------------------------------------------------------------------------------

def inspect_database(path: str, *, recount: bool = False) -> dict:
    """Return the `inspect --json` document for the database at PATH (see module docstring).

    RECOUNT adds to each history entry the tokenx and exact o200k recounts of its log and which
    one the stored observationTokenCount matches (see studio.engine.recount).
    """
    from studio.common.om_settings import max_threshold, resolve_settings
    from studio.engine.status import iter_statuses
    from studio.store.memory_store import MemoryStore
    from studio.store.records import Thread

    if recount:  # tiktoken's o200k table costs ~30 ms to build: only when asked for
        from studio.engine.recount import recount_observations
    with MemoryStore.open(path) as store, store.snapshot():
        # one statement per kind of row (threads, message counts, OM generations, unobserved
        # messages): the count does not grow with the number of threads (issue 13)
        threads = store.list_threads(with_counts=True)
        by_id = {t.id: t for t in threads}
        by_resource: dict[str | None, list[Thread]] = {}
        for t in threads:
            by_resource.setdefault(t.resource_id, []).append(t)
        out_threads = [{
            "id": t.id, "resource_id": t.resource_id, "title": t.title, "metadata": t.metadata,
            "created_at": t.created_at, "updated_at": t.updated_at, "message_count": t.message_count,
        } for t in sorted(threads, key=lambda t: str(t.resource_id))]  # stable: createdAt DESC within a resource
        histories = store.om_histories()
        keyed = []
        for key in store.om_lookup_keys():
            history = histories.get(key["lookupKey"])
            if not history:
                continue
            current = history[0]
            if current.scope == "resource":
                governed = by_resource.get(current.resource_id, [])
            elif current.thread_id in by_id:
                governed = [by_id[current.thread_id]]
            elif current.thread_id:  # deleted thread, record left (Mastra #16621): getStatus still reports on it
                governed = [Thread(id=current.thread_id, resource_id=current.resource_id or "")]
            else:
                governed = []
            keyed.append((history, governed))
        # each thread's unobserved messages are decoded, counted and dropped in turn (iter_statuses)
        statuses = {(s.thread_id, s.record_id): s.to_json() for s in iter_statuses(
            store, [(t, h[0]) for h, governed in keyed for t in governed], threads)}
        om = []
        for history, governed in keyed:
            current = history[0]
            settings = resolve_settings(current.config, current.scope)
            status = {t.id: statuses[(t.id, current.id)] for t in governed}
            om.append({
                "lookup_key": current.lookup_key, "scope": current.scope, "resource_id": current.resource_id,
                "thread_id": current.thread_id, "record_id": current.id,
                "generation_count": current.generation_count, "origin_type": current.origin_type,
                "observation_token_count": current.observation_token_count,
                "message_tokens": max_threshold(settings.message_tokens),
                "observation_tokens": max_threshold(settings.reflection_tokens),
                "thread_missing": current.scope == "thread" and current.thread_id not in by_id,
                "json_errors": current.json_errors,
                "status": status,
                "history": [{
                    "record_id": h.id, "generation_count": h.generation_count, "origin_type": h.origin_type,
                    "observation_token_count": h.observation_token_count, "created_at": h.created_at,
                    **({"recount": recount_observations(h.active_observations, h.observation_token_count).to_json()}
                       if recount else {}),
                } for h in history],
            })
        return {"path": store.location.display, "threads": out_threads, "observational_memory": om}


def add_inspect_command(subparsers) -> None:
    """Register `inspect PATH --json`."""
    p = subparsers.add_parser("inspect", help="threads and OM status of a memory.db, as JSON")
    p.add_argument("path", help=READ_PATH_HELP)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--recount", action="store_true",
                   help="recount every generation's log (tokenx and exact o200k) and say which the stored count matches")
    p.set_defaults(run=_run_inspect)


def _run_inspect(args) -> int:
    _dump(inspect_database(args.path, recount=args.recount))
    return EXIT_OK


# -- tokens -----------------------------------------------------------------------------------

def thread_tokens(path: str, thread_id: str) -> dict:
    """Return the `tokens --json` document: Mastra estimates and exact o200k counts per message."""
    from studio.engine import tokens
    from studio.store.memory_store import MemoryStore

    with MemoryStore.open(path) as store, store.snapshot():
        if store.get_thread(thread_id) is None:
            raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
        messages = [m.as_mastra() for m in store.list_messages(thread_id)]
    return {
        "thread_id": thread_id,
        "per_message": {m["id"]: tokens.count_messages([m]) for m in messages},
        "all_messages": tokens.count_messages(messages),
        "exact": {"encoding": "o200k_base",
                  "per_message": {m["id"]: tokens.exact_message_tokens(m) for m in messages}},
    }


def add_tokens_command(subparsers) -> None:
    """Register `tokens PATH THREAD_ID --json` (`--thread ID` accepted too, as every other command takes it)."""
    p = subparsers.add_parser("tokens", help="token counts of a thread's messages, as JSON")
    p.add_argument("path", help=READ_PATH_HELP)
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
    _dump(thread_tokens(args.path, thread_id))
    return EXIT_OK


def _from_module(module: str, function: str) -> Callable:
    """Return a registrar that imports MODULE only when the parser is built, then calls FUNCTION."""
    def add(subparsers) -> None:
        import importlib

        getattr(importlib.import_module(module), function)(subparsers)
    return add


# One line per subcommand; area commands live in their own modules (studio/cli_<area>.py).
COMMANDS: dict[str, Callable] = {
    "inspect": add_inspect_command,
    "tokens": add_tokens_command,
    "timeline": _from_module("studio.cli.timeline", "add_timeline_command"),
    "whatif": _from_module("studio.cli.timeline", "add_whatif_command"),
    "threads": _from_module("studio.cli.history", "add_threads_command"),
    "recall": _from_module("studio.cli.history", "add_recall_command"),
    "speakers": _from_module("studio.cli.history", "add_speakers_command"),
    "clone": _from_module("studio.cli.history", "add_clone_command"),
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


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, told the terminal width: its own probe imports shutil (and bz2, lzma),
    ~3 ms of every command's start. Width as shutil.get_terminal_size gives it: $COLUMNS, the terminal, 80."""

    def __init__(self, prog: str, **kwargs) -> None:
        if kwargs.get("width") is None:
            import os

            try:
                columns = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(sys.__stdout__.fileno()).columns
            except (ValueError, OSError, AttributeError):
                columns = 80
            kwargs["width"] = (columns or 80) - 2
        super().__init__(prog, **kwargs)


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
    return parser


#: Image formats `--screenshot` writes, by file suffix (Qt image-writer names).
SCREENSHOT_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".bmp": "BMP"}


def screenshot_format(path: str) -> str:
    """Return the image format `--screenshot PATH` writes (the one its suffix names, e.g. "JPEG" for .jpg).

    Raises BadInput (exit 2) when the suffix names no format the studio writes, or when PATH's folder
    does not exist (the studio creates no folders) or is not a folder.
    """
    from pathlib import Path

    out = Path(path)
    fmt = SCREENSHOT_FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise BadInput(f"--screenshot {path}: name a .png, .jpg, .jpeg or .bmp file (the suffix sets the format)")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise BadInput(f"--screenshot {path}: the folder {folder} does not exist")
    return fmt


#: Bounds of `--size` per side (pixels): a smaller window cannot lay out its tabs, a larger picture takes
#: seconds per thousand pixels to render and hundreds of MB to hold (20000x20000 took 35 s).
MIN_WIDTH, MIN_HEIGHT, MAX_SIDE = 200, 150, 8000


def parse_window_size(text: str) -> tuple[int, int]:
    """Parse `--size` "1400x900" into (width, height) in pixels.

    Raises BadInput (exit 2) unless TEXT is WIDTHxHEIGHT with MIN_WIDTH <= width <= MAX_SIDE and
    MIN_HEIGHT <= height <= MAX_SIDE.
    """
    w, sep, h = (text or "").strip().lower().partition("x")
    w, h = w.strip(), h.strip()
    if not sep or not w.isdigit() or not h.isdigit():
        raise BadInput(f"--size must be WIDTHxHEIGHT in pixels, e.g. 1024x700, not {text!r}")
    width, height = int(w), int(h)
    if not (MIN_WIDTH <= width <= MAX_SIDE and MIN_HEIGHT <= height <= MAX_SIDE):
        raise BadInput(f"--size {text}: the width must be {MIN_WIDTH}..{MAX_SIDE} and the height "
                       f"{MIN_HEIGHT}..{MAX_SIDE} pixels")
    return width, height


def build_gui_parser() -> argparse.ArgumentParser:
    """Return the parser of `memory-studio [PATH] [--screenshot OUT.png ...]` (the studio)."""
    _untranslated_argparse()
    p = argparse.ArgumentParser(
        prog="memory-studio",
        description="Open a Mastra memory.db in Memory Studio (the bundled sample when no PATH is given; "
                    "memory-studio sample-path prints its path for the subcommands). "
                    f"Subcommands: {', '.join(COMMANDS)} (memory-studio SUBCOMMAND --help).")
    p.add_argument("--version", action="version", version=f"memory-studio {__version__}")
    p.add_argument("path", nargs="?", help="memory.db path, file: URL, or postgresql:// / libsql:// / https:// URL")
    p.add_argument("--screenshot", metavar="OUT.png",
                   help="render the window to an image (PNG, or JPEG/BMP by the suffix) and exit")
    p.add_argument("--thread", metavar="ID", help="select this thread")
    p.add_argument("--tab", choices=["observations", "history", "messages", "speakers", "participants",
                                     "working-memory", "timeline", "trace", "context", "health"],
                   help="show this tab (speakers and participants name the same tab)")
    p.add_argument("--size", default="1400x900", metavar="WIDTHxHEIGHT",
                   help=f"window size for --screenshot in pixels, width {MIN_WIDTH}..{MAX_SIDE}, "
                        f"height {MIN_HEIGHT}..{MAX_SIDE} "
                        "(default %(default)s)")
    return p


def run_child(argv: Sequence[str]) -> int:
    """Run the child process named by ARGV[0] ("backup" or "helper") in this process; return its exit code.

    Failures propagate (the parent reads the child's stderr and exit status), as with `python -c`.
    """
    kind, rest = (argv[0] if argv else ""), list(argv[1:])
    if kind == "backup":
        from studio.store.backup import run_child as run_backup

        return run_backup(rest)
    if kind == "helper":
        from studio.app.helper_process import main as serve_helper  # no Qt: the helper runs loaders only

        serve_helper()
        return EXIT_OK
    print(f"memory-studio: unknown child process {kind!r}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _show_notices() -> None:
    """Print each StoreNotice (e.g. a token written in a URL) as `memory-studio: warning: …` on stderr."""
    import warnings

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, StoreNotice):
            print(f"memory-studio: warning: {message}", file=sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.simplefilter("always", StoreNotice)
    if getattr(warnings.showwarning, "__name__", "") != "show":
        warnings.showwarning = show


def _refuse_unknown_command(argv: Sequence[str]) -> None:
    """Raise BadInput when ARGV[0] reads as a mistyped command (a bare lowercase word, no file of that name).

    Without this, `memory-studio inspct memory.db` reached the studio's parser, which took the word for
    the PATH and refused the real path as an "unrecognized argument". A file of that name still opens.
    """
    import os
    import re

    word = argv[0] if argv else ""
    if not re.fullmatch(r"[a-z][a-z-]*", word) or os.path.lexists(word):
        return
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise BadInput(f"{word!r} is not a command{hint} nor a file; commands: {', '.join(COMMANDS)} "
                   "(memory-studio --help)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (see the module docstring and `exit_code_for`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _show_notices()
    if argv and argv[0] == CHILD_FLAG:
        return run_child(argv[1:])
    try:
        if argv and argv[0] in COMMANDS:
            # a command is one short process that builds millions of acyclic objects (its modules'
            # code, rows, parsed JSON): the cyclic collector would walk them again and again for nothing
            import gc

            collecting = gc.isenabled()
            gc.disable()
            try:
                args = build_parser(argv[0]).parse_args(argv)  # a command imports only its own module
                return args.run(args)
            finally:
                if collecting:
                    gc.enable()
        _refuse_unknown_command(argv)
        args = build_gui_parser().parse_args(argv)
        if args.tab == "speakers":   # the tab's title in the studio; "participants" is its older name here
            args.tab = "participants"
        if args.screenshot:
            screenshot_format(args.screenshot)
        parse_window_size(args.size)   # before Qt loads: a wrong size costs no window
        if args.path:
            from studio.store.warmup import warm_up

            warm_up(args.path)   # psycopg / httpx load while Qt loads and the window is built
        from studio.ui.app import run_studio  # Qt is imported only here

        return run_studio(args)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help 0
        return int(exc.code) if isinstance(exc.code, int) else EXIT_BAD_INPUT
    except StudioError as exc:
        print(f"memory-studio: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `memory-studio inspect … | head`: the reader left; not an error worth a message
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:  # last resort: a message, not a traceback
        print(f"memory-studio: unexpected error: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def run_program() -> None:
    """Run the command line as a program (`python -m studio`, the `memory-studio` script); exit with main()'s code.

    After a subcommand, what is still alive is moved out of the cyclic collector's reach (`gc.freeze`)
    before the interpreter exits: its exit-time collections would walk every object the command and
    its imports made (~5 ms of `threads --all`, ~8 ms of a small `inspect`) to free memory the end of
    the process frees anyway. Objects are still released by reference counting as the interpreter
    tears down; only cyclic garbage is left to the operating system. Not done in `main`, which tests
    call in-process, nor after the studio or a child process.
    """
    argv = sys.argv[1:]
    code = main(argv)
    if argv and argv[0] in COMMANDS:
        import gc

        gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run_program()

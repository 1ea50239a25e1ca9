"""How a failure reaches the user, for both faces: exit codes, `BadInput`, and the studio's sentences (no Qt).

Exit codes, the same for every command and for the studio's start (`exit_code_for` maps an error to
one): 0 done; 1 unexpected failure (a bug, a provider/engine failure); 2 bad input (missing file or
thread, not SQLite, not a Mastra database, a damaged file where the command reads, invalid
arguments); 3 refused, nothing written (the file is busy or locked, changed since it was read, the
agent is active, a write was overtaken and left unrepaired, the server has no connection free, or
the answer at a prompt was no); 4 I/O (disk full, read-only file or folder, disk I/O error); 5
outcome found after reconnecting (a write's COMMIT was sent, the connection dropped before its
answer, and a re-read after reconnecting found it written, backup kept, or not written); 6 dead
server (a server store could not be reached or the connection died: nothing was written, or, when it
died after COMMIT was sent and never came back, the outcome is unknown and the backup kept). 130 on
Ctrl-C.

`report_failures` runs a face's work and turns what it raises into one line on stderr and that
code; `describe_error` gives the studio's one sentence for a failed read, preview or write.
Imported by every command: it imports nothing but `studio.errors` until it is used.
"""

from __future__ import annotations

import sys

from studio.errors import StoreError, StoreNotice, StudioError, cause_chain

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_REFUSED, EXIT_IO = 0, 1, 2, 3, 4
#: A write whose COMMIT answer was lost; its outcome was found by re-reading after reconnecting (JSON `outcome`).
EXIT_RECONNECTED = 5
#: A server store could not be reached, or the connection died (JSON `outcome`: "not-written" or "unknown").
EXIT_SERVER_DOWN = 6
#: The exit code of a run stopped with Ctrl-C.
EXIT_INTERRUPTED = 130

#: Words of an SQLite / OS error that mean the disk or the file system refused the bytes (exit 4).
_IO_WORDS = ("database or disk is full", "disk is full", "no space left", "readonly", "read-only", "disk i/o error",
             "errno 28", "errno 30", "permission denied", "errno 13")
#: Words that mean another process holds the file (exit 3).
_LOCK_WORDS = ("database is locked", "is locked by another process", "database is busy",
               "canceling statement due to lock timeout")
#: Sentences for the write refusals of studio.store.writes (WriteRefused.reason), as the studio says them.
REFUSALS = {
    "generation-changed": ("The agent reflected (or observed) meanwhile: the record is no longer what this "
                           "preview was made from, so nothing was written. Preview again."),
    "reflecting": ("A running process is reflecting this record right now (isReflecting is set and recent), "
                   "so nothing was written. Try again when it has finished."),
    "busy": ("Another process is writing this database or working on this record right now, so nothing was "
             "written. Try again in a moment."),
}


class BadInput(StudioError):
    """The arguments name something that does not exist or cannot be used (exit 2)."""


def exit_code_for(exc: BaseException) -> int:
    """Return the documented exit code for EXC (see the module docstring).

    OutcomeFoundAfterReconnect -> 5, ServerUnreachable -> 6 (and a StoreError of kind "unreachable", EXC's or a
    cause's: `studio.errors.store_error_kind`, the server gone or the connection died). WriteRefused:
    "invalid" / "not-found" / "conflict" -> 2, the others (busy, reflecting, generation-changed) -> 3.
    StoreError: an I/O cause (disk full, read-only, I/O error; the
    message or any chained cause) -> 4, a lock or kind "too-many-connections" -> 3, otherwise 2.
    BadInput -> 2. Any other StudioError -> 1.
    """
    from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable, WriteRefused, store_error_kind

    if isinstance(exc, OutcomeFoundAfterReconnect):
        return EXIT_RECONNECTED
    if isinstance(exc, ServerUnreachable):
        return EXIT_SERVER_DOWN
    if isinstance(exc, WriteRefused):
        return EXIT_BAD_INPUT if exc.reason in ("invalid", "not-found", "conflict") else EXIT_REFUSED
    if isinstance(exc, BadInput):
        return EXIT_BAD_INPUT
    if isinstance(exc, StoreError):
        texts = [str(seen).lower() for seen in cause_chain(exc, limit=8)]
        text = " ".join(texts)
        # SQLite's own "disk I/O error" under a read that the store explained is a damaged file (bad
        # input, 2); it means I/O (4) only when the studio's message itself says so
        if any(w in text for w in _IO_WORDS if w != "disk i/o error") or "disk i/o error" in texts[0]:
            return EXIT_IO
        if any(w in text for w in _LOCK_WORDS) or store_error_kind(exc) == "too-many-connections":
            return EXIT_REFUSED
        if store_error_kind(exc) == "unreachable":   # set by the backends from the driver's codes
            return EXIT_SERVER_DOWN
        return EXIT_BAD_INPUT
    return EXIT_FAILURE


def say(text: str) -> None:
    """Print TEXT on stderr as `memory-studio: TEXT` (a message, a refusal, a warning).

    A lone surrogate (a file name's byte that is not UTF-8) is printed as U+FFFD, the replacement char.
    """
    if not text.isascii():
        import re

        text = re.sub("[\ud800-\udfff]", "\ufffd", text)
    print(f"memory-studio: {text}", file=sys.stderr)


def report_failures(work: Callable[[], int]) -> int:
    """Return WORK()'s exit code; what it raises becomes one line on stderr and the exit code for it.

    SystemExit (argparse: usage errors 2, --help 0) gives its code; a StudioError its message and
    `exit_code_for`; Ctrl-C 130; a closed pipe (`… | head`: the reader left) 1 without a message;
    anything else "unexpected error" and 1 (a message, not a traceback).
    """
    try:
        return work()
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_BAD_INPUT
    except StudioError as exc:
        say(str(exc))
        return exit_code_for(exc)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:  # last resort: a message, not a traceback
        say(f"unexpected error: {exc.__class__.__name__}: {exc}")
        return EXIT_FAILURE


#: The notices this command printed already (`show_notices` prints each once).
_SHOWN: set[str] = set()


def show_notices() -> None:
    """Print each StoreNotice (e.g. a token written in a URL) as `memory-studio: warning: …` on stderr."""
    import warnings

    default = warnings.showwarning
    _SHOWN.clear()   # a new command: each notice once more

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, StoreNotice):
            if str(message) not in _SHOWN:   # once per command, however often the store is opened
                _SHOWN.add(str(message))
                say(f"warning: {message}")
        else:
            default(message, category, filename, lineno, file, line)

    warnings.simplefilter("always", StoreNotice)
    if getattr(warnings.showwarning, "__name__", "") != "show":
        warnings.showwarning = show


def refusal_reason(exc: BaseException) -> str | None:
    """Return a write refusal's reason ("generation-changed", "reflecting", …), or None for other errors."""
    from studio.engine.reflector import ReflectionRejected

    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) and not isinstance(exc, ReflectionRejected) else None


def describe_error(exc: BaseException) -> str:
    """Return one user-facing sentence for a failed read, preview or commit (never a key: messages are redacted)."""
    from studio.common.cancel import Cancelled
    from studio.engine.reflector import ReflectionRejected

    if isinstance(exc, Cancelled):
        return "Cancelled: nothing was written."
    reason = refusal_reason(exc)
    if reason in REFUSALS:
        detail = str(exc).strip()
        return f"{REFUSALS[reason]}\n{detail}" if detail else REFUSALS[reason]
    text = str(exc).strip() or exc.__class__.__name__
    if isinstance(exc, ReflectionRejected):
        return text
    if not text.endswith((".", "!", "?")):
        text += "."
    return text


def write_outcome(exc: BaseException) -> str:
    """What became of a write that raised EXC: "written" (its COMMIT answer was lost, and re-reading the server
    after reconnecting found it), "unknown" (COMMIT sent, the server never answered again: backup kept) or
    "not-written" (every other failure or refusal)."""
    from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable

    if isinstance(exc, (OutcomeFoundAfterReconnect, ServerUnreachable)):
        return exc.outcome
    return "not-written"


def outcome_heading(exc: BaseException) -> str:
    """The few words a face puts before a failed write's sentence (status bar, box title), true to its outcome.

    "Written (found after reconnecting)", "Nothing was written (found after reconnecting)", "Outcome unknown
    (the server is unreachable)", "Nothing was written (the server is unreachable)" or "Nothing was written".
    """
    from studio.errors import OutcomeFoundAfterReconnect, ServerUnreachable

    outcome = write_outcome(exc)
    if outcome == "written":
        return "Written (found after reconnecting)"
    if outcome == "unknown":
        return "Outcome unknown (the server is unreachable)"
    if isinstance(exc, OutcomeFoundAfterReconnect):
        return "Nothing was written (found after reconnecting)"
    if isinstance(exc, ServerUnreachable):
        return "Nothing was written (the server is unreachable)"
    return "Nothing was written"


def outcome_line(exc: BaseException) -> str:
    """The progress line a write dialog leaves after EXC: `outcome_heading(EXC)` as a sentence."""
    return outcome_heading(exc) + "."

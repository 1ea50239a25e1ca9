"""The entry point of `memory-studio` (the console script, `python -m studio`, the desktop app): pick a face.

    memory-studio COMMAND …           the command line (`studio.cli`): print or write, then exit
    memory-studio --studio-child …    a child process of the studio (the file backup, the helper)
    memory-studio [PATH] [--screenshot OUT.png …]   the studio itself (`studio.ui`)

The faces never import each other; only this module knows both. It imports neither Qt nor a
database driver: a command loads what it needs, the studio loads Qt once it starts.
"""

from __future__ import annotations

import sys

from studio.app.failures import EXIT_BAD_INPUT, EXIT_OK, say, show_notices
from studio.paths import CHILD_FLAG  # the hidden first argument of the studio's own child processes

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Sequence


def run_child(argv: Sequence[str]) -> int:
    """Run the child process named by ARGV[0] ("backup" or "helper") in this process; return its exit code.

    Failures propagate (the parent reads the child's stderr and exit status), as with `python -c`.
    """
    kind, rest = (argv[0] if argv else ""), list(argv[1:])
    if kind == "backup":
        from studio.store.write.file_backup import run_child as run_backup

        return run_backup(rest)
    if kind == "helper":
        from studio.app.helper_process import main as serve_helper  # no Qt: the helper runs loaders only

        serve_helper()
        return EXIT_OK
    say(f"unknown child process {kind!r}")
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    """Run `memory-studio ARGV` (default: the process's arguments); return the exit code (`studio.app.failures`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    show_notices()
    if argv and argv[0] == CHILD_FLAG:
        return run_child(argv[1:])
    from studio import cli

    if argv and cli.takes(argv[0]):
        return cli.main(argv)
    from studio.ui.start import main as start_studio  # imports no Qt itself: the studio loads it as it starts

    return start_studio(argv, commands=list(cli.COMMANDS))


def run_program() -> None:
    """Run `memory-studio` as a program (the console script, `python -m studio`); exit with main()'s code.

    After a command, what is still alive is moved out of the cyclic collector's reach (`gc.freeze`)
    before the interpreter exits: its exit-time collections would walk every object the command and
    its imports made (~5 ms of `threads --all`, ~8 ms of a small `inspect`) to free memory the end of
    the process frees anyway. Objects are still released by reference counting as the interpreter
    tears down; only cyclic garbage is left to the operating system. Not done in `main`, which tests
    call in-process, nor after the studio or a child process.
    """
    argv = sys.argv[1:]
    code = main(argv)
    from studio.cli import COMMANDS

    if argv and argv[0] in COMMANDS:
        import gc

        gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run_program()

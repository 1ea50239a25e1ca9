"""Start the studio from its command line: `memory-studio [PATH] [--screenshot OUT.png] [--thread ID] [--tab T]
[--size WxH]` (no Qt here: the arguments are checked before Qt loads, so a wrong one costs no window).

`main` parses and checks the arguments (`studio.ui.arguments`), starts loading the database driver a
server URL needs (`studio.store.warmup`: psycopg / httpx load while Qt loads and the window is
built), then runs the studio (`studio.ui.app.run_studio`, which imports Qt). `studio.main` calls it
when the first argument is no command.
"""

from __future__ import annotations

from studio.app.failures import report_failures
from studio.ui.arguments import build_parser, parse_window_size, screenshot_format

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str], *, commands: Sequence[str] = ()) -> int:
    """Start the studio for ARGV (COMMANDS: the command line's, named in --help); return its exit code.

    Bad arguments exit 2 before Qt loads (`studio.app.failures`).
    """
    return report_failures(lambda: _start(list(argv), commands))


def _start(argv: list[str], commands: Sequence[str]) -> int:
    args = build_parser(commands).parse_args(argv)
    if args.tab == "speakers":   # the tab's title in the studio; "participants" is its older name here
        args.tab = "participants"
    if args.screenshot:
        screenshot_format(args.screenshot)
    parse_window_size(args.size)   # before Qt loads: a wrong size costs no window
    if args.password_stdin:   # before Qt loads too: a prompt on the terminal, or the first line of a pipe
        from studio.app.password_input import read_secret_from_stdin

        read_secret_from_stdin(args.path or "")
    if args.path:
        from studio.store.warmup import warm_up

        warm_up(args.path)   # psycopg / httpx load while Qt loads and the window is built
    from studio.ui.app import run_studio  # Qt is imported only here

    return run_studio(args)

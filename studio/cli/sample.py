"""`memory-studio sample-path [--json]`: the path of the bundled sample memory.db, for the read commands.

`memory-studio` alone opens the sample in the studio; the subcommands take a PATH, and this command
gives it: `memory-studio inspect "$(memory-studio sample-path)" --json`. Prints the path (text), or
`{"path": PATH}` with --json.
"""

from __future__ import annotations

import sys

from studio.app.failures import EXIT_OK
from studio.cli import JSON_HELP
from studio.cli.output import print_json
from studio.errors import StudioError


def sample_path() -> str:
    """Return the absolute path of the bundled sample memory.db (a real file Mastra wrote; studio.paths finds it
    in a checkout, an installed package `studio.resources` or the desktop app).

    Raises StudioError (exit 1) when the installation lacks it.
    """
    from studio.paths import SAMPLE_DATABASE

    if not SAMPLE_DATABASE.is_file():
        raise StudioError(f"the bundled sample is missing from this installation ({SAMPLE_DATABASE}); reinstall "
                          "memory-studio")
    return str(SAMPLE_DATABASE)


def add_sample_path_command(subparsers) -> None:
    """Register `sample-path [--json]`: print the bundled sample's path (what `memory-studio` alone opens)."""
    p = subparsers.add_parser(
        "sample-path", help="print the path of the bundled sample memory.db (what memory-studio alone opens)",
        epilog='e.g. memory-studio inspect "$(memory-studio sample-path)" --json')
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_sample_path)


def _run_sample_path(args) -> int:
    path = sample_path()
    if args.json:
        print_json({"path": path})
    else:
        sys.stdout.write(path + "\n")
    return EXIT_OK

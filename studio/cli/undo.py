"""`memory-studio undo`: undo the last studio write to a store (a file or a server) from its row backup.

    memory-studio undo TARGET [--backup FILE] [--yes] [--json]

TARGET: a memory.db path, a `postgresql://` URL (with `?schema=`) or a libSQL server URL (`libsql://`,
`http(s)://`). Every studio write saved the rows it changed as a JSON file in
`~/.local/share/memory-studio/backups/` (`studio.store.write.row_backup`); `undo` picks the newest
one of TARGET not undone yet (or FILE), shows what it will restore, asks (or `--yes`), and restores
those rows in one transaction (`studio.store.write.undo.undo_write`). It refuses, writing nothing,
when any of the rows changed since the write. `--json` prints
{"undone", "backup", "operation", "created_at", "deleted", "restored", "reinserted", "undo_backup",
"skipped_never_written"}.

Exit codes (studio.cli): 0 restored; 2 bad input (no backup left, a backup of another store or
already undone, no --yes without a terminal); 3 refused (rows changed since the write, a lock held by
another session for the whole 9 s, declined at the prompt); 4 I/O; 5 and 6 as every write
(`studio.app.failures`). A backup whose write never happened (every row as before it) is set aside
(`never_written`) and the write before it is offered; `--json` adds "skipped_never_written".
"""

from __future__ import annotations

from studio.app.failures import EXIT_OK, EXIT_REFUSED, exit_code_for
from studio.app.failures import say as _say
from studio.cli import JSON_HELP, add_target_argument
from studio.cli.output import print_json

__all__ = ["add_undo_command"]


def _run_undo(args) -> int:
    from studio.cli.interaction import TerminalInteraction
    from studio.store.write.undo import describe_backup, pick_backup, undo_write
    from studio.store.writes import WriteRefused

    try:
        path, document = pick_backup(args.target, args.backup)
    except WriteRefused as exc:
        _say(str(exc))
        return exit_code_for(exc)
    from studio.cli.write_options import atomicity

    summary = f"{describe_backup(document)} Store: {document.get('target')}; backup: {path}."
    atomic, note = atomicity(args.target)
    if not TerminalInteraction(assume_yes=args.yes).confirmed(
            "Restore these rows?" + note, "undo writes to the store: add --yes to confirm (not a terminal)",
            shown=summary):
        return EXIT_REFUSED
    try:
        result = undo_write(args.target, path)
    except WriteRefused as exc:
        _say(str(exc))
        return exit_code_for(exc)
    if args.json:
        print_json({**result, "atomic": atomic})
    else:
        print(f"Undid the {result['operation']} of {result['created_at']}: {result['deleted']} row(s) deleted, "
              f"{result['restored']} restored, {result['reinserted']} put back. "
              f"Its own backup: {result['undo_backup']}")
    return EXIT_OK


def add_undo_command(subparsers) -> None:
    """Register `undo TARGET [--backup FILE] [--yes] [--json]`."""
    p = subparsers.add_parser("undo", help="undo the last studio write to a store (a file, PostgreSQL or a "
                                           "libSQL server) from its row backup")
    add_target_argument(p, "target", help="memory.db path, postgresql://USER@HOST:PORT/DB?schema=NAME, "
                                          "libsql://HOST or http://127.0.0.1:PORT")
    p.add_argument("--backup", metavar="FILE", help="the row backup to undo (default: the newest write not undone)")
    p.add_argument("--yes", action="store_true", help="write without asking")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_undo)

"""The command line's `Interaction`: yes/no on the terminal, the write protocol's choices from the options.

A write command asks before it writes (`TerminalInteraction.confirm`: `[y/N]` on stderr, an
explicit yes only) unless `--yes` was given; without a terminal and without `--yes` the command
refuses (bad input) instead of waiting for an answer nobody can give. The protocol's other
questions are answered from the command's options (`studio.cli.write_options`): wait while
`--wait-idle` leaves time (the protocol itself stops asking when it runs out), and `--on-overtaken`
for an overtaken write; what the protocol does is said on stderr.
"""

from __future__ import annotations

import sys

from studio.app.failures import BadInput, say
from studio.app.write_protocol import Interaction

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.store.write.protocol import OvertakingWrite


def is_terminal() -> bool:
    """True when the command runs on a terminal (stdin and stderr), where it may ask."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class TerminalInteraction(Interaction):
    """Answer the write protocol on a terminal.

    ASSUME_YES: every confirmation is yes (`--yes`). ON_OVERTAKEN: the `--on-overtaken` choice
    ("repair", "revert" or "report": leave it, exit 3).
    """

    def __init__(self, *, assume_yes: bool = False, on_overtaken: str = "repair"):
        self._assume_yes = assume_yes
        self._on_overtaken = on_overtaken

    def confirm(self, title: str, text: str) -> bool:
        """Ask TEXT on the terminal (TITLE is the studio's heading: not shown); True only for an explicit yes."""
        if self._assume_yes:
            return True
        try:
            sys.stderr.write(f"{text} [y/N] ")
            sys.stderr.flush()
            answer = sys.stdin.readline()
        except (EOFError, OSError):
            return False
        return answer.strip().lower() in ("y", "yes")

    def confirmed(self, text: str, no_terminal: str, shown: str | None = None) -> bool:
        """Return True when the write may go on: --yes, or a yes to TEXT on the terminal (after SHOWN, if any).

        Without --yes and without a terminal raises BadInput(NO_TERMINAL); a no says "Nothing was written.".
        """
        if self._assume_yes:
            return True
        if not is_terminal():
            raise BadInput(no_terminal)
        if shown is not None:
            say(shown)
        if self.confirm("", text):
            return True
        say("Nothing was written.")
        return False

    def ask_wait_or_force(self, text: str) -> str:
        """Wait: the protocol asks only while --wait-idle leaves time (--force writes without the check)."""
        return "wait"

    def report_overtaken(self, findings: list[OvertakingWrite], text: str) -> str:
        """Say each finding; answer --on-overtaken ("report" leaves them: exit 3)."""
        for finding in findings:
            say(finding.describe())
        return self._on_overtaken if self._on_overtaken in ("repair", "revert") else "leave"

    def inform(self, text: str) -> None:
        """Say TEXT on stderr."""
        say(text)


class stdout_to_stderr:
    """Send print() output to stderr for a while (a preview shown before a terminal question)."""

    def __enter__(self):
        self._saved, sys.stdout = sys.stdout, sys.stderr

    def __exit__(self, *exc):
        sys.stdout = self._saved


def run_cancellable(run):
    """Return RUN(cancel) (a proposal: model calls or offline work), or None when it was cancelled.

    Ctrl+C sets the CancelToken (a model request in flight is aborted) and is raised again; a
    cancelled proposal says "Cancelled; nothing was written." (the command then exits 1).
    """
    from studio.common.cancel import Cancelled, CancelToken

    cancel = CancelToken()
    try:
        return run(cancel)
    except KeyboardInterrupt:
        cancel.cancel()
        raise
    except Cancelled:
        say("Cancelled; nothing was written.")
        return None

"""`--password-stdin`: a server's secret read from standard input instead of the URL (issue 22, item 4).

A password or token written in a URL is on the command line, which every user of the machine can
read (`ps`) and the shell keeps in its history. With `--password-stdin` (every command that takes
a target, and the studio) the first line of standard input is the secret: the PostgreSQL password,
or the libSQL auth token. On a terminal it is asked for without echo. The secret is held for this
process only (`studio.store.credentials.remember_for_session`: memory, never disk); the studio's
helper process receives it through its pipe, never through its arguments.
"""

from __future__ import annotations

import sys
from typing import TextIO

from studio.app.failures import BadInput
from studio.store import credentials as cred
from studio.store.target import is_server_target, parse_target, redact_url, strip_secrets, url_secret

__all__ = ["read_secret_from_stdin"]


def read_secret_from_stdin(target: str, stdin: TextIO | None = None) -> None:
    """Read TARGET's password or token from STDIN (default sys.stdin) and hold it for this process.

    The first line, without its line end; on a terminal a prompt without echo (getpass). Raises
    BadInput (exit 2) when TARGET is not a server URL, already holds its secret, or nothing was
    read. The rest of STDIN is left for the command's questions.
    """
    stdin = sys.stdin if stdin is None else stdin
    if not target or not is_server_target(target):
        raise BadInput("--password-stdin is for a server URL (postgresql://…, libsql://…): a local file needs none")
    location = parse_target(target)   # an unusable URL is refused before anything is read
    if url_secret(target):
        raise BadInput(f"{redact_url(target)} already holds its secret; with --password-stdin give the URL without "
                       f"it ({strip_secrets(target)})")
    kind = cred.secret_kind(target)
    if stdin.isatty():
        import getpass

        secret = getpass.getpass(f"{'Password' if kind == 'password' else 'Auth token'} for {location.display}: ")
    else:
        secret = stdin.readline().rstrip("\r\n")
    if not secret:
        raise BadInput(f"--password-stdin read no {kind} from standard input (its first line is the {kind}, e.g. "
                       f"printf '%s\\n' \"$SECRET\" | memory-studio … --password-stdin URL)")
    cred.remember_for_session(target, secret)

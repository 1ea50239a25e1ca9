"""The studio's private folders and files (backups, its journal of own writes): made 0700, refused when not safe.

A backup is restored into the user's database by `memory-studio undo`, so a backup another local
user could have written (or replaced) must never be read. Hence:

* `ensure_private_folder` creates every missing folder of a path itself, each 0700 whatever the
  umask (`Path.mkdir(parents=True)` makes the parents with the umask's mode: 0777 under `umask 000`);
* `check_private_folder` refuses a folder that is not a folder, not owned by the user, or writable
  by group or others (a 0777 backups folder made by someone else, or by an old umask);
* `check_own_file` refuses a file that is not a regular file (a symlink), not owned by the user, or
  writable by group or others.

Refusals are `WriteRefused("invalid", sentence)`: the sentence names the path, what is wrong and the
command that fixes it; nothing is read from or written to such a place. POSIX only: on Windows (no
owners or modes of this kind) every check passes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from studio.errors import WriteRefused

__all__ = ["check_own_file", "check_private_folder", "ensure_private_folder", "unsafe_reason"]

_CHECKED = os.name == "posix"


def unsafe_reason(path: Path, *, folder: bool) -> str | None:
    """Why PATH (a folder if FOLDER, else a file) is not safe to trust, or None when it is (or does not exist).

    Unsafe: another type (a symlink, a file for a folder), another owner, or writable by group/others.
    """
    if not _CHECKED:
        return None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if folder and not stat.S_ISDIR(st.st_mode):
        return "is not a folder (a link or a file)"
    if not folder and not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a link or a special file)"
    if st.st_uid != os.getuid():
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"can be written by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def check_private_folder(path: str | os.PathLike[str]) -> None:
    """Refuse (WriteRefused "invalid") the folder PATH when it is unsafe (see `unsafe_reason`); a missing one passes."""
    path = Path(path)
    why = unsafe_reason(path, folder=True)
    if why:
        raise WriteRefused("invalid", f"The backups folder {path} {why}, so the studio neither keeps backups "
                                      f"there nor restores from it; nothing was written. Make it yours and private "
                                      f"(chmod 700 '{path}', as its owner) or choose another folder.")


def check_own_file(path: str | os.PathLike[str]) -> None:
    """Refuse (WriteRefused "invalid") the file PATH when it is unsafe: it is never read or restored."""
    path = Path(path)
    why = unsafe_reason(path, folder=False)
    if why:
        raise WriteRefused("invalid", f"The backup {path} {why}: it may not be the studio's, so it is not read or "
                                      "restored; nothing was written.")


def ensure_private_folder(path: str | os.PathLike[str]) -> Path:
    """Create PATH and any missing parent, each 0700 whatever the umask; return PATH.

    An existing PATH is checked (`check_private_folder`; WriteRefused when unsafe), its existing
    parents are left as they are. Raises OSError when a folder cannot be made.
    """
    path = Path(path)
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass   # made meanwhile (another write of ours): checked below like any existing folder
        else:
            os.chmod(folder, 0o700)   # the umask may have taken bits away, never added: set it exactly
    check_private_folder(path)
    return path

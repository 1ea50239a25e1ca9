"""Where the studio's bundled resources live (sample database, tokenizer ranks, prompts, icons).

The repository keeps them in the top-level `resources/` folder; an installed studio (wheel,
`pip install .`, `pipx install .`) carries the same folder as the package `studio.resources`
(pyproject maps `resources/` to it), and the PyInstaller app unpacks it as `resources/` beside
its modules. `resources_dir()` finds whichever applies, in this order:

1. the `resources/` folder beside the `studio` package (a checkout, an editable install, or
   the frozen app, whose modules live in `sys._MEIPASS`);
2. the installed package `studio.resources`: first as the folder `studio/resources` itself,
   then through `importlib.resources` (imported only if that folder is not there).

Zipped installs (a wheel on `sys.path` without unpacking) are not supported: the tokenizer and
the sample database must be real files.
"""

from __future__ import annotations

import sys
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Iterator

#: A file every complete resources folder holds (how a folder is recognised as ours).
_MARKER = Path("tokenizers") / "o200k_base.tiktoken"


def _candidates() -> Iterator[Path]:
    """Yield the folders that may hold the resources, most specific first.

    `importlib.resources` (and the tempfile/zipfile machinery it imports, ~10 ms) is consulted
    only when no folder beside the modules holds them: a command's start stays short.
    """
    here = Path(__file__).resolve().parent
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        yield Path(bundle) / "resources"
    yield here.parent / "resources"
    yield here / "resources"  # the installed package studio.resources, unpacked
    try:
        from importlib.resources import files

        yield Path(str(files("studio.resources")))
    except (ImportError, TypeError, ValueError):  # not installed as a package (a plain checkout)
        pass


def resources_dir() -> Path:
    """Return the folder of the bundled resources (see module docstring).

    Falls back to the checkout's `resources/` path when none holds the tokenizer ranks, so that
    the error a caller raises names the place it looked.
    """
    for folder in _candidates():
        if (folder / _MARKER).is_file():
            return folder
    return Path(__file__).resolve().parent.parent / "resources"


RESOURCES = resources_dir()
SAMPLE_DATABASE = RESOURCES / "sample" / "memory.db"
TOKENIZERS = RESOURCES / "tokenizers"
PROMPTS = RESOURCES / "prompts"
ICONS = RESOURCES / "icons"


#: Hidden first argument with which the studio starts its own child processes when it is a frozen
#: app (PyInstaller: `sys.executable` is the app, not Python): `CHILD_FLAG backup SRC DST IMMUTABLE
#: PARENT_PID LOCK_WAIT_S` (studio.store.write.file_backup) and `CHILD_FLAG helper` (studio.app.helper_process).
#: Here, in the leaf module, so the store need not import the CLI.
CHILD_FLAG = "--studio-child"


def user_cache_dir() -> Path:
    """Return the studio's folder for caches it can rebuild (never the user's data): `memory-studio` under
    `$MEMORY_STUDIO_CACHE_DIR` when set (tests), else the platform's user cache folder (`$XDG_CACHE_HOME`
    or ~/.cache on Linux, ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows). Not created here."""
    import os

    override = os.environ.get("MEMORY_STUDIO_CACHE_DIR")
    if override:
        return Path(override)
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memory-studio"

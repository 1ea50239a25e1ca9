"""The studio's command line (`memory-studio [PATH] [--screenshot OUT.png] [--thread ID] [--tab T] [--size WxH]`):
its parser and the checks of its values, without Qt (`studio.ui.start` checks them before Qt loads;
`studio.ui.app` applies them to the window).
"""

from __future__ import annotations

from studio.app.failures import BadInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


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


def build_parser(commands: Sequence[str] = ()) -> argparse.ArgumentParser:
    """Return the parser of `memory-studio [PATH] [--screenshot OUT.png ...]` (the studio); COMMANDS: the
    command line's command names, listed in the help."""
    import argparse

    from studio import __version__
    from studio.common.help_format import HelpFormatter

    p = argparse.ArgumentParser(
        prog="memory-studio", formatter_class=HelpFormatter,
        description="Open a Mastra memory.db in Memory Studio (the bundled sample when no PATH is given; "
                    "memory-studio sample-path prints its path for the subcommands), or a store on a server by its "
                    "URL: postgresql://USER@HOST/DB, libsql://DB-ORG.turso.io (or http://HOST:PORT for sqld), "
                    "mongodb://USER@HOST/DB; in the studio, File ▸ Connect… (Ctrl+L) asks for the URL and password. "
                    f"Subcommands: {', '.join(commands)} (memory-studio SUBCOMMAND --help).")
    p.add_argument("--version", action="version", version=f"memory-studio {__version__}")
    p.add_argument("path", nargs="?", help="memory.db path, file: URL, or a server URL: postgresql://, libsql://, "
                                            "http(s):// (sqld), mongodb:// or mongodb+srv://")
    p.add_argument("--password-stdin", action="store_true",
                   help="read the server's password or auth token from the first line of standard input instead "
                        "of the URL, where every user of this machine could read it (ps)")
    p.add_argument("--screenshot", metavar="OUT.png",
                   help="render the window to an image (PNG, or JPEG/BMP by the suffix) and exit")
    p.add_argument("--thread", metavar="ID", help="select this thread")
    p.add_argument("--tab", choices=["observations", "history", "messages", "speakers", "participants",
                                     "working-memory", "timeline", "trace", "context", "health", "vectors"],
                   help="show this tab (speakers and participants name the same tab)")
    p.add_argument("--size", default="1400x900", metavar="WIDTHxHEIGHT",
                   help=f"window size for --screenshot in pixels, width {MIN_WIDTH}..{MAX_SIDE}, "
                        f"height {MIN_HEIGHT}..{MAX_SIDE} "
                        "(default %(default)s)")
    return p

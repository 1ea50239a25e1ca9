"""Say which system libraries Qt's X11 (xcb) platform needs before Qt aborts without naming them.

Qt's own message on a minimal Linux desktop names only `libxcb-cursor0`, whatever is missing,
and then aborts the process. We try to load each library the xcb plugin links against (the list
is what `ldd` shows for PySide6's libqxcb.so and libQt6XcbQpa) and name the missing Debian/Ubuntu
packages instead.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: Shared library -> the Debian/Ubuntu package that provides it.
XCB_LIBRARIES = {
    "libxcb.so.1": "libxcb1",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
}


def uses_xcb(environ=os.environ) -> bool:
    """Return True when Qt will pick its X11 (xcb) platform: Linux, a DISPLAY, no Wayland, no override."""
    platform = environ.get("QT_QPA_PLATFORM", "")
    if not sys.platform.startswith("linux"):
        return False
    if platform:
        return platform.startswith("xcb")
    return bool(environ.get("DISPLAY")) and not environ.get("WAYLAND_DISPLAY")


def missing_xcb_packages(loader=ctypes.CDLL) -> list[str]:
    """Return the packages whose libraries cannot be loaded ([] when all load)."""
    missing = []
    for library, package in XCB_LIBRARIES.items():
        try:
            loader(library)
        except OSError:
            missing.append(package)
    return missing


def xcb_problem(environ=os.environ, loader=ctypes.CDLL) -> str | None:
    """Return a sentence naming the packages to install when Qt's xcb platform cannot start, else None."""
    if not uses_xcb(environ):
        return None
    missing = missing_xcb_packages(loader)
    if not missing:
        return None
    return ("Qt cannot open a window: these X11 libraries are missing: " + " ".join(missing) + ". "
            "On Debian or Ubuntu: sudo apt-get install " + " ".join(missing))

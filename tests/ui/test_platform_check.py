"""The X11 library check names the missing packages, and stays quiet when Qt will not use xcb."""

from __future__ import annotations

import sys

from studio.ui.platform_check import XCB_LIBRARIES, missing_xcb_packages, uses_xcb, xcb_problem


def loader_without(*absent):
    def load(name):
        if name in absent:
            raise OSError(f"{name}: cannot open shared object file")
        return object()
    return load


def test_names_missing_packages_for_x11(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")  # xcb is the Linux X11 platform
    env = {"DISPLAY": ":0"}
    message = xcb_problem(env, loader_without("libxcb-icccm.so.4", "libxcb-keysyms.so.1"))
    assert "libxcb-icccm4" in message and "libxcb-keysyms1" in message
    assert "apt-get install libxcb-icccm4 libxcb-keysyms1" in message
    assert xcb_problem(env, loader_without()) is None


def test_quiet_when_qt_will_not_use_xcb(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    broken = loader_without(*XCB_LIBRARIES)
    assert xcb_problem({"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"}, broken) is None
    assert xcb_problem({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, broken) is None
    assert xcb_problem({}, broken) is None
    assert not uses_xcb({})


def test_every_library_maps_to_a_package():
    assert missing_xcb_packages(loader_without(*XCB_LIBRARIES)) == list(XCB_LIBRARIES.values())

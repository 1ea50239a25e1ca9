"""The helper process starts in the frozen app too: there `sys.executable` is the app, which runs the
helper through our own entry point (`memory-studio --studio-child helper`) instead of `python -m`."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from studio.app.helper_process import CANCEL, HelperProcess, helper_command
from studio.app.listing import load_listing
from studio.engine.timeline_cache import load_timeline
from studio.engine.whatif import WhatIfSettings
from studio.engine.whatif_chart import replay_in_store
from studio.store import open_store
from tests.helper_calls import wait_for_cancel

ROOT = Path(__file__).resolve().parents[2]


def test_frozen_app_runs_the_helper_through_its_entry_point(fixture_db, tmp_path, monkeypatch):
    app = tmp_path / "memory-studio"  # stands for the PyInstaller binary: it runs studio's entry point
    app.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m studio \"$@\"\n")
    app.chmod(0o755)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(app))
    assert helper_command() == [str(app), "--studio-child", "helper"]
    path = str(fixture_db("support"))
    helper = HelperProcess()
    cancel = threading.Event()
    cancel.set()
    try:
        assert helper.available
        listing = helper.call(path, 1, load_listing)
        assert helper.pid is not None  # the work ran in the child
        # the What-if replay runs there too, and a cancel reaches a call through the entry point's helper
        replay = helper.call(path, 1, replay_in_store, "support-1", None, stored_settings(path), None, None, None,
                             CANCEL)
        assert replay.pid == helper.pid and replay.uses_real_sizes and replay.n_points
        assert helper.call(path, 1, wait_for_cancel, CANCEL, 600.0, cancel=cancel) == (True, helper.pid)
    finally:
        helper.close()
    with open_store(path) as store:
        assert listing.resources == load_listing(store).resources
        assert [r.thread.id for r in listing.rows] == [r.thread.id for r in load_listing(store).rows]


def stored_settings(path: str) -> WhatIfSettings:
    """Return support-1's stored OM settings (read here, in the test's process)."""
    with open_store(path) as store:
        return WhatIfSettings.from_record(load_timeline(store, "support-1").generations[-1])

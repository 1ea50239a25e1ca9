"""The helper process starts in the frozen app too: there `sys.executable` is the app, which runs the
helper through our own entry point (`memory-studio --studio-child helper`) instead of `python -m`."""

from __future__ import annotations

import sys
from pathlib import Path

from studio.store.memory_store import MemoryStore
from studio.ui.helper_process import HelperProcess, helper_command
from studio.ui.loaders import load_listing

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
    try:
        assert helper.available
        listing = helper.call(path, 1, load_listing)
        assert helper.pid is not None  # the work ran in the child
    finally:
        helper.close()
    with MemoryStore.open(path) as store:
        assert listing.resources == load_listing(store).resources
        assert [r.thread.id for r in listing.rows] == [r.thread.id for r in load_listing(store).rows]

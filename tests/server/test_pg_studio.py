"""The studio window on a PostgreSQL store: every tab of a thread loads (no error, no crash), URL redacted."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

TABS = ["observations", "history", "messages", "participants", "working-memory", "timeline", "trace", "context",
        "health"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("scenario,thread_id", [("support", "support-1"), ("resource", "res-a"),
                                                ("buffered", "long-run")])
def test_every_tab_loads_on_postgresql(pg_corpus, tmp_path, scenario, thread_id):
    """`--screenshot` exits non-zero when a tab could not load (tests/ui/test_screenshot.py), so each
    exit 0 here is a tab that showed its data from the server."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    for tab in TABS:
        out = tmp_path / f"{scenario}-{tab}.png"
        done = subprocess.run([sys.executable, "-m", "studio.cli", pg_corpus.target(scenario), "--screenshot", str(out),
                               "--thread", thread_id, "--tab", tab], capture_output=True, text=True, timeout=180,
                              env=env)
        assert done.returncode == 0, (tab, done.stderr[-2000:])
        assert "Traceback" not in done.stderr
        assert out.read_bytes()[:8] == PNG_MAGIC

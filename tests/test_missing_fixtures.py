"""Running the tests without the shared Mastra fixtures stops at once with one sentence that says what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_a_missing_fixture_folder_is_named_once(tmp_path):
    # A fresh clone outside the project's folder has no ../shared: collection used to raise
    # FileNotFoundError in every module that reads an oracle at import, with a traceback for each.
    env = dict(os.environ, MEMORY_STUDIO_SHARED=str(tmp_path / "nowhere"))
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/engine/test_status_parity.py"], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode != 0
    assert f"{tmp_path / 'nowhere' / 'fixtures' / 'mastra'} is missing" in out
    assert "MEMORY_STUDIO_SHARED" in out
    assert "FileNotFoundError" not in out and "Traceback" not in out

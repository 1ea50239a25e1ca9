"""The linters hold on the whole repository: ruff (pyproject.toml [tool.ruff]) and vulture (dead code in studio/ at
80 % confidence). import-linter's contracts are tests/test_layers.py's. `.ci/run` runs the same three commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run `python -m ARGS` (a linter the test extra installs) in CWD; its output is the failure message."""
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_passes():
    done = _run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_vulture_finds_no_dead_code():
    done = _run("vulture", "studio", "--min-confidence", "80")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_the_linters_see_a_planted_mistake(tmp_path):
    """The two runs above are not vacuous: with the project's settings, an unused import and unreachable code in a
    module of studio/ are reported."""
    module = tmp_path / "studio" / "planted.py"
    module.parent.mkdir()
    module.write_text("import json\n\n\ndef answer():\n    return 42\n    print('never')\n", encoding="utf-8")
    ruff = _run("ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(module), cwd=tmp_path)
    assert ruff.returncode == 1 and "F401" in ruff.stdout, ruff.stdout + ruff.stderr
    vulture = _run("vulture", "studio", "--min-confidence", "80", cwd=tmp_path)
    assert vulture.returncode != 0 and "unused import 'json'" in vulture.stdout, vulture.stdout + vulture.stderr
    assert "unreachable code" in vulture.stdout, vulture.stdout

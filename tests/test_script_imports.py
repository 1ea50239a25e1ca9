"""The scripts outside the package (packaging/, benchmarks/) name studio code that exists.

They import inside functions, so nothing fails until CI's smoke run or a benchmark reaches the line: a
name moved between modules (load_timeline went from studio.engine.timeline to timeline_cache) broke the
frozen app's smoke check that way. Every `from studio… import NAME` in them must resolve here."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("packaging/*.py"), *ROOT.glob("benchmarks/*.py")])


def _studio_imports(path: Path) -> list[tuple[str, str]]:
    """Return (module, name) of each `from studio… import name` anywhere in PATH (functions included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "studio":
            found += [(node.module, alias.name) for alias in node.names]
    return found


def test_the_scripts_are_found():
    assert any(p.name == "smoke_helper.py" for p in SCRIPTS) and len(SCRIPTS) > 10


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_studio_name_a_script_imports_exists(path):
    missing = []
    for module, name in _studio_imports(path):
        mod = importlib.import_module(module)
        if not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")   # a submodule: `from studio.engine import tokens`
            except ModuleNotFoundError:
                missing.append(f"{module}.{name}")
    assert not missing, missing

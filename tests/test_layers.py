"""The layers hold: only studio/ui imports Qt, and the import-linter contract (ui > cli > engine > llm | store > leaf)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

STUDIO = Path(__file__).resolve().parent.parent / "studio"
QT_MODULES = ("PySide6", "pyqtgraph", "shiboken6")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_qt_import_outside_ui():
    offenders = [str(p.relative_to(STUDIO)) for p in STUDIO.rglob("*.py")
                 if "ui" not in p.relative_to(STUDIO).parts[:1] and _imports(p) & set(QT_MODULES)]
    assert offenders == []


def test_core_and_cli_import_without_loading_qt():
    code = ("import sys, studio.cli, studio.store.memory_store, studio.engine.status, studio.app.statuses, "
            "studio.engine.diff, studio.engine.observations; "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


ROOT = STUDIO.parent
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")


def _lint(root: Path) -> subprocess.CompletedProcess:
    """Run the import-linter contract of ROOT/pyproject.toml over ROOT/studio (a fresh process)."""
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(root)
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_layer_contract_holds():
    """ui > cli > engine > llm | store > leaf (pyproject.toml [tool.importlinter]): no import goes up a layer."""
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 kept, 0 broken" in done.stdout


def test_the_contract_catches_a_store_module_importing_the_engine(tmp_path):
    """The same contract over a copy of the package with one upward import (store -> engine) is broken."""
    import shutil

    shutil.copytree(STUDIO, tmp_path / "studio", ignore=shutil.ignore_patterns("__pycache__", "resources"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    flags = tmp_path / "studio" / "store" / "flags.py"
    flags.write_text(flags.read_text(encoding="utf-8") + "\nfrom studio.engine import tokens  # noqa: E402,F401\n",
                     encoding="utf-8")
    done = _lint(tmp_path)
    assert done.returncode != 0
    assert "studio.store.flags -> studio.engine.tokens" in done.stdout

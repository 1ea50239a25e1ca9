"""The layers hold: only studio/ui imports Qt, and the import-linter contracts (main > ui | cli > app > engine >
llm | store > leaf; no Qt outside studio.ui; no import circle inside any package)."""

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
    code = ("import sys, pkgutil, importlib, studio.main, studio.cli, studio.app, studio.store.memory_store, "
            "studio.engine.status, studio.engine.diff, studio.engine.observations; "
            "[importlib.import_module(m.name) for p in (studio.app, studio.cli) "
            " for m in pkgutil.iter_modules(p.__path__, p.__name__ + '.')]; "
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
    """main > ui | cli > app > engine > llm | store > leaf (pyproject.toml [tool.importlinter]): no import goes up a
    layer, the two faces never import each other, no module outside studio.ui reaches Qt, and no import circle
    runs among the modules of engine, common, llm, store, app, cli and ui (acyclic siblings); nothing ignored."""
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " kept, 0 broken" in done.stdout and "ignored" not in done.stdout


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


def test_the_contract_catches_an_import_circle_inside_the_engine(tmp_path):
    """The same contracts over a copy of the package where timeline_series imports timeline_cache back are broken."""
    import shutil

    shutil.copytree(STUDIO, tmp_path / "studio", ignore=shutil.ignore_patterns("__pycache__", "resources"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    series = tmp_path / "studio" / "engine" / "timeline_series.py"
    series.write_text(series.read_text(encoding="utf-8") + "\n\ndef _circle():\n"
                      "    from studio.engine.timeline_cache import timeline_key  # noqa: F401\n", encoding="utf-8")
    done = _lint(tmp_path)
    assert done.returncode != 0
    assert "acyclic siblings BROKEN" in done.stdout


def test_the_ui_contract_catches_an_import_circle(tmp_path):
    """A module of studio.ui importing one that imports it back (as the main window's parts once did) is a break."""
    import shutil

    shutil.copytree(STUDIO, tmp_path / "studio", ignore=shutil.ignore_patterns("__pycache__", "resources"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    part = tmp_path / "studio" / "ui" / "widgets" / "history_actions.py"
    part.write_text(part.read_text(encoding="utf-8")
                    + "\nfrom studio.ui.widgets import main_window  # noqa: E402,F401\n", encoding="utf-8")
    done = _lint(tmp_path)
    assert done.returncode != 0
    assert "No cycles are allowed in studio.ui.widgets" in done.stdout


def test_the_contract_catches_the_command_line_importing_the_studio(tmp_path):
    """The faces never import each other: a CLI module importing studio.ui breaks the contract."""
    import shutil

    shutil.copytree(STUDIO, tmp_path / "studio", ignore=shutil.ignore_patterns("__pycache__", "resources"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    sample = tmp_path / "studio" / "cli" / "sample.py"
    sample.write_text(sample.read_text(encoding="utf-8") + "\nfrom studio.ui import start  # noqa: E402,F401\n",
                      encoding="utf-8")
    done = _lint(tmp_path)
    assert done.returncode != 0
    assert "studio.cli.sample -> studio.ui.start" in done.stdout

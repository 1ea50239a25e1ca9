"""The core (store, engine, CLI) stays free of Qt: only studio/ui imports PySide6 or pyqtgraph."""

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
    code = ("import sys, studio.cli, studio.store.memory_store, studio.engine.status, studio.engine.overview, "
            "studio.engine.diff, studio.engine.observations; "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

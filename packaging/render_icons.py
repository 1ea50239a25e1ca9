"""Render resources/icons/memory-studio.svg to the PNG sizes the desktop needs (Qt's QSvgRenderer).

    python packaging/render_icons.py        # rewrites resources/icons/memory-studio-{16,…,512}.png

The PNGs are checked in (the window icon and the .desktop entry use them); rerun after editing the SVG.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"


def render(svg: Path = ICONS / "memory-studio.svg", out: Path = ICONS, sizes=SIZES) -> list[Path]:
    """Render SVG at every size in SIZES into OUT as memory-studio-<size>.png; return the files written."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 - needed for painting
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"render_icons: {svg} is not a valid SVG")
    written = []
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        path = out / f"memory-studio-{size}.png"
        if not image.save(str(path), "PNG"):
            raise SystemExit(f"render_icons: cannot write {path}")
        written.append(path)
    return written


if __name__ == "__main__":
    for p in render():
        print(p)

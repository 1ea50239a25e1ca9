"""A chart's Export menu: ask where, write the chart (PNG, SVG) or its data (CSV), say how it went.

`ChartExport` is a part of a chart widget (the Timeline tab, the Overview window): it makes the
Export button's menu and runs its entries; the widget gives it the plot, the CSV writer, the file
name to offer and where to report "Exported …" / "Export failed: …".
"""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QObject
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

#: File-dialog filters of the chart exports, by kind.
EXPORT_FILTERS = {"png": "PNG images (*.png)", "svg": "SVG images (*.svg)", "csv": "CSV files (*.csv)"}


def ask_export_path(parent, kind: str, default_name: str) -> str | None:
    """Ask where to export a chart or its data (KIND png, svg or csv); None when the user cancels."""
    path, _ = QFileDialog.getSaveFileName(parent, "Export", default_name, EXPORT_FILTERS[kind])
    return path or None


class ChartExport(QObject):
    """Export PLOT, a chart of PARENT: as a PNG or an SVG image, or its data as CSV (WRITE_CSV(path)).

    TITLE names the SVG; DEFAULT_NAME(kind) gives the file name the save dialog offers; REPORT(text)
    shows what happened. A failed export from the menu is reported, never raised.
    """

    def __init__(self, plot: pg.PlotWidget, parent: QWidget, *, title: str, write_csv: Callable[[str], None],
                 default_name: Callable[[str], str], report: Callable[[str], None]):
        super().__init__(parent)
        self._plot = plot
        self._parent = parent
        self._title = title
        self._write_csv = write_csv
        self._default_name = default_name
        self._report = report

    def menu(self, parent: QWidget, csv_label: str) -> QMenu:
        """Return the Export menu (on PARENT, a button): Chart as PNG…, Chart as SVG…, and CSV_LABEL."""
        menu = QMenu(parent)
        # bound methods, not lambdas: a lambda holding this part would tie it to the menu in a reference cycle
        menu.addAction("Chart as PNG…", self._on_png_triggered)
        menu.addAction("Chart as SVG…", self._on_svg_triggered)
        menu.addAction(csv_label, self._on_csv_triggered)
        return menu

    def write_png(self, path: str, width: int = 1600) -> None:
        """Write the chart as a PNG WIDTH px wide to PATH; OSError if it cannot be written."""
        write_chart_png(self._plot, path, width)

    def write_svg(self, path: str) -> None:
        """Write the chart as SVG to PATH; OSError if it cannot be written."""
        write_chart_svg(self._plot, path, self._title)

    def write_csv(self, path: str) -> None:
        """Write the chart's data as CSV to PATH (UTF-8); OSError if it cannot be written."""
        self._write_csv(path)

    def export(self, kind: str) -> None:
        """Ask where to write KIND ("png", "svg" or "csv"), write it there, and report the outcome."""
        path = ask_export_path(self._parent, kind, self._default_name(kind))
        if not path:
            return
        try:
            {"png": self.write_png, "svg": self.write_svg, "csv": self.write_csv}[kind](path)
        except OSError as exc:
            self._report(f"Export failed: {exc}")
        else:
            self._report(f"Exported {path}")

    def _on_png_triggered(self) -> None:
        self.export("png")

    def _on_svg_triggered(self) -> None:
        self.export("svg")

    def _on_csv_triggered(self) -> None:
        self.export("csv")


def write_chart_png(plot, path: str, width: int = 1600) -> None:
    """Write pyqtgraph PlotWidget PLOT as a PNG WIDTH px wide (height in proportion) to PATH."""
    from pyqtgraph.exporters import ImageExporter

    exporter = ImageExporter(plot.getPlotItem())
    exporter.parameters()["width"] = width
    exporter.export(path)


def write_chart_svg(plot: pg.PlotWidget, path: str, title: str = "Memory Studio chart") -> None:
    """Write PLOT as SVG to PATH: pyqtgraph's exporter, else Qt's SVG generator.

    pyqtgraph 0.14's SVGExporter cannot parse the closing `Z` Qt 6.11 writes into clip paths
    (pyqtgraph issue #3485); Qt's generator renders the same widget as vectors. Raises OSError
    when PATH cannot be written.
    """
    from pyqtgraph.exporters import SVGExporter

    try:
        SVGExporter(plot.getPlotItem()).export(path)
        return
    except ValueError:
        pass
    from PySide6.QtCore import QRect
    from PySide6.QtSvg import QSvgGenerator

    generator = QSvgGenerator()
    generator.setFileName(path)
    generator.setSize(plot.size())
    generator.setViewBox(QRect(0, 0, plot.width(), plot.height()))
    generator.setTitle(title)
    painter = QPainter(generator)
    try:
        plot.render(painter)
    finally:
        painter.end()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            ok = "<svg" in fh.read(4096)
    except OSError as exc:
        raise OSError(f"Cannot write {path}: {exc}") from exc
    if not ok:
        raise OSError(f"Cannot write {path}")

"""Per-pixel-column decimation of long curves: every peak, every gap and the last point survive.

pyqtgraph's own downsampling ("peak" mode) cuts the visible points into bins of a fixed count, draws
each bin's lowest and highest value at the bin's middle x, and drops the last `len % bins` points;
over time a bin spanning a long gap then draws its peak at a shifted time, and the newest messages
of the view are missing. `column_extremes` keeps instead, for each pixel column, the first, lowest,
highest and last point of the column, in their order and at their own x (and a gap's ends, where the
line breaks): the polyline drawn covers the pixels the whole curve would (to within a pixel), with at
most four points a column. `DecimatedCurve` is a PlotDataItem drawn that way, through pyqtgraph's
public API (it hands pyqtgraph the points to draw). Its columns are one pixel wide and counted from the data's lowest x,
not from the view's edge: a pan keeps the column width, so it reuses the decimation made for that
width and only picks the points in view (searches, no pass over the points); a zoom or a resize
decimates anew (~0.5 ms for 20,000 points).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

#: A curve with at most this many points per pixel column is drawn whole (the decimation would keep them all).
POINTS_PER_COLUMN = 4
#: An x that goes back more often than this is decimated whole, not piece by piece (`column_extremes`).
MAX_PIECES = 64
#: Values more than this many view heights beyond the view are drawn at that limit, past a margin of
#: RANGE_HYSTERESIS times it (pyqtgraph's `dynamicRangeLimit` and `dynamicRangeHyst` defaults): Qt strokes
#: coordinates of 10^15 pixels very slowly.
RANGE_LIMIT = 1e6
RANGE_HYSTERESIS = 3.0


def ascending_pieces(x: np.ndarray) -> np.ndarray:
    """Return where each stretch of X that never goes back starts (index 0 first): [0] for a sorted X."""
    return np.r_[0, np.flatnonzero(x[1:] < x[:-1]) + 1].astype(np.intp)


def in_view(x: np.ndarray, x0: float, x1: float, pieces: np.ndarray) -> np.ndarray:
    """Return the indexes (ascending) of the points of X whose lines can show in [X0, X1].

    Per piece of X that never goes back (PIECES: `ascending_pieces(X)`): its points in [X0, X1], the
    nearest one beyond each edge, and (with more than one piece) its first and last point. With more
    than `MAX_PIECES` pieces, all points.
    """
    n = len(x)
    if len(pieces) > MAX_PIECES or n == 0:
        return np.arange(n)
    ends = len(pieces) > 1
    ranges = []   # in increasing order, each index once
    for a, b in zip(pieces.tolist(), [*pieces[1:].tolist(), n], strict=True):
        lo = a + max(int(np.searchsorted(x[a:b], x0, side="left")) - 1, 0)
        hi = a + min(int(np.searchsorted(x[a:b], x1, side="right")) + 1, b - a)
        if ends and a < lo:
            ranges.append(np.array([a]))
        ranges.append(np.arange(lo, hi))
        if ends and hi <= b - 1:
            ranges.append(np.array([b - 1]))
    return np.concatenate(ranges) if ends else ranges[0]


def column_extremes(x: np.ndarray, y: np.ndarray, x0: float, x1: float, columns: int,
                    pieces: np.ndarray | None = None) -> np.ndarray:
    """Return the indexes (ascending) of the points of (X, Y) to draw when [X0, X1] spans COLUMNS pixel columns.

    Points are grouped in runs: consecutive points in the same pixel column (x1 belongs to the last
    column; the points left of X0 are a column of their own, and those right of X1), a stretch of NaN y
    (a gap in the curve) a run of its own. Of each run the
    first, the lowest, the highest and the last point are kept, each once, in index order. Of a sorted
    X (non-decreasing) only the points in view and the nearest one beyond each edge are looked at (the
    line runs to the view's edges). An X that goes back now and then (PIECES: `ascending_pieces(X)`,
    found out here when None) is looked at piece by piece the same way, each piece's first and last
    point kept too (the line between two pieces may cross the view); one that goes back more than
    `MAX_PIECES` times is decimated whole. A gap keeps its first and last NaN, so the line breaks where
    the whole curve's does, even inside one column (a line across it would draw a stretch the curve has
    not: a rise and a fall on either side of a gap are not one vertical stroke). Raises ValueError for
    COLUMNS < 1 or X1 <= X0. Cost: a few passes over the points looked at (~0.2 ms for 20,000).
    """
    if columns < 1 or not x1 > x0:
        raise ValueError(f"need at least one column over a non-empty range, not {columns} over [{x0}, {x1}]")
    n = len(x)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    look = in_view(x, x0, x1, ascending_pieces(x) if pieces is None else pieces)
    xs, ys = x[look], y[look]
    with np.errstate(invalid="ignore"):
        col = np.clip(np.floor((xs - x0) * (columns / (x1 - x0))), 0, columns - 1)
    col = np.nan_to_num(col, nan=-2).astype(np.intp)   # a point without x: a run of its own kind
    col[xs < x0] = -1
    col[xs > x1] = columns
    gaps = np.isnan(ys)
    if gaps.any():   # a stretch of NaN is a run of its own: the line breaks there, as the whole curve's does
        starts = np.flatnonzero(np.r_[True, (col[1:] != col[:-1]) | (gaps[1:] != gaps[:-1])])
        low_ys, high_ys = np.where(gaps, np.inf, ys), np.where(gaps, -np.inf, ys)
    else:
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        low_ys = high_ys = ys
    lengths = np.diff(np.r_[starts, len(xs)])
    ends = starts + lengths - 1
    index = np.arange(len(xs))
    low = np.repeat(np.minimum.reduceat(low_ys, starts), lengths)
    high = np.repeat(np.maximum.reduceat(high_ys, starts), lengths)
    at_low = np.minimum.reduceat(np.where(low_ys == low, index, len(xs)), starts)
    at_high = np.minimum.reduceat(np.where(high_ys == high, index, len(xs)), starts)
    keep = np.sort(np.stack([starts, at_low, at_high, ends], axis=1), axis=1).ravel()
    keep = keep[np.r_[True, keep[1:] != keep[:-1]]]
    return look[keep]


class DecimatedCurve(pg.PlotDataItem):
    """A PlotDataItem that hands pyqtgraph only `column_extremes` of its data for its view's x range and width.

    The whole data stays here; pyqtgraph is given the points to draw (`setData`), anew when the view's
    range or width asks for other points, through pyqtgraph's public API only (`setData`,
    `viewRangeChanged`, the ViewBox's range and size). Keep pyqtgraph's downsampling and clip-to-view
    off for it (the plot's and its own), and call `refresh` when the view is resized (a range change
    it follows by itself). With at most `POINTS_PER_COLUMN` points a column it is drawn whole. While
    the view ranges itself over the data (auto range) all of the data is drawn (decimated), so the
    bounds pyqtgraph reads from the drawn points stay the data's. As pyqtgraph's `dynamicRangeLimit`
    does (turned off for it: this one reads the whole data's height once), values far beyond the view's
    height are drawn at a limit (`RANGE_LIMIT`). `getData` and `getOriginalDataset` return the points
    handed to pyqtgraph.
    """

    def __init__(self, *args, **kwargs):
        self._x: np.ndarray | None = None        # the whole data, as given to `setData`
        self._y: np.ndarray | None = None
        self._connect: np.ndarray | None = None  # a per-point `connect` array given with it
        self._shown_for: tuple | None = None     # what the points handed to pyqtgraph were picked for (`_wanted`)
        self._pieces: np.ndarray | None = None   # where x goes back (`ascending_pieces`, found out once per data)
        self._grid: tuple | None = None          # (column width, kept indexes, their x, their pieces) of the whole data
        self._y_span: tuple | None = None        # (lowest, highest) finite y of the whole data, or () when none
        super().__init__(*args, **kwargs)
        self.setDynamicRangeLimit(None)          # the clip is ours (`_clip`), over the whole data

    def setData(self, *args, **kwargs) -> None:
        """Set the data and style as PlotDataItem.setData does; pyqtgraph is handed the points to draw now.

        x and y arrays (positional `(x, y)` or `(y,)`, or keywords `x=`, `y=`) are kept here as given;
        any other form of data pyqtgraph accepts is read by pyqtgraph first.
        """
        connect = kwargs.get("connect")
        self._connect = connect if isinstance(connect, np.ndarray) else None
        self._pieces = self._grid = self._shown_for = self._y_span = None
        plain = len(args) <= 2 and all(isinstance(a, np.ndarray) for a in args) and not (
            args and ("x" in kwargs or "y" in kwargs))
        if not plain:
            super().setData(*args, **kwargs)
            x, y = self.getOriginalDataset()
        else:
            y = args[-1] if args else kwargs.pop("y", None)
            x = args[0] if len(args) == 2 else kwargs.pop("x", None)
            y = None if y is None else np.asarray(y)
            x = (np.arange(len(y)) if y is not None else None) if x is None else np.asarray(x)
        self._x, self._y = (None, None) if x is None or y is None or not len(x) or not len(y) else (x, y)
        wanted = self._wanted()
        shown_x, shown_y, shown_connect = self._points(wanted)
        if shown_connect is not None:
            kwargs["connect"] = shown_connect
        kwargs.pop("x", None)
        kwargs.pop("y", None)
        if shown_x is None:
            super().setData(**kwargs)
        else:
            super().setData(shown_x, shown_y, **kwargs)
        self._shown_for = wanted

    def refresh(self) -> None:
        """Hand pyqtgraph other points if the view's range or width asks for them (call it on a resize)."""
        if self._x is None or self._shown_for is None:
            return
        wanted = self._wanted()
        if wanted == self._shown_for:
            return
        x, y, connect = self._points(wanted)
        super().setData(x, y, **({"connect": connect} if connect is not None else {}))
        self._shown_for = wanted

    def viewRangeChanged(self, vb=None, ranges=None, changed=None) -> None:
        """Follow the view's new range (pyqtgraph calls this)."""
        super().viewRangeChanged(vb, ranges, changed)
        self.refresh()

    def _wanted(self) -> tuple:
        """Return (what to draw, (low, high) y clip or None): what to draw is (x0, x1, columns) to draw the
        columns of, "all" to draw every point, or "none"."""
        if self._x is None:
            return "none", None
        view = self.getViewBox()
        if not isinstance(view, pg.ViewBox):
            return "all", None   # not in a plot (yet)
        (x0, x1), (y0, y1) = view.viewRange()
        span = "all"
        columns = int(view.width())
        if columns >= 1 and len(self._x) > POINTS_PER_COLUMN * columns:
            if view.autoRangeEnabled()[0]:
                x0, x1 = float(np.nanmin(self._x)), float(np.nanmax(self._x))
            if x1 > x0:
                span = (x0, x1, columns)
        return span, self._clip(y0, y1)

    def _clip(self, y0: float, y1: float) -> tuple | None:
        """Return the (low, high) y range values are clipped to for a view of [Y0, Y1], or None when the data fits."""
        if self._y_span is None:
            with np.errstate(invalid="ignore"):
                finite = self._y[np.isfinite(self._y)] if len(self._y) else self._y
            self._y_span = (float(finite.min()), float(finite.max())) if len(finite) else ()
        height = y1 - y0
        if not self._y_span or not height > 0:
            return None
        low, high = self._y_span
        if high - low <= 2 * RANGE_HYSTERESIS * RANGE_LIMIT * height:
            return None
        return (y0 - RANGE_LIMIT * height, y1 + RANGE_LIMIT * height)

    def _points(self, wanted: tuple) -> tuple:
        """Return (x, y, connect array or None) to hand pyqtgraph for WANTED (`_wanted`); (None, None, None): none."""
        x, y, connect = self._x, self._y, self._connect
        span, clip = wanted
        if x is None:
            return None, None, None
        if span != "all":
            x0, x1, columns = span
            _width, kept, kept_x, kept_pieces = self._on_grid((x1 - x0) / columns)
            keep = kept[in_view(kept_x, x0, x1, kept_pieces)]
            x, y = x[keep], y[keep]
            connect = connect[keep] if connect is not None else None
        if clip is not None:
            y = np.clip(y, *clip)
        return x, y, connect

    def _on_grid(self, width: float) -> tuple:
        """Return (WIDTH, kept indexes, their x, where their x goes back): the whole data decimated on columns
        WIDTH wide counted from its lowest x. Kept while the column width stays: a pan only picks the kept
        points in view (`in_view`), a few searches instead of a pass over the points."""
        grid = self._grid
        if grid is not None and math.isclose(grid[0], width, rel_tol=1e-9):
            return grid
        x, y = self._x, self._y
        if self._pieces is None:
            self._pieces = ascending_pieces(x)
        origin, end = float(np.nanmin(x)), float(np.nanmax(x))
        count = int((end - origin) / width) + 1
        kept = column_extremes(x, y, origin, origin + count * width, count, self._pieces)
        starts = np.searchsorted(kept, self._pieces)
        kept_pieces = np.unique(starts[starts < len(kept)])
        self._grid = (width, kept, x[kept], kept_pieces)
        return self._grid

"""Per-pixel-column decimation of long curves (studio.ui.widgets.curve_decimation), from first principles.

What a decimation must keep for the drawn polyline to cover the pixels the whole curve covers: in each
pixel column of the view the lowest and highest value (so every peak shows), at their own x (a peak after
a long gap stays at its time), the column's first and last point (so the lines between columns join as
in the whole curve), the last point of the data, and one point beyond each edge of the view (the line
runs to the edge). pyqtgraph's "peak" downsampling, used before, binned a fixed count of points: it
dropped the last `len % count` points and drew each bin's peak at the bin's middle x.
"""

from __future__ import annotations

import numpy as np
import pytest

from studio.ui.widgets.curve_decimation import column_extremes


def _column(v, x0, x1, columns):
    """Return the pixel column of x V: column k holds x0 + k*w <= x < x0 + (k+1)*w, w = (x1 - x0) / columns (the
    last one x1 too); -1 left of the view, COLUMNS right of it."""
    if v < x0:
        return -1
    if v > x1:
        return columns
    return min(int(np.floor((v - x0) * (columns / (x1 - x0)))), columns - 1)


def _check(x, y, x0, x1, columns):
    """Assert the rules above for column_extremes(x, y, x0, x1, columns); return the kept indexes.

    A run is a stretch of consecutive points in one column (with x ascending: the column's points in
    view), all with a value or all without (NaN: a gap in the line).
    """
    keep = column_extremes(x, y, x0, x1, columns)
    assert list(keep) == sorted(set(keep.tolist()))                   # each point once, in order
    kept = set(keep.tolist())
    col = [(_column(v, x0, x1, columns), bool(np.isnan(w))) for v, w in zip(x, y, strict=True)]
    for i in range(len(x) - 1):   # where the line changes column or meets a gap, both ends are kept
        beyond = col[i][0] == col[i + 1][0] and col[i][0] in (-1, columns)   # unseen: left or right of the view
        if col[i] != col[i + 1] and not beyond:
            assert i in kept and i + 1 in kept, i
    runs, start = [], 0
    for i in range(1, len(x) + 1):
        if i == len(x) or col[i] != col[start]:
            runs.append(list(range(start, i)))
            start = i
    for members in runs:
        if col[members[0]][0] in (-1, columns):
            continue   # beyond the view: its lines there are not seen
        values = [y[i] for i in members if not np.isnan(y[i])]
        shown = [y[i] for i in members if i in kept and not np.isnan(y[i])]
        assert members[0] in kept and members[-1] in kept, members[0]  # first and last of the run
        if values:
            assert min(shown) == min(values) and max(shown) == max(values), members[0]
        assert len([i for i in members if i in kept]) <= 4
    if all(x[i] <= x[i + 1] for i in range(len(x) - 1)):
        left = [i for i in range(len(x)) if x[i] < x0]
        right = [i for i in range(len(x)) if x[i] > x1]
        assert [i for i in kept if i in left] == left[-1:]            # one point beyond each edge, the nearest
        assert [i for i in kept if i in right] == right[:1]
        if not np.isnan(y).any():
            assert len(keep) <= 4 * columns + 2
    return keep


def test_a_spike_at_the_last_point_and_one_in_a_gap_survive():
    # 20,007 points, like the benchmark's long thread: 1,000 s of dense points, a gap of 50,000 s with one
    # point in it, then dense again; a spike at the last index and at the lone point in the gap.
    n = 20007
    x = np.concatenate([np.linspace(0, 1000, 10000), [26000.0], np.linspace(51000, 52000, n - 10001)])
    y = np.sin(np.arange(n) / 7.0) * 100 + 500
    y[-1] = 9000.0
    y[10000] = 7000.0
    keep = _check(x, y, 0.0, 52000.0, 800)
    assert keep[-1] == n - 1 and y[keep][-1] == 9000.0
    assert 10000 in keep and x[10000] == 26000.0                      # the gap's peak at its own time


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_column_keeps_its_extremes_for_any_view(seed):
    rng = np.random.default_rng(seed)
    n = 5000
    x = np.cumsum(rng.exponential(1.0, n) * (1 + 200 * (rng.random(n) < 0.01)))   # now and then a long gap
    x[rng.integers(1, n, 50)] = 0   # equal x (points at one time) ...
    x = np.maximum.accumulate(x)    # ... never backwards
    y = rng.normal(1000, 300, n)
    y[rng.random(n) < 0.05] = np.nan                                  # gaps in the curve
    views = [(x[0], x[-1], 300), (x[n // 3], x[n // 2], 97), (x[10] - 50, x[-10] + 50, 1),
             (x[-1] - 5, x[-1] + 100, 400)]
    for x0, x1, columns in views:
        _check(x, y, float(x0), float(x1), columns)
    # x going back now and then (as turns do on the benchmark's thread): piece by piece, and past
    # MAX_PIECES pieces all at once; each way every line in view is kept
    for back in (30, 200):
        bent = x.copy()
        bent[rng.integers(1, n, back)] -= rng.random(back) * 500
        for x0, x1, columns in views:
            _check(bent, y, float(x0), float(x1), columns)


def test_a_gap_inside_one_column_stays_a_gap():
    # One column: a rise to 900, a gap, then 5 and 7. Drawn whole, the line never goes from 900 down to 5;
    # joining the column's extremes across the gap would draw that stroke (a fall that did not happen).
    x = np.arange(8.0)
    y = np.array([100.0, 500.0, 900.0, np.nan, np.nan, np.nan, 5.0, 7.0])
    keep = column_extremes(x, y, 0.0, 100.0, 10)
    drawn = y[keep]
    assert np.isnan(drawn[2]) and drawn[0] == 100.0 and drawn[1] == 900.0 and drawn[-2:].tolist() == [5.0, 7.0]
    _check(x, y, 0.0, 100.0, 10)


def test_a_view_with_few_points_keeps_them_all_and_bad_arguments_are_refused():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([1.0, np.nan, 3.0, 2.0])
    assert column_extremes(x, y, 0.0, 3.0, 1000).tolist() == [0, 1, 2, 3]
    assert column_extremes(np.zeros(0), np.zeros(0), 0.0, 1.0, 10).tolist() == []
    with pytest.raises(ValueError):
        column_extremes(x, y, 1.0, 1.0, 10)
    with pytest.raises(ValueError):
        column_extremes(x, y, 0.0, 1.0, 0)


def _check_drawn(raw_x, raw_y, shown_x, shown_y, x0, x1, columns):
    """Assert that the curve drawn over [X0, X1] (COLUMNS pixels) keeps the rules above, on columns one pixel
    wide counted from the data's first x (so that a pan reuses them): each column wholly in view shows the
    raw first, last, lowest and highest point; every point drawn is a raw one."""
    raw = set(zip(raw_x.tolist(), raw_y.tolist(), strict=True))
    assert all(pair in raw for pair in zip(shown_x.tolist(), shown_y.tolist(), strict=True))
    width = (x1 - x0) / columns
    origin = float(raw_x.min())
    raw_col = np.floor((raw_x - origin) / width)
    shown_col = np.floor((shown_x - origin) / width)
    checked = 0
    for c in np.unique(raw_col):
        if origin + c * width < x0 or origin + (c + 1) * width > x1:
            continue
        members = raw_col == c
        drawn = shown_y[shown_col == c]
        assert drawn.min() == raw_y[members].min() and drawn.max() == raw_y[members].max(), c
        assert raw_x[members][0] in shown_x and raw_x[members][-1] in shown_x, c
        checked += 1
    assert checked


def test_the_timeline_draws_the_newest_point_and_a_gap_peak_and_follows_the_view(qtbot, studio_ctx):
    """On the chart: a 20,007-point thread over time, its last message a spike and a lone message in a long
    gap another. pyqtgraph's peak downsampling drew neither the last points nor the gap's peak at its time."""
    from studio.engine.timeline import Point
    from studio.engine.timeline_series import ChartSeries
    from studio.ui.widgets.timeline_tab import TimelineTab

    tab = TimelineTab(studio_ctx.runner)
    qtbot.addWidget(tab)
    tab.resize(900, 600)
    tab.show()
    n = 20007
    at = np.concatenate([np.arange(10000) * 1000, [5_000_000_000], 10_000_000_000 + np.arange(n - 10001) * 1000])
    tokens = (np.arange(n) * 37) % 4000 + 100
    tokens[-1], tokens[10000] = 90_000, 70_000
    points = [Point(at=None, at_ms=int(ms), turn=i, message_tokens=int(v), observation_tokens=0, buffered_tokens=0,
                    threshold=30000, reflection_threshold=40000, reconstructed=False)
              for i, (ms, v) in enumerate(zip(at, tokens, strict=True))]
    series = ChartSeries.from_points(points, [])
    tab.chart.draw(series, [], "time", buffered=False, thresholds=False)
    qtbot.waitUntil(lambda: not tab.chart.drawing, timeout=10000)
    tab.chart.fit([series], "time")
    box = tab.plot.getPlotItem().getViewBox()
    curve = next(item for item in tab.plot.getPlotItem().listDataItems() if item.name() == "Message window")
    raw_x, raw_y = series.curve("message", "time")

    def check_shown():
        qtbot.wait(20)
        tab.plot.viewport().repaint()
        (x0, x1), _ = box.viewRange()
        shown_x, shown_y = curve.getData()
        _check_drawn(raw_x, raw_y, shown_x, shown_y, x0, x1, int(box.width()))
        assert len(shown_x) < n / 3                                     # decimated: a few points a column
        assert shown_x[0] <= max(x0, raw_x[0]) and shown_x[-1] >= min(x1, raw_x[-1])   # to the view's edges
        return shown_x, shown_y

    shown_x, shown_y = check_shown()
    assert shown_x[-1] == at[-1] / 1000 and shown_y[-1] == 90_000       # the newest message
    assert shown_y[shown_x == 5_000_000.0].tolist() == [70_000]         # the gap's peak at its own time
    box.setXRange(float(raw_x[12000]), float(raw_x[15000]), padding=0)  # zoom in: the new view's columns
    check_shown()
    (x0, x1), _ = box.viewRange()
    for _ in range(3):                                                  # pan
        box.translateBy(x=(x1 - x0) / 7)
        check_shown()
    tab.resize(600, 600)                                                # fewer columns
    check_shown()


def test_a_curve_far_beyond_the_view_is_clipped_and_a_connect_array_follows_the_points(qtbot):
    """The whole data stays with the curve; pyqtgraph gets the points to draw, values beyond RANGE_LIMIT view
    heights clipped to it (Qt strokes coordinates of 10^15 pixels very slowly) and the `connect` array cut alike."""
    import pyqtgraph as pg

    from studio.ui.widgets.curve_decimation import RANGE_LIMIT, DecimatedCurve

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.show()
    n = 20000
    x = np.arange(n, dtype=float)
    y = np.sin(x / 50.0) * 100 + 500
    y[n // 2] = 1e15
    connect = np.ones(n, dtype=bool)
    connect[: n // 4] = False
    curve = DecimatedCurve()
    curve.setData(x, y, connect=connect)
    plot.getPlotItem().addItem(curve)
    box = plot.getPlotItem().getViewBox()
    box.setRange(xRange=(0.0, float(n)), yRange=(0.0, 1000.0), padding=0)
    qtbot.wait(20)
    shown_x, shown_y = curve.getData()
    assert len(shown_x) < n / 4 and shown_x[-1] == n - 1                 # decimated, the last point kept
    (_, _), (y0, y1) = box.viewRange()
    assert shown_y.max() == y1 + RANGE_LIMIT * (y1 - y0)                 # the spike drawn at the limit
    assert curve.opts["connect"].tolist() == connect[shown_x.astype(int)].tolist()
    box.setRange(yRange=(0.0, 2e15), padding=0)                          # the whole height in view: no clip
    qtbot.wait(20)
    assert curve.getData()[1].max() == 1e15

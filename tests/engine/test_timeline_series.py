"""Chart arrays of a timeline (studio.engine.timeline_series): what reaches the plotting library."""

from __future__ import annotations

import numpy as np

from studio.engine.timeline import build_timeline
from studio.engine.timeline_series import PLOT_LIMIT, ChartSeries, plot_array, runs_only, x_positions
from studio.store import open_store


def test_plot_array_is_float64_with_nan_for_missing_and_clipped_magnitudes():
    # 5**60 does not fit 64 bits: as a Python list it would become an object array
    values = plot_array([1, None, 5**60, -(5**500), float("inf"), 3])
    assert values.dtype == np.float64
    assert values[0] == 1 and np.isnan(values[1]) and values[2] == PLOT_LIMIT and values[3] == -PLOT_LIMIT
    assert values[5] == 3


def test_runs_only_draws_the_same_polyline():
    x = np.arange(7, dtype=float)
    y = np.array([1, 1, 1, 2, 2, 3, 3], dtype=float)
    rx, ry = runs_only(x, y)
    assert list(rx) == [0, 2, 3, 4, 5, 6] and list(ry) == [1, 1, 2, 2, 3, 3]
    # every dropped vertex lies on the segment between its kept neighbours
    assert np.array_equal(np.interp(x, rx, ry), y)


def test_series_of_a_real_thread(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    series = ChartSeries.from_points(timeline.points)
    assert len(series) == len(timeline.points)
    assert list(series.y["message"]) == [p.message_tokens for p in timeline.points]
    assert list(series.y["observation"]) == [p.observation_tokens for p in timeline.points]
    # time: seconds since the epoch of each point's time; turns: the user message count, spread within a turn
    first = timeline.points[0]
    assert series.x["time"][0] == first.at_ms / 1000
    assert series.x["turn"][0] == first.turn
    assert (np.diff(series.x["time"]) >= 0).all()
    assert all(p.turn <= x < p.turn + 0.8 for p, x in zip(timeline.points, series.x["turn"], strict=True))
    i = len(timeline.points) // 2
    assert series.nearest("turn", float(series.x["turn"][i])) == i or \
        series.x["turn"][series.nearest("turn", float(series.x["turn"][i]))] == series.x["turn"][i]
    assert series.top() == max(max(p.message_tokens, p.observation_tokens, p.threshold, p.reflection_threshold)
                               for p in timeline.points)


def test_x_positions_without_points_or_times():
    assert len(x_positions([], "time")) == 0

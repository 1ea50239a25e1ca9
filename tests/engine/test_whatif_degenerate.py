"""What-if replays of a thread whose reflections repeated themselves (Mastra's degenerate-repetition case)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from studio.engine.events import REFLECTION, REFLECTION_ACTIVATION
from studio.engine.timeline import build_timeline
from studio.engine.timeline_series import PLOT_LIMIT, ChartSeries
from studio.engine.whatif import WhatIfSettings, modelled_reflection, simulate
from studio.store import open_store
from tests.degenerate import THREAD, make_degenerate_db


def _timeline(tmp_path):
    with open_store(make_degenerate_db(tmp_path)) as store:
        return build_timeline(store, THREAD)


def test_the_degenerate_thread_measures_reflections_that_grew_the_log(tmp_path):
    timeline = _timeline(tmp_path)
    # generation 1 (the repeated block) is larger than the log it reflected: Mastra stored what it got
    sizes = [g.observation_token_count for g in timeline.generations]
    assert sizes[1] > sizes[0] and timeline.reflection_ratio > 1


def test_a_reflection_ratio_above_one_never_multiplies_the_log(tmp_path):
    """Before the fix every modelled reflection multiplied the log by the ratio: at 20, 15 reflections
    of a ~600-token log gave a 10**22-token log, an integer no 64-bit array holds. Here the log may
    only grow by what the observations add."""
    timeline = _timeline(tmp_path)
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    result = simulate(timeline, stored, reflection_ratio=20.0)
    reflections = [e for e in result.events if e.kind in (REFLECTION, REFLECTION_ACTIVATION)]
    assert len(reflections) >= 2  # so a multiplying model would compound: 20 ** n times the log
    assert all(e.output_tokens <= e.tokens for e in reflections)
    # the log only grows by what observations add: at most every observed window, 20 times over
    observed = sum(e.tokens for e in result.events if e.kind == "observation")
    peak = max(p.observation_tokens for p in result.points)
    assert peak <= timeline.points[0].observation_tokens + observed * result.observation_ratio + 1000
    assert peak < 2**53


def test_modelled_reflection_compresses_below_one_and_keeps_the_size_above():
    assert modelled_reflection(1000, 0.4) == 400
    assert modelled_reflection(1000, 1.0) == 1000
    assert modelled_reflection(1000, 25.8) == 1000
    assert modelled_reflection(0, 0.5) == 1


def test_chart_arrays_of_the_replay_are_finite_floats(tmp_path):
    timeline = _timeline(tmp_path)
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    result = simulate(timeline, replace(stored, observation_tokens=300), reflection_ratio=5.0,
                      observation_ratio=5.0)
    series = ChartSeries.from_points(result.points)
    for name, values in series.y.items():
        assert values.dtype == np.float64, name
        finite = values[np.isfinite(values)]
        assert (np.abs(finite) <= PLOT_LIMIT).all(), name
    for mode, xs in series.x.items():
        assert xs.dtype == np.float64 and np.isfinite(xs).all() and (np.diff(xs) >= 0).all(), mode

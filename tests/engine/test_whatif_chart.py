"""A What-if replay packed for the trip from the helper process (studio.engine.whatif_chart): the same
replay as `simulate`, carried as columns and arrays, and the timeline the helper keeps for it
(studio.engine.timeline_cache)."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

from studio.engine.timeline_cache import cached_timeline, load_timeline, load_timeline_chart, timeline_key
from studio.engine.timeline_series import ChartSeries
from studio.engine.whatif import WhatIfSettings, settings_with, simulate
from studio.engine.whatif_chart import WhatIfChart, replay_in_store, replay_packed
from studio.errors import EngineError
from studio.store import open_store


def _same_series(a: ChartSeries, b: ChartSeries) -> None:
    for mode in a.x:
        np.testing.assert_array_equal(a.x[mode], b.x[mode])
    for name in a.y:
        np.testing.assert_array_equal(a.y[name], b.y[name])
    np.testing.assert_array_equal(a.event_ids, b.event_ids)
    np.testing.assert_array_equal(a.event_rows, b.event_rows)
    np.testing.assert_array_equal(a.event_y, b.event_y)
    assert list(a.event_styles) == list(b.event_styles)


@pytest.mark.parametrize("changes", [{}, {"message_tokens": 1200, "observation_tokens": 500}])
def test_the_packed_replay_is_the_replay(fixture_db, changes):
    with open_store(fixture_db("support")) as store:
        timeline = load_timeline(store, "support-1")
    settings = settings_with(WhatIfSettings.from_record(timeline.generations[-1]), **changes)
    result = simulate(timeline, settings)
    packed = pickle.loads(pickle.dumps(WhatIfChart.pack(result, timeline_key(timeline))))
    assert packed.points == result.points and packed.events == result.events
    assert packed.n_points == len(result.points) and packed.n_events == len(result.events)
    for kinds in [("observation",), ("reflection", "reflection-activation"), ("buffering",)]:
        assert packed.count(*kinds) == result.count(*kinds)
        assert packed.turns_of(*kinds) == result.turns_of(*kinds)
    assert (packed.peak_context_tokens, packed.peak_message_tokens) == (
        result.peak_context_tokens, result.peak_message_tokens)
    assert (packed.observer_calls, packed.reflector_calls) == (result.observer_calls, result.reflector_calls)
    assert packed.uses_real_sizes == (not changes) and packed.settings == settings
    _same_series(packed.series, ChartSeries.from_points(result.points, result.events))
    # one event and its message, without rebuilding every object
    for i, event in enumerate(result.events):
        assert packed.event(i) == event
        point = next(p for p in result.points if p.event_index == i)
        assert packed.message_index_of_event(i) == point.message_index
    assert packed.event(len(result.events)) is None


def test_only_columns_cross_the_process_boundary(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline = load_timeline(store, "support-1")
    packed = replay_packed(timeline, WhatIfSettings.from_record(timeline.generations[-1]))
    assert packed.points and packed.events   # rebuilt (and cached) here
    state = packed.__getstate__()
    assert "points" not in state and "events" not in state
    # no Point or OMEvent object in the pickle: their classes are never named in it
    data = pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"\x8c\x05Point" not in data and b"OMEvent" not in data


def test_the_kept_timeline_is_replayed_and_a_changed_key_reads_again(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline, _series = load_timeline_chart(store, "support-1")   # what the helper builds for the chart
        key = timeline_key(timeline)
        assert cached_timeline(store, "support-1", key) is timeline
        other = cached_timeline(store, "support-1", (*key[:-1], "another newest message"))
        assert other is not timeline and timeline_key(other) == key   # the same data, read again
        settings = WhatIfSettings.from_record(timeline.generations[-1])
        packed = replay_in_store(store, "support-1", key, settings)
        assert packed.points == simulate(timeline, settings).points and packed.timeline_key == key
    with open_store(fixture_db("support")) as again:  # another store: never its kept timeline
        assert cached_timeline(again, "support-1", key) is not other


def test_a_cancelled_replay_stops(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline = load_timeline(store, "support-1")
        cancel = threading.Event()
        cancel.set()
        with pytest.raises(EngineError, match="Cancelled"):
            replay_in_store(store, "support-1", timeline_key(timeline),
                            WhatIfSettings.from_record(timeline.generations[-1]), cancel=cancel)


def test_chart_peaks_are_the_highest_points_drawn(fixture_db):
    """The What-if table quotes `ChartSeries.peaks`: the window curve's and the window + log's highest
    points, which reach Mastra's own largest observed window (its start marker's tokensToObserve).
    Before, the Real column read 2,429 / 3,281 on support-1 while the chart climbed to 3,083."""
    from tests.mastra_facts import marker_messages, raw_messages

    path = fixture_db("support")
    with open_store(path) as store:
        timeline, series = load_timeline_chart(store, "support-1")
    peaks = series.peaks
    assert peaks.message_tokens == max(p.message_tokens for p in timeline.points)
    assert peaks.context_tokens == max(p.message_tokens + p.observation_tokens for p in timeline.points)
    starts = marker_messages(raw_messages(path, "support-1"), "data-om-observation-start")
    assert peaks.message_tokens == max(part["data"]["tokensToObserve"] for _m, part in starts) == 3083
    assert peaks.context_tokens == 3519
    assert timeline.agent_peaks == (3281, 2825)   # measured on the full timeline before it was slimmed

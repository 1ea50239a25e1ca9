"""What-if replays (studio.engine.whatif): the stored settings retrace the real run; other settings move it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from studio.engine.events import ACTIVATION, BUFFERING, OBSERVATION, REFLECTION, REFLECTION_ACTIVATION
from studio.engine.timeline import build_timeline
from studio.engine.whatif import (
    WhatIfSettings,
    WhatIfSettingsError,
    reflector_attempts,
    run_whatif,
    simulate,
)
from studio.store import open_store
from tests.conftest import load_oracle
from tests.mastra_facts import om_rows, sync_turns, window_tokens

SYNC_THREADS = [("support", "support-1"), ("support", "support-2"), ("support", "support-3"),
                ("support", "support-4"), ("support", "support-5"), ("collab", "doc_42"), ("collab", "room_7")]


def _real_turns(timeline, *kinds):
    return [e.turn for e in timeline.events if e.kind in kinds and e.status in ("completed", "recorded")]


@pytest.mark.parametrize("name,thread_id", SYNC_THREADS)
def test_stored_settings_fire_observation_and_reflection_on_the_real_turns(fixture_db, name, thread_id):
    path = fixture_db(name)
    with open_store(path) as store:
        timeline = build_timeline(store, thread_id)
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    result = simulate(timeline, stored)
    assert result.uses_real_sizes
    observed, reflected = sync_turns(path, thread_id)   # from Mastra's markers and generation rows
    assert result.turns_of(OBSERVATION) == _real_turns(timeline, OBSERVATION) == observed
    real = _real_turns(timeline, REFLECTION, REFLECTION_ACTIVATION)
    assert result.turns_of(REFLECTION, REFLECTION_ACTIVATION) == real == reflected
    # with the real sizes, the log ends where the real one does
    assert result.points[-1].observation_tokens == timeline.points[-1].observation_tokens
    assert result.observer_calls == len(result.turns_of(OBSERVATION))


def test_support_1_stored_settings_are_mastras(fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        result = run_whatif(store, "support-1")
    rows = om_rows(path, "thread:support-1")
    config = json.loads(rows[-1]["config"])   # what Mastra stored with the record
    assert result.settings == WhatIfSettings(message_tokens=config["observation"]["messageTokens"],
                                             observation_tokens=config["reflection"]["observationTokens"])
    observed, reflected = sync_turns(path, "support-1")   # read from Mastra's markers and rows
    assert reflected, "support-1 should have reflection rows"
    assert result.turns_of(OBSERVATION) == observed
    assert result.turns_of(REFLECTION) == reflected
    assert result.reflector_calls == len(reflected)  # replayed with the real sizes: one Reflector call each
    doc = result.to_json()
    assert doc["estimate"] is True and doc["observations"] == len(observed) and doc["reflections"] == len(reflected)


def test_lower_thresholds_observe_and_reflect_more(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    base = simulate(timeline, stored, use_real_sizes=False)
    tight = simulate(timeline, replace(stored, message_tokens=1000, observation_tokens=300))
    loose = simulate(timeline, replace(stored, message_tokens=8000, observation_tokens=4000))
    assert not tight.uses_real_sizes
    assert tight.count(OBSERVATION) > base.count(OBSERVATION) > loose.count(OBSERVATION)
    assert tight.count(REFLECTION) >= base.count(REFLECTION) >= loose.count(REFLECTION) == 0
    # the loose threshold is reached at most once per 8,000 tokens the thread holds (Mastra's per-message counts)
    per_message = load_oracle("support")["tokens"]["support-1"]["perMessage"]
    total = window_tokens(per_message, list(per_message))
    assert 0 < loose.count(OBSERVATION) <= total // 8000
    # Mastra's trigger at step 0 of a turn: an observation fires on a turn exactly when the window
    # reached the threshold with the turn's user message (first principles: getStatus's shouldObserve).
    for p in (p for p in tight.points if p.kind == "message" and p.message_index is not None
              and timeline.messages[p.message_index].role == "user"):
        fired = any(e.kind == OBSERVATION and e.turn == p.turn for e in tight.events)
        assert fired == (p.message_tokens >= p.threshold), p.turn
    # modelled sizes follow the ratio: each observation writes ratio × tokens observed
    event = tight.events[0]
    assert event.kind == OBSERVATION and event.output_tokens == round(event.tokens * tight.observation_ratio)


def test_ratios_are_adjustable(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    verbose = simulate(timeline, stored, observation_ratio=0.5, reflection_ratio=0.9)
    terse = simulate(timeline, stored, observation_ratio=0.02, reflection_ratio=0.2)
    assert not verbose.uses_real_sizes and verbose.observation_ratio == 0.5
    assert verbose.count(REFLECTION) > terse.count(REFLECTION)
    assert terse.count(REFLECTION) == 0


def test_shared_budget_expands_the_message_threshold(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    shared = simulate(timeline, WhatIfSettings(message_tokens=2500, observation_tokens=550, share_token_budget=True))
    for p in shared.points:
        assert p.threshold == max(3050 - p.observation_tokens, 2500)
        assert p.reflection_threshold == max(3050 - p.threshold, 1000)


def test_async_buffering_replay_buffers_and_activates(fixture_db):
    with open_store(fixture_db("buffered")) as store:
        timeline = build_timeline(store, "long-run")
    result = simulate(timeline, WhatIfSettings.from_record(timeline.generations[-1]))
    assert result.resolved.buffer_tokens == 1000 and result.resolved.block_after == 4800
    assert result.count(BUFFERING) > 10 and result.count(ACTIVATION) > 5
    assert result.count(OBSERVATION) == _real_turns(timeline, OBSERVATION).__len__() == 0
    # the same thread with buffering off observes synchronously instead
    sync = simulate(timeline, WhatIfSettings(message_tokens=4000, observation_tokens=1100))
    assert sync.count(BUFFERING) == sync.count(ACTIVATION) == 0 and sync.count(OBSERVATION) > 5


@pytest.mark.parametrize("settings,message", [
    (WhatIfSettings(2500, 550, buffer_tokens=0.2, share_token_budget=True), "shareTokenBudget"),
    (WhatIfSettings(2500, 550, buffer_tokens=3000), "must be less than messageTokens"),
    (WhatIfSettings(2500, 550, buffer_tokens=500, buffer_activation=5), "bufferActivation"),
    (WhatIfSettings(2500, 550, buffer_tokens=500, block_after=2000), "blockAfter"),
    (WhatIfSettings(0, 550), "positive"),
    (WhatIfSettings(2500, 550, buffer_tokens=500, reflection_buffer_activation=1.5), "reflection bufferActivation"),
])
def test_settings_mastra_rejects_are_refused(settings, message):
    with pytest.raises(WhatIfSettingsError, match=message):
        settings.resolve()


def test_resolution_mirrors_mastras_constructor():
    resolved = WhatIfSettings(4000, 1100, buffer_tokens=0.25).resolve()
    assert (resolved.buffer_tokens, resolved.buffer_activation, resolved.block_after) == (1000, 0.8, 4800)
    assert WhatIfSettings(4000, 1100, buffer_tokens=0.25, block_after=6000).resolve().block_after == 6000
    with pytest.raises(WhatIfSettingsError, match="resource"):
        WhatIfSettings(4000, 1100, buffer_tokens=0.25).resolve("resource")


def test_reflector_attempts_follow_the_compression_ladder():
    assert reflector_attempts(400, 550, "openai/gpt-4o") == 1
    assert reflector_attempts(600, 550, "openai/gpt-4o") == 4            # levels 1..4
    assert reflector_attempts(600, 550, "google/gemini-2.5-flash") == 3  # starts at level 2


@pytest.mark.parametrize("message_tokens,observation_tokens", [(2500, 550), (1000, 400), (4000, 800), (600, 300)])
def test_peak_context_is_window_plus_log_at_the_same_turn(fixture_db, message_tokens, observation_tokens):
    # Definition (first principles): peak context = max over turns of (window + log) taken at the
    # same moment, the end of the turn's step 0, when the actor gets them; peak window is measured
    # at the same moments, so it can never exceed peak context (the log is never negative). The
    # window just before an observation, which no actor call got, counts in neither.
    from studio.engine.whatif import settings_with

    with open_store(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    chosen = settings_with(WhatIfSettings.from_record(timeline.generations[-1]),
                           message_tokens=message_tokens, observation_tokens=observation_tokens)
    result = simulate(timeline, chosen)
    doc = result.to_json()
    assert doc["peak_context_tokens"] >= doc["peak_message_tokens"] > 0
    assert doc["peak_context_tokens"] == max(t.message_tokens + t.observation_tokens for t in result.turns)
    assert doc["peak_message_tokens"] == max(t.message_tokens for t in result.turns)


@pytest.mark.parametrize("name,thread_id", SYNC_THREADS)
def test_the_stored_replay_gives_the_agent_what_the_real_run_gave(fixture_db, name, thread_id):
    """The agent's load after OM's step 0, turn by turn: the real run's is the `context` command's
    window (itself checked against Mastra's prompt log), and the replay with the stored settings gives
    the same window and log at every turn.

    Before: support-1's real peak came from the chart's points, where turn 15's reflection sits after the
    turn's reply (the reply's row is stamped 20:13:12.556, the reflection's 20:13:12.591, although Mastra's
    step 0 ran it before the actor was called), so the real agent's largest window read 2,429 against the
    replay's 2,825; and the replay dropped the turn's own input after a step-0 observation, which Mastra
    keeps (`preserveMessageIds`): 0 instead of 277 at turn 8.
    """
    from studio.engine.context import agent_peaks, agent_turns, turn_context

    with open_store(fixture_db(name)) as store:
        timeline = build_timeline(store, thread_id)
        real = agent_turns(timeline)
        assert len(real) == sum(1 for m in timeline.messages if m.role == "user")
        for t in real:
            assert t.window == turn_context(store, thread_id, t.turn, timeline=timeline).window_estimate
    result = simulate(timeline, WhatIfSettings.from_record(timeline.generations[-1]))
    assert [(t.turn, t.message_tokens, t.observation_tokens) for t in result.turns] == [
        (t.turn, t.window, t.log) for t in real]
    peaks = agent_peaks(timeline)
    assert (peaks.context_tokens, peaks.message_tokens) == (result.peak_context_tokens, result.peak_message_tokens)
    if thread_id == "support-1":
        assert (peaks.message_tokens, peaks.context_tokens) == (2825, 3281)

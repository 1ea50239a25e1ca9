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
from studio.store.memory_store import MemoryStore
from tests.mastra_facts import om_rows, sync_turns

SYNC_THREADS = [("support", "support-1"), ("support", "support-2"), ("support", "support-3"),
                ("support", "support-4"), ("support", "support-5"), ("collab", "doc_42"), ("collab", "room_7")]


def _real_turns(timeline, *kinds):
    return [e.turn for e in timeline.events if e.kind in kinds and e.status in ("completed", "recorded")]


@pytest.mark.parametrize("name,thread_id", SYNC_THREADS)
def test_stored_settings_fire_observation_and_reflection_on_the_real_turns(fixture_db, name, thread_id):
    path = fixture_db(name)
    with MemoryStore.open(path) as store:
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
    with MemoryStore.open(path) as store:
        result = run_whatif(store, "support-1")
    rows = om_rows(path, "thread:support-1")
    config = json.loads(rows[-1]["config"])   # what Mastra stored with the record
    assert result.settings == WhatIfSettings(message_tokens=config["observation"]["messageTokens"],
                                             observation_tokens=config["reflection"]["observationTokens"])
    observed, reflected = sync_turns(path, "support-1")
    assert (observed, reflected) == ([5, 10, 16, 17, 24, 25], [16, 24])   # (read from Mastra's rows)
    assert result.turns_of(OBSERVATION) == observed
    assert result.turns_of(REFLECTION) == reflected
    assert result.reflector_calls == len(reflected)  # replayed with the real sizes: one Reflector call each
    doc = result.to_json()
    assert doc["estimate"] is True and doc["observations"] == len(observed) and doc["reflections"] == len(reflected)


def test_lower_thresholds_observe_and_reflect_more(fixture_db):
    with MemoryStore.open(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    base = simulate(timeline, stored, use_real_sizes=False)
    tight = simulate(timeline, replace(stored, message_tokens=1000, observation_tokens=300))
    loose = simulate(timeline, replace(stored, message_tokens=8000, observation_tokens=4000))
    assert not tight.uses_real_sizes
    assert tight.count(OBSERVATION) > base.count(OBSERVATION) > loose.count(OBSERVATION)
    assert tight.count(REFLECTION) >= base.count(REFLECTION) >= loose.count(REFLECTION) == 0
    assert loose.count(OBSERVATION) == 1  # the whole thread holds about 9,000 tokens
    assert max(p.message_tokens for p in tight.turns) < 1000 + 1000  # observed before growing far
    # modelled sizes follow the ratio: each observation writes ratio × tokens observed
    event = tight.events[0]
    assert event.kind == OBSERVATION and event.output_tokens == round(event.tokens * tight.observation_ratio)


def test_ratios_are_adjustable(fixture_db):
    with MemoryStore.open(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    verbose = simulate(timeline, stored, observation_ratio=0.5, reflection_ratio=0.9)
    terse = simulate(timeline, stored, observation_ratio=0.02, reflection_ratio=0.2)
    assert not verbose.uses_real_sizes and verbose.observation_ratio == 0.5
    assert verbose.count(REFLECTION) > terse.count(REFLECTION)
    assert terse.count(REFLECTION) == 0


def test_shared_budget_expands_the_message_threshold(fixture_db):
    with MemoryStore.open(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-1")
    shared = simulate(timeline, WhatIfSettings(message_tokens=2500, observation_tokens=550, share_token_budget=True))
    for p in shared.points:
        assert p.threshold == max(3050 - p.observation_tokens, 2500)
        assert p.reflection_threshold == max(3050 - p.threshold, 1000)


def test_async_buffering_replay_buffers_and_activates(fixture_db):
    with MemoryStore.open(fixture_db("buffered")) as store:
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

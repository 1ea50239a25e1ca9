"""Threshold resolution from a record's stored config, derived from Mastra's thresholds.ts rules."""

from __future__ import annotations

from studio.common.om_settings import (
    ThresholdRange,
    activation_boundary,
    activation_chunk_count,
    activation_ratio,
    dynamic_threshold,
    projected_message_removal,
    resolve_settings,
    retention_floor,
)


def test_defaults_when_config_is_missing_or_malformed():
    for cfg in (None, {}, {"observation": "nonsense"}):
        s = resolve_settings(cfg)
        assert s.message_tokens == 30_000 and s.reflection_tokens == 40_000
        assert not s.async_observation_enabled


def test_plain_thresholds_come_from_config():
    s = resolve_settings({"observation": {"messageTokens": 2500}, "reflection": {"observationTokens": 550}})
    assert (s.message_tokens, s.reflection_tokens) == (2500, 550)
    assert dynamic_threshold(s.message_tokens, 10_000) == 2500


def test_shared_budget_is_a_range_and_threshold_grows_into_unused_observation_space():
    s = resolve_settings({"observation": {"messageTokens": 30_000, "shareTokenBudget": True},
                          "reflection": {"observationTokens": 40_000}})
    assert s.message_tokens == ThresholdRange(30_000, 70_000)
    assert dynamic_threshold(s.message_tokens, 0) == 70_000
    assert dynamic_threshold(s.message_tokens, 10_000) == 60_000
    assert dynamic_threshold(s.message_tokens, 55_000) == 30_000  # never below the base


def test_ratio_buffer_tokens_resolve_against_the_threshold():
    s = resolve_settings({"observation": {"messageTokens": 20_000, "bufferTokens": 0.25, "bufferActivation": 0.8}})
    assert s.buffer_tokens == 5000 and s.async_observation_enabled


def test_record_overrides_win_unless_below_buffer_floor():
    cfg = {"observation": {"messageTokens": 4000, "bufferTokens": 1000},
           "_overrides": {"observation": {"messageTokens": 6000}, "reflection": {"observationTokens": 900}}}
    s = resolve_settings(cfg)
    assert (s.message_tokens, s.reflection_tokens) == (6000, 900)
    cfg["_overrides"]["observation"]["messageTokens"] = 800  # <= bufferTokens: clamped to the instance value
    assert resolve_settings(cfg).message_tokens == 4000


def test_projected_removal_prefers_the_boundary_just_over_the_target():
    chunks = [{"messageTokens": 1000}, {"messageTokens": 1000}, {"messageTokens": 1000}]
    # threshold 4000, activation 0.8 -> retention floor 800; pending 3000 -> target 2200 -> boundary 3 (3000)
    # leaves 0 < min(1000, 800) so it falls back to the best boundary under the target (2000).
    assert projected_message_removal(chunks, 0.8, 4000, 3000) == 2000
    # pending 3900 -> target 3100: no boundary over; the under boundary 3000 leaves 900 >= 800.
    assert projected_message_removal(chunks, 0.8, 4000, 3900) == 3000
    assert projected_message_removal([], 0.8, 4000, 3900) == 0
    assert projected_message_removal(chunks, 0.8, 4000, 500) == 0  # within the floor already


def test_an_absolute_retention_above_the_threshold_parts_projection_and_activation():
    # Mastra's two floors (tests/interop/test_activation_boundary_interop.py holds both to real Mastra):
    # the projection keeps the retention (5000), the activation the threshold (ratio 1 - 5000/4000 -> 0).
    assert retention_floor(5000, 4000) == 5000 and activation_ratio(5000, 4000) == 0
    assert retention_floor(3000, 4000) == 3000 and activation_ratio(3000, 4000) == 0.25
    chunks = [{"messageTokens": 1805}, {"messageTokens": 600}]
    # pending 6000: target 1000 over the retention (one chunk), 2000 over the threshold (both, forced by blockAfter)
    assert activation_boundary(chunks, 6000, 5000) == (1, 1805)
    assert projected_message_removal(chunks, 5000, 4000, 6000) == 1805
    assert activation_chunk_count(chunks, 6000, 4000, 5000, True) == 2
    assert activation_boundary([], 6000, 5000) == (0, 0)

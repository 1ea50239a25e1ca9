"""Resolve an OM record's stored `config` into the thresholds Mastra's engine would use.

Mirrors the constructor of Mastra's `ObservationalMemory` (@mastra/memory 1.31.0) and its
`getEffectiveMessageTokens` / `getEffectiveReflectionTokens`: the record's config snapshot gives
the instance settings; explicit per-record `_overrides` win; with `shareTokenBudget` the message
threshold is a range {min: messageTokens, max: messageTokens + observationTokens}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_MESSAGE_TOKENS = 30_000
DEFAULT_OBSERVATION_TOKENS = 40_000
#: Mastra's default Observer model (OBSERVATIONAL_MEMORY_DEFAULTS.observation.model).
DEFAULT_OBSERVATION_MODEL = "google/gemini-2.5-flash"


@dataclass(frozen=True)
class ThresholdRange:
    """A shared-budget message threshold: at least `min` tokens, up to `max` (tokens)."""

    min: int
    max: int


Threshold = int | ThresholdRange


def max_threshold(threshold: Threshold) -> int:
    """Return the upper bound of THRESHOLD (Mastra's getMaxThreshold), in tokens."""
    return threshold.max if isinstance(threshold, ThresholdRange) else threshold


def js_round(x: float) -> int:
    """Round like JavaScript's Math.round (halves go up, also for negatives)."""
    return math.floor(x + 0.5)


def dynamic_threshold(threshold: Threshold, observation_tokens: int) -> int:
    """Return the message-window threshold in force (Mastra's calculateDynamicThreshold), in tokens.

    A plain number is returned as is; a shared-budget range gives
    max(range.max - observation_tokens, range.min), rounded.
    """
    if not isinstance(threshold, ThresholdRange):
        return threshold
    return js_round(max(threshold.max - observation_tokens, threshold.min))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _threshold_value(value: Any) -> Threshold | None:
    if isinstance(value, dict) and _number(value.get("min")) is not None and _number(value.get("max")) is not None:
        return ThresholdRange(int(value["min"]), int(value["max"]))
    number = _number(value)
    return int(number) if number else None


@dataclass(frozen=True)
class OMSettings:
    """The OM settings in force for one record (all token figures in tokens)."""

    scope: str
    message_tokens_base: int
    observation_tokens_base: int
    share_token_budget: bool
    message_tokens: Threshold
    reflection_tokens: Threshold
    buffer_tokens: int | None
    buffer_activation: float | None
    block_after: float | None
    reflection_buffer_activation: float | None
    observation_model: str | None
    reflection_model: str | None
    counter_model: str | None = None

    @property
    def async_observation_enabled(self) -> bool:
        """Return True when async buffering of observations is on (bufferTokens > 0)."""
        return self.buffer_tokens is not None and self.buffer_tokens > 0

    @property
    def async_reflection_enabled(self) -> bool:
        """Return True when reflections are buffered ahead (reflection.bufferActivation > 0)."""
        return self.async_observation_enabled and bool(self.reflection_buffer_activation)


def model_name(model: Any) -> str | None:
    """Return a model as Mastra's `provider/model` string, from either stored form."""
    if isinstance(model, str):
        return model
    if isinstance(model, dict) and isinstance(model.get("modelId"), str):
        provider = model.get("provider")
        return f"{str(provider).split('.')[0]}/{model['modelId']}" if provider else model["modelId"]
    return None


def _counter_model(model: Any) -> str | None:
    """Return the model Mastra's TokenCounter is built with: the Observer model only when it is a string."""
    if model is None:
        return DEFAULT_OBSERVATION_MODEL
    return model if isinstance(model, str) else None


def resolve_settings(config: dict | None, scope: str | None = None) -> OMSettings:
    """Resolve a record's stored `config` (parsed JSON) into OMSettings.

    Missing values fall back to Mastra's defaults (30,000 message tokens, 40,000 observation
    tokens). Never raises: a malformed config gives the defaults.
    """
    config = config if isinstance(config, dict) else {}
    obs = config.get("observation") if isinstance(config.get("observation"), dict) else {}
    ref = config.get("reflection") if isinstance(config.get("reflection"), dict) else {}
    base_msg = _number(obs.get("messageTokens"))
    # A stored range (older snapshots) carries the base as its min.
    msg_stored = _threshold_value(obs.get("messageTokens"))
    if isinstance(msg_stored, ThresholdRange):
        base_msg = msg_stored.min
    message_tokens_base = int(base_msg) if base_msg else DEFAULT_MESSAGE_TOKENS
    obs_stored = _threshold_value(ref.get("observationTokens"))
    observation_tokens_base = (max_threshold(obs_stored) if obs_stored else DEFAULT_OBSERVATION_TOKENS)
    shared = bool(config.get("shareTokenBudget", obs.get("shareTokenBudget", False)))
    message_tokens: Threshold = (
        ThresholdRange(message_tokens_base, message_tokens_base + observation_tokens_base) if shared
        else message_tokens_base
    )
    buffer_raw = _number(obs.get("bufferTokens"))
    buffer_tokens = None
    if buffer_raw is not None and buffer_raw > 0:
        buffer_tokens = (js_round(max_threshold(message_tokens) * buffer_raw) if buffer_raw < 1 else int(buffer_raw))
    buffer_activation = _number(obs.get("bufferActivation")) if buffer_tokens else None
    block_after = _number(obs.get("blockAfter")) if buffer_tokens else None
    reflection_activation = _number(ref.get("bufferActivation")) if buffer_tokens else None

    reflection_tokens: Threshold = observation_tokens_base
    overrides = config.get("_overrides") if isinstance(config.get("_overrides"), dict) else {}
    o_obs = overrides.get("observation") if isinstance(overrides.get("observation"), dict) else {}
    o_ref = overrides.get("reflection") if isinstance(overrides.get("reflection"), dict) else {}
    override_msg = _threshold_value(o_obs.get("messageTokens"))
    if override_msg:
        top = max_threshold(override_msg)
        clamped = (buffer_tokens and top <= buffer_tokens) or (
            buffer_activation and buffer_activation >= 1000 and top <= buffer_activation)
        if not clamped:
            message_tokens = override_msg
    override_ref = _threshold_value(o_ref.get("observationTokens"))
    if override_ref:
        reflection_tokens = override_ref

    return OMSettings(
        scope=scope or config.get("scope") or "thread",
        message_tokens_base=message_tokens_base,
        observation_tokens_base=observation_tokens_base,
        share_token_budget=shared,
        message_tokens=message_tokens,
        reflection_tokens=reflection_tokens,
        buffer_tokens=buffer_tokens,
        buffer_activation=buffer_activation,
        block_after=block_after,
        reflection_buffer_activation=reflection_activation,
        observation_model=model_name(obs.get("model") or config.get("model")),
        counter_model=_counter_model(obs.get("model", config.get("model"))),
        reflection_model=model_name(ref.get("model") or config.get("model")),
    )


def chunk_tokens(chunk: dict, key: str) -> int:
    """Return a buffered chunk's token field KEY as a number (missing or not a finite number -> 0)."""
    value = _number(chunk.get(key))
    return int(value) if value is not None else 0


def retention_floor(buffer_activation: float, threshold: float) -> float:
    """Return the message tokens to keep after an activation (Mastra's resolveRetentionFloor), in tokens.

    BUFFER_ACTIVATION >= 1000 is an absolute retention (returned as is, even above THRESHOLD); else a
    ratio: THRESHOLD × (1 − ratio), the ratio clamped to [0, 1].
    """
    if buffer_activation >= 1000:
        return buffer_activation
    return threshold * (1 - max(0.0, min(1.0, buffer_activation)))


def activation_ratio(buffer_activation: float, threshold: float) -> float:
    """Return bufferActivation as the ratio Mastra's activate() hands its storage (resolveActivationRatio), in [0, 1].

    An absolute retention (>= 1000) becomes 1 − retention / THRESHOLD, clamped: a retention at or
    above THRESHOLD gives 0, i.e. a floor of THRESHOLD itself (not the retention, unlike `retention_floor`).
    """
    if buffer_activation >= 1000:
        return max(0.0, min(1.0, 1 - buffer_activation / threshold)) if threshold else 0.0
    return max(0.0, min(1.0, buffer_activation))


def _message_tokens(chunk: dict) -> float:
    """A chunk's messageTokens as Mastra sums them (`chunk.messageTokens ?? 0`; not a finite number -> 0)."""
    value = _number(chunk.get("messageTokens"))
    return value if value is not None else 0


def activation_boundary(chunks: list[dict], pending_tokens: float, floor: float, *,
                        force_max: bool = False) -> tuple[int, float]:
    """Return (how many of CHUNKS to activate, their message tokens): Mastra's chunk-boundary rule.

    The rule of @mastra/libsql's swapBufferedToActive (1.23.1), which @mastra/memory 1.31.0's
    calculateProjectedMessageRemoval replicates without FORCE_MAX. CHUNKS: the buffered chunks, oldest
    first; PENDING_TOKENS: the message tokens pending; FLOOR: the tokens to keep (tokens). The target
    is PENDING_TOKENS − FLOOR (at least 0); the first cumulative boundary reaching it is taken unless
    it overshoots by more than 0.95 × FLOOR or leaves fewer than min(1000, FLOOR) tokens (FORCE_MAX,
    pending ≥ blockAfter: no overshoot limit); else the last boundary below the target if it leaves
    that much; else the boundary over it; else one chunk. (0, 0) when there are no chunks.
    """
    if not chunks:
        return 0, 0
    target = max(0, pending_tokens - floor)
    cumulative = 0
    over = over_tokens = under = under_tokens = 0
    for i, chunk in enumerate(chunks):
        cumulative += _message_tokens(chunk)
        if cumulative >= target:
            if over == 0 or cumulative < over_tokens:
                over, over_tokens = i + 1, cumulative
        elif cumulative > under_tokens:
            under, under_tokens = i + 1, cumulative
    min_remaining = min(1000, floor)
    if force_max and over > 0 and pending_tokens - over_tokens >= min_remaining:
        return over, over_tokens
    if over > 0 and over_tokens - target <= floor * 0.95 and pending_tokens - over_tokens >= min_remaining:
        return over, over_tokens
    if under > 0 and pending_tokens - under_tokens >= min_remaining:
        return under, under_tokens
    if over > 0:
        return over, over_tokens
    return 1, _message_tokens(chunks[0])


def activation_chunk_count(chunks: list[dict], pending_tokens: float, threshold: float, buffer_activation: float,
                           force_max: bool) -> int:
    """Return how many of CHUNKS (oldest first) Mastra's activate() moves (≥ 1 when any; 0 when none).

    Mirrors @mastra/memory 1.31.0 `activate()`: the floor its storage's swapBufferedToActive uses is
    THRESHOLD × (1 − `activation_ratio`), so an absolute retention (BUFFER_ACTIVATION ≥ 1000) above
    THRESHOLD keeps THRESHOLD, not the retention; then `activation_boundary`. PENDING_TOKENS: the
    record's pendingMessageTokens (or Σ chunk.messageTokens when that is 0); THRESHOLD: the max
    message-token threshold (tokens); FORCE_MAX: pending ≥ blockAfter.
    """
    floor = threshold * (1 - activation_ratio(buffer_activation, threshold))
    return activation_boundary(chunks, pending_tokens, floor, force_max=force_max)[0]


def projected_message_removal(chunks: list[dict], buffer_activation: float, threshold: int, pending: int) -> int:
    """Return message tokens an activation would remove now (Mastra's calculateProjectedMessageRemoval), in tokens.

    What Mastra's status reports (`data-om-status` buffered.observations.projectedMessageRemoval): the
    `activation_boundary` rule over the `retention_floor`, which keeps an absolute retention as is even
    above THRESHOLD (the activation itself keeps THRESHOLD then, see `activation_chunk_count`); 0 when
    there are no chunks or PENDING is within the floor already.
    """
    floor = retention_floor(buffer_activation, threshold)
    if not chunks or max(0, pending - floor) == 0:
        return 0
    return int(activation_boundary(chunks, pending, floor)[1])


#: Mastra's built-in extractors and the `metadata.mastra.om` field each one fills (BUILT_IN_METADATA_FIELDS).
BUILT_IN_EXTRACTOR_FIELDS = {"current-task": "currentTask", "suggested-response": "suggestedResponse",
                             "thread-title": "threadTitle"}


@dataclass(frozen=True)
class ExtractorSpec:
    """One inline Observer extractor: SLUG (its XML tag and `extractedValues` key) and METADATA_KEY_PATH
    (the dotted path under `metadata.mastra.om` its value is stored at; None: not stored)."""

    slug: str
    metadata_key_path: str | None


def observer_extractors(config: dict | None) -> tuple[ExtractorSpec, ...]:
    """Return the Observer's inline extractors for a record's stored CONFIG, in Mastra's order.

    Mirrors composeObservationExtractors (@mastra/memory 1.31.0) as the record stores its result:
    the `observation.extractors` list when there is one (its `inline` entries: the built-in
    current-task, suggested-response, thread-title, then inline user extractors); without it (older
    records) current-task and suggested-response, plus thread-title when `observation.threadTitle`
    is true. Never raises.
    """
    config = config if isinstance(config, dict) else {}
    obs = config.get("observation") if isinstance(config.get("observation"), dict) else {}
    stored = obs.get("extractors")
    if not isinstance(stored, list):
        slugs = ["current-task", "suggested-response"] + (["thread-title"] if obs.get("threadTitle") is True else [])
        return tuple(ExtractorSpec(s, BUILT_IN_EXTRACTOR_FIELDS[s]) for s in slugs)
    out = []
    for entry in stored:
        if not isinstance(entry, dict) or not isinstance(entry.get("slug"), str) or not entry["slug"]:
            continue
        if entry.get("mode", "inline") != "inline":
            continue  # structured extractors need a second model call; hooks take no value from the answer
        slug, path = entry["slug"], entry.get("metadataKeyPath")
        if not isinstance(path, str):
            path = BUILT_IN_EXTRACTOR_FIELDS.get(slug, f"extracted.{slug}") if path is None else None
        out.append(ExtractorSpec(slug, path))
    return tuple(out)

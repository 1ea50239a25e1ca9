"""What-if replay settings: OM settings as a user writes them, and as Mastra's constructor resolves them.

Split out of `studio.engine.whatif` (which re-exports every name here): `WhatIfSettings` (the
settings to replay with), `ResolvedSettings` (absolute thresholds in force during a replay),
`WhatIfSettingsError` (what Mastra's ObservationalMemory constructor would refuse) and `settings_with`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from studio.common.om_settings import ThresholdRange, dynamic_threshold, js_round, resolve_settings
from studio.errors import EngineError
from studio.store.records import OMRecord


class WhatIfSettingsError(EngineError):
    """What-if settings Mastra itself would refuse (its ObservationalMemory constructor checks)."""


@dataclass(frozen=True)
class WhatIfSettings:
    """OM settings to replay with, as a user writes them in Mastra's config (tokens or ratios).

    `buffer_tokens`: None or 0 turns async buffering off; below 1 a fraction of message_tokens,
    else tokens. `buffer_activation`: fraction of the threshold to activate (<= 1) or tokens to
    keep (>= 1000); default 0.8. `block_after`: multiple of message_tokens (1 to 100) or tokens;
    default 1.2. `reflection_buffer_activation` / `reflection_block_after` are the
    `reflection.bufferActivation` / `blockAfter` (kept from the stored config by default).
    """

    message_tokens: int
    observation_tokens: int
    buffer_tokens: float | None = None
    buffer_activation: float | None = None
    block_after: float | None = None
    share_token_budget: bool = False
    reflection_buffer_activation: float | None = None
    reflection_block_after: float | None = None

    @classmethod
    def from_record(cls, record: OMRecord) -> WhatIfSettings:
        """Return the settings stored in RECORD's `config` (Mastra's resolved snapshot, overrides applied)."""
        settings = resolve_settings(record.config, record.scope)
        config = record.config
        ref = config.get("reflection") if isinstance(config.get("reflection"), dict) else {}
        refl_block = ref.get("blockAfter") if settings.async_reflection_enabled else None
        message = settings.message_tokens.min if isinstance(settings.message_tokens, ThresholdRange) \
            else settings.message_tokens
        reflection = settings.reflection_tokens.max if isinstance(settings.reflection_tokens, ThresholdRange) \
            else settings.reflection_tokens
        return cls(message_tokens=int(message), observation_tokens=int(reflection),
                   buffer_tokens=settings.buffer_tokens, buffer_activation=settings.buffer_activation,
                   block_after=settings.block_after, share_token_budget=settings.share_token_budget,
                   reflection_buffer_activation=settings.reflection_buffer_activation,
                   reflection_block_after=refl_block if isinstance(refl_block, (int, float)) else None)

    def resolve(self, scope: str = "thread") -> ResolvedSettings:
        """Return absolute thresholds as Mastra's constructor resolves them.

        Raises WhatIfSettingsError for what Mastra rejects: non-positive thresholds, a shared
        budget with async buffering, bufferTokens >= messageTokens, bufferActivation in (1, 1000)
        or as tokens >= messageTokens, blockAfter below messageTokens, async buffering in resource
        scope, reflection bufferActivation outside (0, 1], reflection blockAfter below observationTokens.
        """
        if self.message_tokens <= 0 or self.observation_tokens <= 0:
            raise WhatIfSettingsError("messageTokens and observationTokens must be positive")
        buffer = self.buffer_tokens if self.buffer_tokens else None
        if buffer is not None:
            if buffer < 0:
                raise WhatIfSettingsError(f"bufferTokens must be > 0, got {buffer:g}")
            buffer = js_round(self.message_tokens * buffer) if buffer < 1 else int(buffer)
        if self.share_token_budget and buffer is not None:
            raise WhatIfSettingsError("shareTokenBudget requires async buffering to be off (bufferTokens: false)")
        if buffer is not None and scope == "resource":
            raise WhatIfSettingsError("Async buffering is not supported with resource scope")
        top = self.message_tokens + self.observation_tokens if self.share_token_budget else self.message_tokens
        activation = block = refl_activation = refl_block = None
        if buffer is not None:
            if buffer >= top:
                raise WhatIfSettingsError(f"bufferTokens ({buffer}) must be less than messageTokens ({top})")
            activation = 0.8 if self.buffer_activation is None else self.buffer_activation
            if activation <= 0 or 1 < activation < 1000:
                raise WhatIfSettingsError(
                    f"bufferActivation must be <= 1 (ratio) or >= 1000 (tokens to keep), got {activation:g}")
            if activation >= 1000 and activation >= top:
                raise WhatIfSettingsError(
                    f"bufferActivation as tokens to keep ({activation:g}) must be less than messageTokens ({top})")
            raw_block = 1.2 if self.block_after is None else self.block_after
            block = js_round(top * raw_block) if 1 <= raw_block < 100 else int(raw_block)
            if block < top:
                raise WhatIfSettingsError(f"blockAfter ({block}) must be >= messageTokens ({top})")
            refl_activation = self.reflection_buffer_activation
            if refl_activation is not None:
                if not 0 < refl_activation <= 1:
                    raise WhatIfSettingsError(
                        f"reflection bufferActivation must be in (0, 1], got {refl_activation:g}")
                raw = 1.2 if self.reflection_block_after is None else self.reflection_block_after
                refl_block = js_round(self.observation_tokens * raw) if 1 <= raw < 100 else int(raw)
                if refl_block < self.observation_tokens:
                    raise WhatIfSettingsError(
                        f"reflection blockAfter ({refl_block}) must be >= observationTokens "
                        f"({self.observation_tokens})")
        message_threshold: int | ThresholdRange = (
            ThresholdRange(self.message_tokens, top) if self.share_token_budget else self.message_tokens)
        return ResolvedSettings(message_threshold, self.observation_tokens, buffer, activation, block,
                                refl_activation, refl_block)

    def to_json(self) -> dict:
        """Return the settings as given (camelCase names as in Mastra's config)."""
        return {"messageTokens": self.message_tokens, "observationTokens": self.observation_tokens,
                "bufferTokens": self.buffer_tokens, "bufferActivation": self.buffer_activation,
                "blockAfter": self.block_after, "shareTokenBudget": self.share_token_budget,
                "reflectionBufferActivation": self.reflection_buffer_activation,
                "reflectionBlockAfter": self.reflection_block_after}


@dataclass(frozen=True)
class ResolvedSettings:
    """Absolute thresholds in force during a replay (tokens; activation as given)."""

    message_tokens: int | ThresholdRange
    observation_tokens: int
    buffer_tokens: int | None
    buffer_activation: float | None
    block_after: int | None
    reflection_buffer_activation: float | None
    reflection_block_after: int | None

    @property
    def top(self) -> int:
        """Return the largest message threshold (getMaxThreshold), in tokens."""
        mt = self.message_tokens
        return mt.max if isinstance(mt, ThresholdRange) else mt

    def thresholds(self, observation_tokens: int) -> tuple[int, int]:
        """Return (message threshold, reflection threshold shown by getStatus) for a log size."""
        threshold = dynamic_threshold(self.message_tokens, observation_tokens)
        if isinstance(self.message_tokens, ThresholdRange):
            return threshold, max(self.message_tokens.max - threshold, 1000)
        return threshold, self.observation_tokens


def settings_with(base: WhatIfSettings, **changes: Any) -> WhatIfSettings:
    """Return BASE with the non-None CHANGES applied (CLI and panel helper)."""
    from dataclasses import replace

    return replace(base, **{k: v for k, v in changes.items() if v is not None})

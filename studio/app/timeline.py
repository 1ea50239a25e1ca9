"""The documents of `memory-studio timeline` and `whatif` (no Qt): a thread's OM over time, and its replay.

Each reads an open store (the caller holds one snapshot) and returns a JSON-ready dict.
"""

from __future__ import annotations

from studio.app.failures import BadInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from studio.engine.timeline import Timeline
    from studio.store.memory_store import MemoryStore


def thread_timeline(store: MemoryStore, thread_id: str) -> Timeline:
    """Return THREAD_ID's timeline (`studio.engine.timeline.build_timeline`); BadInput when it has none."""
    from studio.engine.timeline import TimelineError, build_timeline

    try:
        return build_timeline(store, thread_id)
    except TimelineError as exc:
        raise BadInput(str(exc)) from exc


def timeline_document(store: MemoryStore, thread_id: str) -> dict:
    """Return the `timeline --json` document of THREAD_ID: its token series and OM events.

    {"points": [{"at", "turn", "message_tokens", "observation_tokens", "buffered_tokens", "threshold",
    "reflection_threshold", "reconstructed"}], "events": [{"type", "at", "turn", "cycle_id", "tokens",
    "generation"}]} (tokens: Mastra's estimates). Raises BadInput for an unknown thread or one
    without OM.
    """
    return thread_timeline(store, thread_id).to_json()


def no_replay_sentence(timeline: Timeline) -> str:
    """Return why no what-if replay of TIMELINE exists: Mastra cannot count one of its messages."""
    return (f"No what-if replay exists for thread {timeline.thread_id or timeline.lookup_key}: "
            f"{timeline.uncountable.sentence() if timeline.uncountable else ''}")


def whatif_document(timeline: Timeline, *, observation_ratio: float | None = None,
                    reflection_ratio: float | None = None, use_real_sizes: bool | None = None,
                    **settings) -> dict:
    """Return the `whatif --json` document: TIMELINE replayed with SETTINGS (None keeps the stored value).

    SETTINGS: `WhatIfSettings` fields (message_tokens, observation_tokens, buffer_activation,
    block_after, share_token_budget, …); BUFFER_TOKENS 0 turns buffering off with its companions,
    as Mastra resolves them. Raises WhatIfSettingsError (its message in Mastra's words) for settings
    Mastra would reject, and BadInput when the thread holds a message Mastra cannot count (no replay
    exists: Mastra's own run stops there, whatever the settings).
    """
    from studio.engine.whatif import WhatIfSettings, settings_with, simulate

    if timeline.uncountable is not None:
        raise BadInput(no_replay_sentence(timeline))

    base = WhatIfSettings.from_record(timeline.generations[-1])
    buffer = settings.pop("buffer_tokens", None)
    chosen = settings_with(base, **settings)
    if buffer is not None:
        from dataclasses import replace

        chosen = replace(chosen, buffer_tokens=buffer or None)
        if not buffer:  # buffering off: its companions go too, as Mastra resolves them
            chosen = replace(chosen, buffer_activation=None, block_after=None,
                             reflection_buffer_activation=None, reflection_block_after=None)
    return simulate(timeline, chosen, observation_ratio=observation_ratio, reflection_ratio=reflection_ratio,
                    use_real_sizes=use_real_sizes).to_json()

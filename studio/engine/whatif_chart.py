"""A What-if replay packed to cross a process boundary cheaply, and the replay's helper-process entry point.

The studio replays a thread (`studio.engine.whatif.simulate`, pure Python: ~0.2–0.5 s on a
20,000-message thread) in its helper process, so the GUI process never waits for the interpreter
lock while it runs. What comes back is a `WhatIfChart`: the comparison table's figures, the chart
arrays (`ChartSeries`, float64 NumPy arrays) and the replay's points and events as columns of plain
values (one list of ints, strings or None per field). Pickled, that is a few dozen flat lists and
arrays instead of ~45,000 dataclass objects, so receiving it costs the GUI process a few ms; the
`Point` and `OMEvent` objects are rebuilt only when asked (CSV export, tooltips, tests).

`replay_in_store` is the function the helper runs: it replays the timeline the same process last
built for the chart (`studio.engine.timeline_cache`), or builds it when that one is not the
timeline the GUI shows (`timeline_key` differs).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, fields
from functools import cached_property

from studio.engine.events import OMEvent
from studio.engine.timeline import Point, Timeline
from studio.engine.timeline_cache import cached_timeline, timeline_key
from studio.engine.timeline_series import ChartSeries
from studio.engine.whatif import ResolvedSettings, WhatIfResult, WhatIfSettings, simulate
from studio.store.memory_store import MemoryStore

#: Point and event fields carried as columns (OMEvent's `parts` is never set by a replay).
POINT_FIELDS = tuple(f.name for f in fields(Point))
EVENT_FIELDS = tuple(f.name for f in fields(OMEvent) if f.name != "parts")


def _columns(items: list, names: tuple[str, ...]) -> dict[str, list]:
    return {name: [getattr(item, name) for item in items] for name in names}


@dataclass
class WhatIfChart:
    """One replay, packed: settings and figures of the What-if table, chart arrays, point and event columns.

    Token figures in tokens. `point_columns[name][i]` is field NAME of the replay's i-th `Point`, the
    same for `event_columns` and `OMEvent`; `points` and `events` rebuild the objects (cached).
    `pid` is the process that replayed (the helper's when it ran there). Mirrors `WhatIfResult`'s
    read API (`count`, `turns_of`, `peak_*`), which the table and the CLI share.
    """

    settings: WhatIfSettings
    resolved: ResolvedSettings
    observation_ratio: float
    reflection_ratio: float
    uses_real_sizes: bool
    thread_id: str | None
    lookup_key: str
    observer_calls: int
    reflector_calls: int
    peak_context_tokens: int
    peak_message_tokens: int
    series: ChartSeries
    point_columns: dict[str, list] = field(repr=False)
    event_columns: dict[str, list] = field(repr=False)
    timeline_key: tuple = ()
    pid: int = 0

    @classmethod
    def pack(cls, result: WhatIfResult, key: tuple = ()) -> WhatIfChart:
        """Return RESULT packed, with its chart arrays; KEY is the `timeline_key` of the timeline replayed."""
        return cls(settings=result.settings, resolved=result.resolved, observation_ratio=result.observation_ratio,
                   reflection_ratio=result.reflection_ratio, uses_real_sizes=result.uses_real_sizes,
                   thread_id=result.thread_id, lookup_key=result.lookup_key, observer_calls=result.observer_calls,
                   reflector_calls=result.reflector_calls, peak_context_tokens=result.peak_context_tokens,
                   peak_message_tokens=result.peak_message_tokens,
                   series=ChartSeries.from_points(result.points, result.events),
                   point_columns=_columns(result.points, POINT_FIELDS),
                   event_columns=_columns(result.events, EVENT_FIELDS), timeline_key=key, pid=os.getpid())

    def __getstate__(self) -> dict:
        # Only the fields cross a process boundary, never the objects rebuilt from them.
        return {f.name: self.__dict__[f.name] for f in fields(self)}

    @property
    def n_events(self) -> int:
        """Return how many events the replay fired."""
        return len(self.event_columns.get("kind", ()))

    @property
    def n_points(self) -> int:
        """Return how many points the replay has (one per message and per event)."""
        return len(self.point_columns.get("kind", ()))

    def count(self, *kinds: str) -> int:
        """Return how many events of the given kinds fired."""
        return sum(1 for kind in self.event_columns["kind"] if kind in kinds)

    def turns_of(self, *kinds: str) -> list[int]:
        """Return the turns on which events of KINDS fired, in order."""
        columns = self.event_columns
        return [turn for kind, turn in zip(columns["kind"], columns["turn"], strict=True) if kind in kinds]

    def event(self, index: int) -> OMEvent | None:
        """Return event INDEX (rebuilt), or None when there is no such event."""
        if not 0 <= index < self.n_events:
            return None
        return OMEvent(**{name: self.event_columns[name][index] for name in EVENT_FIELDS})

    def message_index_of_event(self, index: int) -> int | None:
        """Return the message index of the point that carries event INDEX (the newest message before it)."""
        try:
            row = self.point_columns["event_index"].index(index)
        except ValueError:
            return None
        return self.point_columns["message_index"][row]

    @cached_property
    def events(self) -> list[OMEvent]:
        """Return the replay's events, rebuilt from their columns."""
        return [self.event(i) for i in range(self.n_events)]

    @cached_property
    def points(self) -> list[Point]:
        """Return the replay's points, rebuilt from their columns."""
        columns = [self.point_columns[name] for name in POINT_FIELDS]
        return [Point(*values) for values in zip(*columns, strict=True)]


def replay_packed(timeline: Timeline, settings: WhatIfSettings, observation_ratio: float | None = None,
                  reflection_ratio: float | None = None, use_real_sizes: bool | None = None,
                  cancel: threading.Event | None = None) -> WhatIfChart:
    """Replay TIMELINE with SETTINGS (`simulate`, same arguments and errors) and return it packed."""
    result = simulate(timeline, settings, observation_ratio=observation_ratio, reflection_ratio=reflection_ratio,
                      use_real_sizes=use_real_sizes, cancel=cancel)
    return WhatIfChart.pack(result, timeline_key(timeline))


def replay_in_store(store: MemoryStore, thread_id: str, key: tuple | None, settings: WhatIfSettings,
                    observation_ratio: float | None = None, reflection_ratio: float | None = None,
                    use_real_sizes: bool | None = None, cancel: threading.Event | None = None) -> WhatIfChart:
    """Replay THREAD_ID's timeline (the kept one when its key is KEY, else read from STORE) and pack it.

    Runs in the helper process (or on the database worker when the helper is unavailable). Raises
    TimelineError, StoreError, WhatIfSettingsError, and EngineError("Cancelled") once CANCEL is set.
    """
    timeline = cached_timeline(store, thread_id, key)
    return replay_packed(timeline, settings, observation_ratio, reflection_ratio, use_real_sizes, cancel)

"""The timeline this process built last for the chart, kept for a What-if replay of it.

The Timeline tab reads a thread's timeline and its chart arrays in one call (`load_timeline_chart`),
usually in the helper process; that process keeps the timeline (one, weakly tied to its store) so
the What-if replay it runs next (`studio.engine.whatif_chart.replay_in_store`) replays it without
reading the thread again. `timeline_key` tells whether the kept timeline is the one the GUI shows.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from studio.engine.timeline import Timeline, build_timeline
from studio.engine.timeline_series import ChartSeries
from studio.store.memory_store import MemoryStore


def timeline_key(timeline: Timeline) -> tuple:
    """Return what identifies the data TIMELINE was built from: thread, record, its generation and
    update time, message count and newest message id (a re-read after any write gives another key)."""
    last = timeline.generations[-1] if timeline.generations else None
    return (timeline.thread_id, timeline.lookup_key, last.id if last is not None else None,
            last.generation_count if last is not None else None, last.updated_at if last is not None else None,
            len(timeline.messages), timeline.messages[-1].id if timeline.messages else None)


#: The timeline this process built last: (weak reference to its store, its key, the timeline).
_last: tuple[Any, tuple, Timeline] | None = None
_last_lock = threading.Lock()


def load_timeline(store: MemoryStore, thread_id: str) -> Timeline:
    """Return THREAD_ID's slim timeline (`Timeline.slim`) with its `agent_peaks` measured on the full one
    (thread scope; None in resource scope).

    Raises TimelineError (unknown thread, no OM record) and StoreError as `build_timeline`.
    """
    from studio.engine.context import agent_peaks

    full = build_timeline(store, thread_id)
    timeline = full.slim()
    if full.scope != "resource":   # a resource's turns interleave its threads: not measured (see agent_turns)
        peaks = agent_peaks(full)
        timeline.agent_peaks = (peaks.context_tokens, peaks.message_tokens)
    return timeline


def remember_timeline(store: MemoryStore, timeline: Timeline) -> None:
    """Keep TIMELINE (built from STORE) for the next replay of it in this process (one timeline kept)."""
    global _last
    try:
        ref = weakref.ref(store)
    except TypeError:
        return
    with _last_lock:
        _last = (ref, timeline_key(timeline), timeline)


def cached_timeline(store: MemoryStore, thread_id: str, key: tuple | None) -> Timeline:
    """Return the kept timeline of STORE when its key is KEY, else THREAD_ID's timeline read now (and kept).

    Raises TimelineError (unknown thread, no OM record) and StoreError as `load_timeline`.
    """
    with _last_lock:
        last = _last
    if last is not None and last[0]() is store and key is not None and last[1] == key:
        return last[2]
    timeline = load_timeline(store, thread_id)
    remember_timeline(store, timeline)
    return timeline


def load_timeline_chart(store: MemoryStore, thread_id: str) -> tuple[Timeline, ChartSeries]:
    """Return THREAD_ID's slim timeline (`load_timeline`) and its chart arrays; errors as `build_timeline`.

    The process keeps the timeline (`remember_timeline`), so the helper process that built it replays
    it for the What-if panel without reading the thread again.
    """
    timeline = load_timeline(store, thread_id)
    remember_timeline(store, timeline)
    return timeline, ChartSeries.from_points(timeline.points, timeline.events)

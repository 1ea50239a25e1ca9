"""A timeline's points as plain float arrays, ready to chart: x per axis mode, one y array per series.

Built off the GUI thread (the helper process or the task pool) so the Timeline tab only hands
arrays to its chart. Every array is float64 and finite or NaN: token figures a replay computes
(Python ints, unbounded) or a damaged counter in the file are clipped to `PLOT_LIMIT`, because a
plotting library handed Python integers beyond 64 bits gets an object array it cannot draw.
Series whose value rarely changes (thresholds) keep only the first and last point of each run of
equal values, which draws the same polyline with far fewer vertices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from studio.engine.events import (
    ACTIVATION,
    OBSERVATION,
    REFLECTION,
    REFLECTION_ACTIVATION,
    REFLECTION_BUFFERING,
    OMEvent,
)
from studio.engine.timeline import Point

#: Largest token figure drawn (tokens); beyond it values are drawn at the limit. No real log or
#: window comes near it (Mastra's own counters are JavaScript numbers, exact up to 2**53).
PLOT_LIMIT = float(2**53)
X_MODES = ("time", "turn")


def plot_array(values) -> np.ndarray:
    """Return VALUES (numbers or None) as a float64 array: None and non-finite as NaN, magnitudes clipped."""
    values = list(values)
    try:
        out = np.array(values, dtype=np.float64)
    except OverflowError:  # an integer beyond float range
        out = np.array([np.nan if v is None else (PLOT_LIMIT if v > 0 else -PLOT_LIMIT) if abs(v) >= PLOT_LIMIT
                        else float(v) for v in values], dtype=np.float64)
    out[~np.isfinite(out)] = np.nan
    return np.clip(out, -PLOT_LIMIT, PLOT_LIMIT)


def x_positions(points: list[Point], mode: str) -> np.ndarray:
    """Return x for POINTS in MODE: "time" in s since the epoch, never backwards; "turn" spread over [turn, turn + 0.8).

    A point without a time takes the latest time before it (the first known time when none is).
    Raises ValueError for another MODE.
    """
    if mode not in X_MODES:
        raise ValueError(f"x mode must be one of {X_MODES}, not {mode!r}")
    if not points:
        return np.zeros(0)
    if mode == "time":
        ms = plot_array([p.at_ms for p in points])
        known = np.isfinite(ms)
        if not known.any():
            return np.zeros(len(points))
        filled = np.fmax.accumulate(ms)
        return np.nan_to_num(filled, nan=float(ms[known].min())) / 1000
    turns = plot_array([p.turn for p in points])
    turns[~np.isfinite(turns)] = 0.0
    order = np.argsort(turns, kind="stable")
    _, first, counts = np.unique(turns[order], return_index=True, return_counts=True)
    rank = np.empty(len(points))
    within = np.arange(len(points)) - np.repeat(first, counts)
    rank[order] = within / np.repeat(counts, counts)
    return turns + 0.8 * rank


def runs_only(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (x, y) without the inner points of runs of equal y: the same polyline, fewer vertices."""
    n = len(y)
    if n < 3:
        return x, y
    same_prev = np.empty(n, dtype=bool)
    same_next = np.empty(n, dtype=bool)
    same_prev[0] = same_next[-1] = False
    eq = (y[1:] == y[:-1]) | (np.isnan(y[1:]) & np.isnan(y[:-1]))
    same_prev[1:] = eq
    same_next[:-1] = eq
    keep = ~(same_prev & same_next)
    return x[keep], y[keep]


def _max_int(values: np.ndarray) -> int:
    finite = values[np.isfinite(values)] if len(values) else values
    return int(finite.max()) if len(finite) else 0


def event_y(event: OMEvent, point: Point | None) -> float:
    """Return where an event's marker sits: the tokens it read (window or log), else its point's window."""
    if event.tokens is not None and event.kind in (OBSERVATION, ACTIVATION, REFLECTION, REFLECTION_ACTIVATION,
                                                   REFLECTION_BUFFERING):
        return float(min(event.tokens, PLOT_LIMIT))
    return float(min(point.message_tokens, PLOT_LIMIT)) if point is not None else 0.0


@dataclass(frozen=True)
class Peaks:
    """Largest memory load (tokens): window + log taken at one moment, and the window alone."""

    context_tokens: int
    message_tokens: int


@dataclass
class ChartSeries:
    """Arrays of one list of points: `x[mode]` and `y[series]` (tokens; NaN where nothing is drawn).

    Events drawn: `event_ids[k]` (index into the events) sits at point `event_rows[k]`, height `event_y[k]`;
    `event_styles[k]` is "kind|status", what its marker's look depends on.
    """

    x: dict[str, np.ndarray] = field(default_factory=dict)
    y: dict[str, np.ndarray] = field(default_factory=dict)
    any_buffered: bool = False
    any_reconstructed: bool = False
    event_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    event_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    event_y: np.ndarray = field(default_factory=lambda: np.zeros(0))
    event_styles: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))

    @classmethod
    def from_points(cls, points: list[Point], events: list[OMEvent] | None = None) -> ChartSeries:
        """Return the arrays of POINTS (a Timeline's or a WhatIfResult's points) and of their EVENTS."""
        rows: dict[int, int] = {}
        for i, p in enumerate(points):
            if p.event_index is not None:
                rows[p.event_index] = i  # the last point of an event carries its marker
        placed = [(e, r) for e, r in rows.items() if events is not None and 0 <= e < len(events)]
        y = {
            "message": plot_array([p.message_tokens for p in points]),
            "observation": plot_array([p.observation_tokens for p in points]),
            "buffered": plot_array([p.buffered_tokens for p in points]),
            "threshold": plot_array([p.threshold for p in points]),
            "reflection_threshold": plot_array([p.reflection_threshold for p in points]),
        }
        reconstructed = np.array([bool(p.reconstructed) for p in points], dtype=bool)
        y["reconstructed"] = np.where(reconstructed, y["message"], np.nan)
        return cls(x={mode: x_positions(points, mode) for mode in X_MODES}, y=y,
                   any_buffered=bool(np.nansum(y["buffered"]) > 0) if len(points) else False,
                   any_reconstructed=bool(reconstructed.any()),
                   event_ids=np.array([e for e, _ in placed], dtype=np.int64),
                   event_rows=np.array([r for _, r in placed], dtype=np.int64),
                   event_y=np.array([event_y(events[e], points[r]) for e, r in placed], dtype=np.float64),
                   event_styles=np.array([f"{events[e].kind}|{events[e].status}" for e, _ in placed], dtype=object))

    def __len__(self) -> int:
        return len(self.y.get("message", ()))

    @property
    def peaks(self) -> Peaks:
        """Return the highest window and window + log the chart draws (tokens; 0 when empty).

        Read off the drawn arrays themselves (`y["message"]`, `y["message"] + y["observation"]` at the
        same point), so a table quoting them always matches the chart's curves.
        """
        window = self.y.get("message", np.zeros(0))
        both = window + self.y.get("observation", np.zeros(len(window)))
        return Peaks(context_tokens=_max_int(both), message_tokens=_max_int(window))

    def curve(self, name: str, mode: str) -> tuple[np.ndarray, np.ndarray]:
        """Return (x, y) of series NAME over MODE; step-like series come without their inner run points."""
        x, y = self.x[mode], self.y[name]
        if name in ("threshold", "reflection_threshold", "buffered"):
            return runs_only(x, y)
        return x, y

    def nearest(self, mode: str, x: float) -> int | None:
        """Return the index of the first point nearest to X in MODE, or None when there is none."""
        xs = self.x.get(mode)
        if xs is None or not len(xs) or not np.isfinite(x):
            return None
        return int(np.argmin(np.abs(xs - x)))

    def marker_groups(self) -> list[tuple[str, str, np.ndarray]]:
        """Return (kind, status, indexes into the event arrays) per marker look, in first-seen order."""
        if not len(self.event_styles):
            return []
        keys, first, inverse = np.unique(self.event_styles.astype(str), return_index=True, return_inverse=True)
        out = []
        for k in np.argsort(first):
            kind, _, status = str(keys[k]).partition("|")
            out.append((kind, status, np.flatnonzero(inverse == k)))
        return out

    def top(self) -> float:
        """Return the largest finite value of the window, log and threshold series (0 when none)."""
        values = [self.y[k] for k in ("message", "observation", "threshold", "reflection_threshold") if k in self.y]
        finite = [np.nanmax(v) for v in values if len(v) and np.isfinite(v).any()]
        return float(max(finite)) if finite else 0.0


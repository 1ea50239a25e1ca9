"""The What-if panel beside the Timeline: OM settings to replay the thread with, and what they would do.

The replay (`studio.engine.whatif.simulate`) runs only while the panel is active (the Timeline's
What-if button), when it is turned on and whenever a setting changes, after a short pause. It runs
in the TaskRunner's helper process (`studio.engine.whatif_chart.replay_in_store`) for big databases
and long threads: a pure-Python replay in a thread of the GUI process would hold the interpreter
lock the GUI thread needs for every paint. Short threads replay on the runner's pool. Either way
the result arrives packed (`WhatIfChart`: the table's figures, the chart arrays, point and event
columns), so the GUI thread only fills the table and draws. A new replay or turning the panel off
cancels the running one (the helper stops it). Output sizes are modelled from the thread's measured
compression ratios, shown and adjustable; with the stored settings the real sizes are used. The
table compares the real run with the replay.
"""

from __future__ import annotations

import functools

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.helper_process import CANCEL
from studio.engine.events import (
    ACTIVATION,
    BUFFERING,
    OBSERVATION,
    REFLECTION,
    REFLECTION_ACTIVATION,
    REFLECTION_BUFFERING,
)
from studio.engine.timeline import Timeline
from studio.engine.timeline_cache import timeline_key
from studio.engine.timeline_series import ChartSeries, Peaks
from studio.engine.whatif import (
    WhatIfSettings,
    WhatIfSettingsError,
    measured_ratios,
)
from studio.engine.whatif_chart import WhatIfChart, replay_in_store, replay_packed
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label

#: Pause after the last change before the replay runs (ms).
DEBOUNCE_MS = 250
#: A thread with this many messages replays in the helper process even on a small database (the
#: replay takes ~20 µs a message: from here on it would hold the GUI's interpreter lock for ~20 ms).
HELPER_MIN_MESSAGES = 1000
#: Largest compression ratio the form takes: a thread's measured ratio is shown as measured (a
#: Reflector that repeated itself wrote more than it read), so the stored settings retrace the real run.
MAX_RATIO = 1000.0
ROWS = ["Observer calls", "Reflector calls", "Observations", "Reflections", "Buffered chunks", "Activations",
        "Peak window + log", "Peak window"]
#: What the peak rows measure (their row tooltip): the highest points of the chart's own curves.
PEAK_TIP = ("Highest message window (and window + observation log at the same point) the chart draws, "
            "including the moment just before an observation; what the agent itself got after OM's step 0 "
            "is in the sentence below the table")


def real_counts(timeline: Timeline, series: ChartSeries) -> dict[str, str]:
    """Return the real run's figures for the comparison table (text; Reflector retries are not recorded).

    SERIES: the chart arrays of TIMELINE (the peak rows are read off them, `ChartSeries.peaks`).
    """
    events = timeline.events
    cycles = sum(1 for e in events if e.kind in (OBSERVATION, BUFFERING))
    reflections = sum(1 for e in events if e.kind in (REFLECTION, REFLECTION_ACTIVATION)
                      and e.status in ("completed", "recorded"))
    reflector = sum(1 for e in events if e.kind in (REFLECTION, REFLECTION_BUFFERING))
    peaks = series.peaks
    return {
        "Observer calls": f"{cycles:,}",
        "Reflector calls": f"≥ {reflector:,}" if reflector else "0",
        "Observations": f"{sum(1 for e in events if e.kind == OBSERVATION and e.status == 'completed'):,}",
        "Reflections": f"{reflections:,}",
        "Buffered chunks": f"{sum(1 for e in events if e.kind == BUFFERING and e.status == 'completed'):,}",
        "Activations": f"{sum(1 for e in events if e.kind == ACTIVATION):,}",
        "Peak window + log": fmt.tokens(peaks.context_tokens), "Peak window": fmt.tokens(peaks.message_tokens),
    }


def whatif_counts(result: WhatIfChart) -> dict[str, str]:
    """Return a replay's figures for the comparison table (text; peak rows off its chart, `ChartSeries.peaks`)."""
    peaks = result.series.peaks
    return {
        "Observer calls": f"{result.observer_calls:,}", "Reflector calls": f"{result.reflector_calls:,}",
        "Observations": f"{result.count(OBSERVATION):,}",
        "Reflections": f"{result.count(REFLECTION, REFLECTION_ACTIVATION):,}",
        "Buffered chunks": f"{result.count(BUFFERING):,}", "Activations": f"{result.count(ACTIVATION):,}",
        "Peak window + log": fmt.tokens(peaks.context_tokens), "Peak window": fmt.tokens(peaks.message_tokens),
    }


def _agrees(row: str, real: str, replay: str) -> bool:
    if row == "Reflector calls" and real.startswith("≥ "):  # retries are not recorded: a lower bound
        return int(replay.replace(",", "")) >= int(real[2:].replace(",", ""))
    return real == replay


def differences(real: dict[str, str], replay: dict[str, str], real_agent: Peaks | None,
                replay_agent: Peaks) -> list[str]:
    """Return, as phrases, where a replay differs from the real run: table rows, then the agent's peaks.

    REAL / REPLAY: `real_counts` / `whatif_counts`; REAL_AGENT: the real run's `agent_peaks` (None when
    not measured); REPLAY_AGENT: the replay's, from its turns. Empty when everything agrees.
    """
    out = [f"{row} {real[row]} real vs {replay[row]} replayed" for row in ROWS
           if row in real and row in replay and not _agrees(row, real[row], replay[row])]
    if real_agent is not None:
        if real_agent.message_tokens != replay_agent.message_tokens:
            out.append(f"the agent's largest window {real_agent.message_tokens:,} real vs "
                       f"{replay_agent.message_tokens:,} replayed")
        if real_agent.context_tokens != replay_agent.context_tokens:
            out.append(f"the agent's largest window + log {real_agent.context_tokens:,} real vs "
                       f"{replay_agent.context_tokens:,} replayed")
    return out


def agent_sentence(real_agent: Peaks | None, replay_agent: Peaks) -> str:
    """Return the one sentence saying what the agent got after OM's step 0 (largest window, window + log)."""
    text = (f"After OM's step 0 the agent got at most {replay_agent.message_tokens:,} tokens of message window "
            f"and {replay_agent.context_tokens:,} of window + log at one turn in the replay")
    if real_agent is not None:
        text += f" ({real_agent.message_tokens:,} and {real_agent.context_tokens:,} in the real run)"
    return text + "; the chart's peaks above also count the window just before an observation."


#: Narrowest a setting's box gets (px): its width hint fits "10,000,000 tokens", which pushed the panel
#: wider than a 1024 px window gives it (cut, with a horizontal scroll bar).
FIELD_MIN_WIDTH = 72


def _spin(maximum: int = 10_000_000) -> QSpinBox:
    box = QSpinBox()
    box.setMinimumWidth(FIELD_MIN_WIDTH)
    box.setRange(1, maximum)
    box.setSingleStep(500)
    box.setGroupSeparatorShown(True)
    box.setSuffix(" tokens")
    return box


def _double(minimum: float, maximum: float, decimals: int, step: float) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setMinimumWidth(FIELD_MIN_WIDTH)
    box.setRange(minimum, maximum)
    box.setDecimals(decimals)
    box.setSingleStep(step)
    return box


class WhatIfPanel(QWidget):
    """Choose OM settings, replay the thread with them, compare with the real run."""

    result_ready = Signal(object)   # WhatIfChart
    cleared = Signal()
    failed = Signal(str)

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self._runner = runner
        self._timeline: Timeline | None = None
        self._stored: WhatIfSettings | None = None
        self._loading = False
        self._active = False
        self.use_helper = False   # replay in the helper process whatever the thread's length (big databases)
        self.result: WhatIfChart | None = None
        self.series: ChartSeries | None = None   # the chart arrays of `result`
        self._real_series: ChartSeries | None = None   # the chart arrays of the timeline shown
        self.setMaximumWidth(440)

        self.message_tokens = _spin()
        self.observation_tokens = _spin()
        self.buffering = QCheckBox("Async buffering")
        self.buffer_tokens = _double(0.01, 10_000_000, 2, 0.05)
        self.buffer_tokens.setToolTip("Below 1: a share of messageTokens; else tokens")
        self.buffer_activation = _double(0.01, 10_000_000, 2, 0.05)
        self.buffer_activation.setToolTip("Up to 1: the share of the threshold to activate; from 1000: tokens to keep")
        self.block_after = _double(1.0, 10_000_000, 2, 0.1)
        self.block_after.setToolTip("1 to 100: a multiple of messageTokens; else tokens")
        self.share_budget = QCheckBox("Share token budget")
        self.obs_ratio = _double(0.0, MAX_RATIO, 3, 0.01)
        self.obs_ratio.setToolTip("Observation tokens the Observer writes per message token it reads")
        self.refl_ratio = _double(0.0, MAX_RATIO, 3, 0.05)
        self.refl_ratio.setToolTip("Reflection tokens the Reflector writes per observation token it reads "
                                   "(above 1, a modelled reflection keeps the log's size)")
        self.measured = plain_label("", "muted", wrap=True)

        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        form.addRow("messageTokens", self.message_tokens)
        form.addRow("observationTokens", self.observation_tokens)
        form.addRow(self.buffering)   # the whole row: beside the labels it set the panel's width
        form.addRow("bufferTokens", self.buffer_tokens)
        form.addRow("bufferActivation", self.buffer_activation)
        form.addRow("blockAfter", self.block_after)
        form.addRow(self.share_budget)   # the whole row: beside the labels it set the panel's width
        form.addRow("Observer ratio", self.obs_ratio)
        form.addRow("Reflector ratio", self.refl_ratio)

        self.stored_button = QPushButton("Stored settings")
        self.stored_button.setToolTip("Replay with the settings stored in the thread's OM record (real output sizes)")
        self.stored_button.clicked.connect(self._on_stored_button_clicked)
        buttons = QHBoxLayout()
        buttons.addWidget(self.stored_button)
        buttons.addStretch(1)

        self.note = plain_label("", "muted", wrap=True)
        self.error = plain_label("", "loss", wrap=True)
        self.error.hide()
        self.table = QTableWidget(len(ROWS), 2)
        self.table.setHorizontalHeaderLabels(["Real", "What-if"])
        self.table.setVerticalHeaderLabels(ROWS)
        for row, name in enumerate(ROWS):
            if name.startswith("Peak"):
                self.table.verticalHeaderItem(row).setToolTip(PEAK_TIP)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        row_height = self.fontMetrics().height() + 8
        for row in range(len(ROWS)):
            self.table.setRowHeight(row, row_height)
        self.table.setFixedHeight(row_height * len(ROWS) + self.table.horizontalHeader().sizeHint().height()
                                  + 2 * self.table.frameWidth() + 4)

        title = plain_label("What-if", "heading")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 0, 0, 0)
        layout.addWidget(title)
        layout.addLayout(form)
        layout.addWidget(self.measured)
        layout.addLayout(buttons)
        layout.addWidget(self.error)
        layout.addWidget(self.table)
        layout.addWidget(self.note)
        layout.addStretch(1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.run)
        for box in (self.message_tokens, self.observation_tokens, self.buffer_tokens, self.buffer_activation,
                    self.block_after, self.obs_ratio, self.refl_ratio):
            box.valueChanged.connect(self._on_setting_changed)
        for box in (self.buffering, self.share_budget):
            box.toggled.connect(self._on_setting_changed)
        self.buffering.toggled.connect(self._update_enabled)
        self.set_timeline(None)

    # -- public API ----------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Return whether the panel replays (the user turned What-if on)."""
        return self._active

    def set_active(self, active: bool) -> None:
        """Turn the replay on (replay now) or off (drop the replay and any running one; emit `cleared`)."""
        if active == self._active:
            return
        self._active = active
        if active:
            self.run()
            return
        self._timer.stop()
        self._runner.cancel("whatif")
        self.result = self.series = None
        for row in range(len(ROWS)):
            self.table.setItem(row, 1, QTableWidgetItem(""))
        self.note.setText("")
        self.cleared.emit()

    def set_timeline(self, timeline: Timeline | None, *, keep: bool = False, series: ChartSeries | None = None) -> None:
        """Show TIMELINE (None: nothing), replayed when active; KEEP the settings when it is the same thread re-read.

        SERIES: TIMELINE's chart arrays when the caller has them (else built here), whose peaks the Real
        column quotes.
        """
        self._timeline = timeline
        self._real_series = series
        self.setEnabled(timeline is not None)
        if timeline is None:
            self._timer.stop()
            self._runner.cancel("whatif")   # the helper stops a replay of the thread no longer shown
            self._stored = None
            self.result = self.series = None
            self.table.clearContents()
            self.note.setText("")
            self._set_error("")
            return
        self._stored = WhatIfSettings.from_record(timeline.generations[-1])
        obs, refl = measured_ratios(timeline)
        self.measured.setText(
            f"Measured on this thread: Observer {obs:.3f}, Reflector {refl:.3f}"
            + ("" if timeline.reflection_ratio is not None else " (no reflection yet: a typical ratio)"))
        if not keep:
            self.apply_settings(self._stored, obs, refl)
        if len(timeline.messages) < HELPER_MIN_MESSAGES or self._active:
            self._fill_real(timeline)
        else:
            # The real run's figures walk every point (~15 ms on a 20,000-message thread): while What-if
            # is off, in their own turn of the event loop, not in the one that shows the timeline.
            self.table.clearContents()
            QTimer.singleShot(1, self, functools.partial(self._fill_real, timeline))
        self.run()

    def _fill_real(self, timeline: Timeline) -> None:
        """Fill the table's Real column from TIMELINE (when it is still the one shown)."""
        if timeline is not self._timeline:
            return
        real = self._real_figures(timeline)
        for row, name in enumerate(ROWS):
            self.table.setItem(row, 0, QTableWidgetItem(real[name]))

    def _real_figures(self, timeline: Timeline) -> dict[str, str]:
        if self._real_series is None:
            self._real_series = ChartSeries.from_points(timeline.points, timeline.events)
        return real_counts(timeline, self._real_series)

    def real_agent_peaks(self) -> Peaks | None:
        """Return what the agent got at its heaviest real turn (`Timeline.agent_peaks`), None when not measured."""
        timeline = self._timeline
        if timeline is None or timeline.scope == "resource":   # not measured there (`context.agent_turns`)
            return None
        if timeline.agent_peaks is None:
            if any(m.content is None for m in timeline.messages):  # slim: contents gone, nothing to measure
                return None
            from studio.engine.context import agent_peaks

            peaks = agent_peaks(timeline)
            timeline.agent_peaks = (peaks.context_tokens, peaks.message_tokens)
        return Peaks(*timeline.agent_peaks)

    def apply_settings(self, settings: WhatIfSettings, obs_ratio: float | None = None,
                       refl_ratio: float | None = None) -> None:
        """Show SETTINGS (and ratios) in the form without replaying for each field."""
        self._loading = True
        try:
            self.message_tokens.setValue(settings.message_tokens)
            self.observation_tokens.setValue(settings.observation_tokens)
            self.buffering.setChecked(bool(settings.buffer_tokens))
            self.buffer_tokens.setValue(settings.buffer_tokens or 0.2)
            self.buffer_activation.setValue(settings.buffer_activation if settings.buffer_activation else 0.8)
            self.block_after.setValue(settings.block_after if settings.block_after else 1.2)
            self.share_budget.setChecked(settings.share_token_budget)
            if obs_ratio is not None:
                self.obs_ratio.setValue(obs_ratio)
            if refl_ratio is not None:
                self.refl_ratio.setValue(refl_ratio)
        finally:
            self._loading = False
        self._update_enabled()

    def settings(self) -> WhatIfSettings:
        """Return the settings the form shows (reflection buffering kept from the stored config)."""
        stored = self._stored
        buffering = self.buffering.isChecked()
        same_buffer = stored is not None and bool(stored.buffer_tokens) and buffering
        return WhatIfSettings(
            message_tokens=self.message_tokens.value(), observation_tokens=self.observation_tokens.value(),
            buffer_tokens=self.buffer_tokens.value() if buffering else None,
            buffer_activation=self.buffer_activation.value() if buffering else None,
            block_after=self.block_after.value() if buffering else None,
            share_token_budget=self.share_budget.isChecked(),
            reflection_buffer_activation=stored.reflection_buffer_activation if same_buffer else None,
            reflection_block_after=stored.reflection_block_after if same_buffer else None)

    def run(self) -> None:
        """Replay the timeline with the form's settings now (in the background), when active."""
        self._timer.stop()
        timeline = self._timeline
        if timeline is None or not self._active:
            return
        settings = self.settings()
        obs, refl = self.obs_ratio.value(), self.refl_ratio.value()
        measured = measured_ratios(timeline)
        obs_changed, refl_changed = abs(obs - round(measured[0], 3)) > 1e-9, abs(refl - round(measured[1], 3)) > 1e-9
        real = settings == self._stored and not (obs_changed or refl_changed)
        # A ratio the form shows as measured (3 decimals) replays with the exact measured one, as the CLI does.
        obs, refl = (obs if obs_changed else measured[0]), (refl if refl_changed else measured[1])

        thread_id = timeline.thread_id
        if thread_id is not None and (self.use_helper or len(timeline.messages) >= HELPER_MIN_MESSAGES):
            # The helper replays the timeline it built for the chart (same key), or reads it itself.
            self._runner.submit_call(replay_in_store, thread_id, timeline_key(timeline), settings, obs, refl, real,
                                     CANCEL, helper=True, on_done=self._on_replay_done,
                                     on_error=self._on_replay_failed, key="whatif")
            return

        def replay(_progress, cancel):
            return replay_packed(timeline, settings, obs, refl, real, cancel)

        self._runner.submit_pooled(replay, on_done=self._on_replay_done, on_error=self._on_replay_failed,
                                   key="whatif")

    # -- slots ---------------------------------------------------------------------------------

    def _set_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def _update_enabled(self) -> None:
        on = self.buffering.isChecked()
        for box in (self.buffer_tokens, self.buffer_activation, self.block_after):
            box.setEnabled(on)

    def _on_setting_changed(self, *_args) -> None:
        if not self._loading and self._timeline is not None and self._active:
            self._runner.cancel("whatif")   # its settings are gone: stop it now, not after the pause
            self._timer.start()

    def _on_stored_button_clicked(self) -> None:
        if self._stored is not None and self._timeline is not None:
            self.apply_settings(self._stored, *measured_ratios(self._timeline))
            self.run()

    def _on_replay_done(self, result: WhatIfChart) -> None:
        if self._timeline is None or result.thread_id != self._timeline.thread_id or not self._active:
            return
        self.result, self.series = result, result.series
        self._set_error("")
        counts = whatif_counts(result)
        for row, name in enumerate(ROWS):
            self.table.setItem(row, 1, QTableWidgetItem(counts[name]))
        replay_agent = Peaks(result.peak_context_tokens, result.peak_message_tokens)
        real_agent = self.real_agent_peaks()
        if result.uses_real_sizes:
            text = "Estimate. With the stored settings the replay uses the real outputs' sizes"
            if result.resolved.buffer_tokens:
                text += "; async buffering's background timing is approximated (work ends before the next turn)."
            else:
                differ = differences(self._real_figures(self._timeline), counts, real_agent, replay_agent)
                text += (", so it retraces the real run." if not differ
                         else ", yet differs from the real run: " + "; ".join(differ) + ".")
        else:
            text = (f"Estimate: output sizes modelled from the ratios above (Observer "
                    f"{result.observation_ratio:.3f}, Reflector {result.reflection_ratio:.3f}); "
                    "background work is taken to finish before the next turn.")
        self.note.setText(text + " " + agent_sentence(real_agent, replay_agent))
        self.result_ready.emit(result)

    def _on_replay_failed(self, exc: Exception) -> None:
        self.result = self.series = None
        for row in range(len(ROWS)):
            self.table.setItem(row, 1, QTableWidgetItem(""))
        text = str(exc) if isinstance(exc, WhatIfSettingsError) else f"The replay failed: {exc}"
        self._set_error(text)
        self.failed.emit(text)
        self.cleared.emit()

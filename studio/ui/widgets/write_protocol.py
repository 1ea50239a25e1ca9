"""The OM write protocol in the studio: the quiet period shown and adjustable, wait / force, watch, repair / revert.

`ProtocolPanel` (a row for a write dialog) shows whether the agent is active ("the agent is
active: a message was written 4.2 s ago") and holds the quiet period (seconds, remembered in
the settings). `ProtocolController` runs the protocol's background steps on the TaskRunner
(`studio.store.write.protocol` / `repair`; never on the GUI thread): reading the activity, waiting
for the quiet period, watching the record after a commit, and writing the repair the user chose
when a running turn overtook the commit. `ProtocolController.write` chains them for one write
(write → "the agent is active": wait / force / cancel → watch → repair), so *Reflect now…* and
History ▸ *Revert* run the same sequence. Questions go through `ask_agent_active` /
`ask_overtaken`, which tests replace.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QProgressBar, QSpinBox, QWidget

from studio.app import reflection as jobs
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel, plain_label

QUIET_SETTING = "writes/quietPeriodS"
#: How long "Wait" waits for the quiet period at most (s).
WAIT_LIMIT_S = 600


class ProtocolPanel(QWidget):
    """Agent activity + the quiet period (s) spin box, for a dialog that writes an OM generation.

    WRAP shows the activity sentence in full on as many lines as it needs (else on one line, elided).
    """

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None, *, wrap: bool = False):
        super().__init__(parent)
        from studio.store.write.protocol import DEFAULT_QUIET_MS

        self._settings = settings
        self.activity_label = plain_label("", "muted", wrap=True) if wrap else ElidedLabel("", "muted")
        self.quiet_spin = QSpinBox()
        self.quiet_spin.setRange(0, 3600)
        self.quiet_spin.setSuffix(" s")
        stored = settings.value(QUIET_SETTING, DEFAULT_QUIET_MS // 1000) if settings is not None else None
        try:
            self.quiet_spin.setValue(int(stored if stored is not None else DEFAULT_QUIET_MS // 1000))
        except (TypeError, ValueError):
            self.quiet_spin.setValue(DEFAULT_QUIET_MS // 1000)
        self.quiet_spin.setToolTip("Refuse to write while the agent wrote this conversation less than this long ago: "
                                   "a turn in progress could overtake a new generation (0 = no check)")
        self.quiet_spin.valueChanged.connect(self._on_quiet_spin_value_changed)
        self.wait_bar = QProgressBar()   # how much of the quiet period has passed, while waiting for it
        self.wait_bar.setMaximumWidth(120)
        self.wait_bar.setMaximumHeight(14)
        self.wait_bar.setTextVisible(False)
        self.wait_bar.hide()
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.wait_bar)
        row.addWidget(self.activity_label, 1)
        label = QLabel("Quiet period")
        label.setTextFormat(Qt.TextFormat.PlainText)
        row.addWidget(label)
        row.addWidget(self.quiet_spin)
        if wrap:   # the controls stay on the first line of a sentence that wraps
            for widget in (self.wait_bar, label, self.quiet_spin):
                row.setAlignment(widget, Qt.AlignmentFlag.AlignTop)

    @property
    def quiet_ms(self) -> int:
        """The quiet period chosen (ms)."""
        return self.quiet_spin.value() * 1000

    def show_activity(self, activity) -> None:
        """Show ACTIVITY (studio.store.write.protocol.AgentActivity, or None) as plain text."""
        text = "" if activity is None else activity.message()
        self.activity_label.setText(text)
        self.activity_label.setProperty("role", "loss" if activity is not None and activity.active else "muted")
        self.activity_label.style().unpolish(self.activity_label)
        self.activity_label.style().polish(self.activity_label)

    def show_waiting(self, activity) -> None:
        """Show the progress of a wait for the quiet period (ACTIVITY: the last AgentActivity read, or None)."""
        quiet_ms = self.quiet_ms
        self.activity_label.setText(waiting_text(activity, quiet_ms))
        if activity is None or activity.live_flags or quiet_ms <= 0:
            self.wait_bar.setRange(0, 0)   # no time to count: busy
        else:
            self.wait_bar.setRange(0, quiet_ms)
            self.wait_bar.setValue(max(0, quiet_ms - activity.wait_ms))
        self.wait_bar.show()

    def end_waiting(self) -> None:
        """Hide the wait's progress (the activity label shows the last activity read)."""
        self.wait_bar.hide()

    def _on_quiet_spin_value_changed(self, value: int) -> None:
        if self._settings is not None:
            self._settings.setValue(QUIET_SETTING, value)


def waiting_text(activity, quiet_ms: int) -> str:
    """Return the sentence shown while waiting for QUIET_MS (ms) of quiet, from the last ACTIVITY read (or None)."""
    period = f"{quiet_ms / 1000:g} s"
    if activity is None:
        return f"Waiting for {period} of quiet…"
    if activity.live_flags:
        return f"Waiting: {', '.join(activity.live_flags)} is set on this record (the agent is working on it)…"
    if activity.active:
        return (f"Waiting for {period} of quiet: {activity.what or 'the conversation'} was written "
                f"{activity.ago_ms / 1000:.1f} s ago ({activity.wait_ms / 1000:.1f} s to go)…")
    return f"Quiet for {period}: writing…"


def _is_agent_active(exc: BaseException) -> bool:
    return jobs.refusal_reason(exc) == "busy" and "agent is active" in str(exc)


class ProtocolController(QObject):
    """Runs the protocol's background steps for one dialog; reports through signals (GUI thread)."""

    activity_read = Signal(object)      # AgentActivity or None
    step = Signal(object, str)          # what `write` runs now ("commit", "wait", "watch", None) and a sentence
    committed = Signal(object)          # the row (dict) `write`'s WRITE returned; the watch follows
    write_failed = Signal(object)       # the exception of a write that wrote nothing (no wait / force chosen)
    waiting = Signal(object)            # AgentActivity read while waiting (progress of the wait)
    quiet = Signal()                    # the wait ended with the conversation quiet
    wait_failed = Signal(str)           # the wait ended without quiet (plain text)
    overtaken = Signal(object)          # [OvertakingWrite] found while watching
    repaired = Signal(object)           # the repair generation (row dict)
    watch_finished = Signal()           # the watch window passed (after any repairs)

    def __init__(self, runner: TaskRunner, panel: ProtocolPanel, path: str, *, session=None,
                 parent_widget: QWidget | None = None):
        super().__init__(parent_widget)
        self._runner = runner
        self._panel = panel
        self._path = path
        self._session = session
        self._widget = parent_widget
        self._cancel = threading.Event()
        self.activity = None
        self._deadline: float | None = None   # time.monotonic() when the watch window ends (set by the first watch)
        #: The watch window after a commit (ms); None: from the thread's stored turn timings.
        self.watch_window_ms: int | None = None
        self._key: str | None = None
        self._activity_key: str | None = None   # the record whose activity the panel shows
        self._waiting = False
        panel.quiet_spin.valueChanged.connect(self._on_quiet_spin_value_changed)
        self._write: Callable[[int], Any] | None = None   # the WRITE of the running `write`

    # -- questions (tests replace these) -----------------------------------------------------------

    def ask_agent_active(self, text: str) -> str:
        """Ask what to do while the agent is active: "wait", "force" or "cancel"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "The agent is active", text, QMessageBox.StandardButton.NoButton,
                          self._widget)
        box.setTextFormat(Qt.TextFormat.PlainText)
        wait = box.addButton("Wait", QMessageBox.ButtonRole.AcceptRole)
        force = box.addButton("Force", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(wait)
        box.exec()
        return "wait" if box.clickedButton() is wait else "force" if box.clickedButton() is force else "cancel"

    def ask_overtaken(self, text: str) -> str:
        """Ask how to fix an overtaken write: "repair" (keep ours, carry theirs), "revert" (the agent's) or "leave"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "A running turn overtook the write", text,
                          QMessageBox.StandardButton.NoButton, self._widget)
        box.setTextFormat(Qt.TextFormat.PlainText)
        repair = box.addButton("Repair", QMessageBox.ButtonRole.AcceptRole)
        revert = box.addButton("Use the agent's version", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Leave it", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(repair)
        box.exec()
        return "repair" if box.clickedButton() is repair else "revert" if box.clickedButton() is revert else "leave"

    # -- one write, the whole protocol -------------------------------------------------------------------

    def write(self, lookup_key: str, write: Callable[[int], Any], *, force: bool = False) -> None:
        """Write through the protocol: WRITE(quiet_ms) on the database worker, then wait / force, then the watch.

        WRITE(quiet_ms) writes one generation of LOOKUP_KEY's record and returns the new row (dict),
        or raises (WriteRefused…; nothing written); QUIET_MS (ms) is the panel's quiet period, 0
        when FORCE (live busy flags still refuse). "The agent is active" asks `ask_agent_active`:
        "wait" writes again once the conversation was quiet for the period (`waiting` reports each
        probe; `wait_failed` when it never was), "force" writes again without the quiet check.
        Success emits `committed(row)` and starts `watch` (`overtaken`, `repaired`, `watch_finished`);
        any other failure, or "cancel", emits `write_failed(exc)`. `step` says what runs.
        """
        self._key = lookup_key
        self._write = write
        quiet_ms = 0 if force else self._panel.quiet_ms
        self.step.emit("commit", "Writing…")
        jobs.submit(self._runner, lambda _p, _c: write(quiet_ms), on_done=self._on_written,
                    on_error=self._on_write_error, on_worker=True, key=f"protocol-write-{id(self)}")

    def _on_written(self, row: Any) -> None:
        self.committed.emit(row)
        generation = row.get("generationCount") if isinstance(row, dict) else None
        # a turn that read the record before the commit may still write onto it
        self.step.emit("watch", f"Wrote generation {generation}. Watching for a running turn overtaking it…")
        self.watch(self._key)

    def _on_write_error(self, exc: Exception) -> None:
        key, write = self._key, self._write
        choice = self.choice_for_refusal(exc)   # "the agent is active": wait / force / cancel
        if choice == "force":
            self.write(key, write, force=True)
        elif choice == "wait":
            self.step.emit("wait", waiting_text(None, self._panel.quiet_ms))
            self.wait_then(key, lambda: self.write(key, write))
        else:
            self.step.emit(None, "")
            self.write_failed.emit(exc)

    # -- steps -----------------------------------------------------------------------------------------

    def read_activity(self, lookup_key: str) -> None:
        """Read the activity of LOOKUP_KEY's conversation in the background; `activity_read` follows."""
        from studio.store.write.protocol import store_activity

        self._activity_key = lookup_key
        path, quiet_ms = self._path, self._panel.quiet_ms
        jobs.submit(self._runner, lambda _p, _c: store_activity(path, lookup_key, quiet_ms),
                    on_done=self._on_activity, on_error=lambda _exc: self._on_activity(None),
                    key=f"protocol-activity-{id(self)}")

    def _on_quiet_spin_value_changed(self, _value: int) -> None:
        if self._activity_key is not None and not self._waiting:
            self.read_activity(self._activity_key)   # "active" or "quiet" depends on the period

    def _on_activity(self, activity) -> None:
        self.activity = activity
        self._panel.show_activity(activity)
        self.activity_read.emit(activity)

    def choice_for_refusal(self, exc: BaseException) -> str | None:
        """When EXC says the agent is active, ask and return "wait", "force" or "cancel"; None for other errors."""
        if not _is_agent_active(exc):
            return None
        return self.ask_agent_active(f"{exc}\n\nWait until it has been quiet for {self._panel.quiet_ms / 1000:g} s "
                                     "and then write, or force the write now?")

    def wait_then(self, lookup_key: str, then: Callable[[], None]) -> None:
        """Wait in the background (at most WAIT_LIMIT_S) for the quiet period, then call THEN on the GUI thread."""
        from studio.store.write.protocol import store_activity, wait_for_quiet

        self._cancel = threading.Event()  # a new wait: an earlier stop() does not end it
        path, quiet_ms, cancel = self._path, self._panel.quiet_ms, self._cancel

        def work(progress, task_cancel):
            def probe():
                activity = store_activity(path, lookup_key, quiet_ms)
                if activity is not None:
                    progress(max(0, quiet_ms - activity.wait_ms), quiet_ms, activity)
                return activity
            return wait_for_quiet(probe, WAIT_LIMIT_S, cancelled=lambda: cancel.is_set() or task_cancel.is_set())

        def done(activity) -> None:
            self._waiting = False
            self._panel.end_waiting()
            self._on_activity(activity)
            if cancel.is_set():
                self.wait_failed.emit("You stopped waiting, so nothing was written.")
            elif activity is not None and activity.active:
                self.wait_failed.emit(f"Still active after {WAIT_LIMIT_S // 60} minutes: {activity.message()}")
            else:
                self.quiet.emit()
                then()

        def waited(_done: int, _total: int, activity) -> None:
            self._panel.show_waiting(activity)
            self.waiting.emit(activity)

        def failed(exc: Exception) -> None:
            self._waiting = False
            self._panel.end_waiting()
            self.wait_failed.emit(str(exc))

        self._waiting = True
        self._panel.show_waiting(None)
        jobs.submit(self._runner, work, on_done=done, on_error=failed, on_progress=waited,
                    key=f"protocol-wait-{id(self)}")

    def watch(self, lookup_key: str, window_ms: int | None = None) -> None:
        """Watch LOOKUP_KEY after a commit (WINDOW_MS, default from the stored turn timings); signals follow."""
        self._key = lookup_key
        self._cancel = threading.Event()  # a new watch: an earlier stop() does not end it
        self._deadline = None
        ago = self.activity.ago_ms if self.activity is not None else None
        self._watch_rest(window_ms if window_ms is not None else self.watch_window_ms, ago)

    def _watch_rest(self, window_ms: int | None = None, ago_ms: int | None = None) -> None:
        from studio.store.write.protocol import history_reader, store_turn_ms, watch_for_overtaking, watch_window_ms

        path, key, cancel, deadline = self._path, self._key, self._cancel, self._deadline

        def work(_p, task_cancel):
            end = deadline
            if end is None:
                window = window_ms
                if window is None:
                    window = watch_window_ms(store_turn_ms(path, key))
                    if ago_ms is None or ago_ms > window:
                        window = 0  # quiet for longer than a turn takes: nothing can still be in flight
                end = time.monotonic() + window / 1000
            left_ms = max(0, int((end - time.monotonic()) * 1000))
            return watch_for_overtaking(history_reader(path, key), left_ms,
                                        cancelled=lambda: cancel.is_set() or task_cancel.is_set()), end

        jobs.submit(self._runner, work, on_done=self._on_watched, on_error=lambda _exc: self.watch_finished.emit(),
                    key=f"protocol-watch-{id(self)}")

    def _on_watched(self, result: tuple) -> None:
        found, self._deadline = result
        if not found:
            self.watch_finished.emit()
            return
        self.overtaken.emit(found)
        text = "\n".join(f.describe() for f in found)
        choice = self.ask_overtaken(f"{text}\n\nRepair: write a new generation keeping the studio's log and carrying "
                                    "the agent's observations and cursor forward. Or use the agent's version "
                                    "instead. (Mastra's rows are never edited.)")
        if choice == "leave":
            self.watch_finished.emit()
            return
        path, key, session = self._path, self._key, self._session
        prefer = "carry" if choice == "repair" else "revert"
        jobs.submit(self._runner, lambda _p, _c: jobs.repair(path, key, prefer=prefer, session=session),
                    on_done=self._on_repaired, on_error=lambda _exc: self.watch_finished.emit(),
                    on_worker=True, key=f"protocol-repair-{id(self)}")

    def _on_repaired(self, row: Any) -> None:
        if row is not None:
            self.repaired.emit(row)
        self._watch_rest()  # the rest of the window: the agent may still be in its turn

    def stop(self) -> None:
        """Stop waiting / watching (the background steps end at their next poll)."""
        self._cancel.set()

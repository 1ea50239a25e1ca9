"""The OM write protocol in the studio: the quiet period shown and adjustable, wait / force, watch, repair / revert.

`ProtocolPanel` (a row for a write dialog) shows whether the agent is active ("the agent is
active: a message was written 4.2 s ago") and holds the quiet period (seconds, remembered in
the settings). `ProtocolController` runs the protocol (`studio.app.write_protocol`, the one flow
the command line runs too) for one dialog: each step on the TaskRunner, never on the GUI thread
(the write and the repair on the database worker, the waits and watches on its pool), the
questions on the GUI thread through its `Interaction` (the window's `studio.ui.interaction.
QtInteraction` over the dialog; tests give a scripted one). *Reflect now…*, History ▸ *Revert*,
*Observe now…* and *Activate buffered chunks…* run the same sequence: write → "the agent is
active": wait / force / cancel → watch (a new generation for overtaking writes, repaired or
reverted as the user chooses; a write in place for a turn rewriting it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QSpinBox, QWidget

from studio.app.changes import record_changes
from studio.app.write_protocol import (
    OVERWRITTEN,
    Commit,
    Interaction,
    ProtocolOptions,
    ProtocolOutcome,
    Repair,
    WaitEnded,
    WaitForQuiet,
    WatchOvertaking,
    WatchSurvival,
    WriteJob,
    perform,
    protocol_steps,
    waiting_text,
)
from studio.errors import StudioError
from studio.ui.tasks import TaskRunner, submit_job
from studio.ui.widgets.common import ElidedLabel, plain_label

QUIET_SETTING = "writes/quietPeriodS"


def _set_interaction(dialog, interaction: Interaction) -> None:
    dialog.protocol.interaction = interaction


#: A write dialog's `interaction` (class attribute of a dialog holding a `protocol` ProtocolController):
#: what asks its user, the commit's confirmation and the write protocol's questions; tests set a scripted one.
dialog_interaction = property(lambda dialog: dialog.protocol.interaction, _set_interaction,
                              doc="What asks the user: the confirmation and the write protocol's questions.")


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


class ProtocolController(QObject):
    """Runs the write protocol's steps for one dialog on the TaskRunner; reports through signals (GUI thread).

    INTERACTION answers the protocol's questions (the dialog's: message boxes over it, or a scripted one).
    `watch_window_ms` sets the watch after a commit (ms; None: from the thread's stored turn timings).
    """

    activity_read = Signal(object)      # AgentActivity or None
    step = Signal(object, str)          # what `write` runs now ("commit", "wait", "watch", None) and a sentence
    committed = Signal(object)          # what the write returned (the new row, or activate's dict); the watch follows
    changed = Signal(object)            # the ChangeSet of each write: the commit's, then each repair's
    write_failed = Signal(object)       # the exception of a write that wrote nothing (no wait / force chosen)
    waiting = Signal(object)            # AgentActivity read while waiting (progress of the wait)
    wait_failed = Signal(str)           # the wait ended without quiet (plain text)
    overtaken = Signal(object)          # [OvertakingWrite] found while watching
    repaired = Signal(object)           # the repair generation (row dict)
    overwritten = Signal(str)           # a write in place was rewritten by a running turn while watched (plain text)
    watch_finished = Signal()           # the watch window passed (after any repairs), or the user left it

    def __init__(self, runner: TaskRunner, panel: ProtocolPanel, path: str, *, interaction: Interaction, session=None,
                 parent_widget: QWidget | None = None):
        super().__init__(parent_widget)
        self._runner = runner
        self._panel = panel
        self._path = path
        self._session = session
        self.interaction = interaction
        self._cancel = threading.Event()
        self.activity = None
        #: The watch window after a commit (ms); None: from the thread's stored turn timings.
        self.watch_window_ms: int | None = None
        self._activity_key: str | None = None   # the record whose activity the panel shows
        self._waiting = False
        self._steps = None                      # the running flow (`protocol_steps`)
        self._job: WriteJob | None = None
        self._written = None                    # the running write's Written, once committed
        self._outcome = ProtocolOutcome()       # what the running write's protocol did
        panel.quiet_spin.valueChanged.connect(self._on_quiet_spin_value_changed)

    # -- one write, the whole protocol -------------------------------------------------------------------

    def write(self, lookup_key: str, write: Callable[[int], Any], *, force: bool = False,
              in_place: bool = False) -> None:
        """Write through the protocol: WRITE(quiet_ms) on the database worker, then wait / force, then the watch.

        WRITE(quiet_ms) writes once and returns a `studio.app.changes.Written` (the new row, or
        activate's dict holding it), or raises (WriteRefused…; nothing written); QUIET_MS (ms) is
        the panel's quiet period, 0 when FORCE (live busy flags still refuse). "The agent is
        active" asks the interaction: "wait" writes again once the conversation was quiet for the
        period (`waiting` reports each probe; `wait_failed` when it never was), "force" writes again
        without the quiet check. Success emits `committed` and `changed` and starts the watch (IN_PLACE:
        a write to Mastra's own row, watched for a turn rewriting it: `overwritten`; otherwise
        `overtaken`, `repaired`); `watch_finished` ends it. Any other failure, or "cancel", emits
        `write_failed(exc)`. `step` says what runs.
        """
        self._job = WriteJob(self._path, lookup_key, write, in_place=in_place, session=self._session)
        self._written = None
        options = ProtocolOptions(quiet_ms=self._panel.quiet_ms, force=force, watch_ms=self.watch_window_ms)
        self._outcome = ProtocolOutcome()
        self._steps = protocol_steps(self._job, options, self.interaction, self._outcome, activity=self.activity,
                                     stopped=lambda: self._cancel.is_set())
        self._advance()

    def _advance(self, value: Any = None, error: BaseException | None = None) -> None:
        """Send VALUE (or throw ERROR) into the flow and run the step it yields next; end it when it returns."""
        steps = self._steps
        if steps is None:
            return
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as done:
            self._steps = None
            self._finished(done.value)
            return
        except WaitEnded as exc:
            self._steps = None
            self.wait_failed.emit(str(exc))
            return
        except Exception as exc:  # the write's refusal or failure: nothing was written
            self._steps = None
            self.step.emit(None, "")
            self.write_failed.emit(exc)
            return
        self._perform(step)

    def _abandon(self) -> None:
        """End the flow where it stands (a wait or a watch that failed): nothing more runs."""
        if self._steps is not None:
            self._steps.close()
            self._steps = None

    def _perform(self, step) -> None:
        job, key = self._job, f"-{id(self)}"
        if isinstance(step, Commit):
            self.step.emit("commit", "Writing…")
            submit_job(self._runner, lambda _p, _c: perform(step, job), on_done=self._on_committed,
                       on_error=lambda exc: self._advance(error=exc), on_worker=True, key="protocol-write" + key)
        elif isinstance(step, WaitForQuiet):
            self._wait(step, job, key)
        elif isinstance(step, (WatchOvertaking, WatchSurvival)):
            self._watch(step, job, key)
        elif isinstance(step, Repair):
            submit_job(self._runner, lambda _p, _c: perform(step, job), on_done=self._on_repaired,
                       on_error=self._on_repair_failed, on_worker=True, key="protocol-repair" + key)

    def _on_committed(self, written) -> None:
        self._written = written
        self.committed.emit(written.result)
        self.changed.emit(written.changes)
        self._advance(written)

    def _wait(self, step: WaitForQuiet, job: WriteJob, key: str) -> None:
        """Wait in the background (at most the step's limit) for the quiet period; the flow goes on when it ends."""
        self.step.emit("wait", waiting_text(None, step.quiet_ms))
        self._cancel = cancel = threading.Event()  # a new wait: an earlier stop() does not end it
        quiet_ms = step.quiet_ms

        def work(progress, task_cancel):
            def report(activity) -> None:
                progress(max(0, quiet_ms - activity.wait_ms), quiet_ms, activity)

            return perform(step, job, cancelled=lambda: cancel.is_set() or task_cancel.is_set(), progress=report)

        def done(activity) -> None:
            self._waiting = False
            self._panel.end_waiting()
            self._on_activity(activity)
            self._advance(activity)

        def waited(_done: int, _total: int, activity) -> None:
            self._panel.show_waiting(activity)
            self.waiting.emit(activity)

        def failed(exc: Exception) -> None:
            self._waiting = False
            self._panel.end_waiting()
            self._abandon()
            self.wait_failed.emit(str(exc))

        self._waiting = True
        self._panel.show_waiting(None)
        submit_job(self._runner, work, on_done=done, on_error=failed, on_progress=waited, key="protocol-wait" + key)

    def _watch(self, step, job: WriteJob, key: str) -> None:
        """Watch the record in the background; the flow goes on with what was found."""
        if isinstance(step, WatchSurvival):
            self.step.emit("watch", "Written. Watching for a running turn overwriting it…")
        elif step.deadline is None:   # the first watch after the commit (a repair goes on with the same window)
            row = self._written.result if self._written is not None else None
            generation = row.get("generationCount") if isinstance(row, dict) else None
            # a turn that read the record before the commit may still write onto it
            self.step.emit("watch", f"Wrote generation {generation}. Watching for a running turn overtaking it…")
        self._cancel = cancel = threading.Event()  # a new watch: an earlier stop() does not end it

        def work(_p, task_cancel):
            return perform(step, job, cancelled=lambda: cancel.is_set() or task_cancel.is_set())

        def watched(result) -> None:
            if isinstance(step, WatchOvertaking) and result[0]:
                self.overtaken.emit(result[0])
            self._advance(result)

        def failed(_exc: Exception) -> None:
            self._abandon()
            self.watch_finished.emit()

        submit_job(self._runner, work, on_done=watched, on_error=failed, key="protocol-watch" + key)

    def _on_repaired(self, row: Any) -> None:
        if row is not None:
            self.repaired.emit(row)
            self.changed.emit(record_changes(self._job.lookup_key))
        self._advance(row)   # the rest of the window: the agent may still be in its turn

    def _on_repair_failed(self, exc: Exception) -> None:
        if isinstance(exc, StudioError):
            self._advance(error=exc)   # the flow says so and stops watching
        else:
            self._abandon()
            self.watch_finished.emit()

    def _finished(self, written) -> None:
        """The flow ended after its watch: the write survived (or was repaired, or left), or was rewritten."""
        job = self._job
        if job is not None and job.in_place and self._outcome.unrepaired:
            row = written.result.get("row", written.result) if isinstance(written.result, dict) else {}
            self.overwritten.emit(OVERWRITTEN.format(record_id=row.get("id")))
            return
        self.watch_finished.emit()

    # -- the agent's activity ----------------------------------------------------------------------------

    def read_activity(self, lookup_key: str) -> None:
        """Read the activity of LOOKUP_KEY's conversation in the background; `activity_read` follows."""
        from studio.store.write.protocol import store_activity

        self._activity_key = lookup_key
        path, quiet_ms = self._path, self._panel.quiet_ms
        submit_job(self._runner, lambda _p, _c: store_activity(path, lookup_key, quiet_ms),
                   on_done=self._on_activity, on_error=lambda _exc: self._on_activity(None),
                   key=f"protocol-activity-{id(self)}")

    def _on_quiet_spin_value_changed(self, _value: int) -> None:
        if self._activity_key is not None and not self._waiting:
            self.read_activity(self._activity_key)   # "active" or "quiet" depends on the period

    def _on_activity(self, activity) -> None:
        self.activity = activity
        self._panel.show_activity(activity)
        self.activity_read.emit(activity)

    def stop(self) -> None:
        """Stop waiting / watching (the background steps end at their next poll)."""
        self._cancel.set()

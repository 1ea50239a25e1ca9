"""Thread ▸ *Activate buffered chunks…*: move the record's buffered observation chunks into the active log
now, as Mastra's activate() does when the window reaches the threshold (no model call).

Shows the chunks and which of them an activation moves (Mastra's swapBufferedToActive rule), then
writes after the user confirms, with the write protocol of every OM write (quiet period, Wait /
Force, busy flags, backup, one transaction, the watch after the commit). `memory-studio activate`
writes the same way (`studio.app.observation`).
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QHeaderView, QPushButton, QVBoxLayout, QWidget

from studio.app import observation as obs_jobs
from studio.app import reflection as jobs
from studio.app import text as fmt
from studio.app.failures import describe_error, outcome_line, refusal_reason, write_outcome
from studio.errors import WriteRefused
from studio.ui.interaction import QtInteraction
from studio.ui.models.chunks import BufferedChunkModel
from studio.ui.screen import DIALOG_SHARE, fit_within_screen
from studio.ui.tasks import TaskRunner, submit_job
from studio.ui.widgets.common import ElidedLabel, plain_label, table_view
from studio.ui.widgets.write_protocol import ProtocolController, ProtocolPanel, dialog_interaction

TITLE = "Activate Buffered Chunks"


def plan_text(plan: obs_jobs.ChunkPlan) -> str:
    """Return what activating PLAN moves, in one paragraph (tokens: Mastra's estimates stored on the chunks)."""
    done = plan.chunks[:plan.count]
    msg_tokens = sum(int(c.get("messageTokens") or 0) for c in done)
    obs_tokens = sum(int(c.get("tokenCount") or 0) for c in done)
    messages = sum(len(c.get("messageIds") or []) for c in done)
    rest = len(plan.chunks) - plan.count
    return (f"{len(plan.chunks)} buffered chunk(s) wait in {plan.lookup_key}. Activating now moves the oldest "
            f"{plan.count} ({messages:,} message(s), {msg_tokens:,} message tokens, {obs_tokens:,} observation tokens) "
            f"into the active log, as Mastra does when the window reaches its threshold; {rest} stay buffered. "
            f"(Mastra's rule: {plan.pending_tokens:,} pending tokens, threshold {plan.threshold:,}.)"
            + (f" {why}" if (why := obs_jobs.pending_difference(plan)) else ""))


class ActivateDialog(QDialog):
    """Show THREAD_ID's buffered chunks and the activation plan; activate after confirmation.

    INTERACTION (the window's `QtInteraction`) asks the user, over this dialog: the confirmation, the
    write protocol's questions (default: message boxes over the dialog); `interaction` replaces it (tests).
    """

    committed = Signal(object)        # activate_buffered's result (dict with "row")
    commit_failed = Signal(str)

    def __init__(self, runner: TaskRunner, path: str, thread_id: str, *, thread_title: str | None = None,
                 settings: QSettings | None = None, write_session=None, interaction: QtInteraction | None = None,
                 write_note: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self._runner, self._path, self._thread_id = runner, path, thread_id
        self._session = write_session
        self._write_note = write_note   # the store's: a standalone MongoDB server's "not atomic" (else None)
        self._plan: obs_jobs.ChunkPlan | None = None
        self._busy: str | None = None
        self.setWindowTitle(f"{TITLE} — {thread_title or thread_id}")
        self.setModal(True)
        self.setSizeGripEnabled(True)
        self.heading = ElidedLabel(f"{TITLE} · {thread_title or thread_id}", "heading")
        self.summary = plain_label("Reading the buffered chunks…", "muted", wrap=True)
        self.chunk_model = BufferedChunkModel(self)
        self.chunks_view = table_view()
        self.chunks_view.setModel(self.chunk_model)
        self.chunks_view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.chunks_view.horizontalHeader().setStretchLastSection(True)
        self.protocol_panel = ProtocolPanel(settings)
        self.protocol = ProtocolController(runner, self.protocol_panel, path, session=write_session,
                                           interaction=QtInteraction.for_dialog(self, interaction),
                                           parent_widget=self)
        self.protocol.step.connect(self._on_protocol_step)
        self.protocol.committed.connect(self.committed)
        self.protocol.write_failed.connect(self._on_failed)
        self.protocol.wait_failed.connect(self._on_protocol_wait_failed)
        self.protocol.overwritten.connect(self._on_overwritten)
        self.protocol.watch_finished.connect(self._on_protocol_watch_finished)
        self.progress_label = plain_label("", "muted", wrap=True)
        self.error_label = plain_label("", "loss", wrap=True)
        self.error_label.hide()
        self.activate_button = QPushButton("Activate…")
        self.activate_button.setEnabled(False)
        self.activate_button.setToolTip("Write the activation to the database, after you confirm")
        self.close_button = QPushButton("Close")
        for b in (self.activate_button, self.close_button):
            b.setAutoDefault(False)
        self.activate_button.clicked.connect(self._on_activate_button_clicked)
        self.close_button.clicked.connect(self._on_close_button_clicked)
        bottom = QHBoxLayout()
        bottom.addWidget(self.progress_label, 1)
        bottom.addWidget(self.activate_button)
        bottom.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.summary)
        layout.addWidget(self.chunks_view, 1)
        layout.addWidget(self.protocol_panel)
        layout.addWidget(self.error_label)
        layout.addLayout(bottom)
        self.resize(860, 480)
        self._busy = "loading"
        submit_job(runner, lambda _p, _c: obs_jobs.chunk_plan(path, thread_id), on_done=self._on_plan,
                   on_error=self._on_plan_failed, key=f"activate-plan-{id(self)}")

    def showEvent(self, event) -> None:
        """Open within the screen's available area (a 1024×700 screen holds the whole dialog, its buttons too)."""
        super().showEvent(event)
        fit_within_screen(self, DIALOG_SHARE)

    @property
    def plan(self) -> obs_jobs.ChunkPlan | None:
        """The activation plan shown, or None."""
        return self._plan

    @property
    def busy(self) -> str | None:
        """What runs: "loading", "commit", "wait", "watch", or None."""
        return self._busy

    def error_text(self) -> str:
        """The error shown (plain text), or ""."""
        return self.error_label.text() if not self.error_label.isHidden() else ""

    interaction = dialog_interaction

    def _on_plan(self, plan: obs_jobs.ChunkPlan) -> None:
        self._busy = None
        self._plan = plan
        self.chunk_model.set_chunks(plan.chunks)
        if plan.chunks:
            self.summary.setText(plan_text(plan))
            self.protocol.read_activity(plan.lookup_key)
        else:
            self.summary.setText(f"{plan.lookup_key} has no buffered chunks: there is nothing to activate.")
        self._update()

    def _on_plan_failed(self, exc: Exception) -> None:
        self._busy = None
        self.summary.setText("")
        self._show_error(f"Nothing to activate: {describe_error(exc)}")
        self._update()

    def activate(self) -> bool:
        """Ask, then activate; return False when nothing was started."""
        plan = self._plan
        if plan is None or not plan.chunks or self._busy is not None:
            return False
        text = "\n\n".join(x for x in (plan_text(plan), fmt.changed_store_line(self._path),
                                       jobs.backup_note(self._session, self._path, self._write_note)) if x)
        if not self.interaction.confirm("Activate buffered chunks", text):
            return False
        self._hide_error()
        path, session = self._path, self._session
        self.protocol.write(plan.lookup_key, lambda quiet_ms: obs_jobs.activate(path, plan, session=session,
                                                                                 quiet_ms=quiet_ms),
                            in_place=True)
        return True

    def _on_protocol_step(self, what: str | None, text: str) -> None:
        self._busy = what or None
        self.progress_label.setText(text)
        self._update()

    def _on_protocol_wait_failed(self, text: str) -> None:
        self._on_protocol_step(None, "")
        self._on_failed(WriteRefused("busy", f"the agent is active: {text}"))

    def _on_protocol_watch_finished(self) -> None:
        self._on_protocol_step(None, "")
        self.accept()

    def _on_failed(self, exc: Exception) -> None:
        message = describe_error(exc)
        failed = "Failed: " if write_outcome(exc) == "not-written" else ""
        self._show_error(("Refused: " if refusal_reason(exc) else failed) + message)
        self.progress_label.setText(outcome_line(exc))
        if refusal_reason(exc) == "generation-changed":
            self._plan = None  # the record moved on: close and open the dialog again
        self._update()
        self.commit_failed.emit(message)

    def _on_overwritten(self, text: str) -> None:
        self._on_protocol_step(None, "")
        self._plan = None
        self._show_error(text.replace("Observe again", "Activate again"))
        self._update()

    def _update(self) -> None:
        self.activate_button.setEnabled(self._busy is None and self._plan is not None and bool(self._plan.chunks))
        self.close_button.setText({"watch": "Stop watching", "wait": "Stop waiting"}.get(self._busy or "", "Close"))
        self.close_button.setEnabled(self._busy != "commit")

    def _show_error(self, text: str) -> None:
        self.error_label.setText(text)
        self.error_label.show()

    def _hide_error(self) -> None:
        self.error_label.hide()

    def _on_activate_button_clicked(self, _checked: bool = False) -> None:
        self.activate()

    def _on_close_button_clicked(self, _checked: bool = False) -> None:
        self.reject()

    def reject(self) -> None:
        """Esc / Close: never close in the middle of a write; stop a wait or watch first."""
        if self._busy == "commit":
            return
        if self._busy in ("watch", "wait"):
            self.protocol.stop()
            return
        super().reject()

    def done(self, result: int) -> None:
        self.protocol.stop()
        self._runner.cancel(f"activate-plan-{id(self)}")
        super().done(result)

"""Thread ▸ *Observe now…*: run the Observer (a model, or the offline rule-based Observer) on the thread's
unobserved window in the background, show what would be observed and the new lines, and write it
only when the user confirms, exactly as Mastra's observe() writes an observation.

The dialog never holds a database connection: reading the window, previewing and committing run
on the TaskRunner (`studio.ui.models.observation`), each opening the file itself, read-only except
for the commit. The commit is checked inside its transaction against the previewed window and
record, so an observation the agent made meanwhile is refused rather than overwritten; the quiet
period, Wait / Force and the watch after the commit are the write protocol's
(`studio.ui.widgets.preview_run.InPlaceWriter`).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSettings, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.engine.observer import ObservationProgress
from studio.llm import CancelToken
from studio.ui import format as fmt
from studio.ui.models import observation as obs_jobs
from studio.ui.models import reflection as jobs
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel, empty_state, plain_label
from studio.ui.widgets.om_tab import MESSAGES_BAR_TITLE
from studio.ui.widgets.observe_preview import ObservePreviewView
from studio.ui.widgets.preview_run import InPlaceWriter, PreviewDialogKeys, RunRow, ask_yes_cancel
from studio.ui.widgets.reflect_preview import SizeBar
from studio.ui.widgets.reflect_strategy import StrategyBox
from studio.ui.widgets.write_protocol import ProtocolController, ProtocolPanel

TITLE = "Observe Now"
NO_PREVIEW = ("Choose a model or the offline rule-based Observer, then press Preview (Ctrl+Enter).\n"
              "Nothing is written until you commit.")
RULE_NOTE = "one dated line per message, marked [rule-based]; nothing leaves this computer"
RULE_TIP = ("No model: each unobserved message becomes one dated observation line (user messages medium, the "
            "assistant's low priority), marked [rule-based] so a reader of the log can tell. Thread scope only.")


class ObserveDialog(PreviewDialogKeys, QDialog):
    """Preview an observation of one thread's unobserved window (thread or resource scope) and commit or discard it.

    PATH: the open database; THREAD_ID: the thread shown. SETTINGS remembers the strategy and
    models (never keys). WRITE_SESSION (studio.store.writes.WriteSession) backs the file up before
    its first write, when given.
    """

    committed = Signal(object)        # the updated OM row (dict)
    preview_ready = Signal(object)    # an obs_jobs.ObservePreview
    preview_failed = Signal(str)      # why the preview gave nothing (plain text)
    commit_failed = Signal(str)       # why nothing was written (plain text)

    TASK_KEYS = ("observe-window", "observe-preview")   # runner keys of its loads (PreviewDialogKeys.done cancels them)

    def __init__(self, runner: TaskRunner, path: str, thread_id: str, *, thread_title: str | None = None,
                 settings: QSettings | None = None, write_session=None, parent: QWidget | None = None):
        super().__init__(parent)
        self._runner = runner
        self._path = path
        self._thread_id = thread_id
        self._thread_title = thread_title or None
        self._settings = settings
        self._session = write_session
        self._window = None
        self._preview: obs_jobs.ObservePreview | None = None
        self._token: CancelToken | None = None
        self._busy: str | None = None            # "loading" | "preview" | "commit" | "wait" | "watch"
        self._run = 0
        self._outdated = False
        self.setWindowTitle(f"{TITLE} — {self._thread_title or thread_id}")
        self.setModal(True)
        self.setSizeGripEnabled(True)
        self._build()
        self._load_window()
        self.resize(1040, 760)

    # -- building --------------------------------------------------------------------------

    def _build(self) -> None:
        self.heading = ElidedLabel("", "heading")
        self.subtitle = plain_label("", "muted", wrap=True)
        self.size_bar = SizeBar()
        self.size_bar.setToolTip("The unobserved window (pendingMessageTokens + Mastra's estimate of the unobserved "
                                 "messages) against the observation threshold: Mastra observes when it is reached.")
        self.size_state = plain_label("", "muted", selectable=False)
        size_row = QHBoxLayout()
        size_row.setSpacing(8)
        size_row.addWidget(plain_label(MESSAGES_BAR_TITLE, selectable=False))
        size_row.addWidget(self.size_bar, 1)
        size_row.addWidget(self.size_state)
        self.below_check = QCheckBox("Observe although the window is below the threshold (Mastra would wait)")
        self.below_check.setToolTip("Mastra's observe() does nothing below the threshold; the studio writes the same "
                                    "observation anyway only when you tick this (the CLI's --below-threshold)")
        self.below_check.toggled.connect(self._update_buttons)
        self.below_check.hide()
        self.protocol_panel = ProtocolPanel(self._settings)
        self.protocol = ProtocolController(self._runner, self.protocol_panel, self._path, session=self._session,
                                           parent_widget=self)
        self.writer = InPlaceWriter(self._runner, self.protocol_panel, self.protocol, self)
        self.writer.busy.connect(self._on_writer_busy)
        self.writer.written.connect(self._on_written)
        self.writer.failed.connect(self._on_commit_failed)
        self.writer.overwritten.connect(self._on_overwritten)
        self.writer.finished.connect(self.accept)

        self.strategy_box = StrategyBox(self._runner, self._settings, title="How to observe",
                                        rule_label="&Offline rule-based Observer", rule_note=RULE_NOTE,
                                        rule_tip=RULE_TIP, settings_prefix="observe")
        self.strategy_box.changed.connect(self._update_buttons)
        self.run_row = RunRow("Run the Observer in the background and show the result (Ctrl+Enter)")
        self.preview_button, self.cancel_button = self.run_row.preview_button, self.run_row.cancel_button
        self.progress_bar, self.progress_label = self.run_row.progress_bar, self.run_row.progress_label
        self.preview_button.clicked.connect(self._on_preview_button_clicked)
        self.cancel_button.clicked.connect(self._on_cancel_button_clicked)
        self.error_label = plain_label("", "loss", wrap=True)
        self.error_label.hide()

        self._results = QStackedWidget()
        self._results.addWidget(empty_state(NO_PREVIEW))
        self.proposal = ObservePreviewView()
        self._results.addWidget(self.proposal)

        self.commit_button = QPushButton("Commit…")
        self.commit_button.setEnabled(False)
        self.discard_button = QPushButton("Close")
        self.commit_button.clicked.connect(self._on_commit_button_clicked)
        self.discard_button.clicked.connect(self._on_discard_button_clicked)
        for b in (self.commit_button, self.discard_button):
            b.setAutoDefault(False)
        bottom = QHBoxLayout()
        self.write_note = plain_label("", "muted", wrap=True)
        bottom.addWidget(self.write_note, 1)
        bottom.addWidget(self.commit_button)
        bottom.addWidget(self.discard_button)

        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        layout.addWidget(self.heading)
        layout.addWidget(self.subtitle)
        layout.addLayout(size_row)
        layout.addWidget(self.below_check)
        layout.addWidget(self.protocol_panel)
        layout.addWidget(self.strategy_box)
        layout.addWidget(self.run_row)
        layout.addWidget(self.error_label)
        layout.addWidget(self._results, 1)
        layout.addLayout(bottom)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, activated=self._on_primary_shortcut_activated)

    # -- state read by tests and the window ------------------------------------------------

    @property
    def window(self):
        """The window as last read (ObservationWindow / ResourceObservationWindow), or None."""
        return self._window

    @property
    def preview(self) -> obs_jobs.ObservePreview | None:
        """The preview shown, or None."""
        return self._preview

    @property
    def busy(self) -> str | None:
        """What runs in the background: "loading", "preview", "commit", "wait", "watch", or None."""
        return self._busy

    # -- reading the window ----------------------------------------------------------------

    def _load_window(self) -> None:
        self._set_busy("loading", "Reading the unobserved messages…")
        path, thread_id = self._path, self._thread_id
        jobs.submit(self._runner, lambda _p, _c: obs_jobs.load_window(path, thread_id),
                    on_done=self._on_window_loaded, on_error=self._on_window_failed, key=f"observe-window-{id(self)}")

    def _on_window_loaded(self, window) -> None:
        self._set_busy(None)
        self._show_window(window)
        self.protocol.read_activity(window.lookup_key)
        self.strategy_box.offer_default_model(obs_jobs.stored_model(window))
        if hasattr(window, "window_ids"):
            self.strategy_box.set_rule_available(False, "resource scope: the rule-based Observer observes "
                                                        "thread-scope records only")
        if not window.message_ids:
            self._show_error("Nothing to observe: every message of this thread is observed already.")
        self._update_buttons()

    def _on_window_failed(self, exc: Exception) -> None:
        self._set_busy(None)
        self.heading.setText(f"{TITLE} · {self._thread_title or self._thread_id}")
        self._show_error(f"Nothing to observe: {jobs.describe_error(exc)}")
        self._update_buttons()

    def _show_window(self, window) -> None:
        self._window = window
        resource = hasattr(window, "window_ids")
        name = self._thread_title or window.lookup_key
        self.heading.setText(f"{TITLE} · {name}")
        self.heading.setToolTip(fmt.plain_tooltip(name))
        scope = ("resource scope: one log shared by every thread of the resource; the threads with unobserved "
                 "messages are observed together" if resource else "thread scope")
        self.subtitle.setText(f"{window.lookup_key} · {len(window.message_ids):,} unobserved message(s) · {scope} · "
                              f"{self._path}")
        value = window.pending_message_tokens + window.tokens
        self.size_bar.set_value(value, window.threshold)
        self.size_state.setText("threshold reached" if window.meets else
                                f"{fmt.token_count(window.threshold - value)} below the threshold")
        self.size_state.setToolTip(f"pendingMessageTokens {window.pending_message_tokens:,} + unobserved messages "
                                   f"{window.tokens:,} tokens; observation threshold {window.threshold:,} tokens")
        self.below_check.setVisible(not window.meets)

    # -- strategy ----------------------------------------------------------------------------

    def strategy(self) -> str:
        """Return "llm" or "rule-based"."""
        return self.strategy_box.strategy()

    def set_strategy(self, strategy: str) -> None:
        """Choose "llm" or "rule-based"."""
        self.strategy_box.set_strategy(strategy)

    def set_model(self, model: str, base_url: str | None = None) -> None:
        """Choose MODEL with BASE_URL (None: the provider's default) and the model strategy."""
        self.strategy_box.set_model(model, base_url)

    # -- previewing ------------------------------------------------------------------------

    def start_preview(self) -> bool:
        """Start a preview in the background with the chosen strategy; return False when it cannot start."""
        if self._busy is not None or self._window is None or not self._window.message_ids:
            return False
        strategy = self.strategy()
        model = self.strategy_box.model_text()
        if strategy == jobs.LLM and not model:
            self._show_error("Choose a model (provider/model), or the offline rule-based Observer.")
            self.strategy_box.model_combo.setFocus()
            return False
        self.strategy_box.remember()
        request = obs_jobs.ObserveRequest(self._path, self._thread_id, strategy,
                                          model if strategy == jobs.LLM else None,
                                          self.strategy_box.base_url() if strategy == jobs.LLM else None)
        self._clear_preview()
        self._hide_error()
        self._outdated = False
        self._run += 1
        run, token = self._run, CancelToken()
        self._token = token
        self._set_busy("preview", "Starting…" if strategy == jobs.LLM else "Observing offline…")

        def work(progress, cancel_event):
            return jobs.run_in_pool(lambda t: obs_jobs.preview(request, lambda p: progress(0, 0, p), t),
                                    cancel_event, token)

        jobs.submit(self._runner, work, on_done=lambda p: self._on_preview_done(run, p),
                    on_error=lambda exc: self._on_preview_failed(run, exc),
                    on_progress=lambda _d, _t, payload: self._on_preview_progress(run, payload),
                    key=f"observe-preview-{id(self)}")
        return True

    def cancel_preview(self) -> None:
        """Stop the running preview (its HTTP request is aborted); nothing is written."""
        if self._busy != "preview":
            return
        self._run += 1
        if self._token is not None:
            self._token.cancel()
        self._runner.cancel(f"observe-preview-{id(self)}")
        self._set_busy(None)
        self.progress_label.setText("Preview cancelled: nothing was written.")

    def _on_preview_progress(self, run: int, p: Any) -> None:
        if run == self._run and isinstance(p, ObservationProgress):
            self.progress_label.setText(p.message)
            self.progress_label.setToolTip(fmt.plain_tooltip(p.message))

    def _on_preview_done(self, run: int, preview: obs_jobs.ObservePreview) -> None:
        if run != self._run:
            return
        self._set_busy(None)
        self._show_window(preview.window)
        self._preview = preview
        self.proposal.show_preview(preview)
        self._results.setCurrentIndex(1)
        self.progress_label.setText(f"Preview ready in {preview.proposal.elapsed_ms / 1000:.1f} s. Nothing is "
                                    "written until you commit.")
        self._update_buttons()
        self.preview_ready.emit(preview)

    def _on_preview_failed(self, run: int, exc: Exception) -> None:
        if run != self._run:
            return
        self._set_busy(None)
        message = jobs.describe_error(exc)
        self.progress_label.setText("")
        self._show_error(f"Preview failed: {message}" + ("" if "nothing was written" in message.lower()
                                                           else " Nothing was written."))
        self.preview_failed.emit(message)

    def _clear_preview(self) -> None:
        self._preview = None
        self.proposal.clear()
        self._results.setCurrentIndex(0)
        self._update_buttons()

    # -- committing ------------------------------------------------------------------------

    def confirm(self, title: str, text: str) -> bool:
        """Ask TITLE / TEXT (plain text) with Yes / Cancel; return True on Yes. Tests replace it."""
        return ask_yes_cancel(self, title, text)

    def commit(self) -> bool:
        """Ask, then write the previewed observation; return False when nothing was started."""
        p = self._preview
        if p is None or self._busy is not None or self._outdated:
            return False
        w, r = p.window, p.proposal
        below = not w.meets
        if below and not self.below_check.isChecked():
            self._show_error("The window is below the observation threshold: tick \"Observe although the window is "
                             "below the threshold\" to write anyway.")
            return False
        lines = [f"Observe {len(w.message_ids):,} message(s) of {w.lookup_key}? The observation log grows from "
                 f"{r.tokens_before:,} to {r.tokens_after:,} tokens, the cursor moves past these messages and the "
                 "thread state is updated, as Mastra's observe() writes it."]
        if below:
            lines.append(f"The window is below the threshold ({w.pending_message_tokens + w.tokens:,} of "
                         f"{w.threshold:,} tokens): Mastra would not observe yet.")
        if r.tokens_after >= r.reflection_threshold:
            lines.append("The log is then at or over the reflection threshold: Mastra reflects on its next turn.")
        lines.append(f"The file is changed: {self._path}")
        note = jobs.backup_note(self._session, self._path)
        if note:
            lines.append(note)
        if not self.confirm("Commit observation", "\n\n".join(lines)):
            return False
        self._hide_error()
        session, path = self._session, self._path
        self.writer.start(lambda quiet_ms: obs_jobs.commit(p, below_threshold=below, session=session,
                                                           quiet_ms=quiet_ms),
                          path=path, lookup_key=w.lookup_key)
        return True

    def _on_writer_busy(self, what: str, text: str) -> None:
        self._set_busy(what or None, text)

    def _on_written(self, row: dict) -> None:
        self.committed.emit(row)

    def _on_overwritten(self, text: str) -> None:
        self._outdated = True
        self._show_error(text)
        self.progress_label.setText("")
        self._update_buttons()

    def _on_commit_failed(self, exc: Exception) -> None:
        message = jobs.describe_error(exc)
        refused = jobs.refusal_reason(exc) is not None
        self._show_error(("Commit refused: " if refused else "Commit failed: ") + message)
        self.progress_label.setText("Nothing was written.")
        if jobs.refusal_reason(exc) == "generation-changed":
            self._outdated = True
        self._update_buttons()
        self.commit_failed.emit(message)

    # -- state -----------------------------------------------------------------------------

    def _stop_write(self) -> None:
        """End a running wait or watch at its next poll (PreviewDialogKeys calls it)."""
        self.writer.stop()

    def _update_buttons(self) -> None:
        busy = self._busy is not None
        has_window = self._window is not None and bool(self._window.message_ids)
        self.preview_button.setEnabled(not busy and has_window)
        self.preview_button.setText("&Preview again" if self._preview is not None else "&Preview")
        self.cancel_button.setEnabled(self._busy in ("preview", "watch", "wait"))
        self.cancel_button.setText({"watch": "Stop watching", "wait": "Stop waiting"}.get(self._busy or "", "Cancel"))
        below_blocked = self._window is not None and not self._window.meets and not self.below_check.isChecked()
        can_commit = self._preview is not None and not busy and not self._outdated and not below_blocked
        self.commit_button.setEnabled(can_commit)
        self.commit_button.setToolTip(
            "Tick \"Observe although the window is below the threshold\" first" if below_blocked and self._preview
            else "This preview cannot be committed (see the message above)" if self._outdated
            else "Write the observation to the database, after you confirm (Ctrl+Enter)")
        self.discard_button.setText("Discard" if self._preview is not None else "Close")
        self.discard_button.setToolTip("Throw the preview away and close; nothing is written (Esc)"
                                       if self._preview is not None else "Close without writing anything (Esc)")
        self.below_check.setEnabled(not busy)
        self.strategy_box.set_busy(busy)
        self.write_note.setText(f"Writes to {self._path} only when you commit and confirm."
                                if self._preview is not None else "")

"""Thread ▸ *Reflect now…*: run the Reflector (or the offline condenser) in the background, show the
proposed generation beside the current one, and write it only when the user confirms.

The dialog never holds a database connection: reading the record, previewing and committing run
on the TaskRunner's pool (`studio.ui.models.reflection`), each opening the file itself, read-only
except for the commit. The commit is checked against the previewed generation, so a reflection
the agent made meanwhile is refused rather than overwritten.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSettings, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.engine.reflector import ReflectionInput, ReflectionProgress
from studio.llm import CancelToken
from studio.ui import format as fmt
from studio.ui.models import reflection as jobs
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel, empty_state, plain_label
from studio.ui.widgets.om_tab import OBSERVATIONS_BAR_TITLE
from studio.ui.widgets.preview_run import PreviewDialogKeys, RunRow, ask_yes_cancel
from studio.ui.widgets.reflect_preview import ProposalView, SizeBar, attempts_text
from studio.ui.widgets.reflect_strategy import StrategyBox
from studio.ui.widgets.write_protocol import ProtocolController, ProtocolPanel

TITLE = "Reflect Now"
NO_PREVIEW = "Choose a model or the offline strategy, then press Preview (Ctrl+Enter).\nNothing is written until you commit."


class ReflectDialog(PreviewDialogKeys, QDialog):
    """Preview a reflection of one thread's OM record (thread or resource scope) and commit or discard it.

    PATH: the open database; THREAD_ID: the thread shown (its record is reflected; for a
    resource-scope record the thread's metadata receives the current task). SETTINGS remembers
    models and base URLs (never keys). WRITE_SESSION (studio.store.writes.WriteSession) backs the
    file up before its first write, when given.
    """

    committed = Signal(object)        # the new row (dict) commit_reflection returned
    preview_ready = Signal(object)    # a jobs.Preview
    preview_failed = Signal(str)      # why the preview gave nothing (plain text)
    commit_failed = Signal(str)       # why nothing was written (plain text)

    TASK_KEYS = ("reflect-input", "reflect-preview")   # runner keys of its loads (PreviewDialogKeys.done cancels them)

    def __init__(self, runner: TaskRunner, path: str, thread_id: str, *, thread_title: str | None = None,
                 settings: QSettings | None = None, write_session=None, parent: QWidget | None = None):
        super().__init__(parent)
        self._runner = runner
        self._path = path
        self._thread_id = thread_id
        self._thread_title = thread_title or None
        self._settings = settings
        self._session = write_session
        self._input: ReflectionInput | None = None
        self._preview: jobs.Preview | None = None
        self._token: CancelToken | None = None
        self._busy: str | None = None            # "loading" | "preview" | "commit" | "wait" | "watch"
        self._run = 0                            # bumps on every preview/cancel: stale deliveries are dropped
        self._outdated = False                   # the record changed since the preview: it cannot be committed
        self._cleared = False                    # the running commit clears a stale isReflecting
        self.setWindowTitle(f"{TITLE} — {self._thread_title or thread_id}")
        self.setModal(True)
        self.setSizeGripEnabled(True)
        self._build()
        self._load_input()
        self.resize(1040, 760)

    # -- building --------------------------------------------------------------------------

    def _build(self) -> None:
        self.heading = ElidedLabel("", "heading")
        self.subtitle = plain_label("", "muted", wrap=True)
        self.size_bar = SizeBar()
        self.size_bar.setToolTip("The observation log's size (observationTokenCount) against the reflection "
                                 "threshold (observationTokens): Mastra reflects when it is reached.")
        self.size_state = plain_label("", "muted", selectable=False)
        size_row = QHBoxLayout()
        size_row.setSpacing(8)
        size_row.addWidget(plain_label(OBSERVATIONS_BAR_TITLE, selectable=False))
        size_row.addWidget(self.size_bar, 1)
        size_row.addWidget(self.size_state)
        self.flag_note = plain_label("", "loss", wrap=True)
        self.flag_note.hide()
        self.protocol_panel = ProtocolPanel(self._settings)
        self.protocol = ProtocolController(self._runner, self.protocol_panel, self._path, session=self._session,
                                           parent_widget=self)
        self.protocol.step.connect(self._set_busy)
        self.protocol.committed.connect(self.committed)
        self.protocol.write_failed.connect(self._on_protocol_write_failed)
        self.protocol.wait_failed.connect(self._on_protocol_wait_failed)
        self.protocol.repaired.connect(self._on_protocol_repaired)
        self.protocol.watch_finished.connect(self._on_protocol_watch_finished)

        self.strategy_box = StrategyBox(self._runner, self._settings)
        self.strategy_box.changed.connect(self._update_buttons)
        self.model_combo = self.strategy_box.model_combo
        self.run_row = RunRow("Run the reflection in the background and show the result (Ctrl+Enter)")
        self.preview_button, self.cancel_button = self.run_row.preview_button, self.run_row.cancel_button
        self.progress_bar, self.progress_label = self.run_row.progress_bar, self.run_row.progress_label
        self.preview_button.clicked.connect(self._on_preview_button_clicked)
        self.cancel_button.clicked.connect(self._on_cancel_button_clicked)

        self.error_label = plain_label("", "loss", wrap=True)
        self.error_label.hide()

        self._results = QStackedWidget()
        self.placeholder = empty_state(NO_PREVIEW)
        self._results.addWidget(self.placeholder)
        self.proposal = ProposalView()
        self._results.addWidget(self.proposal)

        self.commit_button = QPushButton("Commit…")
        self.commit_button.setEnabled(False)
        self.commit_button.setToolTip("Write the proposed generation to the database, after you confirm (Ctrl+Enter)")
        self.discard_button = QPushButton("Close")
        self.discard_button.setToolTip("Close without writing anything (Esc)")
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
        layout.addWidget(self.flag_note)
        layout.addWidget(self.protocol_panel)
        layout.addWidget(self.strategy_box)
        layout.addWidget(self.run_row)
        layout.addWidget(self.error_label)
        layout.addWidget(self._results, 1)
        layout.addLayout(bottom)

        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, activated=self._on_primary_shortcut_activated)

    # -- reading the record ----------------------------------------------------------------

    @property
    def reflection_input(self) -> ReflectionInput | None:
        """Return what the dialog reflects (as last read), or None before it was read."""
        return self._input

    @property
    def preview(self) -> jobs.Preview | None:
        """Return the preview shown, or None."""
        return self._preview

    @property
    def busy(self) -> str | None:
        """Return what runs in the background: "loading", "preview", "commit", "wait", "watch", or None."""
        return self._busy

    def _load_input(self) -> None:
        self._set_busy("loading", "Reading the observation log…")
        path, thread_id = self._path, self._thread_id
        jobs.submit(self._runner, lambda _p, _c: jobs.load_input(path, thread_id),
                    on_done=self._on_input_loaded, on_error=self._on_input_failed,
                    key=f"reflect-input-{id(self)}")

    def _on_input_loaded(self, inp: ReflectionInput) -> None:
        self._set_busy(None)
        self._show_input(inp)
        self.protocol.read_activity(inp.lookup_key)  # "the agent is active: …" before the model is called
        self.strategy_box.offer_default_model(inp.default_model)   # the record's own Reflector model first
        self._update_buttons()

    def _on_input_failed(self, exc: Exception) -> None:
        self._set_busy(None)
        self.heading.setText(f"{TITLE} · {self._thread_title or self._thread_id}")
        self.size_bar.set_value(None, None)
        self.size_state.setText("")
        self._show_error(f"Nothing to reflect: {jobs.describe_error(exc)}")
        self.preview_button.setEnabled(False)
        self._update_buttons()

    def _show_input(self, inp: ReflectionInput) -> None:
        self._input = inp
        scope = ("thread scope" if inp.scope != "resource" else
                 "resource scope: one record shared by every thread of the resource, so a reflection here "
                 f"changes what all of them remember; the current task goes to thread {inp.thread_id}")
        name = self._thread_title or inp.lookup_key
        self.heading.setText(f"{TITLE} · {name}")
        self.heading.setToolTip(fmt.plain_tooltip(name))
        self.subtitle.setText(f"{inp.lookup_key} · generation {inp.generation_count} · {scope} · {inp.path}")
        self.size_bar.set_value(inp.observation_token_count, inp.reflection_threshold)
        left = inp.reflection_threshold - inp.observation_token_count
        self.size_state.setText(f"{fmt.token_count(left)} left" if left > 0 else f"over by {fmt.token_count(-left)}")
        self.size_state.setToolTip(f"Stored observationTokenCount {inp.observation_token_count:,}; Mastra's "
                                   f"estimate of the log now {inp.input_tokens:,} tokens; reflection threshold "
                                   f"{inp.reflection_threshold:,} tokens")
        if inp.reflecting == "live":
            self.flag_note.setText("A running process is reflecting this record right now (isReflecting is set and "
                                   "recent). You can preview, but a commit will be refused until it has finished.")
        elif inp.reflecting == "stale":
            self.flag_note.setText("isReflecting is set but looks stale (left by a process that stopped). "
                                   "Committing will ask before clearing it, as Mastra does before a manual reflection.")
        self.flag_note.setVisible(inp.reflecting is not None)

    # -- strategy (delegated to the StrategyBox) -------------------------------------------

    def strategy(self) -> str:
        """Return "llm" or "rule-based"."""
        return self.strategy_box.strategy()

    def set_strategy(self, strategy: str) -> None:
        """Choose "llm" or "rule-based"."""
        self.strategy_box.set_strategy(strategy)

    def model_text(self) -> str:
        """Return the model chosen (`provider/model`)."""
        return self.strategy_box.model_text()

    def base_url(self) -> str | None:
        """Return the base URL typed, or None for the provider's default."""
        return self.strategy_box.base_url()

    def set_model(self, model: str, base_url: str | None = None) -> None:
        """Choose MODEL with BASE_URL (None: the provider's default) and the model strategy."""
        self.strategy_box.set_model(model, base_url)

    def key_text(self) -> str:
        """Return the key status shown (where the key comes from; never the key)."""
        return self.strategy_box.key_text()

    # -- previewing ------------------------------------------------------------------------

    def start_preview(self) -> bool:
        """Start a preview in the background with the chosen strategy; return False when it cannot start."""
        if self._busy in ("preview", "commit") or self._input is None:
            return False
        strategy = self.strategy()
        if strategy == jobs.LLM and not self.model_text():
            self._show_error("Choose a model (provider/model), or the offline rule-based condenser.")
            self.model_combo.setFocus()
            return False
        self.strategy_box.remember()
        request = jobs.PreviewRequest(path=self._path, thread_id=self._thread_id, strategy=strategy,
                                      model=self.model_text() if strategy == jobs.LLM else None,
                                      base_url=self.base_url() if strategy == jobs.LLM else None,
                                      lookup_key=self._input.lookup_key)
        self._clear_preview()
        self._hide_error()
        self._outdated = False
        self._run += 1
        run = self._run
        token = CancelToken()
        self._token = token
        self._set_busy("preview", "Starting…" if strategy == jobs.LLM else "Condensing offline…")

        def work(progress, cancel_event):
            def report(p: ReflectionProgress) -> None:
                progress(p.attempt or 0, 0, p)
            return jobs.run_in_pool(lambda t: jobs.preview(request, report, t), cancel_event, token)

        jobs.submit(self._runner, work, on_done=lambda p: self._on_preview_done(run, p),
                    on_error=lambda exc: self._on_preview_failed(run, exc),
                    on_progress=lambda _d, _t, payload: self._on_preview_progress(run, payload),
                    key=f"reflect-preview-{id(self)}")
        return True

    def cancel_preview(self) -> None:
        """Stop the running preview (its HTTP request is aborted); nothing is written."""
        if self._busy != "preview":
            return
        self._run += 1
        if self._token is not None:
            self._token.cancel()
        self._runner.cancel(f"reflect-preview-{id(self)}")
        self._set_busy(None)
        self.progress_label.setText("Preview cancelled: nothing was written.")
        self._update_buttons()

    def _on_preview_progress(self, run: int, p: Any) -> None:
        if run != self._run or not isinstance(p, ReflectionProgress):
            return
        bits = []
        if p.attempt:
            bits.append(f"Attempt {p.attempt}")
        if p.level is not None and p.stage != "condensing":
            bits.append(f"level {p.level}")
        prefix = " · ".join(bits)
        self.progress_label.setText(f"{prefix} — {p.message}" if prefix else p.message)
        self.progress_label.setToolTip(fmt.plain_tooltip(p.message))

    def _on_preview_done(self, run: int, preview: jobs.Preview) -> None:
        if run != self._run:
            return
        self._set_busy(None)
        self._show_input(preview.input)
        self._preview = preview
        self.proposal.show_preview(preview)
        self._results.setCurrentIndex(1)
        if not preview.result.observations.strip():
            self._outdated = True
            self._show_error("The proposed log is empty (the current log holds no observations to keep), so there "
                             "is nothing to commit.")
        self.progress_label.setText(f"Preview ready in {preview.result.elapsed_ms / 1000:.1f} s. Nothing is written "
                                    "until you commit.")
        self._update_buttons()
        self.preview_ready.emit(preview)

    def _on_preview_failed(self, run: int, exc: Exception) -> None:
        if run != self._run:
            return
        self._set_busy(None)
        message = jobs.describe_error(exc)
        attempts = getattr(exc, "attempts", None)
        if attempts:
            self.progress_label.setText(attempts_text(attempts))
        else:
            self.progress_label.setText("")
        self._show_error(f"Preview failed: {message}" + ("" if "nothing was written" in message.lower()
                                                           else " Nothing was written."))
        self._update_buttons()
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

    def commit(self, *, clear_stale_reflecting: bool = False) -> bool:
        """Ask, then write the previewed generation; return False when nothing was started.

        The database is opened for writing only here, after the user said yes.
        """
        p = self._preview
        if p is None or self._busy is not None:
            return False
        if not clear_stale_reflecting:
            losses = len(p.diff.high_priority_losses)
            lines = [f"Write generation {p.new_generation} of {p.input.lookup_key} "
                     f"({p.result.observation_token_count:,} tokens; generation {p.input.generation_count} has "
                     f"{p.input.observation_token_count:,})?"]
            if losses:
                lines.append(f"{losses} high-priority observation{'s' if losses != 1 else ''} would be lost.")
            if not p.result.reached_target:
                lines.append("The proposed log is not below the reflection threshold.")
            lines.append(f"The file is changed: {p.request.path}")
            if jobs.backup_note(self._session, p.request.path):
                lines.append(jobs.backup_note(self._session, p.request.path))
            lines.append("Mastra reads the new generation on the agent's next turn; every older generation stays "
                         "in the history and can be restored.")
            if not self.confirm("Commit reflection", "\n\n".join(lines)):
                return False
        self._start_commit(clear_stale_reflecting, force=False)
        return True

    def _start_commit(self, clear_stale_reflecting: bool, force: bool) -> None:
        """Write the preview (confirmed already) through the write protocol (ProtocolController.write).

        FORCE skips the quiet period (live busy flags still refuse); "the agent is active" asks
        wait / force / cancel, and a commit is watched for a running turn overtaking it.
        """
        p = self._preview
        if p is None:
            return
        self._hide_error()
        self._cleared = clear_stale_reflecting
        session = self._session
        self.protocol.write(p.input.lookup_key,
                            lambda quiet_ms: jobs.commit(p, clear_stale_reflecting=clear_stale_reflecting,
                                                         session=session, quiet_ms=quiet_ms),
                            force=force)

    def _on_protocol_repaired(self, row: dict) -> None:
        self.progress_label.setText(f"Wrote generation {row.get('generationCount')} to repair the overtaken write.")
        self.committed.emit(row)

    def _on_protocol_watch_finished(self) -> None:
        self._set_busy(None)
        self.accept()

    def _on_protocol_wait_failed(self, text: str) -> None:
        self._set_busy(None)
        self._show_error(f"Commit refused: {text}")
        self.progress_label.setText("Nothing was written.")
        self._update_buttons()

    def _on_protocol_write_failed(self, exc: Exception) -> None:
        if jobs.refusal_reason(exc) == "reflecting" and not self._cleared:
            self._check_stale_then_ask(exc)
            return
        self._report_commit_failure(exc)

    def _check_stale_then_ask(self, refusal: Exception) -> None:
        """Re-read the record: a stale isReflecting may be cleared after the user confirms; a live one is not."""
        path, thread_id = self._path, self._thread_id
        self._set_busy("loading", "Checking isReflecting…")

        def checked(inp: ReflectionInput) -> None:
            self._set_busy(None)
            p = self._preview
            if inp.reflecting != "stale" or p is None or inp.record_id != p.input.record_id:
                self._report_commit_failure(refusal)
                return
            text = ("isReflecting is set on this record, but it has not changed for a long time: most likely it was "
                    "left behind by a process that stopped.\n\nClear the flag and commit the reflection? "
                    "(Mastra clears such a flag before its own manual reflection.)")
            if self.confirm("Clear the stale isReflecting flag?", text):
                self.commit(clear_stale_reflecting=True)
            else:
                self._report_commit_failure(refusal)

        def failed(exc: Exception) -> None:
            self._set_busy(None)
            self._report_commit_failure(refusal)

        jobs.submit(self._runner, lambda _p, _c: jobs.load_input(path, thread_id), on_done=checked, on_error=failed,
                    key=f"reflect-input-{id(self)}", on_worker=True)

    def _report_commit_failure(self, exc: Exception) -> None:
        message = jobs.describe_error(exc)
        refused = jobs.refusal_reason(exc) is not None
        self._show_error(("Commit refused: " if refused else "Commit failed: ") + message)
        self.progress_label.setText("Nothing was written.")
        if jobs.refusal_reason(exc) == "generation-changed":
            self._outdated = True  # this preview can never be committed now
        self._update_buttons()
        self.commit_failed.emit(message)

    # -- state -----------------------------------------------------------------------------

    def _stop_write(self) -> None:
        """End a running wait or watch at its next poll (PreviewDialogKeys calls it)."""
        self.protocol.stop()

    def _update_buttons(self) -> None:
        busy = self._busy is not None
        previewing = self._busy == "preview"
        self.preview_button.setEnabled(not busy and self._input is not None)
        self.preview_button.setText("&Preview again" if self._preview is not None else "&Preview")
        self.cancel_button.setEnabled(previewing or self._busy in ("watch", "wait"))
        self.cancel_button.setText({"watch": "Stop watching", "wait": "Stop waiting"}.get(self._busy or "", "Cancel"))
        self.commit_button.setEnabled(self._preview is not None and not busy and not self._outdated)
        if self._preview is not None:
            self.commit_button.setText(f"Commit generation {self._preview.new_generation}…")
            self.commit_button.setToolTip("This preview cannot be committed (see the message above)" if self._outdated
                                          else "Write the proposed generation to the database, after you confirm "
                                               "(Ctrl+Enter)")
            self.discard_button.setText("Discard")
            self.discard_button.setToolTip("Throw the preview away and close; nothing is written (Esc)")
        else:
            self.commit_button.setText("Commit…")
            self.commit_button.setToolTip("Write the proposed generation to the database, after you confirm "
                                          "(Ctrl+Enter)")
            self.discard_button.setText("Close")
            self.discard_button.setToolTip("Close without writing anything (Esc)")
        self.strategy_box.set_busy(busy)
        self.write_note.setText(f"Writes to {self._path} only when you commit and confirm."
                                if self._preview is not None else "")

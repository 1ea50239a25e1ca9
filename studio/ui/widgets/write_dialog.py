"""The preview-then-write OM dialog that Thread ▸ *Reflect now…* and *Observe now…* are made of.

`PreviewWriteDialog` owns what the two dialogs share: the layout (heading, subtitle, the size bar
against its threshold, the write protocol's panel, the strategy box, the Preview / Cancel row, the
error line, the placeholder or proposal, Commit / Discard), reading the record in the background,
running a preview on the TaskRunner's pool (cancellable, stale deliveries dropped), the busy state
and its buttons, the keys (Ctrl+Enter previews or commits, Esc cancels, then closes) and the report
of a refused or failed commit. A subclass says what it reads, how it previews and how it commits
(`studio.ui.widgets.reflect_dialog`, `studio.ui.widgets.observe_dialog`).

The dialog never holds a database connection: every read, preview and commit opens the file itself
on the runner, read-only except for the commit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from PySide6.QtCore import QSettings, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QStackedWidget, QVBoxLayout, QWidget

from studio.app import text as fmt
from studio.app.failures import describe_error, outcome_line, refusal_reason, write_outcome
from studio.app.reflection import LLM
from studio.llm import CancelToken
from studio.ui.interaction import QtInteraction
from studio.ui.screen import DIALOG_SHARE, fit_within_screen
from studio.ui.tasks import TaskRunner, run_in_pool, submit_job
from studio.ui.widgets.common import ElidedLabel, empty_state, plain_label
from studio.ui.widgets.preview_run import RunRow
from studio.ui.widgets.reflect_preview import SizeBar
from studio.ui.widgets.reflect_strategy import StrategyBox
from studio.ui.widgets.write_protocol import ProtocolController, ProtocolPanel, dialog_interaction

__all__ = ["PreviewWriteDialog"]


class PreviewWriteDialog(QDialog):
    """A modal dialog that reads one thread's OM record, previews a write in the background and commits it.

    PATH: the open database; THREAD_ID: the thread shown. SETTINGS remembers the strategy, models
    and base URLs (never keys). WRITE_SESSION (studio.store.writes.WriteSession) routes the
    write's row backup, when given. INTERACTION (the window's `QtInteraction`) asks the user, over
    this dialog: the commit's confirmation, the write protocol's questions (default: message boxes over
    the dialog); `interaction` replaces it (tests).

    A subclass sets the class texts below and provides: `_read(path, thread_id)` and
    `_run_preview(request, report, token)` (static: they run on the pool), `_request(strategy,
    model, base_url)`, `_show_source(source)`, `_source_of(preview)`, `_elapsed_ms(preview)`,
    `_build_notes()`, `_connect_writes()`, `_stop_write()` and `commit()`; the other hooks have
    defaults. `_busy` is None or "loading" | "preview" | "commit" | "wait" | "watch".
    """

    committed = Signal(object)        # the row written (dict): the updated OM row, or the new generation's
    preview_ready = Signal(object)    # the preview shown (the subclass's preview object)
    preview_failed = Signal(str)      # why the preview gave nothing (plain text)
    commit_failed = Signal(str)       # why nothing was written (plain text)

    TITLE = ""              # "Reflect Now": the window title and the heading start with it
    LOAD_TASK = ""          # runner key prefix of the read (made unique per dialog with its id)
    PREVIEW_TASK = ""       # runner key prefix of the preview
    SIZE_TITLE = ""         # the size bar's label
    SIZE_TIP = ""           # the size bar's tooltip
    STRATEGY_OPTIONS: ClassVar[dict[str, Any]] = {}   # keyword arguments of the StrategyBox
    PREVIEW_TIP = ""        # the Preview button's tooltip
    PROPOSAL_VIEW: Callable[[], QWidget]   # the view of a preview: show_preview(preview), clear()
    NO_PREVIEW = ""         # the placeholder before a preview
    LOADING = ""            # progress text while the record is read
    NOTHING = ""            # "Nothing to reflect": the error when the read failed starts with it
    NO_MODEL = ""           # the error when the model strategy has no model
    OFFLINE = ""            # progress text of an offline preview
    PROGRESS: type          # the progress payload the preview reports (its .message is shown)
    COMMIT_TIP = ""         # the Commit button's tooltip

    def __init__(self, runner: TaskRunner, path: str, thread_id: str, *, thread_title: str | None = None,
                 settings: QSettings | None = None, write_session=None, interaction: QtInteraction | None = None,
                 write_note: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self._interaction = QtInteraction.for_dialog(self, interaction)
        self._runner = runner
        self._path = path
        self._write_note = write_note   # the store's: a standalone MongoDB server's "not atomic" (else None)
        self._thread_id = thread_id
        self._thread_title = thread_title or None
        self._settings = settings
        self._session = write_session
        self._source = None                      # what the preview is made of, as last read
        self._preview = None
        self._previewed_with: tuple | None = None   # the strategy, model and base URL of the preview shown
        self._token: CancelToken | None = None
        self._busy: str | None = None            # "loading" | "preview" | "commit" | "wait" | "watch"
        self._run = 0                            # bumps on every preview/cancel: stale deliveries are dropped
        self._outdated = False                   # the record changed since the preview: it cannot be committed
        self.setWindowTitle(f"{self.TITLE} — {self._thread_title or thread_id}")
        self.setModal(True)
        self.setSizeGripEnabled(True)
        self._build()
        self._load()
        self.resize(1040, 760)

    def showEvent(self, event) -> None:
        """Open within the screen's available area (a 1024×700 screen holds the whole dialog, its buttons too)."""
        super().showEvent(event)
        fit_within_screen(self, DIALOG_SHARE)

    # -- building --------------------------------------------------------------------------

    def _build(self) -> None:
        self.heading = ElidedLabel("", "heading")
        self.subtitle = plain_label("", "muted", wrap=True)
        self.size_bar = SizeBar()
        self.size_bar.setToolTip(self.SIZE_TIP)
        self.size_state = plain_label("", "muted", selectable=False)
        size_row = QHBoxLayout()
        size_row.setSpacing(8)
        size_row.addWidget(plain_label(self.SIZE_TITLE, selectable=False))
        size_row.addWidget(self.size_bar, 1)
        size_row.addWidget(self.size_state)
        notes = self._build_notes()
        self.protocol_panel = ProtocolPanel(self._settings)
        self.protocol = ProtocolController(self._runner, self.protocol_panel, self._path, session=self._session,
                                           interaction=self._interaction, parent_widget=self)
        self._connect_writes()

        self.strategy_box = StrategyBox(self._runner, self._settings, **self.STRATEGY_OPTIONS)
        self.strategy_box.changed.connect(self._update_buttons)
        self.model_combo = self.strategy_box.model_combo
        self.run_row = RunRow(self.PREVIEW_TIP)
        self.preview_button, self.cancel_button = self.run_row.preview_button, self.run_row.cancel_button
        self.progress_bar, self.progress_label = self.run_row.progress_bar, self.run_row.progress_label
        self.preview_button.clicked.connect(self._on_preview_button_clicked)
        self.cancel_button.clicked.connect(self._on_cancel_button_clicked)
        self.error_label = plain_label("", "loss", wrap=True)
        self.error_label.hide()

        self._results = QStackedWidget()
        self.placeholder = empty_state(self.NO_PREVIEW)
        self._results.addWidget(self.placeholder)
        self.proposal = self.PROPOSAL_VIEW()
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
        for note in notes:
            layout.addWidget(note)
        layout.addWidget(self.protocol_panel)
        layout.addWidget(self.strategy_box)
        layout.addWidget(self.run_row)
        layout.addWidget(self.error_label)
        layout.addWidget(self._results, 1)
        layout.addLayout(bottom)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, activated=self._on_primary_shortcut_activated)

    def _build_notes(self) -> list[QWidget]:
        """Return the widgets shown between the size bar and the protocol panel (made here)."""
        return []

    def _connect_writes(self) -> None:
        """Connect the write path to `self.protocol` (built just before)."""

    # -- state read by tests and the window ------------------------------------------------

    interaction = dialog_interaction

    @property
    def preview(self):
        """Return the preview shown, or None."""
        return self._preview

    @property
    def busy(self) -> str | None:
        """Return what runs in the background: "loading", "preview", "commit", "wait", "watch", or None."""
        return self._busy

    def error_text(self) -> str:
        """Return the error shown (plain text), or ""."""
        return self.error_label.text() if not self.error_label.isHidden() else ""

    # -- reading the record ----------------------------------------------------------------

    def _load(self) -> None:
        self._set_busy("loading", self.LOADING)
        read, path, thread_id = self._read, self._path, self._thread_id
        submit_job(self._runner, lambda _p, _c: read(path, thread_id), on_done=self._on_loaded,
                   on_error=self._on_load_failed, key=f"{self.LOAD_TASK}-{id(self)}")

    @staticmethod
    def _read(path: str, thread_id: str):
        """Return what a preview is made of for THREAD_ID in PATH (on the pool; opens the file itself)."""
        raise NotImplementedError

    def _on_loaded(self, source) -> None:
        self._set_busy(None)
        self.progress_label.setText("")  # the read is over: its "Reading …" would read as still running
        self._set_source(source)
        self.protocol.read_activity(source.lookup_key)  # "the agent is active: …" before the model is called
        self.strategy_box.offer_default_model(self._default_model(source))   # the record's own model first
        self._loaded(source)
        self._update_buttons()

    def _on_load_failed(self, exc: Exception) -> None:
        self._set_busy(None)
        self.progress_label.setText("")
        self.heading.setText(f"{self.TITLE} · {self._thread_title or self._thread_id}")
        self._show_error(f"{self.NOTHING}: {describe_error(exc)}")
        self._update_buttons()

    def _set_source(self, source) -> None:
        """Keep SOURCE (read, or re-read by a preview) and show it."""
        self._source = source
        self._show_source(source)

    def _show_source(self, source) -> None:
        """Show SOURCE: heading, subtitle, the size bar and its state, the notes."""
        raise NotImplementedError

    def _show_heading(self, lookup_key: str) -> None:
        """Head the dialog with the thread's title (else LOOKUP_KEY); the tooltip shows it whole."""
        name = self._thread_title or lookup_key
        self.heading.setText(f"{self.TITLE} · {name}")
        self.heading.setToolTip(fmt.plain_tooltip(name))

    def _default_model(self, source) -> str | None:
        """Return the model the record names for this step (`provider/model`), or None."""
        return None

    def _loaded(self, source) -> None:
        """Called once SOURCE was read and shown (before the buttons are updated)."""

    def _has_source(self) -> bool:
        """Return True when what was read can be previewed."""
        return self._source is not None

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
        if self._busy is not None or not self._has_source():
            return False
        strategy = self.strategy()
        model = self.model_text()
        if strategy == LLM and not model:
            self._show_error(self.NO_MODEL)
            self.model_combo.setFocus()
            return False
        self.strategy_box.remember()
        llm = strategy == LLM
        self._previewed_with = self._choice()
        request = self._request(strategy, model if llm else None, self.base_url() if llm else None)
        self._clear_preview()
        self._hide_error()
        self._outdated = False
        self._run += 1
        run, token, preview = self._run, CancelToken(), self._run_preview
        self._token = token
        self._set_busy("preview", "Starting…" if llm else self.OFFLINE)

        def work(progress, cancel_event):
            return run_in_pool(lambda t: preview(request, lambda p: progress(0, 0, p), t), cancel_event, token)

        submit_job(self._runner, work, on_done=lambda p: self._on_preview_done(run, p),
                   on_error=lambda exc: self._on_preview_failed(run, exc),
                   on_progress=lambda _d, _t, payload: self._on_preview_progress(run, payload),
                   key=f"{self.PREVIEW_TASK}-{id(self)}")
        return True

    def _request(self, strategy: str, model: str | None, base_url: str | None):
        """Return the preview request for STRATEGY (MODEL and BASE_URL: None for the offline strategy)."""
        raise NotImplementedError

    @staticmethod
    def _run_preview(request, report: Callable[[Any], None], token: CancelToken):
        """Run REQUEST on the pool, calling REPORT(progress payload); return the preview (TOKEN cancels)."""
        raise NotImplementedError

    def _source_of(self, preview):
        """Return what PREVIEW was made of (its record as re-read for the preview)."""
        raise NotImplementedError

    def _elapsed_ms(self, preview) -> float:
        """Return how long PREVIEW took (ms)."""
        raise NotImplementedError

    def cancel_preview(self) -> None:
        """Stop the running preview (its HTTP request is aborted); nothing is written."""
        if self._busy != "preview":
            return
        self._run += 1
        if self._token is not None:
            self._token.cancel()
        self._runner.cancel(f"{self.PREVIEW_TASK}-{id(self)}")
        self._set_busy(None)
        self.progress_label.setText("Preview cancelled: nothing was written.")

    def _on_preview_progress(self, run: int, p: Any) -> None:
        if run != self._run or not isinstance(p, self.PROGRESS):
            return
        self.progress_label.setText(self._progress_text(p))
        self.progress_label.setToolTip(fmt.plain_tooltip(p.message))

    def _progress_text(self, p) -> str:
        """Return the progress line for the payload P (default: its message)."""
        return p.message

    def _on_preview_done(self, run: int, preview) -> None:
        if run != self._run:
            return
        self._set_busy(None)
        self._set_source(self._source_of(preview))
        self._preview = preview
        self.proposal.show_preview(preview)
        self._results.setCurrentIndex(1)
        self._previewed(preview)
        self.progress_label.setText(f"Preview ready in {self._elapsed_ms(preview) / 1000:.1f} s. Nothing is "
                                    "written until you commit.")
        self._update_buttons()
        self.preview_ready.emit(preview)

    def _previewed(self, preview) -> None:
        """Called when PREVIEW is shown, before the buttons are updated (a check may set `_outdated`)."""

    def _on_preview_failed(self, run: int, exc: Exception) -> None:
        if run != self._run:
            return
        self._set_busy(None)
        message = describe_error(exc)
        self.progress_label.setText(self._failure_progress(exc))
        self._show_error(f"Preview failed: {message}" + ("" if "nothing was written" in message.lower()
                                                           else " Nothing was written."))
        self._update_buttons()
        self.preview_failed.emit(message)

    def _failure_progress(self, exc: Exception) -> str:
        """Return the progress line left after the preview failed with EXC (default: none)."""
        return ""

    def _clear_preview(self) -> None:
        self._preview = None
        self.proposal.clear()
        self._results.setCurrentIndex(0)
        self._update_buttons()

    # -- committing ------------------------------------------------------------------------

    def commit(self) -> bool:
        """Ask, then write the preview; return False when nothing was started (the subclass writes)."""
        raise NotImplementedError

    def _report_commit_failure(self, exc: Exception) -> None:
        """Show why the commit wrote nothing; a "generation-changed" refusal makes the preview uncommittable."""
        message = describe_error(exc)
        refused = refusal_reason(exc) is not None
        failed = "Commit failed: " if write_outcome(exc) == "not-written" else ""
        self._show_error(("Commit refused: " if refused else failed) + message)
        self.progress_label.setText(outcome_line(exc))
        if refusal_reason(exc) == "generation-changed":
            self._outdated = True  # this preview can never be committed now
        self._update_buttons()
        self.commit_failed.emit(message)

    def _stop_write(self) -> None:
        """End a running wait or watch at its next poll."""
        raise NotImplementedError

    # -- state -----------------------------------------------------------------------------

    def _set_busy(self, what: str | None, text: str = "") -> None:
        self._busy = what
        self.progress_bar.setVisible(what is not None)
        if text:
            self.progress_label.setText(text)
        self._update_buttons()

    def _show_error(self, text: str) -> None:
        self.error_label.setText(text)
        self.error_label.show()

    def _hide_error(self) -> None:
        self.error_label.setText("")
        self.error_label.hide()

    def _commit_blocked(self) -> str | None:
        """Return why a preview may not be committed yet (the Commit tooltip), or None."""
        return None

    def _choice(self) -> tuple[str, str | None, str | None]:
        """Return the strategy chosen now, with its model and base URL (None, None for the offline strategy)."""
        strategy = self.strategy()
        return (strategy, self.model_text(), self.base_url()) if strategy == LLM else (strategy, None, None)

    def _choice_changed(self) -> str | None:
        """Return why the preview shown is not what Commit would mean now (another strategy or model chosen), or None.

        The preview shown is what a commit writes; once another strategy or model is chosen (a model
        whose key is missing, say), committing the old preview would write what the dialog no longer
        shows as chosen: Commit waits for a preview of the new choice, or for the old choice again.
        """
        made = self._previewed_with
        if self._preview is None or made is None or made == self._choice():
            return None
        what = "the offline rule-based strategy" if made[0] != LLM else f"the model {made[1]}"
        return (f"This preview was made with {what}: preview again (Ctrl+Enter) to commit with what is chosen "
                "now, or choose that again to commit this preview.")

    def _commit_label(self) -> str:
        """Return the Commit button's text."""
        return "Commit…"

    def _update_buttons(self) -> None:
        busy = self._busy is not None
        shown = self._preview is not None
        self.preview_button.setEnabled(not busy and self._has_source())
        self.preview_button.setText("&Preview again" if shown else "&Preview")
        self.cancel_button.setEnabled(self._busy in ("preview", "watch", "wait"))
        self.cancel_button.setText({"watch": "Stop watching", "wait": "Stop waiting"}.get(self._busy or "", "Cancel"))
        blocked = self._commit_blocked() or self._choice_changed()
        self.commit_button.setEnabled(shown and not busy and not self._outdated and blocked is None)
        self.commit_button.setText(self._commit_label())
        self.commit_button.setToolTip(blocked if blocked and shown
                                      else "This preview cannot be committed (see the message above)"
                                      if self._outdated and shown else self.COMMIT_TIP)
        self.discard_button.setText("Discard" if shown else "Close")
        self.discard_button.setToolTip("Throw the preview away and close; nothing is written (Esc)"
                                       if shown else "Close without writing anything (Esc)")
        self.strategy_box.set_busy(busy)
        self.write_note.setText(self._choice_changed() or f"Writes to {self._path} only when you commit and confirm."
                                if shown else "")

    # -- buttons, keys and closing -----------------------------------------------------------

    def _on_preview_button_clicked(self, _checked: bool = False) -> None:
        self.start_preview()

    def _on_cancel_button_clicked(self, _checked: bool = False) -> None:
        if self._busy in ("watch", "wait"):
            self._stop_write()
            return
        self.cancel_preview()

    def _on_commit_button_clicked(self, _checked: bool = False) -> None:
        self.commit()

    def _on_discard_button_clicked(self, _checked: bool = False) -> None:
        self.reject()

    def _on_primary_shortcut_activated(self) -> None:
        """Ctrl+Enter: commit a preview, else start one."""
        if self._busy is not None:
            return
        if self._preview is not None and self.commit_button.isEnabled():
            self.commit()
        elif self.preview_button.isEnabled():
            self.start_preview()

    def reject(self) -> None:
        """Esc / Close / Discard: cancel a running preview first; never close in the middle of a write."""
        if self._busy == "preview":
            self.cancel_preview()
            return
        if self._busy == "commit":
            return
        if self._busy in ("watch", "wait"):
            self._stop_write()  # the step ends at its next poll; a watch then closes the dialog
            return
        self._clear_preview()
        super().reject()

    def done(self, result: int) -> None:
        """Close: stop the strategy box's lookups, a wait or watch, the preview and the dialog's reads."""
        self.strategy_box.stop()
        self._stop_write()
        if self._token is not None:
            self._token.cancel()
        for key in (self.LOAD_TASK, self.PREVIEW_TASK):
            self._runner.cancel(f"{key}-{id(self)}")
        super().done(result)

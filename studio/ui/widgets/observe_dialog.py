"""Thread ▸ *Observe now…*: run the Observer (a model, or the offline rule-based Observer) on the thread's
unobserved window in the background, show what would be observed and the new lines, and write it
only when the user confirms, exactly as Mastra's observe() writes an observation.

The dialog never holds a database connection: reading the window, previewing and committing run
on the TaskRunner (`studio.app.observation`), each opening the file itself, read-only except
for the commit. The commit is checked inside its transaction against the previewed window and
record, so an observation the agent made meanwhile is refused rather than overwritten; the quiet
period, Wait / Force and the watch after the commit are the write protocol's
(`studio.ui.widgets.write_protocol.ProtocolController`, a write in place). The dialog's frame is
`PreviewWriteDialog`; `memory-studio observe` writes the same way (`studio.app.observation`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from PySide6.QtWidgets import QCheckBox, QWidget

from studio.app import observation as obs_jobs
from studio.app import reflection as jobs
from studio.app import text as fmt
from studio.engine.observer import ObservationProgress
from studio.errors import WriteRefused
from studio.ui.widgets.observe_preview import ObservePreviewView
from studio.ui.widgets.om_tab import MESSAGES_BAR_TITLE
from studio.ui.widgets.write_dialog import PreviewWriteDialog

TITLE = "Observe Now"
NO_PREVIEW = ("Choose a model or the offline rule-based Observer, then press Preview (Ctrl+Enter).\n"
              "Nothing is written until you commit.")
RULE_NOTE = "one dated line per message, marked [rule-based]; nothing leaves this computer"
RULE_TIP = ("No model: each unobserved message becomes one dated observation line (user messages medium, the "
            "assistant's low priority), marked [rule-based] so a reader of the log can tell. Thread scope only.")
BELOW_TICK = "Observe although the window is below the threshold"


class ObserveDialog(PreviewWriteDialog):
    """Preview an observation of one thread's unobserved window (thread or resource scope) and commit or discard it.

    PATH: the open database; THREAD_ID: the thread shown. SETTINGS remembers the strategy and
    models (never keys). WRITE_SESSION (studio.store.writes.WriteSession) backs the file up before
    its first write, when given. `committed` carries the updated OM row (dict), `preview_ready` an
    obs_jobs.ObservePreview.
    """

    TITLE = TITLE
    LOAD_TASK, PREVIEW_TASK = "observe-window", "observe-preview"
    SIZE_TITLE = MESSAGES_BAR_TITLE
    SIZE_TIP = ("The unobserved window (pendingMessageTokens + Mastra's estimate of the unobserved messages) against "
                "the observation threshold: Mastra observes when it is reached.")
    STRATEGY_OPTIONS: ClassVar[dict[str, Any]] = {
        "title": "How to observe", "rule_label": "&Offline rule-based Observer", "rule_note": RULE_NOTE,
        "rule_tip": RULE_TIP, "settings_prefix": "observe"}
    PREVIEW_TIP = "Run the Observer in the background and show the result (Ctrl+Enter)"
    PROPOSAL_VIEW = ObservePreviewView
    NO_PREVIEW = NO_PREVIEW
    LOADING = "Reading the unobserved messages…"
    NOTHING = "Nothing to observe"
    NO_MODEL = "Choose a model (provider/model), or the offline rule-based Observer."
    OFFLINE = "Observing offline…"
    PROGRESS = ObservationProgress
    COMMIT_TIP = "Write the observation to the database, after you confirm (Ctrl+Enter)"

    def _build_notes(self) -> list[QWidget]:
        self.below_check = QCheckBox(f"{BELOW_TICK} (Mastra would wait)")
        self.below_check.setToolTip("Mastra's observe() does nothing below the threshold; the studio writes the same "
                                    "observation anyway only when you tick this (the CLI's --below-threshold)")
        self.below_check.toggled.connect(self._update_buttons)
        self.below_check.hide()
        return [self.below_check]

    def _connect_writes(self) -> None:
        self.protocol.step.connect(self._on_protocol_step)
        self.protocol.committed.connect(self._on_written)
        self.protocol.write_failed.connect(self._report_commit_failure)
        self.protocol.wait_failed.connect(self._on_protocol_wait_failed)
        self.protocol.overwritten.connect(self._on_overwritten)
        self.protocol.watch_finished.connect(self._on_protocol_watch_finished)

    @property
    def window(self):
        """The window as last read (ObservationWindow / ResourceObservationWindow), or None."""
        return self._source

    # -- reading the window ----------------------------------------------------------------

    @staticmethod
    def _read(path: str, thread_id: str):
        return obs_jobs.load_window(path, thread_id)

    def _default_model(self, window) -> str | None:
        return obs_jobs.stored_model(window)

    def _loaded(self, window) -> None:
        if hasattr(window, "window_ids"):
            self.strategy_box.set_rule_available(False, "resource scope: the rule-based Observer observes "
                                                        "thread-scope records only")
        if not window.message_ids:
            self._show_error("Nothing to observe: every message of this thread is observed already.")

    def _has_source(self) -> bool:
        return self._source is not None and bool(self._source.message_ids)

    def _show_source(self, window) -> None:
        resource = hasattr(window, "window_ids")
        self._show_heading(window.lookup_key)
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

    # -- previewing ------------------------------------------------------------------------

    def _request(self, strategy: str, model: str | None, base_url: str | None) -> obs_jobs.ObserveRequest:
        return obs_jobs.ObserveRequest(self._path, self._thread_id, strategy, model, base_url)

    @staticmethod
    def _run_preview(request, report, token):
        return obs_jobs.preview(request, report, token)

    def _source_of(self, preview: obs_jobs.ObservePreview):
        return preview.window

    def _elapsed_ms(self, preview: obs_jobs.ObservePreview) -> float:
        return preview.proposal.elapsed_ms

    # -- committing ------------------------------------------------------------------------

    def commit(self) -> bool:
        """Ask, then write the previewed observation; return False when nothing was started."""
        p = self._preview
        if p is None or self._busy is not None or self._outdated:
            return False
        w, r = p.window, p.proposal
        below = not w.meets
        if below and not self.below_check.isChecked():
            self._show_error(f"The window is below the observation threshold: tick \"{BELOW_TICK}\" to write anyway.")
            return False
        lines = [f"Observe {len(w.message_ids):,} message(s) of {w.lookup_key}? The observation log grows from "
                 f"{r.tokens_before:,} to {r.tokens_after:,} tokens, the cursor moves past these messages and the "
                 "thread state is updated, as Mastra's observe() writes it."]
        if below:
            lines.append(f"The window is below the threshold ({w.pending_message_tokens + w.tokens:,} of "
                         f"{w.threshold:,} tokens): Mastra would not observe yet.")
        if r.tokens_after >= r.reflection_threshold:
            lines.append("The log is then at or over the reflection threshold: Mastra reflects on its next turn.")
        lines.append(fmt.changed_store_line(self._path))
        note = jobs.backup_note(self._session, self._path, self._write_note)
        if note:
            lines.append(note)
        if not self.interaction.confirm("Commit observation", "\n\n".join(lines)):
            return False
        self._hide_error()
        session, path = self._session, self._path
        self.protocol.write(w.lookup_key, lambda quiet_ms: obs_jobs.commit(path, r, below_threshold=below,
                                                                            session=session, quiet_ms=quiet_ms),
                            in_place=True)
        return True

    def _on_protocol_step(self, what: str | None, text: str) -> None:
        self._set_busy(what or None, text)

    def _on_written(self, row: dict) -> None:
        self.committed.emit(row)

    def _on_protocol_wait_failed(self, text: str) -> None:
        self._set_busy(None)
        self._report_commit_failure(WriteRefused("busy", f"the agent is active: {text}"))

    def _on_protocol_watch_finished(self) -> None:
        self._set_busy(None)
        self.accept()

    def _on_overwritten(self, text: str) -> None:
        self._set_busy(None)
        self._outdated = True
        self._show_error(text)
        self.progress_label.setText("")
        self._update_buttons()

    # -- state -----------------------------------------------------------------------------

    def _stop_write(self) -> None:
        self.protocol.stop()

    def _commit_blocked(self) -> str | None:
        w = self._source
        if w is not None and not w.meets and not self.below_check.isChecked():
            return f"Tick \"{BELOW_TICK}\" first"
        return None

    def _update_buttons(self) -> None:
        super()._update_buttons()
        self.below_check.setEnabled(self._busy is None)

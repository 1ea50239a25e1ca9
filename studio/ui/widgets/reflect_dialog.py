"""Thread ▸ *Reflect now…*: run the Reflector (or the offline condenser) in the background, show the
proposed generation beside the current one, and write it only when the user confirms.

The dialog never holds a database connection: reading the record, previewing and committing run on
the TaskRunner's pool (`studio.app.reflection`, which `memory-studio reflect` runs too), each
opening the file itself, read-only except for the commit. The commit is checked against the
previewed generation, so a reflection the agent made meanwhile is refused rather than overwritten.
The dialog's frame is `PreviewWriteDialog`.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from studio.app import reflection as jobs
from studio.app import text as fmt
from studio.app.failures import refusal_reason
from studio.engine.reflector import ReflectionInput, ReflectionProgress, nothing_to_condense, proposal_changes_nothing
from studio.ui.tasks import submit_job
from studio.ui.widgets.common import plain_label
from studio.ui.widgets.om_tab import OBSERVATIONS_BAR_TITLE
from studio.ui.widgets.reflect_preview import ProposalView, attempts_text
from studio.ui.widgets.write_dialog import PreviewWriteDialog

TITLE = "Reflect Now"
NO_PREVIEW = ("Choose a model or the offline strategy, then press Preview (Ctrl+Enter).\n"
              "Nothing is written until you commit.")


class ReflectDialog(PreviewWriteDialog):
    """Preview a reflection of one thread's OM record (thread or resource scope) and commit or discard it.

    PATH: the open database; THREAD_ID: the thread shown (its record is reflected; for a
    resource-scope record the thread's metadata receives the current task). SETTINGS remembers
    models and base URLs (never keys). WRITE_SESSION (studio.store.writes.WriteSession) routes the
    write's row backup, when given. `committed` carries the new row (dict)
    commit_reflection returned, `preview_ready` a jobs.Preview.
    """

    TITLE = TITLE
    LOAD_TASK, PREVIEW_TASK = "reflect-input", "reflect-preview"
    SIZE_TITLE = OBSERVATIONS_BAR_TITLE
    SIZE_TIP = ("The observation log's size (observationTokenCount) against the reflection threshold "
                "(observationTokens): Mastra reflects when it is reached.")
    PREVIEW_TIP = "Run the reflection in the background and show the result (Ctrl+Enter)"
    PROPOSAL_VIEW = ProposalView
    NO_PREVIEW = NO_PREVIEW
    LOADING = "Reading the observation log…"
    NOTHING = "Nothing to reflect"
    NO_MODEL = "Choose a model (provider/model), or the offline rule-based condenser."
    OFFLINE = "Condensing offline…"
    PROGRESS = ReflectionProgress
    COMMIT_TIP = "Write the proposed generation to the database, after you confirm (Ctrl+Enter)"

    _cleared = False   # the running commit clears a stale isReflecting

    def _build_notes(self) -> list[QWidget]:
        self.flag_note = plain_label("", "loss", wrap=True)
        self.flag_note.hide()
        return [self.flag_note]

    def _connect_writes(self) -> None:
        self.protocol.step.connect(self._set_busy)
        self.protocol.committed.connect(self.committed)
        self.protocol.write_failed.connect(self._on_protocol_write_failed)
        self.protocol.wait_failed.connect(self._on_protocol_wait_failed)
        self.protocol.repaired.connect(self._on_protocol_repaired)
        self.protocol.watch_finished.connect(self._on_protocol_watch_finished)

    # -- reading the record ----------------------------------------------------------------

    @property
    def reflection_input(self) -> ReflectionInput | None:
        """Return what the dialog reflects (as last read), or None before it was read."""
        return self._source

    @staticmethod
    def _read(path: str, thread_id: str) -> ReflectionInput:
        return jobs.load_input(path, thread_id)

    def _default_model(self, inp: ReflectionInput) -> str | None:
        return inp.default_model

    def _on_load_failed(self, exc: Exception) -> None:
        self.size_bar.set_value(None, None)
        self.size_state.setText("")
        super()._on_load_failed(exc)

    def _show_source(self, inp: ReflectionInput) -> None:
        scope = ("thread scope" if inp.scope != "resource" else
                 "resource scope: one record shared by every thread of the resource, so a reflection here "
                 f"changes what all of them remember; the current task goes to thread {inp.thread_id}")
        self._show_heading(inp.lookup_key)
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

    # -- previewing ------------------------------------------------------------------------

    def _request(self, strategy: str, model: str | None, base_url: str | None) -> jobs.PreviewRequest:
        return jobs.PreviewRequest(path=self._path, thread_id=self._thread_id, strategy=strategy, model=model,
                                   base_url=base_url, lookup_key=self._source.lookup_key)

    @staticmethod
    def _run_preview(request, report, token):
        return jobs.preview(request, report, token)

    def _progress_text(self, p: ReflectionProgress) -> str:
        bits = []
        if p.attempt:
            bits.append(f"Attempt {p.attempt}")
        if p.level is not None and p.stage != "condensing":
            bits.append(f"level {p.level}")
        prefix = " · ".join(bits)
        return f"{prefix} — {p.message}" if prefix else p.message

    def _source_of(self, preview: jobs.Preview) -> ReflectionInput:
        return preview.input

    def _elapsed_ms(self, preview: jobs.Preview) -> float:
        return preview.result.elapsed_ms

    def _previewed(self, preview: jobs.Preview) -> None:
        if not preview.result.observations.strip():
            self._outdated = True
            self._show_error("The proposed log is empty (the current log holds no observations to keep), so there "
                             "is nothing to commit.")

    def _failure_progress(self, exc: Exception) -> str:
        attempts = getattr(exc, "attempts", None)
        return attempts_text(attempts) if attempts else ""

    # -- committing ------------------------------------------------------------------------

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
            lines.append(fmt.changed_store_line(p.request.path))
            if jobs.backup_note(self._session, p.request.path, self._write_note):
                lines.append(jobs.backup_note(self._session, p.request.path, self._write_note))
            lines.append("Mastra reads the new generation on the agent's next turn; every older generation stays "
                         "in the history and can be restored.")
            if not self.interaction.confirm("Commit reflection", "\n\n".join(lines)):
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
        if refusal_reason(exc) == "reflecting" and not self._cleared:
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
            if self.interaction.confirm("Clear the stale isReflecting flag?", text):
                self.commit(clear_stale_reflecting=True)
            else:
                self._report_commit_failure(refusal)

        def failed(exc: Exception) -> None:
            self._set_busy(None)
            self._report_commit_failure(refusal)

        submit_job(self._runner, lambda _p, _c: jobs.load_input(path, thread_id), on_done=checked, on_error=failed,
                   key=f"{self.LOAD_TASK}-{id(self)}", on_worker=True)

    # -- state -----------------------------------------------------------------------------

    def _stop_write(self) -> None:
        self.protocol.stop()

    def _commit_blocked(self) -> str | None:
        """A preview identical to the current generation (same log, task and response) is not committed."""
        p = self._preview
        if p is not None and proposal_changes_nothing(p.input, p.result):
            text = nothing_to_condense(p.result.strategy, f"a copy of generation {p.input.generation_count} is "
                                                          "not written")
            return text[:1].upper() + text[1:] + "."
        return None

    def _update_buttons(self) -> None:
        super()._update_buttons()
        blocked = self._commit_blocked()
        if blocked:
            self.write_note.setText(blocked)

    def _commit_label(self) -> str:
        return f"Commit generation {self._preview.new_generation}…" if self._preview is not None else "Commit…"

"""The main window's loading half: the listing, the thread detail, OM statuses in batches, live refresh.

`ListingLoader` is a mixin of `MainWindow` (it uses the window's models, views, runner and status bar);
it holds no state of its own beyond what `MainWindow.__init__` sets up.
"""

from __future__ import annotations

import functools

from studio.engine.status import ThreadStatus
from studio.store.records import Thread
from studio.ui.loaders import (
    Listing,
    ThreadDetail,
    check_changed,
    compute_status_batch,
    load_listing,
    load_thread_detail,
)
from studio.ui.watcher import file_problem
from studio.ui.widgets.thread_view import NO_THREAD

#: Threads sent to the helper process per status batch.
STATUS_HELPER_CHUNK = 250


class ListingLoader:
    """Mixin of MainWindow: load the listing and the selected thread's detail, and follow file changes."""

    # -- loading ---------------------------------------------------------------------------

    def _load_listing(self, *, refresh: bool) -> None:
        self._runner.submit(lambda store, _p, _c: load_listing(store),
                            on_done=functools.partial(self._on_listing_loaded, refresh=refresh),
                            on_error=functools.partial(self._on_listing_failed, refresh=refresh), key="listing")

    def _on_listing_loaded(self, listing: Listing, *, refresh: bool) -> None:
        self._data_version = listing.data_version
        self._use_helper = self._wants_helper(listing.rows)
        self.thread_view.set_use_helper(self._use_helper)
        resource = self.thread_model.resource_filter
        orphans = sum(1 for r in listing.rows if r.orphan)
        self.resource_model.set_resources(listing.resources, orphans)
        most = max((n for _, n in listing.resources), default=0)
        self.resources_view.horizontalHeader().resizeSection(
            1, self.fontMetrics().horizontalAdvance(f"{max(most, len(listing.rows)):,}") + 14)
        row = self.resource_model.row_of(resource)
        if row < 0:
            resource, row = None, 0
        self.thread_model.set_resource_filter(resource)
        self.thread_model.set_rows(listing.rows, keep_statuses=refresh)
        self._select_resource_row(row)
        n = len(listing.rows) - orphans
        self.count_label.setText(f"{n:,} thread{'s' if n != 1 else ''}"
                                 + (f" · {orphans:,} without a thread" if orphans else ""))
        self._update_threads_heading()
        self._start_statuses()
        self._overview_follows(listed=True)
        if refresh:
            self._restore_thread_selection()
            if self._thread_id is not None:
                self._load_detail(self._thread_id, refresh=True)
            self.database_refreshed.emit()
            return
        wanted = self._pending_thread or self.first_thread_with_om()
        tab = self._pending_tab
        self._pending_thread = self._pending_tab = None
        if wanted and self.select_thread(wanted):
            if tab:
                self.thread_view.set_tab(tab)
        elif not self.thread_model.total_rows:
            self.thread_view.show_message("This database has no threads.")
        else:
            self.thread_view.show_message(NO_THREAD)
            if wanted:
                self._report_error("No such thread", f"No thread {wanted!r} in {self._path}")

    def _follow_filter(self) -> None:
        """Keep the selected thread when the filtered list still has it, else select its first thread (or none)."""
        if self._thread_id is not None and self.thread_model.row_of(self._thread_id) >= 0:
            self._restore_thread_selection()
            return
        if self.thread_model.total_rows:
            index = self.thread_model.index(0, 0)
            self.threads_view.setCurrentIndex(index)
            self.threads_view.scrollTo(index)
            return
        self._thread_id = None
        self.threads_view.selectionModel().clearCurrentIndex()
        text = self.thread_list.filter_edit.text().strip()
        self.thread_view.show_message(f"No thread matches “{text}”." if text else NO_THREAD)

    def _select_resource_row(self, row: int) -> None:
        sel = self.resources_view.selectionModel()
        sel.blockSignals(True)
        self.resources_view.setCurrentIndex(self.resource_model.index(row, 0))
        sel.blockSignals(False)
        self.resources_view.viewport().update()

    def _restore_thread_selection(self) -> None:
        if self._thread_id is None:
            return
        row = self.thread_model.row_of(self._thread_id)
        if row < 0 and self.thread_model.has_thread(self._thread_id):
            self._follow_filter()   # still there, but the filters hide it now
            return
        if row < 0:
            self._thread_id = None
            self.thread_view.show_message("The selected thread no longer exists.")
            return
        sel = self.threads_view.selectionModel()
        sel.blockSignals(True)
        self.threads_view.setCurrentIndex(self.thread_model.index(row, 0))
        sel.blockSignals(False)
        self.threads_view.viewport().update()

    def _start_statuses(self) -> None:
        """Compute every OM thread's status in short background batches (the bars fill in as they come)."""
        self._status_threads = [r.thread for r in self.thread_model.all_threads() if r.has_om]
        self._status_done = 0
        self._status_round += 1
        if not self._status_threads:
            self.progress.hide()
            self.thread_model.apply_statuses([], final=True)
            self.statuses_finished.emit()
            return
        self.progress.setRange(0, len(self._status_threads))
        self.progress.setValue(0)
        self.progress.show()
        self._next_status_batch(self._status_round)

    def _next_status_batch(self, round_: int) -> None:
        remaining = self._status_threads[self._status_done:]
        on_done = functools.partial(self._on_status_batch_done, round_)
        on_error = functools.partial(self._on_status_batch_failed, round_)
        if self._use_helper:
            self._runner.submit_call(compute_status_batch, remaining[:STATUS_HELPER_CHUNK], helper=True,
                                     on_done=on_done, on_error=on_error, key="statuses")
        else:
            self._runner.submit(lambda store, _p, cancel: compute_status_batch(store, remaining, cancel),
                                on_done=on_done, on_error=on_error, key="statuses")

    def _on_status_batch_done(self, round_: int, result: tuple[list[ThreadStatus], int]) -> None:
        if round_ != self._status_round:
            return
        statuses, handled = result
        self._status_done += max(handled, 1)
        finished = self._status_done >= len(self._status_threads)
        self.thread_model.apply_statuses(statuses, final=finished)
        self.progress.setValue(min(self._status_done, len(self._status_threads)))
        if finished:
            self.progress.hide()
            self.statuses_finished.emit()
        else:
            self._next_status_batch(round_)

    def _on_status_batch_failed(self, round_: int, exc: Exception) -> None:
        if round_ != self._status_round:
            return
        self.progress.hide()
        self.thread_model.mark_statuses_failed()
        self.statuses_finished.emit()
        self.statusBar().showMessage(f"Statuses could not be computed: {exc}", 10000)

    def _on_listing_failed(self, exc: Exception, *, refresh: bool) -> None:
        message = str(exc) or exc.__class__.__name__
        if refresh:  # a refresh that fails (say, a writer holds the lock) must not pop up a dialog each time
            self.statusBar().showMessage(f"Refresh failed: {message}", 10000)
        else:
            self._report_error("Cannot read database", message)
            self.thread_view.show_message(f"The threads could not be read.\n\n{message}")

    def _on_detail_failed(self, thread_id: str, refresh: bool, exc: Exception) -> None:
        if thread_id != self._thread_id:
            return
        message = str(exc) or exc.__class__.__name__
        self.last_error = message
        self.error_reported.emit(message)
        if refresh:
            self.statusBar().showMessage(f"Refresh failed: {message}", 10000)
        else:
            self.thread_view.show_message(f"This thread could not be read.\n\n{message}")

    def _load_detail(self, thread_id: str, *, refresh: bool = False) -> None:
        if not refresh:
            row = self.thread_model.row_of(thread_id, fetch=False)
            listed = self.thread_model.thread_row(row)
            self.thread_view.show_loading(listed.thread if listed else Thread(id=thread_id, resource_id=""))
        else:
            self.thread_view.messages_tab.refresh()
        self._runner.submit_call(load_thread_detail, thread_id, helper=self._use_helper,
                                 on_done=functools.partial(self._on_detail_loaded, thread_id),
                                 on_error=functools.partial(self._on_detail_failed, thread_id, refresh), key="detail")

    def _on_detail_loaded(self, thread_id: str, detail: ThreadDetail | None) -> None:
        if thread_id != self._thread_id:
            return
        if detail is None:
            self.thread_view.show_message("The selected thread no longer exists.")
            self.reflect_action.setEnabled(False)
            return
        self.thread_view.show_detail(detail)
        self.reflect_action.setEnabled(detail.record is not None)

    # -- refreshing ------------------------------------------------------------------------

    def _reload(self) -> None:
        self._load_listing(refresh=True)

    def _on_watcher_files_changed(self) -> None:
        if self._path is None or self._runner.closed:
            return
        problem = file_problem(self._path)
        if problem is not None:   # deleted, emptied or overwritten: keep what is shown, say so, offer to reopen
            self.file_banner.show_problem(self._path, problem)
            return
        if self.file_banner.isVisible():
            return                # the file is back: the user reopens it (it may be another database now)
        self._runner.submit(lambda store, _p, _c: check_changed(store), on_done=self._on_version_checked,
                            on_error=lambda _exc: None, key="check")

    def _on_server_poll(self) -> None:
        """A server store changed when its fingerprint (`data_version`) did: then the listing is re-read."""
        if self._path is None or self._runner.closed:
            return
        self._runner.submit(lambda store, _p, _c: check_changed(store), on_done=self._on_version_checked,
                            on_error=lambda _exc: None, key="check")

    def _on_version_checked(self, version: int) -> None:
        if version != self._data_version:
            self._data_version = version
            self._reload()

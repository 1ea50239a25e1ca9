"""The main window's loading half: the listing, the thread detail, OM statuses in batches, live refresh.

`ListingLoader` is a mixin of `MainWindow` (it uses the window's models, views, runner and status bar);
it holds no state of its own beyond what `MainWindow.__init__` sets up.
"""

from __future__ import annotations

import functools
import threading
import time

from PySide6.QtCore import QTimer

from studio.store.records import Thread
from studio.app import text as fmt
from studio.app.helper_process import CANCEL
from studio.app.listing import Listing, ListingCounts, check_changed, load_listing, load_listing_in_two_steps
from studio.app.statuses import StatusBatch, StatusRound, status_batch
from studio.app.thread_detail import ThreadDetail, load_thread_detail
from studio.ui.watcher import file_problem
from studio.ui.widgets.thread_view import NO_THREAD

#: Longest the listing's worker waits for the thread list to be painted before it counts messages (s).
FIRST_PAINT_WAIT_S = 0.5
#: How long after the threads are handed to the view the count may start (ms).
FIRST_PAINT_SETTLE_MS = 60
#: Whether a first load of a server store lists threads before their counts (see `_load_listing`).
TWO_STEP_LISTING = True


class ListingLoader:
    """Mixin of MainWindow: load the listing and the selected thread's detail, and follow file changes."""

    # -- loading ---------------------------------------------------------------------------

    def _load_listing(self, *, refresh: bool) -> None:
        """Read the listing. A first load of a server store comes in two steps (`load_listing_in_two_steps`):
        the threads are shown as soon as they are read, the message counts and last activity when the
        aggregate is in. A refresh reads both before it shows anything (the rows shown keep their counts
        meanwhile), and so does a local file (see below).

        Between the steps the worker waits (FIRST_PAINT_WAIT_S at most) until the GUI thread has painted
        the threads: the count query keeps the database (and, on the same machine, the CPU) busy. The wait
        is on a plain `threading.Event` that nothing of Qt is connected to: the GUI thread sets it from a
        timer of this window (`_first_paint_timer`), and `_stop_listing` (the window's close) sets it and
        cancels the task, so the worker never waits on a closed window. (It used to be set by
        `QTimer.singleShot(ms, event.set)`: PySide then watches the event through a weak reference, and
        when the worker dropped the last reference to it the weak reference's callback tore down the Qt
        connection from the worker thread — SIGSEGV in `QMetaObject::Connection::~Connection`.)
        """
        on_error = functools.partial(self._on_listing_failed, refresh=refresh)
        timer = getattr(self, "_paint_timer", None)
        if timer is not None:
            timer.stop()           # the previous listing's paint is no longer awaited
        self._release_first_paint()
        if not TWO_STEP_LISTING or refresh or self._local_path is not None:
            # a local file counts its messages in-process, holding the GIL: painted first, the list would
            # freeze while they are counted (0.1–0.2 s on the benchmark file), and reading it whole is fast
            self._runner.submit(lambda store, _p, _c: load_listing(store),
                                on_done=functools.partial(self._on_listing_loaded, refresh=refresh),
                                on_error=on_error, key="listing")
            return
        painted = threading.Event()
        self._first_paint = painted

        def first_step(progress, cancel: threading.Event):
            def shown(listing: Listing) -> None:
                progress(0, 1, listing)
                # a GUI that never answers delays the counts by FIRST_PAINT_WAIT_S; a cancel (the window
                # closed, another database opened) ends the wait at once
                end = time.monotonic() + FIRST_PAINT_WAIT_S
                while not painted.wait(0.01) and not cancel.is_set() and time.monotonic() < end:
                    pass
            return shown

        self._runner.submit(lambda store, progress, cancel: load_listing_in_two_steps(
                                store, first_step(progress, cancel), cancel),
                            on_progress=self._on_threads_listed, on_done=self._on_listing_counted,
                            on_error=on_error, key="listing")

    def _first_paint_timer(self) -> QTimer:
        """Return this window's single-shot timer that tells the listing's worker the threads are painted."""
        timer = getattr(self, "_paint_timer", None)
        if timer is None:
            timer = self._paint_timer = QTimer(self)
            timer.setSingleShot(True)
            timer.setInterval(FIRST_PAINT_SETTLE_MS)
            timer.timeout.connect(self._release_first_paint)
        return timer

    def _release_first_paint(self) -> None:
        """Let a listing's worker waiting for the first paint go on (it is painted, superseded or closing)."""
        painted, self._first_paint = getattr(self, "_first_paint", None), None
        if painted is not None:
            painted.set()

    def _stop_listing(self) -> None:
        """The window closes: cancel the listing and end its worker's wait for a paint that will not come."""
        timer = getattr(self, "_paint_timer", None)
        if timer is not None:
            timer.stop()
        self._runner.cancel("listing")
        self._release_first_paint()
        self._listing = None

    def _on_threads_listed(self, _done: int, _total: int, listing: Listing) -> None:
        """The first step of a first load: show the threads now (no counts yet); the rest waits for the counts.

        The worker waits (FIRST_PAINT_WAIT_S at most) until the threads are painted before it counts.
        """
        self._listing = listing
        self._show_listing(listing, refresh=False)
        # the view paints the new rows in up to two passes (rows, then their layout): let both run first
        self._first_paint_timer().start()

    def _on_listing_counted(self, counts: ListingCounts) -> None:
        """The second step: fill the counts in, then what needs them (helper process, statuses, selection)."""
        listing = getattr(self, "_listing", None)
        self._listing = None
        if listing is None:
            return
        self._data_version = counts.data_version
        listing.data_version = counts.data_version
        self.thread_model.apply_counts(counts)
        self._after_listing(listing, refresh=False)

    def _on_listing_loaded(self, listing: Listing, *, refresh: bool) -> None:
        self._show_listing(listing, refresh=refresh)
        self._after_listing(listing, refresh=refresh)

    def _show_listing(self, listing: Listing, *, refresh: bool) -> None:
        """Put LISTING's resources and threads in the panes (with or without its message counts)."""
        self._data_version = listing.data_version
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
        self.thread_model.set_rows(listing.rows, keep_statuses=refresh, counted=listing.counted)
        # lay the rows out now: the view would do it after its first paint and paint every row again
        self.threads_view.doItemsLayout()
        self._select_resource_row(row)
        n = len(listing.rows) - orphans
        self.count_label.setText(f"{n:,} thread{'s' if n != 1 else ''}"
                                 + (f" · {orphans:,} without a thread" if orphans else ""))
        self._update_threads_heading()

    def _after_listing(self, listing: Listing, *, refresh: bool) -> None:
        """With the counts in: choose the helper process, start the statuses, select the thread to show."""
        self._use_helper = self._wants_helper(listing.rows)
        self.thread_view.set_use_helper(self._use_helper)
        self._start_statuses()
        self._overview_follows(listed=True)
        if refresh:
            self._restore_thread_selection()
            if self._thread_id is not None:
                self._load_detail(self._thread_id, refresh=True)
            self.database_refreshed.emit()
            return
        if self._thread_id is not None and not self._pending_thread:
            self._pending_tab = None
            return   # the user picked a thread while the counts were read: keep it
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
        self._statuses = StatusRound(r.thread for r in self.thread_model.all_threads() if r.has_om)
        self._status_round += 1
        if not self._statuses.total:
            self.progress.hide()
            self.thread_model.apply_statuses([], final=True)
            self.statuses_finished.emit()
            return
        self.progress.setRange(0, self._statuses.total)
        self.progress.setValue(0)
        self.progress.show()
        self._next_status_batch(self._status_round)

    def _next_status_batch(self, round_: int) -> None:
        self._runner.submit_call(status_batch, self._statuses.next_threads(self._use_helper), CANCEL,
                                 helper=self._use_helper, key="statuses",
                                 on_done=functools.partial(self._on_status_batch_done, round_),
                                 on_error=functools.partial(self._on_status_batch_failed, round_))

    def _on_status_batch_done(self, round_: int, batch: StatusBatch) -> None:
        if round_ != self._status_round:
            return
        finished = self._statuses.take(batch)
        self.thread_model.apply_statuses(batch.statuses, final=finished)
        self.progress.setValue(self._statuses.done)
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
        # a damaged file is named once, by the thread view's banner: here a short pointer to it
        self.statusBar().showMessage(f"Statuses could not be computed: {fmt.read_failure(exc)}", 10000)

    def _on_listing_failed(self, exc: Exception, *, refresh: bool) -> None:
        message = str(exc) or exc.__class__.__name__
        if not refresh and getattr(self, "_listing", None) is not None:   # the threads are shown, the counts failed
            self._listing = None
            self.thread_model.mark_counts_failed()
            self._report_error("Cannot read database", f"The message counts could not be read: {message}")
            return
        if refresh:  # a refresh that fails (say, a writer holds the lock) must not pop up a dialog each time
            self.statusBar().showMessage(f"Refresh failed: {fmt.read_failure(exc)}", 10000)
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
            self.statusBar().showMessage(f"Refresh failed: {fmt.read_failure(exc)}", 10000)
        else:
            self.thread_view.show_message(f"This thread could not be read.\n\n{fmt.read_failure(exc)}")

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
            for action in (self.reflect_action, self.observe_action, self.activate_action):
                action.setEnabled(False)
            return
        self.thread_view.show_detail(detail)
        self.reflect_action.setEnabled(detail.record is not None)
        self.observe_action.setEnabled(detail.record is not None)
        self.activate_action.setEnabled(detail.record is not None and bool(detail.record.buffered_chunks))

    # -- refreshing ------------------------------------------------------------------------

    def _reload(self) -> None:
        self._load_listing(refresh=True)

    def _on_watcher_check_due(self) -> None:
        check = self._check_task
        if self._path is None or self._runner.closed or (check is not None and not check.done and not check.cancelled):
            return                    # the previous check still waits for the worker (a long load): no pile-up
        if self._local_path is not None:
            problem = file_problem(self._local_path)
            if problem is not None:   # deleted, emptied or overwritten: keep what is shown, say so, offer to reopen
                self.file_banner.show_problem(self._local_path, problem)
                return
            if self.file_banner.isVisible():
                return                # the file is back: the user reopens it (it may be another database now)
        self._check_task = self._runner.submit(lambda store, _p, _c: check_changed(store),
                                               on_done=self._on_version_checked, on_error=lambda _exc: None,
                                               key="check", load=False)

    def _on_version_checked(self, version) -> None:
        if self._data_version is None:
            return   # a server store's listing is still being read: it brings its own fingerprint
        if version != self._data_version:
            self._data_version = version
            self._reload()

"""The main window's loading part: the listing, the thread detail, OM statuses in batches, live refresh.

`ListingLoader` is a part of `MainWindow`, made with the window's `WindowContext`: it reads on the
context's TaskRunner and fills the window's resource and thread models, its thread view and its
status bar. It tells the window what it loaded through signals (`listed`, `detail_loaded`,
`statuses_finished`); choosing what to select is the window's.
"""

from __future__ import annotations

import functools
import os
import threading
import time

from PySide6.QtCore import QObject, QTimer, Signal

from studio.app import text as fmt
from studio.app.changes import ChangeSet
from studio.app.listing import Listing, check_changed
from studio.app.live import (
    LiveCounts,
    LiveListing,
    LiveRefresh,
    live_listing,
    load_live_listing,
    load_live_listing_in_two_steps,
    refresh_live_listing,
)
from studio.app.open_results import (
    ResultsBatch,
    ResultsRound,
    load_results_batch,
    load_stamped_results,
    prepare_results,
    save_results,
)
from studio.app.thread_detail import ThreadDetail, load_thread_detail
from studio.store.records import Thread
from studio.ui.context import WindowContext
from studio.ui.tasks import OpenedStore
from studio.ui.watcher import file_problem

#: Longest the listing's worker waits for the thread list to be painted before it counts messages (s).
FIRST_PAINT_WAIT_S = 0.5
#: How long after the threads are handed to the view the count may start (ms).
FIRST_PAINT_SETTLE_MS = 60
#: Whether a first load of a server store lists threads before their counts (see `ListingLoader.load`).
TWO_STEP_LISTING = True
#: Databases with at least this many messages compute statuses, thread details and message pages in
#: the TaskRunner's helper process, so the GUI thread never waits for the interpreter lock.
HELPER_MIN_MESSAGES = 20_000
#: A file at least this big (bytes) has its helper process started, and its result cache read there, while
#: its listing is read (whether the helper computes is known once the messages are counted).
HELPER_EARLY_MIN_BYTES = 32 << 20


def wants_helper(rows) -> bool:
    """Return True when ROWS (ThreadRow list) hold enough messages for the helper process."""
    return sum(r.thread.message_count or 0 for r in rows) >= HELPER_MIN_MESSAGES


class ListingLoader(QObject):
    """Load the open store's listing and the selected thread's detail into a main window; follow the store's changes.

    WINDOW is the MainWindow this is a part of: the loader fills its resource and thread models and
    views, its thread view, status-bar progress and thread count, and its file banner, and asks it
    which thread is selected (`current_thread_id`); errors go through its `report_error` / `note_error`.
    """

    listed = Signal(bool)           # a listing is in, counts and all (True: a refresh); its statuses have started
    threads_changed = Signal(object)   # a live refresh re-read only these threads (a ChangeSet, never `everything`)
    detail_loaded = Signal(object)  # the selected thread's ThreadDetail now shown, or None (the thread is gone)
    statuses_finished = Signal()    # every OM thread's status of the listing is in (or failed)
    results_started = Signal(int, bool)   # a results round of N threads began (True: a live refresh's threads)
    results_landed = Signal(object, int, int, bool)   # a ResultsBatch, threads done, threads total, live refresh's
    results_failed = Signal(str)    # a results batch failed (the round ends)

    def __init__(self, ctx: WindowContext, window):
        super().__init__(window)
        self._runner = ctx.runner
        self._window = window
        self.resource_model, self.resources_view = window.resource_model, window.resources_view
        self.thread_model, self.threads_view = window.thread_model, window.threads_view
        self.thread_list, self.thread_view = window.thread_list, window.thread_view
        self.progress, self.count_label, self.file_banner = window.progress, window.count_label, window.file_banner
        self._data_version = None   # the open store's fingerprint as last loaded
        self._local_path: str | None = None   # its database file (None: a server store)
        self._check_task = None   # the last live-refresh check submitted (studio.ui.tasks.Task)
        self._listing: Listing | None = None   # a first load's threads, shown while their counts are read
        self._first_paint: threading.Event | None = None
        self._paint_timer = QTimer(self)   # tells the listing's worker the threads are painted
        self._paint_timer.setSingleShot(True)
        self._paint_timer.setInterval(FIRST_PAINT_SETTLE_MS)
        self._paint_timer.timeout.connect(self._release_first_paint)
        self._results: ResultsRound | None = None   # the threads whose results are still computed
        self._live: LiveListing | None = None   # the listing shown and where its reading ended (live refresh)
        self.last_refresh: LiveRefresh | None = None   # the last live refresh (rows read, wider reads)
        self._status_round = 0
        self._statuses_partial = False   # the round computes a live refresh's threads only
        self._use_helper = False

    @property
    def use_helper(self) -> bool:
        """Return True when the open database is big enough for the helper process to do the heavy work."""
        return self._use_helper

    @property
    def awaiting_paint(self) -> bool:
        """Return True while a first load's worker waits for its threads to be painted before it counts them."""
        return self._first_paint is not None

    def open(self, info: OpenedStore) -> None:
        """Follow the store INFO describes from now on: the previous store's statuses are stale."""
        self._data_version = info.data_version
        self._local_path = info.local_path
        self._live = None
        self._status_round += 1
        self._results = None
        self._runner.cancel("statuses")
        self.progress.hide()

    # -- loading ---------------------------------------------------------------------------

    def load(self, *, refresh: bool) -> None:
        """Read the listing. A first load of a server store comes in two steps (`load_listing_in_two_steps`):
        the threads are shown as soon as they are read, the message counts and last activity when the
        aggregate is in. A refresh reads both before it shows anything (the rows shown keep their counts
        meanwhile), and so does a local file (see below).

        Between the steps the worker waits (FIRST_PAINT_WAIT_S at most) until the GUI thread has painted
        the threads: the count query keeps the database (and, on the same machine, the CPU) busy. The wait
        is on a plain `threading.Event` that nothing of Qt is connected to: the GUI thread sets it from a
        timer of this loader (`_paint_timer`), and `stop` (the window's close) sets it and cancels the
        task, so the worker never waits on a closed window. (It used to be set by
        `QTimer.singleShot(ms, event.set)`: PySide then watches the event through a weak reference, and
        when the worker dropped the last reference to it the weak reference's callback tore down the Qt
        connection from the worker thread — SIGSEGV in `QMetaObject::Connection::~Connection`.)
        """
        on_error = functools.partial(self._on_listing_failed, refresh=refresh)
        self._paint_timer.stop()   # the previous listing's paint is no longer awaited
        self._release_first_paint()
        if not refresh:
            self._prepare_results()
        if not TWO_STEP_LISTING or refresh or self._local_path is not None:
            # a local file counts its messages in-process, holding the GIL: painted first, the list would
            # freeze while they are counted (0.1–0.2 s on the benchmark file), and reading it whole is fast
            self._runner.submit(lambda store, _p, _c: load_live_listing(store),
                                on_done=functools.partial(self._on_live_listing_loaded, refresh=refresh),
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

        self._runner.submit(lambda store, progress, cancel: load_live_listing_in_two_steps(
                                store, first_step(progress, cancel), cancel),
                            on_progress=self._on_threads_listed, on_done=self._on_listing_counted,
                            on_error=on_error, key="listing")

    def _prepare_results(self) -> None:
        """A big file's first load: start the helper process and read the result cache there now, beside the
        listing (the process's start and the cache's parsing are most of a reopen's wait otherwise)."""
        try:
            big = self._local_path is not None and os.stat(self._local_path).st_size >= HELPER_EARLY_MIN_BYTES
        except OSError:
            big = False
        if big:
            self._runner.submit_call(prepare_results, helper=True, on_done=lambda _n: None,
                                     on_error=lambda _exc: None, key="prepare-results")

    def _release_first_paint(self) -> None:
        """Let a listing's worker waiting for the first paint go on (it is painted, superseded or closing)."""
        painted, self._first_paint = self._first_paint, None
        if painted is not None:
            painted.set()

    def stop(self) -> None:
        """The window closes: cancel the listing and end its worker's wait for a paint that will not come."""
        self._paint_timer.stop()
        self._runner.cancel("listing")
        self._runner.cancel("live")
        self._release_first_paint()
        self._listing = None

    def _on_threads_listed(self, _done: int, _total: int, listing: Listing) -> None:
        """The first step of a first load: show the threads now (no counts yet); the rest waits for the counts.

        The worker waits (FIRST_PAINT_WAIT_S at most) until the threads are painted before it counts.
        """
        self._listing = listing
        self._show_listing(listing, refresh=False)
        # the view paints the new rows in up to two passes (rows, then their layout): let both run first
        self._paint_timer.start()

    def _on_listing_counted(self, live: LiveCounts | None) -> None:
        """The second step: fill the counts in, then what needs them (helper process, statuses, selection)."""
        listing = self._listing
        self._listing = None
        if listing is None or live is None:
            return
        counts = live.counts
        self._data_version = counts.data_version
        listing.data_version = counts.data_version
        self.thread_model.apply_counts(counts)
        self._live = live_listing(listing, live.marks, live.lookup_keys)
        self._after_listing(listing, refresh=False)

    def _on_live_listing_loaded(self, live: LiveListing, *, refresh: bool) -> None:
        self._live = live
        self._on_listing_loaded(live.listing, refresh=refresh)

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
            1, self._window.fontMetrics().horizontalAdvance(f"{max(most, len(listing.rows)):,}") + 14)
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
        self.thread_list.update_heading()

    def _after_listing(self, listing: Listing, *, refresh: bool) -> None:
        """With the counts in: choose the helper process, start the statuses, let the window select the thread."""
        self._use_helper = wants_helper(listing.rows)
        self.thread_view.set_use_helper(self._use_helper)
        self._start_statuses()
        self.listed.emit(refresh)

    def _select_resource_row(self, row: int) -> None:
        sel = self.resources_view.selectionModel()
        sel.blockSignals(True)
        self.resources_view.setCurrentIndex(self.resource_model.index(row, 0))
        sel.blockSignals(False)
        self.resources_view.viewport().update()

    def _start_statuses(self, thread_ids: set[str] | None = None) -> None:
        """Compute every thread's results (or only THREAD_IDS', a live refresh's) in short background batches:
        the bars, and the health findings the health scan shows (`load_results_batch`, through the
        cross-session result cache). The bars fill in as the batches come.

        A live refresh that lands while an open's round still runs joins that round (its threads are
        computed again at the end of it), so the open's bars and badges all come in."""
        if thread_ids is not None and self._results is not None and self._results.every_thread \
                and self._results.left:
            self._results.add(sorted(thread_ids))
            self.progress.setRange(0, self._results.total)
            return
        if thread_ids is None:   # an orphan's stand-in (its thread deleted) has no result: not in an open's round
            rows = [r for r in self.thread_model.all_threads() if not r.orphan]
        else:
            rows = self.thread_model.rows_of_threads(thread_ids)
        # an open of a file begins with the results its cache holds under the file's stamp (one call, no row read)
        self._results = ResultsRound((r.thread.id for r in rows), every_thread=thread_ids is None,
                                     by_stamp=thread_ids is None and self._local_path is not None)
        self._status_round += 1
        self._statuses_partial = thread_ids is not None
        self._runner.cancel("statuses")
        if not self._results.total:
            self.results_started.emit(0, self._statuses_partial)
            self.progress.hide()
            self.thread_model.apply_statuses([], final=True)
            self._statuses_done()
            return
        if thread_ids is None:   # a live refresh's few statuses show no progress (the status bar is not laid out)
            self.progress.setRange(0, self._results.total)
            self.progress.setValue(0)
            self.progress.show()
        # the first batch goes first (the health scan's store-wide task, started by `results_started`, queues
        # behind it): its bars are painted while the store-wide findings are computed
        self._next_status_batch(self._status_round)
        self.results_started.emit(self._results.total, self._statuses_partial)

    def _next_status_batch(self, round_: int) -> None:
        results = self._results
        ids = results.next_ids()
        on_done = functools.partial(self._on_status_batch_done, round_)
        on_error = functools.partial(self._on_status_batch_failed, round_)
        if results.by_stamp:
            self._runner.submit_call(load_stamped_results, ids, helper=self._use_helper, key="statuses",
                                     on_done=on_done, on_error=on_error)
            return
        self._runner.submit_call(load_results_batch, round_, ids, results.every_thread, results.reread(ids),
                                 helper=self._use_helper, key="statuses", on_done=on_done, on_error=on_error)

    def _on_status_batch_done(self, round_: int, batch: ResultsBatch | None) -> None:
        if round_ != self._status_round or batch is None:
            return
        results = self._results
        stamped = results.by_stamp
        finished = results.take(batch)
        if stamped and not batch.handled and not finished:   # no result under the file's stamp: nothing to show
            self._next_status_batch(round_)
            return
        # a live refresh's few statuses repaint their rows only (the list's other bars are already final)
        final = finished and not (self._statuses_partial and self.thread_model.statuses_done)
        self.thread_model.apply_statuses(batch.statuses, final=final, uncountable=batch.uncountable)
        if not self._statuses_partial:
            self.progress.setValue(results.done)
        self.results_landed.emit(batch, results.done, results.total, self._statuses_partial)
        if finished:
            self.progress.hide()
            # the round's new results go to the cache file once (best effort: a failure is not the user's)
            self._runner.submit_call(save_results, helper=self._use_helper, on_done=lambda _r: None,
                                     on_error=lambda _exc: None, key="save-results")
            self._statuses_done()
        else:
            self._next_status_batch(round_)

    def _statuses_done(self) -> None:
        """Every status of the round is in: `statuses_finished` after a full listing (a live refresh's few
        threads do not restart what waits for every bar)."""
        if not self._statuses_partial:
            self.statuses_finished.emit()

    def _on_status_batch_failed(self, round_: int, exc: Exception) -> None:
        if round_ != self._status_round:
            return
        self._results = None   # the round ended: a live refresh starts its own, it does not join this one
        self.progress.hide()
        self.thread_model.mark_statuses_failed()
        self.results_failed.emit(str(exc) or exc.__class__.__name__)
        self.statuses_finished.emit()
        # a damaged file is named once, by the thread view's banner: here a short pointer to it
        self._window.statusBar().showMessage(f"Statuses could not be computed: {fmt.read_failure(exc)}", 10000)

    def _on_listing_failed(self, exc: Exception, *, refresh: bool) -> None:
        message = str(exc) or exc.__class__.__name__
        if not refresh and self._listing is not None:   # the threads are shown, the counts failed
            self._listing = None
            self.thread_model.mark_counts_failed()
            self._window.report_error("Cannot read database", f"The message counts could not be read: {message}")
            return
        if refresh:  # a refresh that fails (say, a writer holds the lock) must not pop up a dialog each time
            self._window.statusBar().showMessage(f"Refresh failed: {fmt.read_failure(exc)}", 10000)
        else:
            self._window.report_error("Cannot read database", message)
            self.thread_view.show_message(f"The threads could not be read.\n\n{message}")

    def _on_detail_failed(self, thread_id: str, refresh: bool, exc: Exception) -> None:
        if thread_id != self._window.current_thread_id:
            return
        self._window.note_error(str(exc) or exc.__class__.__name__)
        if refresh:
            self._window.statusBar().showMessage(f"Refresh failed: {fmt.read_failure(exc)}", 10000)
        else:
            self.thread_view.show_message(f"This thread could not be read.\n\n{fmt.read_failure(exc)}")

    def load_detail(self, thread_id: str, *, refresh: bool = False, changes: ChangeSet | None = None) -> None:
        """Read THREAD_ID's detail (shown as loading unless REFRESH: then its messages are re-read in place).

        CHANGES: a refresh after a live refresh's ChangeSet: the tabs redraw what changed only
        (`ThreadView.show_detail`); None: every tab is read again.
        """
        if not refresh:
            row = self.thread_model.row_of(thread_id, fetch=False)
            listed = self.thread_model.thread_row(row)
            self.thread_view.show_loading(listed.thread if listed else Thread(id=thread_id, resource_id=""))
        else:
            self.thread_view.expect_refresh(changes)
            if changes is None or changes.everything:   # a live refresh's: by the thread view, when the tab is shown
                self.thread_view.messages_tab.refresh()
        self._runner.submit_call(load_thread_detail, thread_id, helper=self._use_helper,
                                 on_done=functools.partial(self._on_detail_loaded, thread_id),
                                 on_error=functools.partial(self._on_detail_failed, thread_id, refresh), key="detail")

    def _on_detail_loaded(self, thread_id: str, detail: ThreadDetail | None) -> None:
        if thread_id != self._window.current_thread_id:
            return
        if detail is None:
            self.thread_view.show_message("The selected thread no longer exists.")
        else:
            self.thread_view.show_detail(detail)
        self.detail_loaded.emit(detail)

    # -- refreshing ------------------------------------------------------------------------

    def _reload(self) -> None:
        self.load(refresh=True)

    def check_for_changes(self) -> None:
        """Re-read the store if another process changed it (the watcher's tick); say so if its file went away."""
        check = self._check_task
        if self._window.database_path is None or self._runner.closed or (check is not None and not check.done
                                                                           and not check.cancelled):
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
            if self._live is None:
                self._reload()
                return
            live = self._live
            # its own key: a full listing under way (after the studio's own write) is not superseded by it
            self._runner.submit(lambda store, _p, _c: refresh_live_listing(store, live),
                                on_done=functools.partial(self._on_live_refreshed, live),
                                on_error=self._on_live_refresh_failed, key="live")

    def _on_live_refresh_failed(self, exc: Exception) -> None:
        """A live refresh failed (a lock wait cancelled, a server gone): say so; the next check tries again."""
        self._data_version = object()   # differs from any fingerprint: the next tick refreshes again
        self._on_listing_failed(exc, refresh=True)

    def _on_live_refreshed(self, base: LiveListing, refresh: LiveRefresh) -> None:
        """A live refresh is in: show what changed of the threads it names; recompute their bars only.

        Dropped when another listing replaced BASE meanwhile. A refresh that had to reload everything
        is shown as a full refresh.
        """
        if self._live is not base:
            return
        self._live, self.last_refresh = refresh.live, refresh
        listing = refresh.live.listing
        listing.data_version = self._data_version
        if refresh.changes.everything:
            self._on_listing_loaded(listing, refresh=True)
            return
        if not refresh.changes:
            return
        changes = refresh.changes
        if (changes.threads_created or changes.threads_deleted or "resources" in refresh.wider
                or not all(self.thread_model.has_thread(t) for t in changes.threads)):
            self._show_listing(listing, refresh=True)   # rows come or go: the panes are filled again
        else:   # the same threads: only the re-read rows change (and repaint)
            index, orphans, _ = refresh.live.positions()   # kept across refreshes: no pass over every row
            at = (index.get(t, orphans.get(t)) for t in changes.threads)
            self.thread_model.update_rows([listing.rows[i] for i in sorted(i for i in at if i is not None)])
        listed = refresh.live.listed_messages()   # no pass over every row
        self._use_helper = listed >= HELPER_MIN_MESSAGES if listed is not None else wants_helper(listing.rows)
        self.thread_view.set_use_helper(self._use_helper)
        if self._results is not None:
            self._results.discard(changes.threads_deleted)
        self._start_statuses({t.id for t in refresh.changed_threads()})
        self.threads_changed.emit(refresh.changes)

    @property
    def live_changes(self) -> ChangeSet | None:
        """The ChangeSet of the last live refresh (None before the first)."""
        return self.last_refresh.changes if self.last_refresh is not None else None

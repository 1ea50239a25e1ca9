"""The main window: resources | threads | thread view, menus, drag-and-drop, status bar, and the parts it owns.

The window lays out the panes and the menus, opens stores and keeps the selection. Each other job
is a part the window makes with its `WindowContext` and keeps by name: `loader` (the listing, the
thread detail, statuses, live refresh), `dialogs` (Reflect / Observe / Activate, the Overview),
`history_actions` (clone, delete, clear, undo), `health` (the doctor scan and its badges) and
`connect_controller` (File ▸ Connect…). A part uses the window's public API only.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QModelIndex, QSize, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHeaderView,
    QMainWindow,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.errors import store_error_kind
from studio.paths import SAMPLE_DATABASE
from studio.store.target import absolute_target, display_path, is_server_target, redact_url, strip_secrets
from studio.ui.context import AppContext, WindowContext
from studio.ui.message_dialog import MessageDialog
from studio.ui.models.resources import ResourceListModel
from studio.ui.models.roles import ID_ROLE
from studio.ui.models.threads import ThreadTableModel
from studio.ui.style import STYLE_SHEET
from studio.ui.tasks import OpenedStore
from studio.ui.watcher import DatabaseWatcher
from studio.ui.widgets.common import ElidedLabel, OneLineProgressBar, plain_label, set_role, table_view
from studio.ui.widgets.connect_dialog import ConnectController
from studio.ui.widgets.export_actions import ExportActions
from studio.ui.widgets.file_banner import FileGoneBanner
from studio.ui.widgets.health import HealthController
from studio.ui.widgets.history_actions import HistoryActions
from studio.ui.widgets.lock_wait import LockWaitNotice
from studio.ui.widgets.shortcuts import ShortcutsDialog, shortcut_rows
from studio.ui.widgets.thread_list import ThreadListPane
from studio.ui.widgets.thread_view import NO_DATABASE, NO_THREAD, TAB_NAMES, TAB_TITLES, ThreadView
from studio.ui.widgets.vector_store_action import VectorStoreController
from studio.ui.widgets.window_dialogs import WindowDialogs
from studio.ui.widgets.window_loading import ListingLoader

APP_TITLE = "Memory Studio"
#: The permanent "read-only" badge: browsing never writes; a write happens only when the user confirms one.
READ_ONLY_TIP = ("Browsing is read-only: the studio reads this database without changing it. It writes only when you "
                 "confirm a write (Thread ▸ Reflect Now…, Observe Now…, Activate…, Clone…, Delete…, or a revert): one "
                 "transaction, after a backup, then browsing is read-only again.")
DB_FILTER = "SQLite databases (*.db *.sqlite *.sqlite3 *.db3);;All files (*)"
#: Least share of the window's width the thread detail gets when the window is first laid out.
DETAIL_SHARE = 0.47


def open_error_text(path: str, message: str) -> str:
    """Return MESSAGE naming PATH ("PATH: message") unless it already does."""
    if path and (path in message or str(Path(path).expanduser()) in message):
        return message
    return f"{path}: {message}"


#: The window's preferred size (px) and the room its frame and title bar take on a screen (px).
PREFERRED_SIZE = (1400, 900)
FRAME_ROOM = (8, 48)


def default_window_size(available: QSize | None) -> QSize:
    """Return the window's first size: 1400x900, shrunk to fit AVAILABLE (the screen's free area) with its frame.

    On a 1024x700 screen that is 1016x652, so the whole window, title bar included, is on screen
    (a 1400x900 window there hid its status bar and right half).
    """
    width, height = PREFERRED_SIZE
    if available is not None and available.width() > 0 and available.height() > 0:
        width = min(width, available.width() - FRAME_ROOM[0])
        height = min(height, available.height() - FRAME_ROOM[1])
    return QSize(width, height)


class MainWindow(QMainWindow):
    """Browse one Mastra memory.db: resources filter threads; the selected thread fills the thread view."""

    database_opened = Signal(str)      # path
    database_failed = Signal(str)      # the error message shown
    database_refreshed = Signal()
    statuses_finished = Signal()       # every OM thread's status of the listing is in (or failed)
    thread_selected = Signal(str)      # thread id
    error_reported = Signal(str)

    def __init__(self, app: AppContext, parent=None):
        super().__init__(parent)
        self._app = app
        #: What this window's parts share (runner, settings, write session, interaction), handed to each.
        self.context = ctx = WindowContext.for_window(app, self)
        self._path: str | None = None
        self._write_note: str | None = None
        self._failed_path: str | None = None
        self._failed_kind: str | None = None
        self._thread_id: str | None = None
        self._pending_thread: str | None = None
        self._pending_tab: str | None = None
        self.error_box: MessageDialog | None = None
        self.last_error: str | None = None

        self.setWindowTitle(APP_TITLE)
        self.setAcceptDrops(True)
        self.setStyleSheet(STYLE_SHEET)
        self._build_views()
        self._build_status_bar()
        self.loader = ListingLoader(ctx, self)   # the listing, the thread detail, statuses, live refresh
        self.dialogs = WindowDialogs(ctx, self)   # Thread ▸ Reflect / Observe / Activate…, View ▸ Overview…
        self.history_actions = HistoryActions(ctx, self)   # Thread ▸ Clone / Delete (confirmed writes)
        self.health = HealthController(ctx, self)   # badges, Health tab navigation, View ▸ Health… (Ctrl+Shift+H)
        self.connect_controller = ConnectController(ctx, self)   # File ▸ Connect… (Ctrl+L): server URLs, keyring
        self.exports = ExportActions(ctx, self)   # Thread ▸ Export Thread… (Ctrl+Shift+S), Help ▸ About
        self.vector_store = VectorStoreController(self, ctx.settings)   # File ▸ Vector Store…: vectors elsewhere
        self._build_menus()
        self.loader.listed.connect(self._on_loader_listed)
        self.loader.threads_changed.connect(self._on_loader_threads_changed)
        self.loader.detail_loaded.connect(self.dialogs.follow_detail)
        self.loader.detail_loaded.connect(self.exports.follow_detail)
        self.loader.statuses_finished.connect(self.statuses_finished)

        self.watcher = DatabaseWatcher(self)
        self.watcher.check_due.connect(self.loader.check_for_changes)
        ctx.runner.task_failed.connect(self._on_runner_task_failed)
        self.resize(default_window_size(self.screen().availableGeometry().size() if self.screen() else None))
        self._restore_layout()

    # -- building --------------------------------------------------------------------------

    def _build_views(self) -> None:
        self.resource_model = ResourceListModel(self)
        self.resources_view = table_view()
        self.resources_view.setModel(self.resource_model)
        self.resources_view.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.resources_view.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        self.resources_view.horizontalHeader().resizeSection(1, self.fontMetrics().horizontalAdvance("00,000") + 10)
        self.resources_view.horizontalHeader().setStretchLastSection(False)
        self.resources_view.horizontalHeader().hide()
        self.resources_view.setMinimumWidth(self.fontMetrics().horizontalAdvance("user-alice") + 20)
        self.resources_view.selectionModel().currentRowChanged.connect(self._on_resources_current_changed)

        self.thread_model = ThreadTableModel(self)
        self.thread_list = ThreadListPane(self.thread_model, runner=self.context.runner)
        self.threads_view = self.thread_list.view
        self.threads_heading = self.thread_list.heading
        self.threads_view.selectionModel().currentRowChanged.connect(self._on_threads_current_changed)
        self.thread_list.filter_changed.connect(self._on_thread_list_filter_changed)

        self.thread_view = ThreadView(self.context.runner, settings=self.context.settings,
                                      write_session=self.context.session, interaction=self.context.interaction)
        self.thread_view.lineage_bar.thread_activated.connect(self.select_thread)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(6, 6, 0, 6)
        ll.setSpacing(4)
        self.resources_heading = ElidedLabel("Resources", "heading")
        self.resources_heading.setToolTip("Resources")
        ll.addWidget(self.resources_heading)
        ll.addWidget(self.resources_view)

        # The thread view gives way first when the window narrows; the lists keep their width.
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.thread_list)
        self.splitter.addWidget(self.thread_view)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 0)
        self.splitter.setStretchFactor(2, 1)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes(self.pane_sizes(1400))
        self._panes_placed = False   # placed for the real width when first shown (unless restored)
        self.file_banner = FileGoneBanner()
        self.file_banner.reopen_requested.connect(self._on_file_banner_reopen_requested)
        central = QWidget()
        cl = QVBoxLayout(central)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(0)
        cl.addWidget(self.file_banner)
        cl.addWidget(self.splitter, 1)
        self.setCentralWidget(central)
        # Tab and Shift+Tab move pane to pane: resources → threads → thread view.
        QWidget.setTabOrder(self.resources_view, self.threads_view)
        QWidget.setTabOrder(self.threads_view, self.thread_view.focus_proxy())
        self.thread_view.show_message(NO_DATABASE)

    def _build_menus(self) -> None:
        """Lay the menus out: the window's own actions and its parts' (each part made its actions)."""
        self.file_menu = file_menu = self.menuBar().addMenu("&File")
        self.open_action = QAction("&Open…", self, shortcut=QKeySequence.StandardKey.Open,
                                   triggered=self._on_open_action_triggered)
        file_menu.addAction(self.open_action)
        file_menu.addAction(self.connect_controller.action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._on_recent_menu_about_to_show)
        file_menu.addAction(self.history_actions.full_backup_action)
        file_menu.addAction(self.vector_store.action)
        file_menu.addSeparator()
        self.quit_action = QAction("&Quit", self, shortcut=QKeySequence("Ctrl+Q"), triggered=self.close)
        file_menu.addAction(self.quit_action)

        self.view_menu = view_menu = self.menuBar().addMenu("&View")
        self.refresh_action = QAction("&Refresh", self, shortcut=QKeySequence("F5"),
                                      triggered=self._on_refresh_action_triggered)
        view_menu.addAction(self.refresh_action)
        self.find_action = QAction("&Filter Threads…", self, shortcut=QKeySequence.StandardKey.Find,
                                   triggered=self._on_find_action_triggered)
        view_menu.addAction(self.find_action)
        self.search_action = QAction("&Search All Threads…", self, shortcut=QKeySequence("Ctrl+Shift+F"),
                                     triggered=self.show_search)
        view_menu.addAction(self.search_action)
        self.search_window = None
        view_menu.addAction(self.dialogs.overview_action)
        view_menu.addSeparator()
        self.tab_actions: dict[str, QAction] = {}
        for i, name in enumerate(TAB_NAMES, start=1):
            action = QAction(TAB_TITLES[name].replace("&", "&&"), self, shortcut=QKeySequence(f"Ctrl+{i % 10}"),
                             triggered=functools.partial(self._on_tab_action_triggered, name))
            view_menu.addAction(action)
            self.tab_actions[name] = action
        view_menu.addAction(self.health.action)

        self.thread_menu = thread_menu = self.menuBar().addMenu("&Thread")
        for action in (self.dialogs.reflect_action, self.dialogs.observe_action, self.dialogs.activate_action):
            thread_menu.addAction(action)
        thread_menu.addSeparator()
        for action in self.history_actions.write_actions():
            thread_menu.addAction(action)
        thread_menu.addSeparator()
        thread_menu.addAction(self.history_actions.undo_action)
        thread_menu.addSeparator()
        thread_menu.addAction(self.exports.export_action)
        thread_menu.setToolTipsVisible(True)   # a greyed-out Undo Last Write says why
        thread_menu.aboutToShow.connect(self.history_actions.update_actions)

        self.help_menu = help_menu = self.menuBar().addMenu("&Help")
        self.shortcuts_action = QAction("&Keyboard Shortcuts", self, shortcut=QKeySequence.StandardKey.HelpContents,
                                        triggered=self._on_shortcuts_action_triggered)
        help_menu.addAction(self.shortcuts_action)
        help_menu.addAction(self.exports.about_action)
        self.shortcuts_dialog: ShortcutsDialog | None = None
        self._rebuild_recent_menu()

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        bar.setSizeGripEnabled(False)
        self.path_label = plain_label("No database", selectable=False)
        self.mode_label = plain_label("", "badge", selectable=False)
        self.mode_label.hide()
        self.count_label = plain_label("", selectable=False)
        self.progress = OneLineProgressBar("Statuses %v / %m")   # one line, even at 1024 px wide
        self.progress.hide()
        bar.addWidget(self.path_label, 1)
        bar.addPermanentWidget(self.progress)
        self.lock_notice = LockWaitNotice(self.context.runner, self)   # a read waiting for an agent's lock, with Cancel
        bar.addPermanentWidget(self.lock_notice)
        bar.addPermanentWidget(self.count_label)
        bar.addPermanentWidget(self.mode_label)

    # -- public API ------------------------------------------------------------------------

    @property
    def database_path(self) -> str | None:
        """Return the path of the open database, or None."""
        return self._path

    @property
    def write_note(self) -> str | None:
        """What a write's confirmation adds about the open store (a standalone MongoDB: not atomic), or None."""
        return self._write_note

    @property
    def current_thread_id(self) -> str | None:
        """Return the selected thread's id, or None."""
        return self._thread_id

    @property
    def failed_target(self) -> str | None:
        """Return the target whose open failed last (F5 tries it again while no database is open), or None."""
        return self._failed_path

    @property
    def failed_kind(self) -> str | None:
        """Return the `StoreError.kind` of the last failed open ("auth", "no-secret", "unreachable", …), or None."""
        return self._failed_kind

    def open_database(self, path: str | os.PathLike[str], *, thread_id: str | None = None,
                      tab: str | None = None) -> None:
        """Open PATH in the background; on failure show the error and keep the current database.

        THREAD_ID and TAB are selected once the thread list is loaded (default: the first thread with OM).
        """
        target = absolute_target(path)   # the open file stays found after a chdir
        self.statusBar().showMessage(f"Opening {display_path(redact_url(target))}…")
        self.context.runner.open_store(
            target,
            on_done=lambda info: self._on_store_opened(info, thread_id, tab),
            on_error=lambda exc: self._on_store_failed(target, exc))

    def refresh(self) -> None:
        """Re-read the database now (View ▸ Refresh), keeping the selection; retry a failed first open."""
        if self._path is not None:
            self.loader.load(refresh=True)
        elif self._failed_path:
            self.open_database(self._failed_path)

    def show_search(self, _checked: bool = False):
        """View ▸ Search All Threads…: the search window over this store (one per window, kept between uses)."""
        from studio.ui.widgets.search_window import SearchWindow

        if self.search_window is None:
            self.search_window = SearchWindow(self.context.runner, self)
            self.search_window.message_activated.connect(self.show_message)
        self.search_window.show()
        self.search_window.raise_()
        self.search_window.activateWindow()
        self.search_window.query_edit.setFocus()
        return self.search_window

    def show_message(self, thread_id: str, message_id: str) -> bool:
        """Select THREAD_ID and show MESSAGE_ID in its Messages tab; False when the thread is not listed."""
        if not self.select_thread(thread_id):
            self.statusBar().showMessage(f"Thread {thread_id} is no longer in the list.", 5000)
            return False
        self.thread_view.set_tab("messages")
        self.thread_view.messages_tab.show_in_context(message_id)
        return True

    def select_thread(self, thread_id: str) -> bool:
        """Select THREAD_ID in the thread list (switching to "All resources" if needed); False if absent."""
        row = self.thread_model.row_of(thread_id)
        if row < 0 and self.thread_model.text_filter:
            self.thread_list.filter_edit.clear()
            row = self.thread_model.row_of(thread_id)
        if row < 0 and self.thread_model.resource_filter is not None:
            self.resources_view.setCurrentIndex(self.resource_model.index(0, 0))
            row = self.thread_model.row_of(thread_id)
        if row < 0:
            return False
        index = self.thread_model.index(row, 0)
        self.threads_view.setCurrentIndex(index)
        self.threads_view.scrollTo(index)
        return True

    def first_thread_with_om(self) -> str | None:
        """Return the first listed thread governed by an OM record (else the first thread), or None."""
        rows = self.thread_model.visible_rows()
        for r in rows:
            if r.has_om:
                return r.thread.id
        return rows[0].thread.id if rows else None

    def pane_sizes(self, width: int) -> list[int]:
        """Return the widths of the resources, threads and thread-view panes for a window WIDTH px wide.

        The thread detail is what the user reads, so it gets at least DETAIL_SHARE of the width, and at
        least the width its tab bar needs without scroll buttons; the resources pane takes about an eighth;
        the thread list gets the rest up to the width that shows all its columns (below that its optional
        columns hide, the bars stay).
        """
        width -= 2 * self.splitter.handleWidth()
        left_min = self.resources_view.minimumWidth() + 8
        left = max(left_min, min(160, int(width * 0.13)))
        right = max(self.thread_view.minimumSizeHint().width(), self.thread_view.tabs_width(),
                    int(width * DETAIL_SHARE))
        middle_min = self.thread_list.minimumSizeHint().width()
        middle = max(middle_min, min(self.thread_list.preferred_width(), width - left - right))
        return [left, middle, max(width - left - middle, 1)]

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._panes_placed:
            self._panes_placed = True
            self.splitter.setSizes(self.pane_sizes(self.splitter.width() or self.width()))
        else:
            self.keep_detail_room()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._panes_placed and self.isVisible():
            self.keep_detail_room()

    def keep_detail_room(self) -> None:
        """Give the thread view back its share when it has less (panes restored from a wider screen, a shrink).

        A splitter restored from a 1400 px session, or shrunk, keeps the lists' widths in pixels and
        squeezes the thread view (what the user reads) to a strip; below DETAIL_SHARE of the width (or
        its tab bar's width) the panes are placed again as on a first start.
        """
        sizes = self.splitter.sizes()
        width = self.splitter.width()
        if len(sizes) != 3 or width <= 0 or sum(sizes) <= 0:
            return
        wanted = self.pane_sizes(width)
        if sizes[2] < min(wanted[2], int(width * DETAIL_SHARE)):
            self.splitter.setSizes(wanted)

    def open_dialog_directory(self) -> str:
        """Return where File ▸ Open starts: the open database's folder, else (or for the bundled sample) home."""
        if self._path:
            path = Path(self._path)
            try:
                bundled = path.resolve().parent == SAMPLE_DATABASE.resolve().parent
            except OSError:
                bundled = False
            if not bundled and path.parent.is_dir():
                return str(path.parent)
        return str(Path.home())

    @property
    def uses_helper(self) -> bool:
        """Return True when the open database is big enough for the helper process to do the heavy work."""
        return self.loader.use_helper

    def report_error(self, title: str, message: str) -> None:
        """Say MESSAGE (plain text) under TITLE: `last_error`, `error_reported`, and a box when interactive."""
        self.note_error(message)
        box = self.context.interaction.report(title, message)
        if box is not None:
            self.error_box = box

    def note_error(self, message: str) -> None:
        """Keep MESSAGE as the last error and emit `error_reported` (no box: the window shows it where it belongs)."""
        self.last_error = message
        self.error_reported.emit(message)

    def announce_written(self, path: str, sentence: str) -> None:
        """Show SENTENCE (what a studio write wrote) and the backup's path in the status bar for 10 s."""
        backup = self.context.session.backup_for(path)
        note = f" Backup: {backup}" if backup is not None else ""
        self.statusBar().showMessage(sentence + note, 10000)

    def settle(self) -> None:
        """Process pending events and layout (before a grab), and let a long Timeline finish drawing (at most 10 s)."""
        import time

        end = time.monotonic() + 10
        while self.thread_view.timeline_tab.drawing and time.monotonic() < end:
            QApplication.processEvents()
        for _ in range(3):
            QApplication.processEvents()

    # -- opening ---------------------------------------------------------------------------

    def _on_store_opened(self, info: OpenedStore, thread_id: str | None, tab: str | None) -> None:
        self._path = info.path
        self._write_note = info.write_note
        self.loader.open(info)   # statuses of the previous database are stale now
        self.file_banner.hide()
        self._thread_id = None
        self._pending_thread, self._pending_tab = thread_id, tab
        # "[*]" in a title is Qt's modified-marker placeholder: double it to show a file name literally
        name = strip_secrets(info.path) if is_server_target(info.path) else display_path(Path(info.path).name)
        self.setWindowTitle(f"{APP_TITLE} — {name.replace('[*]', '[*][*]')}")
        self.path_label.setText(display_path(info.path))
        self.thread_view.history_tab.database_path = info.path
        self.thread_view.history_tab.write_note = info.write_note
        self.thread_view.context_view.database_path = strip_secrets(info.path)
        self.path_label.setToolTip(fmt.plain_tooltip(display_path(info.path)))
        self.mode_label.setText("read-write" if info.writable else "read-only")
        set_role(self.mode_label, "badge-stale" if info.writable else "badge")
        self.mode_label.setToolTip(READ_ONLY_TIP if not info.writable else "")
        self.mode_label.show()
        self.statusBar().clearMessage()
        if info.notices:
            self.statusBar().showMessage(" ".join(info.notices))
        if self.context.interactive:
            self._app.add_recent_file(info.path)
            self._rebuild_recent_menu()
        self.watcher.watch(info.local_path)
        self.thread_list.filter_edit.blockSignals(True)
        self.thread_list.filter_edit.clear()
        self.thread_list.filter_edit.blockSignals(False)
        self.thread_model.set_text_filter("")
        self.thread_model.clear()
        self.resource_model.clear()
        self.thread_view.show_message("Loading threads…")
        self.dialogs.overview_follows(listed=False)
        self.loader.load(refresh=False)
        self.database_opened.emit(info.path)

    def _on_file_banner_reopen_requested(self) -> None:
        """Reopen the file that went away at its path, on the same thread and tab."""
        if self._path is not None:
            tab = self.thread_view.current_tab() if self.thread_view.detail is not None else None
            self.open_database(self._path, thread_id=self._thread_id, tab=tab)

    def _on_store_failed(self, path: str, exc: Exception, shown: str | None = None) -> None:
        self._failed_path = path  # F5 tries it again while no database is open
        self._failed_kind = store_error_kind(exc)   # File ▸ Connect… asks for the secret on "auth" / "no-secret"
        self.statusBar().clearMessage()
        message = open_error_text(shown or redact_url(path), str(exc) or exc.__class__.__name__)
        self.report_error("Cannot open database", message)
        self.database_failed.emit(message)

    # -- selection -------------------------------------------------------------------------

    def _on_loader_listed(self, refresh: bool) -> None:
        """A listing is in: keep the selection (a refresh) or select the thread asked for, else the first with OM."""
        self.dialogs.overview_follows(listed=True)
        if refresh:
            self._restore_thread_selection()
            if self._thread_id is not None:
                self.loader.load_detail(self._thread_id, refresh=True)
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
                self.report_error("No such thread", f"No thread {wanted!r} in {self._path}")

    def _on_loader_threads_changed(self, changes) -> None:
        """A live refresh re-read CHANGES' threads (a ChangeSet): keep the selection; re-read the selected
        thread's tabs only when it is among them (the Overview, when open, follows)."""
        self.dialogs.overview_follows(listed=True)
        if changes.threads_created or changes.threads_deleted:   # the rows were replaced (else the selection held)
            self._restore_thread_selection()
        tid = self._thread_id
        if tid is not None and (tid in changes.threads or tid in changes.threads_created):
            self.loader.load_detail(tid, refresh=True, changes=changes)

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

    # -- slots -----------------------------------------------------------------------------

    def _on_resources_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        resource = self.resource_model.resource_id(current.row()) if current.isValid() else None
        self.thread_model.set_resource_filter(resource)
        self._update_threads_heading()
        if self._path is not None:
            self._follow_filter()

    def _on_thread_list_filter_changed(self, _text: str) -> None:
        if self._path is not None:
            self._follow_filter()

    def _update_threads_heading(self) -> None:
        self.thread_list.update_heading()

    def _on_threads_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        thread_id = current.data(ID_ROLE) if current.isValid() else None
        if thread_id is None or thread_id == self._thread_id:
            return
        self._thread_id = thread_id
        self.thread_selected.emit(thread_id)
        self.loader.load_detail(thread_id)

    def _on_open_action_triggered(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a Mastra memory.db", self.open_dialog_directory(), DB_FILTER)
        if path:
            self.open_database(path)

    def _on_refresh_action_triggered(self) -> None:
        self.refresh()

    def _on_find_action_triggered(self) -> None:
        self.thread_list.focus_filter()

    def _on_tab_action_triggered(self, name: str, _checked: bool = False) -> None:
        if self.thread_view.detail is not None:
            self.thread_view.set_tab(name)

    def _on_shortcuts_action_triggered(self) -> None:
        if self.shortcuts_dialog is None:
            self.shortcuts_dialog = ShortcutsDialog(self.shortcut_list(), self)
        self.shortcuts_dialog.show()
        self.shortcuts_dialog.raise_()

    def shortcut_list(self) -> list[tuple[str, str]]:
        """Return (keys, what they do) for every keyboard shortcut, as Help ▸ Keyboard Shortcuts lists them."""
        actions = [(self.open_action, "Open a database"),
                   (self.connect_controller.action, "Connect to a PostgreSQL or libSQL server"),
                   (self.quit_action, "Quit"),
                   (self.refresh_action, "Re-read the database now"),
                   (self.find_action, "Filter the threads by title or id")]
        actions += [(action, f"Show the {TAB_TITLES[name]} tab") for name, action in self.tab_actions.items()]
        actions += [(self.dialogs.reflect_action, "Reflect the thread's observation log now (preview, then commit)"),
                    (self.dialogs.observe_action,
                     "Observe the thread's unobserved messages now (preview, then commit)")]
        actions += [(self.dialogs.activate_action, "Activate the thread's buffered observation chunks now")]
        actions += [(self.dialogs.overview_action, "Show every thread by its two OM ratios")]
        actions += [(self.health.action, "Show every finding of the memory doctor")]
        actions += [(self.exports.export_action, "Export the thread as JSON or a Markdown transcript")]
        actions += [(self.history_actions.edit_thread_action, "Edit the thread's title and metadata")]
        actions += [(self.search_action, "Search every thread's messages for text and metadata")]
        return shortcut_rows(actions, self.shortcuts_action)

    def _on_recent_menu_about_to_show(self) -> None:
        self._rebuild_recent_menu()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self._app.recent_files()
        for path in files:
            action = self.recent_menu.addAction(path.replace("&", "&&"))  # "&" would mark a mnemonic
            action.triggered.connect(functools.partial(self.open_database, path))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear Recent Files", self._on_clear_recent_action_triggered)
        self.recent_menu.setEnabled(bool(files))

    def _on_clear_recent_action_triggered(self) -> None:
        self._app.clear_recent_files()
        self._rebuild_recent_menu()

    def _on_runner_task_failed(self, message: str) -> None:
        # MESSAGE is fmt.read_failure's: on a damaged file a pointer to the banner, which names the damage once
        self.statusBar().showMessage(f"A read failed: {message}" if message == fmt.DAMAGED_HERE else message, 10000)

    # -- drag and drop, closing ------------------------------------------------------------

    @staticmethod
    def _dropped_file(mime) -> str | None:
        if not mime.hasUrls():
            return None
        for url in mime.urls():
            if url.isLocalFile():
                return url.toLocalFile()
        return None

    def dragEnterEvent(self, event) -> None:
        if self._dropped_file(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        if self._dropped_file(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        path = self._dropped_file(event.mimeData())
        if path:
            event.acceptProposedAction()
            self.open_database(path)

    def _restore_layout(self) -> None:
        """Restore the window geometry and pane sizes of the last session (interactive runs only)."""
        if not self.context.interactive:
            return
        geometry = self.context.settings.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        panes = self.context.settings.value("window/panes")
        if isinstance(panes, QByteArray) and not panes.isEmpty():
            self._panes_placed = self.splitter.restoreState(panes)

    def _save_layout(self) -> None:
        if self.context.interactive:
            self.context.settings.setValue("window/geometry", self.saveGeometry())
            self.context.settings.setValue("window/panes", self.splitter.saveState())

    def closeEvent(self, event) -> None:
        self._save_layout()
        self.watcher.stop()
        self.loader.stop()
        self.context.runner.shutdown()
        super().closeEvent(event)

    def sizeHint(self) -> QSize:
        return default_window_size(self.screen().availableGeometry().size() if self.screen() else None)


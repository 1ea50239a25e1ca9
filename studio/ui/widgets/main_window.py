"""The main window: resources | threads | thread view, menus, drag-and-drop, live refresh, status bar."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QModelIndex, QSize, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHeaderView,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from studio.paths import SAMPLE_DATABASE
from studio.store.credentials import is_server_target, redact_url, strip_secrets
from studio.app import text as fmt
from studio.app.statuses import StatusRound
from studio.ui.models.resources import ResourceListModel
from studio.ui.models.roles import ID_ROLE
from studio.ui.models.threads import ThreadTableModel
from studio.ui.style import STYLE_SHEET
from studio.ui.tasks import OpenedStore
from studio.ui.watcher import DatabaseWatcher
from studio.ui.widgets.common import ElidedLabel, OneLineProgressBar, plain_label, set_role, table_view
from studio.ui.widgets.connect_dialog import install_connect
from studio.ui.widgets.file_banner import FileGoneBanner
from studio.ui.widgets.health import install_health
from studio.ui.widgets.history_actions import HistoryActions
from studio.ui.widgets.shortcuts import ShortcutsDialog, shortcut_rows
from studio.ui.widgets.thread_list import ThreadListPane
from studio.ui.widgets.thread_view import NO_DATABASE, TAB_NAMES, TAB_TITLES, ThreadView
from studio.ui.widgets.window_dialogs import WindowDialogs
from studio.ui.widgets.window_loading import ListingLoader

if TYPE_CHECKING:
    from studio.ui.app import AppContext

APP_TITLE = "Memory Studio"
#: The permanent "read-only" badge: browsing never writes; a write happens only when the user confirms one.
READ_ONLY_TIP = ("Browsing is read-only: the studio reads this database without changing it. It writes only when you "
                 "confirm a write (Thread ▸ Reflect Now…, Observe Now…, Activate…, Clone…, Delete…, or a revert): one "
                 "transaction, after a backup, then browsing is read-only again.")
DB_FILTER = "SQLite databases (*.db *.sqlite *.sqlite3 *.db3);;All files (*)"
#: Databases with at least this many messages compute statuses, thread details and message pages in
#: the TaskRunner's helper process, so the GUI thread never waits for the interpreter lock.
HELPER_MIN_MESSAGES = 20_000
#: Least share of the window's width the thread detail gets when the window is first laid out.
DETAIL_SHARE = 0.47


def open_error_text(path: str, message: str) -> str:
    """Return MESSAGE naming PATH ("PATH: message") unless it already does."""
    if path and (path in message or str(Path(path).expanduser()) in message):
        return message
    return f"{path}: {message}"


class MainWindow(ListingLoader, WindowDialogs, QMainWindow):
    """Browse one Mastra memory.db: resources filter threads; the selected thread fills the thread view."""

    database_opened = Signal(str)      # path
    database_failed = Signal(str)      # the error message shown
    database_refreshed = Signal()
    statuses_finished = Signal()       # every OM thread's status of the listing is in (or failed)
    thread_selected = Signal(str)      # thread id
    error_reported = Signal(str)

    def __init__(self, ctx: "AppContext", parent=None):
        super().__init__(parent)
        self._ctx = ctx
        self._runner = ctx.runner
        self._path: str | None = None
        self._data_version = None   # the open store's fingerprint as last loaded
        self._local_path: str | None = None   # its database file (None: a server store)
        self._check_task = None   # the last live-refresh check submitted (studio.ui.tasks.Task)
        self._thread_id: str | None = None
        self._pending_thread: str | None = None
        self._pending_tab: str | None = None
        self._statuses = StatusRound()   # the threads whose bars are still computed (studio.app.statuses)
        self._status_round = 0
        self._use_helper = False
        self.error_box: QMessageBox | None = None
        self.last_error: str | None = None

        self.setWindowTitle(APP_TITLE)
        self.setAcceptDrops(True)
        self.setStyleSheet(STYLE_SHEET)
        self._build_views()
        self._build_menus()
        self._build_status_bar()
        self.history_actions = HistoryActions(self, self._runner)   # Thread ▸ Clone / Delete (confirmed writes)
        self.health = install_health(self)   # badges, Health tab navigation, View ▸ Health… (Ctrl+Shift+H)
        self.connect_controller = install_connect(self)   # File ▸ Connect… (Ctrl+L): server URLs, keyring

        self.watcher = DatabaseWatcher(self)
        self.watcher.check_due.connect(self._on_watcher_check_due)
        self._runner.task_failed.connect(self._on_runner_task_failed)
        self.resize(1400, 900)
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
        self.thread_list = ThreadListPane(self.thread_model, runner=self._runner)
        self.threads_view = self.thread_list.view
        self.threads_heading = self.thread_list.heading
        self.threads_view.selectionModel().currentRowChanged.connect(self._on_threads_current_changed)
        self.thread_list.filter_changed.connect(self._on_thread_list_filter_changed)

        self.thread_view = ThreadView(self._runner)

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
        file_menu = self.menuBar().addMenu("&File")
        self.open_action = QAction("&Open…", self, shortcut=QKeySequence.StandardKey.Open,
                                   triggered=self._on_open_action_triggered)
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._on_recent_menu_about_to_show)
        file_menu.addSeparator()
        self.quit_action = QAction("&Quit", self, shortcut=QKeySequence("Ctrl+Q"), triggered=self.close)
        file_menu.addAction(self.quit_action)

        view_menu = self.menuBar().addMenu("&View")
        self.refresh_action = QAction("&Refresh", self, shortcut=QKeySequence("F5"),
                                      triggered=self._on_refresh_action_triggered)
        view_menu.addAction(self.refresh_action)
        self.find_action = QAction("&Filter Threads…", self, shortcut=QKeySequence.StandardKey.Find,
                                   triggered=self._on_find_action_triggered)
        view_menu.addAction(self.find_action)
        self.overview_action = QAction("&Overview…", self, shortcut=QKeySequence("Ctrl+Shift+O"),
                                       triggered=self.show_overview)
        view_menu.addAction(self.overview_action)
        self.overview_window = None
        view_menu.addSeparator()
        self.tab_actions: dict[str, QAction] = {}
        for i, name in enumerate(TAB_NAMES, start=1):
            action = QAction(TAB_TITLES[name].replace("&", "&&"), self, shortcut=QKeySequence(f"Ctrl+{i}"),
                             triggered=functools.partial(self._on_tab_action_triggered, name))
            view_menu.addAction(action)
            self.tab_actions[name] = action

        thread_menu = next((a.menu() for a in self.menuBar().actions() if a.text() == "&Thread"), None) \
            or self.menuBar().addMenu("&Thread")
        self.reflect_action = QAction("&Reflect Now…", self, shortcut=QKeySequence("Ctrl+R"), enabled=False,
                                      triggered=self._on_reflect_action_triggered)
        thread_menu.addAction(self.reflect_action)
        self.observe_action = QAction("&Observe Now…", self, shortcut=QKeySequence("Ctrl+E"), enabled=False,
                                      triggered=self._on_observe_action_triggered)
        thread_menu.addAction(self.observe_action)
        self.activate_action = QAction("&Activate Buffered Chunks…", self, shortcut=QKeySequence("Ctrl+Shift+B"),
                                       enabled=False, triggered=self._on_activate_action_triggered)
        thread_menu.addAction(self.activate_action)
        self.reflect_dialog = None
        self.observe_dialog = None
        self.thread_view.om_tab.reflect_requested.connect(self._on_reflect_action_triggered)
        self.thread_view.om_tab.observe_requested.connect(self._on_observe_action_triggered)
        self.thread_view.om_tab.activate_requested.connect(self._on_activate_action_triggered)
        self.thread_view.history_tab.generation_written.connect(self._on_generation_written)
        self.thread_view.history_tab.write_failed.connect(self._on_write_failed)

        help_menu = self.menuBar().addMenu("&Help")
        self.shortcuts_action = QAction("&Keyboard Shortcuts", self, shortcut=QKeySequence.StandardKey.HelpContents,
                                        triggered=self._on_shortcuts_action_triggered)
        help_menu.addAction(self.shortcuts_action)
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
        bar.addPermanentWidget(self.count_label)
        bar.addPermanentWidget(self.mode_label)

    # -- public API ------------------------------------------------------------------------

    @property
    def database_path(self) -> str | None:
        """Return the path of the open database, or None."""
        return self._path

    @property
    def current_thread_id(self) -> str | None:
        """Return the selected thread's id, or None."""
        return self._thread_id

    def open_database(self, path: str | os.PathLike[str], *, thread_id: str | None = None,
                      tab: str | None = None) -> None:
        """Open PATH in the background; on failure show the error and keep the current database.

        THREAD_ID and TAB are selected once the thread list is loaded (default: the first thread with OM).
        """
        target = os.fspath(path)
        if not target.startswith("file:") and "://" not in target:
            target = os.path.abspath(os.path.expanduser(target))   # the open file stays found after a chdir
        self.statusBar().showMessage(f"Opening {redact_url(target)}…")
        self._runner.open_store(
            target,
            on_done=lambda info: self._on_store_opened(info, thread_id, tab),
            on_error=lambda exc: self._on_store_failed(target, exc))

    def refresh(self) -> None:
        """Re-read the database now (View ▸ Refresh), keeping the selection; retry a failed first open."""
        if self._path is not None:
            self._reload()
        elif getattr(self, "_failed_path", None):
            self.open_database(self._failed_path)

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
        least the width its tab bar needs without scroll buttons; the resources pane takes about an eighth; the thread list gets the rest up to
        the width that shows all its columns (below that its optional columns hide, the bars stay).
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

    def _wants_helper(self, rows) -> bool:
        """Return True when ROWS (ThreadRow list) hold enough messages for the helper process."""
        return sum(r.thread.message_count or 0 for r in rows) >= HELPER_MIN_MESSAGES

    @property
    def uses_helper(self) -> bool:
        """Return True when the open database is big enough for the helper process to do the heavy work."""
        return self._use_helper

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
        self._data_version = info.data_version
        self._local_path = info.local_path
        self.file_banner.hide()
        self._thread_id = None
        self._status_round += 1  # statuses of the previous database are stale now
        self._runner.cancel("statuses")
        self.progress.hide()
        self._pending_thread, self._pending_tab = thread_id, tab
        # "[*]" in a title is Qt's modified-marker placeholder: double it to show a file name literally
        name = strip_secrets(info.path) if is_server_target(info.path) else Path(info.path).name
        self.setWindowTitle(f"{APP_TITLE} — {name.replace('[*]', '[*][*]')}")
        self.path_label.setText(info.path)
        self.thread_view.history_tab.database_path = info.path
        self.thread_view.history_tab.write_session = self._write_session()
        self.thread_view.history_tab.settings = self._ctx.settings
        self.path_label.setToolTip(fmt.plain_tooltip(info.path))
        self.mode_label.setText("read-write" if info.writable else "read-only")
        set_role(self.mode_label, "badge-stale" if info.writable else "badge")
        self.mode_label.setToolTip(READ_ONLY_TIP if not info.writable else "")
        self.mode_label.show()
        self.statusBar().clearMessage()
        if info.notices:
            self.statusBar().showMessage(" ".join(info.notices))
        if self._ctx.interactive:
            self._ctx.add_recent_file(info.path)
            self._rebuild_recent_menu()
        self.watcher.watch(info.local_path)
        self.thread_list.filter_edit.blockSignals(True)
        self.thread_list.filter_edit.clear()
        self.thread_list.filter_edit.blockSignals(False)
        self.thread_model.set_text_filter("")
        self.thread_model.clear()
        self.resource_model.clear()
        self.thread_view.show_message("Loading threads…")
        self._overview_follows(listed=False)
        self._load_listing(refresh=False)
        self.database_opened.emit(info.path)

    def _on_file_banner_reopen_requested(self) -> None:
        """Reopen the file that went away at its path, on the same thread and tab."""
        if self._path is not None:
            tab = self.thread_view.current_tab() if self.thread_view.detail is not None else None
            self.open_database(self._path, thread_id=self._thread_id, tab=tab)

    def _on_store_failed(self, path: str, exc: Exception, shown: str | None = None) -> None:
        self._failed_path = path  # F5 tries it again while no database is open
        self.statusBar().clearMessage()
        message = open_error_text(shown or redact_url(path), str(exc) or exc.__class__.__name__)
        self._report_error("Cannot open database", message)
        self.database_failed.emit(message)

    def _report_error(self, title: str, message: str) -> None:
        self.last_error = message
        self.error_reported.emit(message)
        if not self._ctx.interactive:
            return
        box = QMessageBox(QMessageBox.Icon.Critical, title, message, QMessageBox.StandardButton.Ok, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.open()
        self.error_box = box

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
        self._load_detail(thread_id)

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
        actions += [(self.reflect_action, "Reflect the thread's observation log now (preview, then commit)")]
        actions += [(self.observe_action, "Observe the thread's unobserved messages now (preview, then commit)")]
        actions += [(self.activate_action, "Activate the thread's buffered observation chunks now")]
        actions += [(self.overview_action, "Show every thread by its two OM ratios")]
        actions += [(self.health.action, "Show every finding of the memory doctor")]
        return shortcut_rows(actions, self.shortcuts_action)

    def _on_recent_menu_about_to_show(self) -> None:
        self._rebuild_recent_menu()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self._ctx.recent_files()
        for path in files:
            action = self.recent_menu.addAction(path.replace("&", "&&"))  # "&" would mark a mnemonic
            action.triggered.connect(functools.partial(self.open_database, path))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear Recent Files", self._on_clear_recent_action_triggered)
        self.recent_menu.setEnabled(bool(files))

    def _on_clear_recent_action_triggered(self) -> None:
        self._ctx.clear_recent_files()
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
        if not self._ctx.interactive:
            return
        geometry = self._ctx.settings.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        panes = self._ctx.settings.value("window/panes")
        if isinstance(panes, QByteArray) and not panes.isEmpty():
            self._panes_placed = self.splitter.restoreState(panes)

    def _save_layout(self) -> None:
        if self._ctx.interactive:
            self._ctx.settings.setValue("window/geometry", self.saveGeometry())
            self._ctx.settings.setValue("window/panes", self.splitter.saveState())

    def closeEvent(self, event) -> None:
        self._save_layout()
        self.watcher.stop()
        self._stop_listing()
        self._runner.shutdown()
        super().closeEvent(event)

    def sizeHint(self) -> QSize:
        return QSize(1400, 900)


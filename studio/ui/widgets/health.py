"""The studio's Health: a background doctor scan, a badge per thread, the Health tab and window.

`HealthController` is a part of the main window, made with its `WindowContext`: it owns View ▸
Health… (Ctrl+Shift+H), paints a badge (errors + warnings, coloured by the worst) beside each
thread's title, wires the thread view's Health tab, and starts a scan whenever a database is opened
or refreshed.

The per-thread findings come with the window's results batches (`studio.app.open_results`: the
statuses and the doctor's per-thread checks in one pass, reused from the cross-session result cache
when a thread's rows are unchanged), the store-wide findings from one task; badge counts and the
Health window fill in as each batch lands. Activating a finding opens its thread, then
the message (Messages ▸ show in context) or the generation (History) it names.
"""

from __future__ import annotations

import functools

from PySide6.QtCore import QObject, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QPainter
from PySide6.QtWidgets import QStyledItemDelegate, QToolTip

from studio.app import text as fmt
from studio.app.changes import ChangeSet
from studio.app.open_results import load_store_findings
from studio.app.result_cache import PackedFindings
from studio.ui.context import WindowContext
from studio.ui.models.roles import ID_ROLE
from studio.ui.screen import SCREEN_SHARE, fit_within_screen
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.health_views import SEVERITY_COLOURS, HealthWindow

SCAN_KEY = "doctor-scan"
#: How long a History navigation waits for the thread's generations to load (tries × ms).
SELECT_TRIES, SELECT_EVERY_MS = 50, 100


class HealthScan(QObject):
    """The open database's health findings, kept per thread; the counts per thread (the badges).

    The per-thread findings come with the main window's results batches (`ListingLoader.results_landed`,
    `studio.app.open_results`: computed with the statuses, through the cross-session result cache);
    the store-wide findings (schema, resources, resource-scope and orphaned OM records) are one task
    of their own (`load_store_findings`). A live refresh's batches replace their threads' findings.
    Findings that come packed from the cache (`ResultsBatch.packed`) stay packed until they are read
    (`findings`, `findings_of`): a badge needs their counts per severity only.
    """

    # the thread ids whose findings landed (None: the store-wide findings), threads done, threads total
    batch_landed = Signal(object, int, int)
    threads_refreshed = Signal(object)        # the thread ids whose findings were computed again (a live refresh)
    finished = Signal()
    failed = Signal(str)

    def __init__(self, runner: TaskRunner, parent=None, use_helper=lambda: False):
        super().__init__(parent)
        self._runner = runner
        self._use_helper = use_helper   # () -> bool: run the store-wide checks in the helper process
        self._round = 0
        self._by_thread: dict[str, list[dict]] = {}   # each thread's findings (from the results batches)
        self._packed: dict[str, PackedFindings] = {}   # the same, still packed (decoded when first read)
        self._store: list[dict] = []                  # the store-wide findings
        self.counts: dict[str, dict[str, int]] = {}
        self.done = self.total = 0
        self.running = False
        self._store_done = True

    @property
    def findings(self) -> list[dict]:
        """Every finding so far: the store-wide ones, then each thread's."""
        self._unpack(list(self._packed))
        return self._store + [f for found in self._by_thread.values() for f in found]

    def findings_of(self, thread_ids) -> list[dict]:
        """Return the findings of THREAD_IDS (None: the store-wide findings)."""
        if thread_ids is None:
            return list(self._store)
        self._unpack(thread_ids)
        return [f for tid in thread_ids for f in self._by_thread.get(tid, ())]

    def _unpack(self, thread_ids) -> None:
        """Decode the packed findings of THREAD_IDS (those that have any)."""
        for tid in thread_ids:
            packed = self._packed.pop(tid, None)
            if packed is not None:
                found = packed.decode()
                if found:
                    self._by_thread[tid] = found

    def begin(self, total: int, partial: bool) -> None:
        """A results round of TOTAL threads began: a new scan unless PARTIAL (a live refresh's threads,
        whose findings replace theirs as they land). A new scan also computes the store-wide findings."""
        if partial:
            return
        self._round += 1
        self._by_thread, self._packed, self._store, self.counts = {}, {}, [], {}
        self.done, self.total, self.running, self._store_done = 0, total, True, False
        self._runner.submit_call(load_store_findings, helper=self._use_helper(),
                                 on_done=functools.partial(self._on_store, self._round),
                                 on_error=functools.partial(self._on_error, self._round), key=SCAN_KEY)

    def clear(self) -> None:
        """Drop the running scan and every finding (another database is opened)."""
        self._round += 1
        self.running = False
        self._runner.cancel(SCAN_KEY)
        self._by_thread, self._packed, self._store, self.counts = {}, {}, [], {}
        self.done = self.total = 0

    def take_results(self, batch, done: int, total: int, partial: bool) -> None:
        """A results BATCH landed (`ResultsBatch`; DONE of TOTAL threads of its round; PARTIAL: a live
        refresh's): its threads' findings replace what they were."""
        handled = set(batch.handled)
        for tid in handled:
            self._by_thread.pop(tid, None)
            self._packed.pop(tid, None)
            self.counts.pop(tid, None)
        for f in batch.findings:
            self._by_thread.setdefault(f["thread_id"], []).append(f)
        self._packed.update(batch.packed)
        for tid in handled:
            self._recount(tid)
        if partial or not self.running:
            self.threads_refreshed.emit(handled)
            return
        self.done, self.total = done, total
        self.batch_landed.emit(batch.handled, done, total)
        self._finish_when_done()

    def refresh_threads(self, changes: ChangeSet) -> None:
        """A live refresh changed CHANGES' threads: drop the deleted threads' findings (the changed and
        created threads' findings come with the refresh's results batches)."""
        gone = set(changes.threads_deleted)
        for tid in gone:
            self._by_thread.pop(tid, None)
            self._packed.pop(tid, None)
            self._recount(tid)
        if gone:
            self.threads_refreshed.emit(gone)

    def fail(self, message: str) -> None:
        """The results round failed: the scan ends with MESSAGE."""
        if self.running:
            self.running = False
            self.failed.emit(message)

    def _recount(self, thread_id: str) -> None:
        packed = self._packed.get(thread_id)
        per: dict[str, int] = dict(packed.severities) if packed is not None else {}
        for f in self._by_thread.get(thread_id, []) + [f for f in self._store if f["thread_id"] == thread_id]:
            per[f["severity"]] = per.get(f["severity"], 0) + 1
        if per:
            self.counts[thread_id] = per
        else:
            self.counts.pop(thread_id, None)

    def thread_counts(self, thread_id: str) -> dict[str, int]:
        """Return {severity: findings} of THREAD_ID so far ({} when none)."""
        return self.counts.get(thread_id, {})

    def _on_store(self, round_: int, found: list[dict] | None) -> None:
        if round_ != self._round or found is None:
            return
        self._store, self._store_done = found, True
        for tid in {f["thread_id"] for f in found if f["thread_id"] is not None}:
            self._recount(tid)
        self.batch_landed.emit(None, self.done, self.total)
        self._finish_when_done()

    def _finish_when_done(self) -> None:
        if self.running and self._store_done and self.done >= self.total:
            self.running = False
            self.finished.emit()

    def _on_error(self, round_: int, exc: Exception) -> None:
        if round_ == self._round:
            self.fail(str(exc))


def badge_text(counts: dict[str, int]) -> tuple[str, str] | None:
    """Return (text, severity) of a thread's badge: errors + warnings, coloured by the worst; None without."""
    n = counts.get("error", 0) + counts.get("warning", 0)
    if not n:
        return None
    return str(n), "error" if counts.get("error") else "warning"


def badge_tooltip(title_tip, health: str) -> str:
    """Return a badged title's tooltip: the row's own (the full title, already `format.plain_tooltip`) then HEALTH.

    The badge narrows the title's cell, so the tooltip is where a cut title is read whole.
    """
    line = fmt.plain_tooltip(health)
    return f"{title_tip}{line}" if isinstance(title_tip, str) and title_tip else line


class HealthBadgeDelegate(QStyledItemDelegate):
    """Paint a thread's title, elided in the middle, with its Health badge at the right (a count in a coloured pill)."""

    def __init__(self, scan: HealthScan, parent=None):
        super().__init__(parent)
        self._scan = scan

    def initStyleOption(self, option, index) -> None:
        super().initStyleOption(option, index)
        # A title's start and end tell threads apart ("Thread support-1", "Thread support-2"): cut its middle;
        # the tooltip holds it whole.
        option.textElideMode = Qt.TextElideMode.ElideMiddle

    def _badge(self, index) -> tuple[str, str] | None:
        thread_id = index.data(ID_ROLE)
        return badge_text(self._scan.thread_counts(thread_id)) if isinstance(thread_id, str) else None

    def paint(self, painter: QPainter, option, index) -> None:
        badge = self._badge(index)
        if badge is None:
            super().paint(painter, option, index)
            return
        text, severity = badge
        fm = option.fontMetrics
        width = fm.horizontalAdvance(text) + 12
        height = min(option.rect.height() - 6, fm.height() + 2)
        pill = QRect(option.rect.right() - width - 4, option.rect.center().y() - height // 2, width, height)
        option.rect.setRight(pill.left() - 4)
        super().paint(painter, option, index)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(SEVERITY_COLOURS[severity])
        painter.drawRoundedRect(pill, height / 2, height / 2)
        painter.setPen(Qt.GlobalColor.white)
        painter.drawText(pill, Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()

    def helpEvent(self, event, view, option, index) -> bool:
        thread_id = index.data(ID_ROLE)
        counts = self._scan.thread_counts(thread_id) if isinstance(thread_id, str) else {}
        if counts and self._badge(index) is not None:
            parts = [f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}" for s in ("error", "warning", "info")
                     if counts.get(s)]
            health = "Health: " + ", ".join(parts) + " (Health tab)"
            QToolTip.showText(event.globalPos(), badge_tooltip(index.data(Qt.ItemDataRole.ToolTipRole), health), view)
            return True
        return super().helpEvent(event, view, option, index)


class HealthController(QObject):
    """Tie the scan to a main window: badges, the Health tab, the Health window, and navigation.

    WINDOW is the MainWindow this is a part of: its thread list shows the badges, its thread view
    the Health tab; a finding opens through its `select_thread`. The window puts `action` in its View menu.
    """

    def __init__(self, ctx: WindowContext, window):
        super().__init__(window)
        self._window = window
        self.scan = HealthScan(ctx.runner, self, use_helper=lambda: window.uses_helper)
        self.health_window: HealthWindow | None = None
        self.badges = HealthBadgeDelegate(self.scan, window.thread_list.view)
        from studio.ui.models.threads import ThreadColumn

        window.thread_list.view.setItemDelegateForColumn(ThreadColumn.TITLE, self.badges)
        self.scan.batch_landed.connect(self._on_scan_batch_landed)
        self.scan.threads_refreshed.connect(self._on_scan_threads_refreshed)
        window.loader.threads_changed.connect(self.scan.refresh_threads)
        window.loader.results_started.connect(self._on_loader_results_started)
        window.loader.results_landed.connect(self.scan.take_results)
        window.loader.results_failed.connect(self.scan.fail)
        window.database_opened.connect(self._on_window_database_opened)
        window.database_refreshed.connect(self._on_window_database_refreshed)
        window.thread_view.health_tab.finding_activated.connect(self.open_finding)
        self.action = QAction("&Health…", window, shortcut=QKeySequence("Ctrl+Shift+H"), triggered=self.show_window)

    def show_window(self, _checked: bool = False) -> HealthWindow:
        """View ▸ Health…: show every finding of the database (filled in as the scan runs)."""
        if self.health_window is None:
            self.health_window = HealthWindow(self._window)
            self.health_window.setWindowFlag(Qt.WindowType.Window, True)
            self.health_window.finding_activated.connect(self.open_finding)
            self._fill_window()
        fit_within_screen(self.health_window, SCREEN_SHARE)   # a 1024×700 screen: all of it on screen
        self.health_window.show()
        fit_within_screen(self.health_window, SCREEN_SHARE)   # placed by the window manager: inside the screen
        self.health_window.raise_()
        return self.health_window

    def open_finding(self, finding: dict) -> bool:
        """Open FINDING's thread, then its message (Messages, in context) or generation (History)."""
        window = self._window
        thread_id = finding.get("thread_id")
        if not thread_id or not window.select_thread(thread_id):
            window.statusBar().showMessage("This finding names no thread of the list (an orphaned record or the "
                                           "whole database).", 5000)
            return False
        view = window.thread_view
        if finding.get("message_ids"):
            view.set_tab("messages")
            message_id = finding["message_ids"][0]
            # the tab is the timer's context: Qt drops the call if the tab is destroyed first
            tab = view.messages_tab
            QTimer.singleShot(0, tab, functools.partial(tab.show_in_context, message_id))
        elif finding.get("record_id"):
            view.set_tab("history")
            self._select_record(finding["record_id"], SELECT_TRIES)
        else:
            view.set_tab("health")
        window.raise_()
        window.activateWindow()
        return True

    def _select_record(self, record_id: str, tries: int) -> None:
        tab = self._window.thread_view.history_tab
        if tab.select_record(record_id) or tries <= 0:
            return
        # the History tab is the retry's context: when the window (and the tab with it) is destroyed
        # before the generation list has loaded, Qt drops the pending retry instead of calling into
        # deleted widgets
        QTimer.singleShot(SELECT_EVERY_MS, tab, functools.partial(self._select_record, record_id, tries - 1))

    def _fill_window(self) -> None:
        win = self.health_window
        if win is None:
            return
        win.set_database(self._window.database_path)
        win.pane.set_findings(self.scan.findings)
        if self.scan.total:
            win.set_progress(self.scan.done, self.scan.total)

    def _on_window_database_opened(self, _path: str) -> None:
        self.scan.clear()   # the previous file's scan; this file's comes with its results round
        self._fill_window()

    def _on_loader_results_started(self, total: int, partial: bool) -> None:
        self.scan.begin(total, partial)
        if not partial:
            self._fill_window()

    def _on_window_database_refreshed(self) -> None:
        tab = self._window.thread_view.health_tab
        if tab.thread_id is not None:
            tab.refresh()

    def _on_scan_threads_refreshed(self, thread_ids: set[str]) -> None:
        from studio.ui.models.threads import ThreadColumn

        model, view = self._window.thread_model, self._window.thread_list.view
        for tid in thread_ids:   # only their badges repaint
            row = model.row_of(tid, fetch=False)
            if row >= 0:
                view.update(model.index(row, ThreadColumn.TITLE))
        self._fill_window()
        tab = self._window.thread_view.health_tab
        if tab.thread_id is not None and tab.thread_id in thread_ids:
            tab.refresh()

    def _on_scan_batch_landed(self, thread_ids, done: int, total: int) -> None:
        self._window.thread_list.view.viewport().update()
        if self.health_window is not None:
            self.health_window.pane.add_findings(self.scan.findings_of(thread_ids))
            self.health_window.set_progress(done, total)

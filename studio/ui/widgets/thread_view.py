"""The right-hand pane: the selected thread's header and its Observational memory / History / Messages tabs."""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from studio.app import text as fmt
from studio.app.changes import ChangeSet
from studio.app.listing import last_activity
from studio.app.thread_detail import ThreadDetail
from studio.store.records import Thread, ms_to_iso
from studio.ui.interaction import QtInteraction
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel, empty_state
from studio.ui.widgets.context_view import TurnContextView
from studio.ui.widgets.file_banner import DamageBanner
from studio.ui.widgets.health_views import HealthTab
from studio.ui.widgets.history_tab import HistoryTab
from studio.ui.widgets.lineage_bar import LineageBar
from studio.ui.widgets.messages_tab import MessagesTab
from studio.ui.widgets.om_tab import ObservationalMemoryTab
from studio.ui.widgets.participants import ParticipantsTab
from studio.ui.widgets.timeline_tab import TimelineTab
from studio.ui.widgets.trace_panel import TracePanel
from studio.ui.widgets.vector_memory import VectorMemoryTab
from studio.ui.widgets.working_memory import WorkingMemoryTab

TAB_NAMES = ["observations", "history", "messages", "participants", "working-memory", "timeline", "trace",
             "context", "health", "vectors"]
# Short titles: ten tabs must fit the detail pane of a 1024 px window; TAB_TOOLTIPS give the full names.
TAB_TITLES = {"observations": "Observations", "history": "History", "messages": "Messages",
              "participants": "Speakers", "working-memory": "Working memory", "timeline": "Timeline",
              "trace": "Trace", "context": "Context", "health": "Health", "vectors": "Vectors"}
TAB_TOOLTIPS = {"observations": "Observational memory: thresholds, record and the observation log",
                "history": "Every generation of the observation log, and a diff of any two",
                "messages": "The thread's messages with Mastra's token estimate and the exact count",
                "participants": "Who spoke in this thread (<turn> tags) and any anomalies",
                "working-memory": "Working memory of the thread and of its resource",
                "timeline": "Message window, observation log and events over time; what-if replay",
                "trace": "Trace a fact through every generation",
                "context": "Turn context: what Observational Memory put into the model's context at a turn",
                "health": "What the memory doctor found in this thread",
                "vectors": "Vector memory (semantic recall): indexes, this thread's embedded messages, similar "
                           "messages, what a turn recalled, recall by meaning"}
NO_DATABASE = ("Open a Mastra memory.db with File ▸ Open… (Ctrl+O), or drop one on this window; for a store on a "
               "server (postgresql://, libsql://, http:// for sqld, mongodb://), File ▸ Connect… (Ctrl+L).")
NO_THREAD = "Select a thread to see its observational memory, history and messages."
#: The tabs a live refresh re-reads only while they are shown (else they are marked stale and re-read when shown),
#: with the other tabs whose showing needs them fresh (the Messages tab's speaker filter is the Speakers tab's report).
LAZY_TABS = {"messages": ("messages",), "participants": ("participants", "messages"),
             "working-memory": ("working-memory",), "vectors": ("vectors",)}


def _lineage_fields(thread: Thread) -> tuple:
    """What of a thread its own lineage line shows or reads (its link, clone metadata, resource, order)."""
    return thread.title, thread.metadata, thread.resource_id, thread.created_at


class ThreadView(QWidget):
    """Show one thread: title, ids and counts, then its tabs.

    RUNNER reads for every tab; SETTINGS, WRITE_SESSION and INTERACTION (the window's) go to the History tab's
    revert.
    """

    def __init__(self, runner: TaskRunner, parent=None, *, settings: QSettings | None = None, write_session=None,
                 interaction: QtInteraction | None = None):
        super().__init__(parent)
        self._detail: ThreadDetail | None = None
        self._refresh: ChangeSet | None = None   # what the live refreshes since the last detail changed
        self._stale: set[str] = set()            # LAZY_TABS names re-read when shown
        self._speakers_follow = False            # the Speakers report waits for the Messages tab's refreshed rows
        self.title = ElidedLabel("", "heading")
        self.subtitle = ElidedLabel("", "muted")
        self.lineage_bar = LineageBar(runner)
        self.om_tab = ObservationalMemoryTab()
        self.history_tab = HistoryTab(runner, settings=settings, write_session=write_session, interaction=interaction)
        self.messages_tab = MessagesTab(runner)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        # The ten tabs fit in the detail pane of a 1024 px window without scroll buttons (tests/ui/test_fit.py).
        self.tabs.tabBar().setStyleSheet("QTabBar::tab { padding: 4px 4px; }")
        for name, tab in (("observations", self.om_tab), ("history", self.history_tab),
                          ("messages", self.messages_tab)):
            self.tabs.addTab(tab, TAB_TITLES[name])
        self.participants_tab, self.working_memory_tab = ParticipantsTab(runner), WorkingMemoryTab(runner)
        self.tabs.addTab(self.participants_tab, TAB_TITLES["participants"])
        self.tabs.addTab(self.working_memory_tab, TAB_TITLES["working-memory"])
        self.participants_tab.report_loaded.connect(self.messages_tab.set_speakers)
        self.messages_tab.model.page_refreshed.connect(self._on_messages_model_page_refreshed)
        self.messages_tab.model.page_loaded.connect(self._on_messages_model_page_loaded)
        self.messages_tab.model.load_failed.connect(self._on_messages_model_load_failed)
        self.participants_tab.speaker_activated.connect(self._on_participants_speaker_activated)
        self.participants_tab.message_activated.connect(self._on_participants_message_activated)
        self.timeline_tab = TimelineTab(runner)
        self.tabs.addTab(self.timeline_tab, TAB_TITLES["timeline"])
        self.timeline_tab.message_selected.connect(self.messages_tab.show_in_context)
        self.timeline_tab.generation_selected.connect(self.history_tab.select_record)
        self._add_trace_tabs(runner, settings)
        self.health_tab = HealthTab(runner)   # the doctor's findings for this thread (studio.ui.widgets.health)
        self.tabs.addTab(self.health_tab, TAB_TITLES["health"])
        self.vectors_tab = VectorMemoryTab(runner, settings=settings)
        self.tabs.addTab(self.vectors_tab, TAB_TITLES["vectors"])
        # semanticRecall's options are code, not data: asked in the Vectors tab, used by Context and Timeline too
        self.context_view.semantic_options = self.vectors_tab.config
        self.vectors_tab.options_changed.connect(self.context_view.refresh_recall)
        self.timeline_tab.recall_marks.options = self.vectors_tab.recall_options
        self.vectors_tab.options_changed.connect(self.timeline_tab.reload_recall_marks)
        for index, name in enumerate(TAB_NAMES):
            self.tabs.setTabToolTip(index, TAB_TOOLTIPS[name])
        self.tabs.currentChanged.connect(self._on_tabs_current_changed)

        page = QWidget()
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 8, 0, 0)
        pl.setSpacing(2)
        header = QVBoxLayout()
        header.setContentsMargins(12, 0, 12, 6)
        header.addWidget(self.title)
        header.addWidget(self.subtitle)
        header.addWidget(self.lineage_bar)
        pl.addLayout(header)
        pl.addWidget(self.tabs, 1)

        self._empty = empty_state(NO_DATABASE)
        self._stack = QStackedWidget()
        self._stack.addWidget(self._empty)
        self._stack.addWidget(page)
        # the file's damage, named once for every tab (a tab that meets it points here)
        self.damage_banner = DamageBanner()
        runner.store_damaged.connect(self.damage_banner.show_damage)
        runner.store_replaced.connect(self.damage_banner.hide)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.damage_banner)
        layout.addWidget(self._stack)

    def set_vector_store(self, target: str | None) -> None:
        """Read Memory's vectors from TARGET (a libSQL file or server; None: the database's own tables) in the
        Vectors tab, the Context view and the Timeline; what they show is read again when it changed."""
        if target == self.vectors_tab.vector_store:
            return
        self.vectors_tab.vector_store = self.context_view.vector_store = target
        self.timeline_tab.recall_marks.vector_store = target
        self.vectors_tab.reload()
        self.context_view.refresh_recall()
        self.timeline_tab.reload_recall_marks()

    def _add_trace_tabs(self, runner: TaskRunner, settings: QSettings | None) -> None:
        """Add the Trace and Turn context tabs and wire them to the search boxes, History, Messages and Timeline."""
        self.trace_panel, self.context_view = TracePanel(runner), TurnContextView(runner, settings=settings)
        self.tabs.addTab(self.trace_panel, TAB_TITLES["trace"])
        self.tabs.addTab(self.context_view, TAB_TITLES["context"])
        for box in (self.om_tab.trace_box, self.history_tab.trace_box):
            box.trace_requested.connect(self._on_trace_requested)
        self.trace_panel.generation_requested.connect(self._on_trace_panel_generation_requested)
        self.trace_panel.message_requested.connect(self._on_participants_message_activated)
        self.context_view.message_requested.connect(self._on_participants_message_activated)
        self.timeline_tab.time_selected.connect(self.context_view.show_time)

    def _on_trace_requested(self, text: str) -> None:
        self.set_tab("trace")
        self.trace_panel.trace(text)

    def _on_trace_panel_generation_requested(self, record_id: str, line: int, side: str) -> None:
        self.set_tab("history")
        self.history_tab.highlight_line(record_id, line, side)

    @property
    def detail(self) -> ThreadDetail | None:
        """Return the detail shown, or None."""
        return self._detail

    @property
    def thread_id(self) -> str | None:
        """Return the id of the thread shown, or None."""
        return self._detail.thread.id if self._detail else None

    def focus_proxy(self) -> QWidget:
        """Return the widget Tab lands on when entering this pane (the tab bar)."""
        return self.tabs.tabBar()

    def tabs_width(self) -> int:
        """Return the width (px) this pane needs to show every tab title without scroll buttons."""
        bar = self.tabs.tabBar()
        tabs = sum(bar.tabSizeHint(i).width() for i in range(bar.count()))
        # the tab widget's own margins and a little air (25 px: with ten tabs padded 4 px the panes keep the
        # widths nine tabs padded 7 px gave them, to the pixel: the Health tab's summaries need them)
        return tabs + 25

    def set_use_helper(self, use: bool) -> None:
        """Read message pages in the TaskRunner's helper process when USE (big databases)."""
        self.messages_tab.model.use_helper = use
        self.participants_tab.use_helper = use
        self.timeline_tab.use_helper = use
        self.trace_panel.use_helper = self.context_view.use_helper = use

    def set_tab(self, name: str) -> None:
        """Show tab NAME ("observations", "history" or "messages")."""
        self.tabs.setCurrentIndex(TAB_NAMES.index(name))

    def current_tab(self) -> str:
        """Return the name of the tab shown."""
        return TAB_NAMES[self.tabs.currentIndex()]

    def show_message(self, text: str) -> None:
        """Show TEXT instead of a thread (no database, no selection, thread gone)."""
        self._detail, self._refresh, self._stale = None, None, set()
        self._empty.setText(text)
        self._stack.setCurrentIndex(0)
        self.om_tab.clear()
        self.history_tab.clear()
        self.messages_tab.set_thread(None)
        self.participants_tab.set_thread(None)
        self.working_memory_tab.set_thread(None)
        self.lineage_bar.set_thread(None)
        self.timeline_tab.clear()
        self.trace_panel.set_thread(None)
        self.context_view.set_thread(None)
        self.health_tab.set_thread(None)
        self.vectors_tab.set_thread(None)

    def expect_refresh(self, changes: ChangeSet | None) -> None:
        """The next `show_detail` of the thread shown is a refresh after CHANGES (a live refresh's ChangeSet;
        None: anything may have changed, every tab is read again)."""
        changes = changes if changes is not None else ChangeSet.full_reload()
        self._refresh = changes if self._refresh is None else self._refresh | changes

    @property
    def stale_tabs(self) -> set[str]:
        """Return the tabs a live refresh left to re-read when they are shown (names of LAZY_TABS)."""
        return set(self._stale)

    def _refresh_lazy(self, names) -> None:
        """Re-read NAMES (LAZY_TABS) that the tab shown needs now; mark the others stale.

        The Speakers report needed by the Messages tab (its speaker filter) is not read again when the Messages
        tab's own refresh reads the whole thread: it is made from those rows once they are in (no second read
        of the thread's messages, only its new or changed messages parsed), else it is read."""
        self._stale |= set(names)
        current = self.current_tab()
        due = [n for n in LAZY_TABS if n in self._stale and current in LAZY_TABS[n]]
        model = self.messages_tab.model
        follow = ("messages" in due and "participants" in due and current == "messages" and not model.filtered
                  and model.thread_id is not None and model.thread_id == self.participants_tab.thread_id)
        for name in due:
            self._stale.discard(name)
            if name == "participants" and follow:
                self._speakers_follow = True
                continue
            {"messages": self.messages_tab, "participants": self.participants_tab,
             "working-memory": self.working_memory_tab, "vectors": self.vectors_tab}[name].refresh()

    def _on_messages_model_page_refreshed(self, whole: bool) -> None:
        if self._speakers_follow:
            self._speakers_follow = False
            report = self.messages_tab.model.speaker_report() if whole else None
            if report is None:
                self.participants_tab.refresh()
            else:
                self.participants_tab.show_report(report)

    def _on_messages_model_page_loaded(self, _loaded: int) -> None:
        # the refresh was superseded by another read of the rows (a page, a reset): they are as current
        self._on_messages_model_page_refreshed(self.messages_tab.model.holds_whole_thread())

    def _on_messages_model_load_failed(self, _error: str) -> None:
        self._on_messages_model_page_refreshed(False)

    def _on_tabs_current_changed(self, _index: int) -> None:
        if self._stale and self._detail is not None:
            self._refresh_lazy(())

    def show_loading(self, thread: Thread) -> None:
        """Start showing THREAD: its title at once, its messages loading; the rest waits for `show_detail`."""
        self._refresh, self._stale, self._speakers_follow = None, set(), False
        self.timeline_tab.leave_other_threads(thread.id)   # before this thread's reads queue for the helper
        if self._detail is None or self._detail.thread.id != thread.id:
            self._set_title(thread)
            self.subtitle.setText(f"thread {thread.id} · resource {thread.resource_id}\nLoading…")
        if self.lineage_bar.thread_id != thread.id:
            self.lineage_bar.set_thread(thread.id)
        self.messages_tab.set_thread(thread.id)
        self.participants_tab.set_thread(thread.id)
        self.working_memory_tab.set_thread(thread.id)
        self.trace_panel.set_thread(thread.id)
        self.context_view.set_thread(thread.id)
        if self.health_tab.thread_id != thread.id:
            self.health_tab.set_thread(thread.id)
        self.vectors_tab.set_thread(thread.id)

    def show_detail(self, detail: ThreadDetail) -> None:
        """Show DETAIL in the header and the tabs.

        A refresh of the thread shown after a live refresh's ChangeSet (`expect_refresh`) redraws what
        changed only: the OM and History tabs keep an unchanged record's log, chunks and generations,
        the lineage line is read again when a thread it may name changed, and the Messages, Speakers,
        Working memory and Vectors tabs are read again when shown (marked stale meanwhile; the Messages
        tab's changed rows only). Any other refresh reads every tab again (the Messages tab's rows were
        asked for by `ListingLoader.load_detail`).
        """
        previous, changes, self._refresh = self._detail, self._refresh, None
        same_thread = previous is not None and previous.thread.id == detail.thread.id
        live = same_thread and changes is not None and not changes.everything
        if live:
            tid = detail.thread.id
            if (changes.threads_created or changes.threads_deleted or changes.threads - {tid}
                    or _lineage_fields(previous.thread) != _lineage_fields(detail.thread)):
                self.lineage_bar.refresh()
            self._refresh_lazy(LAZY_TABS)
        elif same_thread:  # a refresh: every tab again
            self._stale = set()
            self.participants_tab.refresh()
            self.working_memory_tab.refresh()
            self.lineage_bar.refresh()
            self.vectors_tab.refresh()
        self._detail = detail
        if detail.damage:   # the status read met the damage (the load itself succeeded: the runner saw no error)
            self.damage_banner.show_damage(detail.damage)
        t = detail.thread
        self._set_title(t)
        if detail.orphan:
            self.title.setText(f"Record without a thread ({t.id})")
        first = [f"thread {t.id} (deleted: its OM record remains)" if detail.orphan else f"thread {t.id}",
                 f"resource {t.resource_id}",
                 f"{detail.message_count:,} message{'s' if detail.message_count != 1 else ''}"]
        record = detail.record
        om = (f"OM {record.scope} scope, generation {record.generation_count}" if record is not None
              else "no OM record")
        activity_ms, stale = last_activity(t)
        activity = fmt.local_time(ms_to_iso(activity_ms)) if activity_ms else fmt.local_time(t.updated_at)
        second = [om, f"last activity {activity}" + (f" (newest message; updatedAt {fmt.local_time(t.updated_at)} "
                                                       "is stale)" if stale else "")]
        self.subtitle.setText(" · ".join(first) + "\n" + " · ".join(second))
        self.subtitle.setToolTip(fmt.plain_tooltip(self.subtitle.text()))
        self._stack.setCurrentIndex(1)
        kept = previous if live else None   # the detail whose unchanged record the tabs may keep
        self.om_tab.show_detail(detail, previous=kept)
        self.history_tab.show_detail(detail, previous=kept)
        self.timeline_tab.show_detail(detail)
        self.context_view.set_record_present(detail.record is not None)

    def _on_participants_speaker_activated(self, key: str) -> None:
        self.messages_tab.filter_by_speaker(key)
        self.set_tab("messages")

    def _on_participants_message_activated(self, message_id: str) -> None:
        self.set_tab("messages")
        self.messages_tab.show_in_context(message_id)

    def _set_title(self, thread: Thread) -> None:
        """Show THREAD's title (elided when narrow) with the full title and the thread id as tooltip."""
        self.title.setText(thread.title or thread.id)
        self.title.setToolTip(fmt.plain_tooltip(f"{thread.title or '(no title)'}\nthread {thread.id}"))

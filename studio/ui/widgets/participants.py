"""Thread ▸ Participants: who speaks in a multi-user thread (from `<turn>` tags), their counts, and tag anomalies.

The report is read off the GUI thread (`studio.app.history.load_speakers`). Names, roles and
ids are decoded tag text and always shown as plain text. Activating a participant asks for their
messages (the Messages tab filtered by speaker); activating an anomaly asks for its message in context.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QPushButton, QSplitter, QVBoxLayout, QWidget

from studio.app import text as fmt
from studio.app.history import load_speakers
from studio.engine.speakers import SpeakerReport
from studio.ui.models.participants import AnomalyColumn, AnomalyModel, ParticipantColumn, ParticipantModel
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label, table_view

NO_SPEAKERS = ("No <turn> speaker tags in this thread. Multi-user threads wrap each user message in "
               '<turn author_id=".." author_name=".." functional_role="..">.')


class ParticipantsTab(QWidget):
    """The thread's participants (name, role, author_id, messages, tokens) and the anomalies of its tags."""

    report_loaded = Signal(object)       # the SpeakerReport of the thread shown
    speaker_activated = Signal(str)      # a speaker key: show this speaker's messages
    message_activated = Signal(str)      # a message id: show this message in context

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self._runner = runner
        self._thread_id: str | None = None
        self._report: SpeakerReport | None = None
        self._reads = 0   # reads started: a report shown meanwhile (`show_report`) drops the ones in flight
        self.use_helper = False

        self.summary = plain_label("", "muted", wrap=True)
        self.model = ParticipantModel(self)
        self.view = table_view()
        self.view.setModel(self.model)
        header = self.view.horizontalHeader()
        fm = self.fontMetrics()
        for col, sample in ((ParticipantColumn.ROLE, "functional_role"), (ParticipantColumn.AUTHOR_ID, "u_o\"brien__"),
                            (ParticipantColumn.MESSAGES, "Messages"), (ParticipantColumn.TOKENS, "000,000")):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, fm.horizontalAdvance(sample) + 24)
        header.setSectionResizeMode(ParticipantColumn.NAME, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        self.view.activated.connect(self._on_view_activated)
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_changed)
        self.messages_button = QPushButton("Show their messages")
        self.messages_button.setEnabled(False)
        self.messages_button.clicked.connect(self._on_messages_button_clicked)

        self.anomaly_heading = plain_label("Anomalies", "heading")
        self.anomaly_model = AnomalyModel(self)
        self.anomaly_view = table_view()
        self.anomaly_view.setModel(self.anomaly_model)
        ah = self.anomaly_view.horizontalHeader()
        ah.setSectionResizeMode(AnomalyColumn.PROBLEM, QHeaderView.ResizeMode.Stretch)
        ah.setSectionResizeMode(AnomalyColumn.MESSAGE, QHeaderView.ResizeMode.Interactive)
        ah.resizeSection(AnomalyColumn.MESSAGE, fm.horizontalAdvance("00000000-0000-0000-0000-000000000000") + 12)
        ah.setStretchLastSection(False)
        self.anomaly_view.activated.connect(self._on_anomaly_view_activated)
        self.anomaly_summary = plain_label("", "muted", wrap=True)

        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(self.summary, 1)
        row.addWidget(self.messages_button, 0, Qt.AlignmentFlag.AlignTop)
        tl.addLayout(row)
        tl.addWidget(self.view)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.anomaly_heading)
        bl.addWidget(self.anomaly_summary)
        bl.addWidget(self.anomaly_view)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(split)
        self._show(None)

    @property
    def thread_id(self) -> str | None:
        """Return the thread whose participants are shown or read (None: none)."""
        return self._thread_id

    @property
    def report(self) -> SpeakerReport | None:
        """Return the report shown (None while loading or without a thread)."""
        return self._report

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's participants (None: none), read in the background."""
        if thread_id == self._thread_id and self._report is not None:
            return
        self._thread_id = thread_id
        self._show(None)
        self.summary.setText("Reading the speakers…" if thread_id else "")
        self._load()

    def refresh(self) -> None:
        """Re-read the participants of the thread shown."""
        self._load()

    def show_report(self, report: SpeakerReport) -> None:
        """Show REPORT, the thread's participants made without a read (the Messages tab's rows after a live
        refresh: `MessageTableModel.speaker_report`); a read still in flight is dropped. Ignored for another
        thread; an equal report changes nothing."""
        if report.thread_id != self._thread_id or self._thread_id is None:
            return
        self._reads += 1
        if report != self._report:
            self._on_report_loaded(self._thread_id, report)

    def _load(self) -> None:
        thread_id = self._thread_id
        if thread_id is None:
            return
        self._reads += 1
        read = self._reads

        def on_done(report) -> None:
            if read == self._reads:
                self._on_report_loaded(thread_id, report)

        def on_error(exc: Exception) -> None:
            self._on_report_failed(thread_id, exc)

        if self.use_helper:
            self._runner.submit_call(load_speakers, thread_id, helper=True, on_done=on_done, on_error=on_error,
                                     key="participants")
        else:
            self._runner.submit(lambda store, _p, cancel: load_speakers(store, thread_id, cancel),
                                on_done=on_done, on_error=on_error, key="participants")

    def _on_report_loaded(self, thread_id: str, report: SpeakerReport) -> None:
        if thread_id != self._thread_id:
            return
        self._show(report)
        self.report_loaded.emit(report)

    def _on_report_failed(self, thread_id: str, exc: Exception) -> None:
        if thread_id == self._thread_id:
            self.summary.setText(f"The speakers could not be read: {fmt.read_failure(exc)}")

    def _show(self, report: SpeakerReport | None) -> None:
        self._report = report
        self.model.set_report(report)
        self.anomaly_model.set_report(report)
        self.messages_button.setEnabled(False)
        if report is None:
            self.summary.setText("")
            self.anomaly_summary.setText("")
            return
        tagged = sum(s.messages for s in report.speakers)
        n = len(report.speakers)
        if n == 0:
            self.summary.setText(NO_SPEAKERS + (f" {report.untagged_messages:,} user message"
                                                f"{'s' if report.untagged_messages != 1 else ''}." if
                                                report.untagged_messages else ""))
        else:
            self.summary.setText(
                f"{n} participant{'s' if n != 1 else ''} · {tagged:,} tagged message{'s' if tagged != 1 else ''} · "
                f"{report.untagged_messages:,} untagged user message{'s' if report.untagged_messages != 1 else ''} · "
                f"{report.messages:,} messages in the thread. Double-click a participant to see their messages.")
        k = len(report.anomalies)
        self.anomaly_summary.setText("None: every tag is well formed and each author_id has one name and role."
                                     if not k else f"{k} found. Double-click one to see its message in context.")
        if n:
            self.view.setCurrentIndex(self.model.index(0, 0))

    def _on_view_current_changed(self, current, _previous) -> None:
        self.messages_button.setEnabled(current.isValid())

    def _on_view_activated(self, index) -> None:
        sp = self.model.speaker(index.row())
        if sp is not None:
            self.speaker_activated.emit(sp.key)

    def _on_messages_button_clicked(self) -> None:
        self._on_view_activated(self.view.currentIndex())

    def _on_anomaly_view_activated(self, index) -> None:
        a = self.anomaly_model.anomaly(index.row())
        if a is not None and a.message_id:
            self.message_activated.emit(a.message_id)

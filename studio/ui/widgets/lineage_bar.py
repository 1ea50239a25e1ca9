"""The thread header's clone line: "Clone of SOURCE at message N of M, cloned …", its clones, its lineage.

Each thread named is a flat button (plain text, elided, the full title and id in its tooltip) that emits
`thread_activated(id)`; clones and the clone history are menus when there are several. Hidden for a
thread that is neither a clone nor the source of one. Reads `studio.app.lineage.load_lineage` on the
database worker.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QSizePolicy, QToolButton, QWidget

from studio.app import text as fmt
from studio.app.lineage import Lineage, ThreadLink, load_lineage
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel, set_role

#: Characters of a title shown on a link button before it is elided (its tooltip has the whole title).
LINK_CHARS = 40


def link_text(link: ThreadLink) -> str:
    """The button text of a thread named in the lineage: its title (or id), elided; "(deleted)" when gone.

    Every "&" is doubled: Qt shows it as one "&" on a button or menu item instead of underlining the next
    character.
    """
    name = link.title or link.id
    if len(name) > LINK_CHARS:
        name = name[:LINK_CHARS - 1] + "…"
    name = name.replace("&", "&&")   # a button's or menu item's "&" would be taken for a shortcut mark
    return name if link.exists else f"{name} (deleted)"


def _tooltip(link: ThreadLink) -> str:
    title = link.title or "(no title)"
    state = "" if link.exists else "\nthis thread no longer exists"
    return fmt.plain_tooltip(f"{title}\nthread {link.id}{state}")


class LineageBar(QWidget):
    """One line under the thread's title naming its clone source, its clones and its clone history."""

    thread_activated = Signal(str)

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self._runner = runner
        self._thread_id: str | None = None
        self.lineage: Lineage | None = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        self.prefix = QLabel("Clone of")
        self.source_button = self._link_button()
        self.source_button.clicked.connect(self._on_source_clicked)
        self.at_label = ElidedLabel()   # shrinks and elides before the buttons do
        self.at_label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.clones_button = self._link_button(menu=True)
        self.history_button = self._link_button(menu=True)
        for label in (self.prefix, self.at_label):
            label.setTextFormat(Qt.TextFormat.PlainText)
            set_role(label, "muted")
        for w in (self.prefix, self.source_button, self.at_label, self.clones_button, self.history_button):
            layout.addWidget(w)
        layout.addStretch(1)
        self.hide()

    def _link_button(self, *, menu: bool = False) -> QToolButton:
        button = QToolButton()
        button.setAutoRaise(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        button.setStyleSheet("QToolButton { color: palette(link); }")
        if menu:
            button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
            button.setMenu(QMenu(button))
        return button

    @property
    def thread_id(self) -> str | None:
        """The thread whose lineage is shown (or being read), or None."""
        return self._thread_id

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's lineage (read in the background); hidden until read, and for None."""
        self._thread_id = thread_id
        self.show_lineage(None)
        if thread_id is not None:
            self.refresh()

    def refresh(self) -> None:
        """Re-read the lineage of the thread shown."""
        thread_id = self._thread_id
        if thread_id is None:
            return
        self._runner.submit(lambda store, _p, _c: load_lineage(store, thread_id),
                            on_done=lambda lineage: self._on_loaded(thread_id, lineage),
                            on_error=lambda _exc: self._on_loaded(thread_id, None), key="lineage")

    def _on_loaded(self, thread_id: str, lineage: Lineage | None) -> None:
        if thread_id == self._thread_id:
            self.show_lineage(lineage)

    def show_lineage(self, lineage: Lineage | None) -> None:
        """Fill the line from LINEAGE (None, or a thread that is neither clone nor source: hide it)."""
        self.lineage = lineage
        if lineage is None or not (lineage.is_clone or lineage.clones):
            self.hide()
            return
        clone = lineage.is_clone
        self.prefix.setVisible(clone)
        self.source_button.setVisible(clone)
        self.at_label.setVisible(clone)
        if clone:
            source = lineage.source
            self.source_button.setText(link_text(source) if source else "an unknown thread")
            self.source_button.setToolTip(_tooltip(source) if source else
                                          fmt.plain_tooltip("metadata.clone names no sourceThreadId"))
            self.source_button.setEnabled(bool(source and source.exists))
            self.at_label.setText(self._at_text(lineage))
            self.at_label.setToolTip(fmt.plain_tooltip(self.at_label.text()))
        self._fill_menu(self.clones_button, lineage.clones,
                        f"{len(lineage.clones)} clone{'s' if len(lineage.clones) != 1 else ''}")
        chain = lineage.history if len(lineage.history) > 1 else []
        self._fill_menu(self.history_button, chain,
                        f"Lineage: {len(chain)} threads" + (" (a cycle)" if lineage.cycle else ""),
                        current=lineage.thread.id)
        self.show()

    @staticmethod
    def _at_text(lineage: Lineage) -> str:
        parts = []
        if lineage.last_message_position is not None:
            parts.append(f"at message {lineage.last_message_position:,} of {lineage.source_message_count:,}")
        elif lineage.last_message_id:
            parts.append("after a message no longer in the source")
        if lineage.cloned_at:
            parts.append(f"cloned {fmt.local_time(lineage.cloned_at)}")
        return ", ".join(parts)

    def _fill_menu(self, button: QToolButton, links: list[ThreadLink], text: str, *, current: str | None = None):
        menu = button.menu()
        menu.clear()
        button.setVisible(bool(links))
        button.setText(text)
        for link in links:
            label = link_text(link) + ("  (this thread)" if link.id == current else "")
            action = menu.addAction(label)   # QAction text is plain text
            action.setToolTip(_tooltip(link))
            action.setEnabled(link.exists and link.id != current)
            action.triggered.connect(lambda _checked=False, tid=link.id: self.thread_activated.emit(tid))
        menu.setToolTipsVisible(True)

    def _on_source_clicked(self) -> None:
        if self.lineage is not None and self.lineage.source is not None:
            self.thread_activated.emit(self.lineage.source.id)

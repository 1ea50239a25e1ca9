"""The studio's `Interaction`: what it asks and tells the user, as message boxes of plain text.

`studio.app.write_protocol.Interaction` is the one interface; `QtInteraction` is its Qt face (the
command line's is `studio.cli.interaction.TerminalInteraction`, tests use `tests/scripted_interaction.
ScriptedInteraction`). Each main window holds one in its `WindowContext`, over the window: it tells
the user what failed (`report`), and each dialog that writes asks the protocol's questions through
it, over the dialog (`over`). The questions are modal boxes asked on the GUI thread between the
protocol's steps; a failure report is a window-modal box opened without blocking.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from studio.app.write_protocol import Interaction
from studio.ui.message_dialog import MessageDialog

__all__ = ["QtInteraction"]


class QtInteraction(Interaction):
    """Ask and tell the user with message boxes over PARENT (plain text; the safe answer is the default).

    INTERACTIVE False (a window nobody uses: screenshots, which report on stderr) opens no failure
    box; such a window opens no dialog that writes, so nothing asks it a question.
    """

    def __init__(self, parent: QWidget | None = None, *, interactive: bool = True):
        self._parent = parent
        self.interactive = interactive

    @property
    def parent(self) -> QWidget | None:
        """The widget the boxes are shown over (a main window, or a dialog that writes)."""
        return self._parent

    def over(self, parent: QWidget) -> QtInteraction:
        """Return this interaction with its boxes over PARENT (a dialog asks over itself, not over its window)."""
        return QtInteraction(parent, interactive=self.interactive)

    @staticmethod
    def for_dialog(dialog: QWidget, window_interaction: QtInteraction | None) -> QtInteraction:
        """Return WINDOW_INTERACTION over DIALOG; a dialog made without one (a test) asks with boxes over itself."""
        return window_interaction.over(dialog) if window_interaction is not None else QtInteraction(dialog)

    # -- the write protocol's questions (studio.app.write_protocol.Interaction) ---------------------------

    def confirm(self, title: str, text: str) -> bool:
        """Yes / Cancel (Cancel is the default); True on Yes."""
        box = MessageDialog(QMessageBox.Icon.Question, title, text, self._parent)
        yes = box.add_button(QMessageBox.StandardButton.Yes)
        box.setDefaultButton(box.add_button(QMessageBox.StandardButton.Cancel))
        box.exec()
        return box.clickedButton() is yes

    def ask_wait_or_force(self, text: str) -> str:
        """Wait (the default) / Force / Cancel: "wait", "force" or "cancel"."""
        box = MessageDialog(QMessageBox.Icon.Warning, "The agent is active", text, self._parent)
        wait = box.add_button("Wait", QMessageBox.ButtonRole.AcceptRole)
        force = box.add_button("Force", QMessageBox.ButtonRole.DestructiveRole)
        box.add_button(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(wait)
        box.exec()
        return "wait" if box.clickedButton() is wait else "force" if box.clickedButton() is force else "cancel"

    def report_overtaken(self, findings, text: str) -> str:
        """Repair (the default) / Use the agent's version / Leave it: "repair", "revert" or "leave"."""
        box = MessageDialog(QMessageBox.Icon.Warning, "A running turn overtook the write", text, self._parent)
        repair = box.add_button("Repair", QMessageBox.ButtonRole.AcceptRole)
        revert = box.add_button("Use the agent's version", QMessageBox.ButtonRole.DestructiveRole)
        box.add_button("Leave it", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(repair)
        box.exec()
        return "repair" if box.clickedButton() is repair else "revert" if box.clickedButton() is revert else "leave"

    # -- what failed ---------------------------------------------------------------------------------------

    def report(self, title: str, message: str, *,
               icon: QMessageBox.Icon = QMessageBox.Icon.Critical) -> MessageDialog | None:
        """Show MESSAGE (plain text) under TITLE in a window-modal box, opened without blocking; return the box.

        None when not interactive (no box is shown).
        """
        if not self.interactive:
            return None
        box = MessageDialog(icon, title, message, self._parent)
        box.setDefaultButton(box.add_button(QMessageBox.StandardButton.Ok))
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.open()
        return box

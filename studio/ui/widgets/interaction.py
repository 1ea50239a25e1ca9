"""The studio's `Interaction`: the write protocol's questions as message boxes (plain text, a safe default).

`studio.app.write_protocol.Interaction` is the one interface; this is its Qt face (the command
line's is `studio.cli.interaction.TerminalInteraction`, tests use a scripted one). Each question is
a modal QMessageBox over PARENT, asked on the GUI thread between the protocol's steps.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from studio.app.write_protocol import Interaction


def ask_yes_cancel(parent: QWidget | None, title: str, text: str) -> bool:
    """Ask TITLE / TEXT (plain text) with Yes / Cancel (Cancel is the default); return True on Yes."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text,
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    return box.exec() == QMessageBox.StandardButton.Yes


class QtInteraction(Interaction):
    """Ask with message boxes over PARENT (a dialog that writes)."""

    def __init__(self, parent: QWidget | None = None):
        self._parent = parent

    def confirm(self, title: str, text: str) -> bool:
        """Yes / Cancel (Cancel is the default); True on Yes."""
        return ask_yes_cancel(self._parent, title, text)

    def ask_wait_or_force(self, text: str) -> str:
        """Wait (the default) / Force / Cancel: "wait", "force" or "cancel"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "The agent is active", text, QMessageBox.StandardButton.NoButton,
                          self._parent)
        box.setTextFormat(Qt.TextFormat.PlainText)
        wait = box.addButton("Wait", QMessageBox.ButtonRole.AcceptRole)
        force = box.addButton("Force", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(wait)
        box.exec()
        return "wait" if box.clickedButton() is wait else "force" if box.clickedButton() is force else "cancel"

    def report_overtaken(self, findings, text: str) -> str:
        """Repair (the default) / Use the agent's version / Leave it: "repair", "revert" or "leave"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "A running turn overtook the write", text,
                          QMessageBox.StandardButton.NoButton, self._parent)
        box.setTextFormat(Qt.TextFormat.PlainText)
        repair = box.addButton("Repair", QMessageBox.ButtonRole.AcceptRole)
        revert = box.addButton("Use the agent's version", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Leave it", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(repair)
        box.exec()
        return "repair" if box.clickedButton() is repair else "revert" if box.clickedButton() is revert else "leave"

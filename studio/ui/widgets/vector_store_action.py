"""File ▸ Vector Store…: read Memory's vectors from another database than the one open.

Memory's `vector` (LibSQLVector) may live in another libSQL file or server than its `storage`. The
target given here is attached for the open database (the Vectors tab, the Context view's semantic
recall and the Timeline's recall marks read their vectors from it, in the database worker and the
helper process alike: each read carries it) and remembered per database, both without secrets
(`strip_secrets`: a server's token comes from the environment or the keyring on the next open).
Emptying the box detaches it: the database's own vector tables are read again.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QInputDialog, QLineEdit

from studio.store.target import strip_secrets

#: The settings key of a database's vector store (the database named without secrets; "/" would nest groups).
SETTINGS_KEY = "vector-store/{}"
PROMPT = ("Memory's vector store, when it is not this database: a libSQL file or server URL holding LibSQLVector's "
          "memory_messages tables (PgVector is not read). Empty: this database's own.")


def _key(database: str) -> str:
    return SETTINGS_KEY.format(strip_secrets(database).replace("/", "|"))


class VectorStoreController(QObject):
    """The action and its state for one main window. WINDOW: the MainWindow (its `database_opened` signal, its
    thread view, its settings)."""

    def __init__(self, window, settings):
        super().__init__(window)
        from PySide6.QtGui import QAction

        self._window = window
        self._settings = settings
        self._database: str | None = None
        self.target: str | None = None
        self.action = QAction("&Vector Store…", window, triggered=self.ask)
        self.action.setToolTip("Read Memory's vectors (semantic recall) from another libSQL file or server")
        self.action.setEnabled(False)
        window.database_opened.connect(self._on_database_opened)

    def ask(self, _checked: bool = False) -> None:
        """Ask for the vector store of the open database (the current one filled in) and attach what is given."""
        text, ok = QInputDialog.getText(self._window, "Vector store", PROMPT, QLineEdit.EchoMode.Normal,
                                        self.target or "")
        if ok:
            self.attach(text.strip() or None)

    def attach(self, target: str | None) -> None:
        """Read the open database's vectors from TARGET (None: its own) and remember it for this database."""
        self.target = target or None
        if self._database is not None and self._settings is not None:
            if self.target is None:
                self._settings.remove(_key(self._database))
            else:
                self._settings.setValue(_key(self._database), strip_secrets(self.target))
        self._window.thread_view.set_vector_store(self.target)

    def _on_database_opened(self, path: str) -> None:
        self._database = path
        self.action.setEnabled(True)
        saved = self._settings.value(_key(path)) if self._settings is not None else None
        self.target = saved if isinstance(saved, str) and saved else None
        self._window.thread_view.set_vector_store(self.target)

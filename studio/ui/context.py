"""What the studio's windows share, passed explicitly: the application's `AppContext` and each window's `WindowContext`.

`AppContext` is made once by `studio.ui.app.run_studio` (or a test): the settings and the TaskRunner.
A main window makes its own `WindowContext` from it and hands it to each of its parts (the listing
loader, the dialogs, the history actions, Connect, Health): no part reads the window's privates,
and there is no global application object to look them up in. The window's `QtInteraction`
(`studio.ui.interaction`) is in it: the one thing that asks or tells the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QWidget

from studio.store.target import absolute_target, strip_secrets
from studio.ui.interaction import QtInteraction
from studio.ui.tasks import TaskRunner

if TYPE_CHECKING:
    from studio.store.writes import WriteSession

MAX_RECENT_FILES = 10


@dataclass
class AppContext:
    """What the studio's windows share, passed explicitly: settings (recent files) and the TaskRunner.

    INTERACTIVE False (screenshots): errors go to stderr instead of message boxes, recent files are left alone.
    """

    settings: QSettings
    runner: TaskRunner = field(default_factory=TaskRunner)
    interactive: bool = True

    def recent_files(self) -> list[str]:
        """Return the recently opened databases, most recent first."""
        value = self.settings.value("recentFiles", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or []) if v]

    def add_recent_file(self, path: str) -> None:
        """Put PATH first in the recent files (at most MAX_RECENT_FILES), stored absolute.

        A relative path would name another file (or none) when the studio is started from
        another working directory, so a plain path is made absolute (symlinks are kept as the
        user named them); `file:` URLs are stored as given, server URLs without their password or
        token (`strip_secrets`: a reopen finds it in the environment, ~/.pgpass or the keyring, or asks).
        """
        path = strip_secrets(absolute_target(path))
        files = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("recentFiles", files[:MAX_RECENT_FILES])
        self.settings.sync()

    def clear_recent_files(self) -> None:
        """Forget the recent files."""
        self.settings.setValue("recentFiles", [])
        self.settings.sync()


@dataclass(frozen=True)
class WindowContext:
    """What one main window's parts share, handed to each part when the window makes it.

    RUNNER runs every read and write off the GUI thread; SETTINGS keep what the dialogs remember
    (quiet period, models); SESSION is the window's `studio.store.writes.WriteSession` (routes the row
    backup each write saves, remembers the last per store for Undo Last Write); INTERACTION (over
    the window) tells the user what failed and, over each dialog that writes (`interaction.over`),
    asks the write protocol's questions.
    """

    runner: TaskRunner
    settings: QSettings
    session: WriteSession
    interaction: QtInteraction

    @property
    def interactive(self) -> bool:
        """Return False for a window nobody uses (screenshots): no boxes, no dialogs, no remembered layout."""
        return self.interaction.interactive

    @classmethod
    def for_window(cls, app: AppContext, window: QWidget) -> WindowContext:
        """Return WINDOW's context on APP's runner and settings, with a write session and an interaction of its own."""
        from studio.store.writes import WriteSession

        return cls(runner=app.runner, settings=app.settings, session=WriteSession(),
                   interaction=QtInteraction(window, interactive=app.interactive))

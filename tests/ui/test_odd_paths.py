"""The studio opens a file whose name is not UTF-8 (Linux file names are bytes) and shows it with U+FFFD."""

from __future__ import annotations

import os

from tests.cli.test_odd_paths import latin1_copy, long_copy


def test_the_studio_opens_a_non_utf8_name(studio, studio_ctx, tmp_path):
    path = latin1_copy(tmp_path)
    window = studio(path)
    assert window.last_error is None or window.last_error == ""
    assert window.thread_model.rowCount() == 1
    assert window.current_thread_id == "tools-1"
    assert window.windowTitle() == "Memory Studio — caf\ufffd.db"
    assert os.fsencode(window.database_path).endswith(b"/caf\xe9.db")   # the real bytes are kept


def test_the_studio_opens_a_1255_character_path(studio, studio_ctx, tmp_path):
    path = long_copy(tmp_path, "support")
    window = studio(path)
    assert window.thread_model.rowCount() == 6     # support.db's six threads
    assert window.database_path == str(path)
    assert window.windowTitle() == "Memory Studio — support.db"


def test_an_error_naming_a_long_path_fits_a_1024x700_screen(studio, studio_ctx, tmp_path, monkeypatch):
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QDialogButtonBox

    import studio.ui.message_dialog as message_dialog

    screen = QRect(0, 0, 1024, 700)
    monkeypatch.setattr(message_dialog, "available_area", lambda _widget=None: screen)
    path = long_copy(tmp_path, "support")
    bad = path.with_name("notes.db")
    bad.write_text("not a database\n" * 10)
    window = studio(path)
    window.open_database(bad)
    studio_ctx.runner.wait_idle()
    box = window.error_box
    assert box is not None and box.isVisible()
    assert str(bad) in box.text()                  # the whole message is kept (Copy copies it)
    hint = box.sizeHint()
    assert hint.width() <= 1024 and hint.height() <= 700
    assert box.width() <= 1024 and box.height() <= 700
    shown = box.view.toPlainText()
    assert "…" in shown and str(bad) not in shown and "(its first bytes are not the SQLite header)" in shown
    ok = box.buttons.button(QDialogButtonBox.StandardButton.Ok)
    corner = ok.mapTo(box, ok.rect().bottomRight())
    assert ok.isVisible() and box.rect().contains(corner)
    box.close()

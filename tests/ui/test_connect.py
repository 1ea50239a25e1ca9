"""File ▸ Connect… without a server: the dialog's fields, a dead server, secrets kept out of settings and titles.

The same dialog against a real PostgreSQL (thread count, wrong password, keyring, Open Recent) is in
tests/server/test_pg_connect.py.
"""

from __future__ import annotations

import socket

from PySide6.QtGui import QKeySequence

from studio.store import credentials as cred
from studio.store import target as tg

SECRET = "hunter2-not-shown"


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connect_is_in_the_file_menu_after_open_with_ctrl_l(studio):
    window = studio()
    actions = [a for a in window.menuBar().actions()[0].menu().actions() if not a.isSeparator()]
    assert [a.text() for a in actions[:3]] == ["&Open…", "&Connect…", "Open &Recent"]
    assert window.connect_controller.action.shortcut() == QKeySequence("Ctrl+L")
    assert ("Ctrl+L", "Connect to a PostgreSQL or libSQL server") in window.shortcut_list()
    keys = [k for k, _ in window.shortcut_list() if k]
    assert len(keys) == len(set(keys)), "two actions share a shortcut"


def test_a_secret_typed_in_the_url_moves_into_the_hidden_field(studio, memory_keyring):
    window = studio()
    dialog = window.connect_controller.show_dialog()
    dialog.url_edit.setText(f"postgresql://alice:{SECRET}@db.example:6000/mem?schema=support&sslmode=disable")
    dialog.url_edit.editingFinished.emit()
    assert dialog.url_edit.text() == "postgresql://alice@db.example:6000/mem?sslmode=disable"
    assert dialog.schema_edit.text() == "support" and dialog.schema_edit.isEnabled()
    assert dialog.secret_edit.text() == SECRET
    assert dialog.secret_edit.echoMode() == dialog.secret_edit.EchoMode.Password
    assert dialog.secret_edit.displayText() != SECRET
    assert dialog.target() == "postgresql://alice@db.example:6000/mem?sslmode=disable&schema=support"
    dialog.url_edit.setText("libsql://db-org.turso.io?authToken=tok-123")
    dialog.url_edit.editingFinished.emit()
    assert dialog.url_edit.text() == "libsql://db-org.turso.io" and dialog.secret_edit.text() == "tok-123"
    assert not dialog.schema_edit.isEnabled() and dialog.target() == "libsql://db-org.turso.io"
    assert dialog.remember_check.isEnabled()


def test_without_a_keyring_remember_is_off_and_says_why(studio, no_keyring):
    dialog = studio().connect_controller.show_dialog()
    assert not dialog.remember_check.isEnabled()
    assert "No system keyring" in dialog.remember_check.toolTip()


def test_a_local_path_is_sent_to_file_open(studio):
    dialog = studio().connect_controller.show_dialog()
    dialog.url_edit.setText("/tmp/memory.db")
    dialog.connect_button.click()
    assert dialog.isVisible() and "File ▸ Open" in dialog.result_label.text()


def test_test_connection_on_a_dead_server_says_so_without_the_password(studio, studio_ctx, qtbot):
    window = studio()
    dialog = window.connect_controller.show_dialog()
    dialog.set_target(f"postgresql://postgres:{SECRET}@127.0.0.1:{closed_port()}/postgres")
    with qtbot.waitSignal(dialog.checked, timeout=30_000) as signal:
        dialog.test_button.click()
    check = signal.args[0]
    assert check.outcome == "unreachable" and check.sentence.startswith("The server is down or unreachable")
    assert SECRET not in dialog.result_label.text() and SECRET not in dialog.url_edit.text()
    cred.forget_for_session(dialog.target())


def test_opening_a_dead_server_is_one_message_and_keeps_secrets_out(studio, studio_ctx, qtbot, tmp_path):
    window = studio()
    url = f"postgresql://postgres:{SECRET}@127.0.0.1:{closed_port()}/postgres?schema=support"
    with qtbot.waitSignal(window.database_failed, timeout=30_000) as failed:
        window.open_database(url)
        assert SECRET not in window.statusBar().currentMessage()
    message = failed.args[0]
    assert "nothing accepts connections at 127.0.0.1:" in message and "postgres:***@127.0.0.1" in message
    assert SECRET not in message and "Traceback" not in message
    assert window.database_path is None and SECRET not in window.windowTitle()
    studio_ctx.add_recent_file(url)   # what Open Recent would keep of it
    studio_ctx.settings.sync()
    settings_text = (tmp_path / "settings.ini").read_text(encoding="utf-8")
    assert SECRET not in settings_text and "postgres@127.0.0.1" in settings_text
    assert studio_ctx.recent_files()[0] == tg.strip_secrets(url)


def test_a_server_that_never_answers_ends_the_test_at_the_dialogs_timeout(studio, studio_ctx, qtbot, monkeypatch):
    """A listener that accepts TCP and never speaks (a hung server): the dialog gives up at its own timeout
    (shortened here) with a sentence, and the late answer of the store's connect timeout is dropped."""
    from studio.ui.widgets import connect_dialog

    monkeypatch.setattr(connect_dialog, "TEST_TIMEOUT_MS", 300)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        dialog = studio().connect_controller.show_dialog()
        dialog.set_target(f"postgresql://postgres@127.0.0.1:{listener.getsockname()[1]}/postgres")
        with qtbot.waitSignal(dialog.checked, timeout=30_000) as signal:
            dialog.test_button.click()
        check = signal.args[0]
        assert check.outcome == "unreachable"
        assert check.sentence == ("No answer within 0.3 s: the server is down, or a firewall drops the connection.")
        assert dialog.test_button.isEnabled()
        with qtbot.assertNotEmitted(dialog.checked, wait=100):
            assert studio_ctx.runner.wait_idle(60)   # the store's own connect timeout ends the late test
    assert dialog.result_label.text() == check.sentence

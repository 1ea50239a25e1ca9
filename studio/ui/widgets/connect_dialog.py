"""File ▸ Connect…: open a Mastra memory on a server (PostgreSQL, libSQL server) with its secret kept safe.

`ConnectController` is a part of the main window, made with its `WindowContext`: it owns File ▸
Connect… (Ctrl+L; the window puts it after Open…), and when opening a server URL fails for want of
the right password or token (a reconnect from Open Recent finds none in the environment or the
keyring), it asks for it in this dialog.

The dialog takes a URL (`postgresql://…`, `libsql://…`, `https://…`, `http://127.0.0.1:PORT`), a
schema for PostgreSQL (Mastra's PostgresStore `schemaName`, sent as `?schema=`) and the password or
token. The secret field never shows a secret in clear and is never filled from the keyring; a secret
typed into the URL moves into it. *Test connection* opens the target in the background exactly as
Connect will (`studio.store.probe.check_connection`, bounded by TEST_TIMEOUT_MS) and says in one
sentence what happened. *Connect* opens it in the window; with "Remember in the system keyring" on,
the secret is saved to the keyring once the open succeeded. Secrets live only in this process's
memory (`studio.store.credentials.remember_for_session`) and the keyring: never in QSettings, the
window title, logs or screenshots (the URL is shown redacted).
"""

from __future__ import annotations

import urllib.parse

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from studio.store import credentials as cred
from studio.store import target as tg
from studio.store.probe import ConnectionCheck, check_connection, classify_failure
from studio.ui.context import WindowContext
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label, set_role

#: How long Test connection waits for an answer (ms) before saying the server does not answer; the
#: store's own connect timeout (PostgreSQL: 10 s) normally answers first.
TEST_TIMEOUT_MS = 20_000
TEST_KEY = "connect-test"
SOURCE_KEY = "connect-secret-source"
URL_PLACEHOLDER = ("postgresql://user@host:5432/db   ·   libsql://db-org.turso.io   ·   http://127.0.0.1:8080   ·   "
                   "mongodb://user@host:27017/db")
NO_KEYRING = " There is no system keyring here: a typed secret is used for this session only."
INTRO = ("Open a Mastra memory kept on a server: PostgreSQL (@mastra/pg), a libSQL server (Turso), a local "
         "sqld or MongoDB (@mastra/mongodb, the database in the URL's path). Browsing never changes it; "
         "only a write action does, once you confirm it.")


def compose_target(url: str, schema: str) -> str:
    """Return URL without secrets, with `?schema=SCHEMA` set for a PostgreSQL URL (replacing one in URL).

    An empty SCHEMA keeps the URL's own `schema` (or Mastra's default, `public`).
    """
    url = tg.strip_secrets(url.strip())
    schema = schema.strip()
    if not schema or tg.target_kind(url) != tg.POSTGRESQL:
        return url
    base, _, query = url.partition("?")
    pairs = [(k, v) for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True)
             if k not in ("schema", "schemaName")]
    pairs.append(("schema", schema))
    return f"{base}?{urllib.parse.urlencode(pairs, safe='*/:')}"


def _password_places(url: str) -> str:
    """Where a password of URL's kind is looked up when none is typed (the secret field's hint)."""
    if tg.target_kind(url) == tg.MONGODB:
        return "$MONGODB_PASSWORD or the keyring"
    return "$PGPASSWORD, ~/.pgpass or the keyring"


def is_secret_failure(outcome: str) -> bool:
    """True for the outcomes the user fixes by typing the password or token ("auth", "no-secret")."""
    return outcome in ("auth", "no-secret")


class ConnectDialog(QDialog):
    """File ▸ Connect…: URL, schema, password / token, Test connection, Connect.

    `connect_requested(target)` carries the URL to open, without secrets (they are held in memory
    for this session, see the module docstring); `checked(ConnectionCheck)` fires when a test ends.
    """

    connect_requested = Signal(str)
    checked = Signal(object)

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self._runner = runner
        self._testing = False
        self._round = 0
        self.pending_save: tuple[str, str] | None = None   # (target, secret) to save once the open succeeds
        self.setWindowTitle("Connect to a Server")
        self.setModal(False)

        self.url_edit = QLineEdit()
        self.url_edit.setPlaceholderText(URL_PLACEHOLDER)
        self.url_edit.setClearButtonEnabled(True)
        self.url_edit.setToolTip("The server's URL. A password or ?authToken= typed here moves into the field "
                                 "below, so the URL never shows it")
        self.schema_edit = QLineEdit()
        self.schema_edit.setPlaceholderText("public")
        self.schema_edit.setToolTip("PostgreSQL only: the schema Mastra's PostgresStore uses (schemaName; "
                                    "default public)")
        self.secret_edit = QLineEdit()
        self.secret_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.secret_edit.setContextMenuPolicy(Qt.ContextMenuPolicy.NoContextMenu)
        self.remember_check = QCheckBox("Remember in the system keyring")
        self.forget_button = QPushButton("Forget Saved")
        self.forget_button.setToolTip("Delete this server's saved secret from the system keyring")
        self.forget_button.setEnabled(False)
        self.source_label = plain_label("", "muted", wrap=True, selectable=False)
        self.source_label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
        form.addRow("&URL:", self.url_edit)
        form.addRow("&Schema:", self.schema_edit)
        self.secret_label_text = "&Password:"
        form.addRow(self.secret_label_text, self.secret_edit)
        self._form = form
        keep = QHBoxLayout()
        keep.addWidget(self.remember_check)
        keep.addStretch(1)
        keep.addWidget(self.forget_button)
        form.addRow("", keep)
        form.addRow("", self.source_label)

        self.result_label = plain_label("", "muted", wrap=True)
        self.result_label.hide()
        self.test_button = QPushButton("&Test Connection")
        self.connect_button = QPushButton("&Connect")
        self.connect_button.setDefault(True)
        buttons = QDialogButtonBox()
        buttons.addButton(self.test_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.connect_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.rejected.connect(self.reject)
        self.test_button.clicked.connect(self.test_connection)
        self.connect_button.clicked.connect(self.connect_now)
        self.forget_button.clicked.connect(self._on_forget_button_clicked)
        self.url_edit.editingFinished.connect(self._on_url_edit_editing_finished)
        self.url_edit.textChanged.connect(self._on_url_edit_text_changed)

        layout = QVBoxLayout(self)
        layout.addWidget(plain_label(INTRO, "muted", wrap=True, selectable=False))
        layout.addLayout(form)
        layout.addWidget(self.result_label)
        layout.addStretch(1)
        layout.addWidget(buttons)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.keyring_name = cred.keyring_backend()
        if self.keyring_name is None:
            self.remember_check.setEnabled(False)
            self.remember_check.setToolTip("No system keyring is available here: a typed secret is used for this "
                                           "session only (or set $PGPASSWORD / $LIBSQL_AUTH_TOKEN, ~/.pgpass)")
        else:
            self.remember_check.setToolTip(f"Save the secret in {self.keyring_name} (service "
                                           f"{cred.KEYRING_SERVICE}) once the connection works")
        self.resize(640, 300)
        self._update_fields()

    # -- public API ------------------------------------------------------------------------

    def set_target(self, url: str, message: str | None = None) -> None:
        """Fill the form from URL (its secret moves to the secret field); show MESSAGE (e.g. why we ask)."""
        self.url_edit.setText(url)
        self._on_url_edit_editing_finished()
        if message:
            self._show_result(message, ok=False)
        self.secret_edit.setFocus()

    def target(self) -> str:
        """Return the URL to open, without secrets, with the schema field applied."""
        return compose_target(self.url_edit.text(), self.schema_edit.text())

    def test_connection(self) -> None:
        """Open the target in the background as Connect would, and say what happened (`checked` fires)."""
        target = self.target()
        if not self._valid(target):
            return
        self._stash_secret(target)
        self._round += 1
        current = self._round
        self._testing = True
        self.test_button.setEnabled(False)
        self._show_result(f"Testing {tg.redact_url(target)}…", ok=None)
        self.timer.start(TEST_TIMEOUT_MS)
        self._runner.submit_pooled(lambda _p, _c: check_connection(target), key=TEST_KEY,
                                   on_done=lambda check: self._on_checked(current, target, check),
                                   on_error=lambda exc: self._on_checked(current, target,
                                                                         classify_failure(target, exc)))

    def connect_now(self) -> None:
        """Connect: hold the typed secret for the session, note it for the keyring, and ask the window to open."""
        target = self.target()
        if not self._valid(target):
            return
        secret = self._stash_secret(target)
        self.pending_save = (target, secret) if secret and self.remember_check.isChecked() else None
        self.secret_edit.clear()
        self.connect_requested.emit(target)
        self.accept()

    # -- internals -------------------------------------------------------------------------

    def _valid(self, target: str) -> bool:
        if not target:
            self._show_result("Type the server's URL first.", ok=False)
            return False
        if cred.secret_kind(target) is None:
            self._show_result("This is not a server URL: use postgresql://, libsql://, https://, http:// or "
                              "mongodb://. "
                              "Open a local memory.db with File ▸ Open… (Ctrl+O).", ok=False)
            return False
        return True

    def _stash_secret(self, target: str) -> str | None:
        secret = self.secret_edit.text()
        if secret:
            cred.remember_for_session(target, secret)
        return secret or None

    def _on_checked(self, current: int, target: str, check: ConnectionCheck) -> None:
        if current != self._round:
            return
        self.timer.stop()
        self._testing = False
        self.test_button.setEnabled(True)
        if is_secret_failure(check.outcome) and self.secret_edit.text():
            cred.forget_for_session(target)   # a refused secret is not kept
        self._show_result(check.sentence, ok=check.ok)
        self.checked.emit(check)

    def _on_timer_timeout(self) -> None:
        if not self._testing:
            return
        self._round += 1   # the late answer is dropped
        self._runner.cancel(TEST_KEY)
        self._testing = False
        self.test_button.setEnabled(True)
        check = ConnectionCheck("unreachable", f"No answer within {TEST_TIMEOUT_MS / 1000:g} s: the server is "
                                               "down, or a firewall drops the connection.")
        self._show_result(check.sentence, ok=False)
        self.checked.emit(check)

    def _show_result(self, text: str, *, ok: bool | None) -> None:
        self.result_label.setText(text)
        set_role(self.result_label, "muted" if ok is None else ("ok" if ok else "loss"))
        self.result_label.show()

    def _on_url_edit_editing_finished(self) -> None:
        """Move a secret typed into the URL into the secret field, and `?schema=` into the schema field."""
        text = self.url_edit.text().strip()
        if "://" not in text:
            return
        secret = tg.url_secret(text)
        if secret and cred.secret_kind(text):
            self.secret_edit.setText(secret)
        base, _, query = tg.strip_secrets(text).partition("?")
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        schema = next((v for k, v in pairs if k in ("schema", "schemaName")), None)
        if schema is not None and tg.target_kind(text) == tg.POSTGRESQL:
            self.schema_edit.setText(schema)
            pairs = [(k, v) for k, v in pairs if k not in ("schema", "schemaName")]
        clean = base + (f"?{urllib.parse.urlencode(pairs, safe='*/:')}" if pairs else "")
        if clean != text:
            self.url_edit.setText(clean)
        self._update_fields()

    def _on_url_edit_text_changed(self, _text: str) -> None:
        self._update_fields()

    def _update_fields(self) -> None:
        url = self.url_edit.text().strip()
        kind = cred.secret_kind(url)
        self.schema_edit.setEnabled(tg.target_kind(url) in (tg.POSTGRESQL, tg.FILE))
        label = self._form.labelForField(self.secret_edit)
        if label is not None:
            label.setText("&Token:" if kind == "token" else "&Password:")
        self.secret_edit.setPlaceholderText(
            "Auth token (a local sqld needs none)" if kind == "token" else "Password (leave empty to use "
            f"{_password_places(url)})")
        if kind is None or "://" not in url:
            self.source_label.setText("")
            self.forget_button.setEnabled(False)
            return
        target = compose_target(url, "")
        self._runner.submit_pooled(lambda _p, _c: _secret_source(target), key=SOURCE_KEY,
                                   on_done=lambda found: self._on_source_found(target, found))

    def _on_source_found(self, target: str, found: tuple[str, bool]) -> None:
        if compose_target(self.url_edit.text(), "") != target:
            return
        source, saved = found
        self.forget_button.setEnabled(saved)
        noun = "token" if cred.secret_kind(target) == "token" else "password"
        if source == "none":
            where = ("$LIBSQL_AUTH_TOKEN, $TURSO_AUTH_TOKEN or the system keyring (a local sqld needs none)"
                     if noun == "token" else _password_places(target).replace("the keyring", "the system keyring"))
            self.source_label.setText(f"No {noun} in {where}." + NO_KEYRING * (self.keyring_name is None))
        else:
            self.source_label.setText(f"A {noun} is available ({cred.secret_source_text(source)}); type one to "
                                      "use another.")
        if source == "keyring":
            self.secret_edit.setPlaceholderText("Saved in the system keyring — type to replace")

    def _on_forget_button_clicked(self) -> None:
        target = self.target()
        deleted = cred.delete_secret(target)
        cred.forget_for_session(target)
        self._show_result(f"The saved secret of {cred.keyring_target(target)} was deleted from the system keyring."
                          if deleted else "Nothing was saved in the system keyring for this server.", ok=None)
        self._update_fields()


def _secret_source(target: str) -> tuple[str, bool]:
    """(source of the secret Connect would use, whether the keyring holds one) — off the GUI thread."""
    if cred.secret_kind(target) == "token":
        _token, source = cred.libsql_auth_token(target)
    elif tg.target_kind(target) == tg.MONGODB:
        _password, source = cred.mongodb_password(target)
    else:
        _password, source = cred.pg_password(target)
    return source, cred.saved_secret(target)


class ConnectController(QObject):
    """File ▸ Connect… on a main window: the action, the dialog, asking again when a secret is refused.

    WINDOW is the MainWindow this is a part of: Connect opens the target in it (`open_database`),
    and follows its `database_opened` / `database_failed` signals.
    """

    def __init__(self, ctx: WindowContext, window):
        super().__init__(window)
        self._ctx = ctx
        self._window = window
        self.dialog: ConnectDialog | None = None
        self.action = QAction("&Connect…", window, shortcut=QKeySequence("Ctrl+L"), triggered=self.show_dialog)
        self.action.setToolTip("Open a Mastra memory on a PostgreSQL or libSQL server")
        window.database_opened.connect(self._on_window_database_opened)
        window.database_failed.connect(self._on_window_database_failed)

    def show_dialog(self, _checked: bool = False, *, url: str | None = None,
                    message: str | None = None) -> ConnectDialog:
        """Show the Connect dialog (filled with URL and MESSAGE when given) and return it.

        Without URL, an empty form is filled with the server store open in the window (its URL without
        secrets), so that another schema or database of the same server is one edit away.
        """
        if self.dialog is None:
            self.dialog = ConnectDialog(self._ctx.runner, self._window)
            self.dialog.connect_requested.connect(self._on_dialog_connect_requested)
        if url is not None:
            self.dialog.set_target(url, message)
        elif not self.dialog.url_edit.text().strip():
            current = self._window.database_path
            if current and tg.is_server_target(current):
                self.dialog.set_target(tg.strip_secrets(current))
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def _on_dialog_connect_requested(self, target: str) -> None:
        self._window.open_database(target)

    def _on_window_database_opened(self, path: str) -> None:
        pending = self.dialog.pending_save if self.dialog is not None else None
        if pending is None or tg.strip_secrets(path) != tg.strip_secrets(pending[0]):
            return
        self.dialog.pending_save = None
        target, secret = pending
        self._ctx.runner.submit_pooled(lambda _p, _c: _save(target, secret), on_done=self._on_saved)

    def _on_saved(self, error: str | None) -> None:
        if error:
            self._window.statusBar().showMessage(error, 15000)
        else:
            self._window.statusBar().showMessage("The secret was saved in the system keyring.", 5000)

    def _on_window_database_failed(self, message: str) -> None:
        """A server URL refused for want of the right secret: ask for it instead of only reporting the error."""
        target = self._window.failed_target
        if not target or cred.secret_kind(target) is None:
            return
        if self.dialog is not None:
            self.dialog.pending_save = None
        from studio.errors import StoreError

        check = classify_failure(target, StoreError(message, kind=self._window.failed_kind))
        if not is_secret_failure(check.outcome):
            return
        cred.forget_for_session(target)
        if not self._ctx.interactive:
            return
        box = self._window.error_box
        if box is not None:
            box.close()
        self.show_dialog(url=tg.strip_secrets(target), message=check.sentence)


def _save(target: str, secret: str) -> str | None:
    try:
        cred.save_secret(target, secret)
    except cred.KeyringUnavailable as exc:
        return str(exc)
    return None

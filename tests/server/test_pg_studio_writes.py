"""The studio's writes on a PostgreSQL store: Thread ▸ Clear Thread's Messages, then Thread ▸ Undo Last Write.

The confirmation names the row backup (not a file copy); the write lands on the server; Undo Last Write,
enabled only on a server store, restores every row exactly (every column, twins included).
"""

from __future__ import annotations

from studio.store import open_store
from tests.server.pg_rows import copy_schema, dump_schema

SCHEMA = "wstudio"


def test_clear_then_undo_last_write_in_the_studio(pg_corpus, tmp_path, monkeypatch, studio, studio_ctx, qtbot):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    target = copy_schema(pg_corpus, "support", SCHEMA)
    before = dump_schema(pg_corpus.url, SCHEMA)
    window = studio(target, thread_id="support-2", tab="messages")
    actions = window.history_actions
    actions.update_actions()
    assert actions.clear_action.isEnabled() and actions.undo_action.isEnabled()
    with open_store(target) as store:
        count = store.message_count("support-2")
    assert count > 0

    dialog = actions.clear_thread()
    assert "row backup" in dialog.backup_note.text()
    with qtbot.waitSignal(actions.written, timeout=30000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    with open_store(target) as store:
        assert store.message_count("support-2") == 0
    backup = actions.session.backup_for(target)
    assert backup is not None and backup.parent == tmp_path / "data" / "memory-studio" / "backups"
    assert str(backup) in window.statusBar().currentMessage()

    dialog = actions.undo_last_write()
    assert dialog is not None and f"put back {count:,} deleted rows and restore 1 changed row." in dialog.text.text()
    assert str(backup) in dialog.backup_note.text()
    window.grab().save(str(tmp_path / "undo-dialog-window.png"))
    dialog.grab().save(str(tmp_path / "undo-dialog.png"))
    with qtbot.waitSignal(actions.written, timeout=30000) as written:
        dialog.accept()
    studio_ctx.runner.wait_idle()
    assert "Undid the clear-thread" in written.args[0]
    assert dump_schema(pg_corpus.url, SCHEMA) == before

    # nothing left to undo: said, nothing written
    assert actions.undo_last_write() is None
    assert "No backup" in (actions.last_error or "")
    assert dump_schema(pg_corpus.url, SCHEMA) == before

"""The studio's writes on a libSQL server (sqld): Thread ▸ Clear Thread's Messages, then Thread ▸ Undo Last Write.

The confirmation names the row backup (a server database is not copied); the write lands on the server; Undo
Last Write, enabled on server stores, puts every row back exactly (typed values and rowids: sqld's own dump).
"""

from __future__ import annotations

from studio.store import open_store
from tests.interop.conftest import run_node
from tests.server.sqld import dump


def test_clear_then_undo_last_write_in_the_studio_on_sqld(sqld_corpus, tmp_path, monkeypatch, studio, studio_ctx,
                                                          qtbot):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    target = sqld_corpus.start("writes-b")      # the scratch server of test_libsql_writes (one sqld for both)
    run_node(sqld_corpus.corpus, "copy.mjs", sqld_corpus.target("support"), target, "--store", "libsql-remote")
    before = dump(target)[1]
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
    assert backup.name.startswith("libsql_127.0.0.1_")

    dialog = actions.undo_last_write()
    assert dialog is not None and f"put back {count:,} deleted rows and restore 1 changed row." in dialog.text.text()
    window.grab().save(str(tmp_path / "undo-dialog-window.png"))
    with qtbot.waitSignal(actions.written, timeout=30000) as written:
        dialog.accept()
    studio_ctx.runner.wait_idle()
    assert "Undid the clear-thread" in written.args[0]
    assert dump(target)[1] == before
    assert actions.undo_last_write() is None and "No backup" in (actions.last_error or "")
    assert dump(target)[1] == before

"""Test helpers shared by the server write tests (PostgreSQL, libSQL server, MongoDB): commit a reflection, and
clear then undo in the studio, the way a user does."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.records import OMRecord
from studio.store.writes import WriteSession
from tests.interop.answers import parse_answer


class Committed(NamedTuple):
    """What `commit_answer` wrote: the new row as the write returns it, the record's lookup key, and the
    generation it was based on (as read just before the commit)."""

    row: dict
    lookup_key: str
    based_on: OMRecord


def commit_answer(target: str, thread_id: str, answer: str, session: WriteSession | None = None, *,
                  studio_metadata: dict | None = None) -> Committed:
    """Commit the Reflector ANSWER (`<observations>…` text, tests.interop.answers) as THREAD_ID's next generation
    on TARGET (any store), based on its current generation as read now. SESSION (default a new WriteSession)
    routes the row backup; STUDIO_METADATA (e.g. {"kind": "reflection"}, as the studio's dialog writes it) goes
    under the new row's `metadata.studio`, with the write protocol's mark."""
    with open_store(target) as store:
        lookup_key = store.lookup_key_for_thread(store.get_thread(thread_id))
        current = store.om_current(lookup_key)
    parsed = parse_answer(answer)
    row = (session or WriteSession()).commit_reflection(
        target, lookup_key=lookup_key, expected_record_id=current.id,
        expected_active_observations=current.active_observations, observations=parsed["observations"],
        observation_tokens=count_observations(parsed["observations"]), current_task=parsed["current_task"],
        suggested_response=parsed["suggested_response"], thread_id=thread_id, studio_metadata=studio_metadata)
    return Committed(row, lookup_key, current)


def clear_then_undo_in_studio(studio, studio_ctx, qtbot, tmp_path, target: str, dump_now) -> Path:
    """In the studio on TARGET (a server store): Thread ▸ Clear Thread's Messages on support-2, then Thread ▸ Undo
    Last Write, as a user does; return the row backup's path.

    Asserts on the way: both actions are enabled, the confirmation names the row backup (a server store is not
    copied), the clear empties the thread and its backup lies under $XDG_DATA_HOME/memory-studio/backups (set by
    the caller) and is named in the status bar and in the undo dialog, which says what it will put back; after
    the undo DUMP_NOW() (the server's rows, exactly) equals what it was before the clear, and a second undo
    finds nothing and writes nothing. Window pictures go to TMP_PATH."""
    before = dump_now()
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
    assert dump_now() == before

    # nothing left to undo: said, nothing written
    assert actions.undo_last_write() is None
    assert "No backup" in (actions.last_error or "")
    assert dump_now() == before
    return backup

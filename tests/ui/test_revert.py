"""History ▸ Revert to this generation: asks first, writes generation latest+1 with the old log, refreshes."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu

from studio.engine.tokens import count_observations
from studio.store.memory_store import MemoryStore
from studio.store.writes import commit_reflection
from tests.ui.test_reflect_dialog import snapshot


def history(path):
    with MemoryStore.open(path) as store:
        return store.om_history("thread:support-1")


def test_revert_creates_a_new_generation(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    before = history(path)                                   # generations 2, 1, 0
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    assert not tab.revert_button.isEnabled()                 # the current generation is selected
    tab.select_generation(1)
    assert tab.revert_button.isEnabled() and tab.revert_button.text() == "Revert to 1…"

    asked = []
    tab.confirm = lambda title, text: asked.append(text) or False
    tab.revert_button.click()
    studio_ctx.runner.wait_idle()
    assert asked and "generation 3" in asked[0] and "generation 1" in asked[0]
    assert [r.id for r in history(path)] == [r.id for r in before]     # "Cancel": nothing written

    tab.confirm = lambda title, text: True
    tab.revert_button.click()
    studio_ctx.runner.wait_idle()
    after = history(path)
    assert [r.generation_count for r in after] == [3, 2, 1, 0]
    new = after[0]
    assert new.active_observations == before[1].active_observations
    assert new.observation_token_count == count_observations(before[1].active_observations)
    assert new.origin_type == "reflection"
    studio = new.columns["metadata"]["studio"]
    assert {k: studio[k] for k in ("kind", "revertedFrom", "revertedFromRecordId")} == {
        "kind": "revert", "revertedFrom": 1, "revertedFromRecordId": before[1].id}
    assert studio["recordId"] == new.id  # the write protocol's self-identifying mark
    assert [r.active_observations for r in after[1:]] == [r.active_observations for r in before]  # append-only
    # The view refreshed: the new generation is listed first and diffs against generation 2.
    assert tab.generation_model.rowCount() == 4
    assert tab.generation_model.index(0, 0).data() == "3 (current)"
    assert "Generation 3" in window.statusBar().currentMessage()


def test_revert_context_menu(studio, studio_ctx, fixture_db, monkeypatch):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    shown = []
    monkeypatch.setattr(QMenu, "popup", lambda menu, *_a: shown.append(menu))
    view = tab.generations_view
    for row, enabled in ((0, False), (2, True)):
        pos = view.visualRect(tab.generation_model.index(row, 0)).center()
        tab._on_generations_context_menu_requested(pos)
        action = shown[-1].actions()[0]
        assert action.text() == f"Revert to generation {2 - row}…"
        assert action.isEnabled() is enabled
    tab.confirm = lambda title, text: True
    shown[-1].actions()[0].trigger()
    studio_ctx.runner.wait_idle()
    after = history(path)
    assert after[0].generation_count == 3 and after[0].active_observations == after[-1].active_observations


def test_revert_refused_when_a_generation_was_written_meanwhile(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    window.watcher.stop()                                    # the history on screen is now outdated
    tab.select_generation(2)
    commit_reflection(path, lookup_key="thread:support-1", expected_record_id=history(path)[0].id,
                      observations="* 🔴 (10:00) written by the agent",
                      observation_tokens=count_observations("* 🔴 (10:00) written by the agent"))
    written = snapshot(path, shm=False)
    tab.confirm = lambda title, text: True
    failures = []
    tab.write_failed.connect(failures.append)
    assert tab.revert_to(tab.selected_generation())
    studio_ctx.runner.wait_idle()
    assert failures and "new generation meanwhile" in failures[0] and "nothing was written" in failures[0]
    assert tab.error_box is not None and tab.error_box.textFormat() == Qt.TextFormat.PlainText
    tab.error_box.close()
    assert snapshot(path, shm=False) == written
    assert history(path)[0].active_observations == "* 🔴 (10:00) written by the agent"
    assert tab.generation_model.index(0, 0).data() == "3 (current)"     # the refusal refreshed the view


def test_revert_waits_for_a_quiet_agent_or_forces(studio, studio_ctx, fixture_db):
    # the OM write protocol: a message written a moment ago means a turn may be running, so the
    # revert is refused ("busy") unless the user forces it; refused = the file byte-identical
    import time

    import libsql

    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="history")
    window.watcher.stop()
    tab = window.thread_view.history_tab
    tab.select_generation(1)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    conn = libsql.connect(str(path))
    conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = (SELECT id FROM mastra_messages '
                 'WHERE thread_id = ? ORDER BY "createdAt" DESC LIMIT 1)', (now, "support-1"))
    conn.commit()
    conn.close()
    before = snapshot(path, shm=False)
    answers = iter([True, False])        # yes to the revert, no to forcing it while the agent is active
    asked = []
    tab.confirm = lambda title, text: asked.append(title) or next(answers)
    failures = []
    tab.write_failed.connect(failures.append)
    assert tab.revert_to(tab.selected_generation())
    studio_ctx.runner.wait_idle()
    assert asked == ["Revert to this generation", "The agent is active"]
    assert failures and snapshot(path, shm=False) == before
    tab.error_box.close()

    tab.select_generation(1)
    tab.confirm = lambda title, text: True   # this time: force
    assert tab.revert_to(tab.selected_generation())
    studio_ctx.runner.wait_idle()
    assert [r.generation_count for r in history(path)][:1] == [3]

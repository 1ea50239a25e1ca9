"""History ▸ Revert to this generation: a dialog that asks, writes generation latest+1 with the old log
through the OM write protocol (quiet period shown and adjustable, wait / force, the watch after the
commit and the repair of an overtaking write), and refreshes."""

from __future__ import annotations

import threading
import time

import libsql
from PySide6.QtWidgets import QMenu

from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.write.protocol import find_overtaking_writes, studio_mark, unrepaired
from studio.store.writes import commit_reflection
from studio.ui.widgets.revert_dialog import RevertDialog
from tests.scripted_interaction import ScriptedInteraction
from tests.ui.test_reflect_dialog import GEN, ROWS, snapshot
from tests.ui.test_write_protocol_ui import touch_newest_message
from tests.ui.write_dialogs import wait_until

KEY = "thread:support-1"


def history(path):
    with open_store(path) as store:
        return store.om_history(KEY)


def open_revert(window, studio_ctx, row: int) -> RevertDialog:
    """Select ROW of History's generations, press Revert…, and return the dialog once it has read the agent's activity.

    support-1's rows are its generations newest first: row 0 is GEN (current), row 1 GEN - 1, ….
    """
    assert row <= GEN, f"support-1 has only generations {GEN}..0 in this fixture: no row {row} to revert to"
    tab = window.thread_view.history_tab
    tab.select_generation(row)
    generation = tab.selected_generation().generation_count
    assert tab.revert_button.isEnabled() and tab.revert_button.text() == f"Revert to {generation}…"
    tab.revert_button.click()
    dialog = tab.revert_dialog
    assert isinstance(dialog, RevertDialog) and dialog.isVisible()
    dialog.finished.connect(lambda result: setattr(dialog, "closed_with", result))
    studio_ctx.runner.wait_idle()
    return dialog


def closed(dialog) -> bool:
    return getattr(dialog, "closed_with", None) is not None


def test_revert_asks_then_creates_a_new_generation(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    before = history(path)                                   # generations GEN … 0
    untouched = snapshot(path, shm=False)
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    assert not tab.revert_button.isEnabled()                 # the current generation is selected

    dialog = open_revert(window, studio_ctx, 1)
    assert f"Write generation {GEN + 1}" in dialog.text.text() and f"generation {GEN - 1}" in dialog.text.text()
    assert dialog.cancel_button.isDefault()                  # Enter does not write
    # the fixture's conversation is old: quiet, and the period is shown
    assert dialog.protocol_panel.activity_label.text().startswith("Quiet for")
    assert dialog.protocol_panel.quiet_spin.value() == 30
    dialog.cancel_button.click()                             # "Cancel": nothing written
    studio_ctx.runner.wait_idle()
    assert closed(dialog) and snapshot(path, shm=False) == untouched

    dialog = open_revert(window, studio_ctx, 1)
    written = []
    dialog.committed.connect(written.append)
    dialog.revert_button.click()
    wait_until(lambda: closed(dialog))                       # watch window 0: quiet longer than a turn takes
    after = history(path)
    assert [r.generation_count for r in after] == [GEN + 1, *(r.generation_count for r in before)]
    new = after[0]
    assert [r["id"] for r in written] == [new.id]
    assert new.active_observations == before[1].active_observations
    assert new.observation_token_count == count_observations(before[1].active_observations)
    assert new.origin_type == "reflection"
    mark = new.columns["metadata"]["studio"]
    assert {k: mark[k] for k in ("kind", "revertedFrom", "revertedFromRecordId")} == {
        "kind": "revert", "revertedFrom": GEN - 1, "revertedFromRecordId": before[1].id}
    assert mark["recordId"] == new.id  # the write protocol's self-identifying mark
    assert [r.active_observations for r in after[1:]] == [r.active_observations for r in before]  # append-only
    # The view refreshed: the new generation is listed first and diffs against generation GEN.
    wait_until(lambda: tab.generation_model.rowCount() == ROWS + 1)
    assert tab.generation_model.index(0, 0).data() == f"{GEN + 1} (current)"
    assert f"Generation {GEN + 1}" in window.statusBar().currentMessage()
    # ... and names the backup the write made first (a file path); the badge still says browsing is read-only.
    backup = window.history_actions.session.backup_for(path)
    assert backup is not None and backup.is_file() and str(backup) in window.statusBar().currentMessage()
    assert window.mode_label.text() == "read-only" and "writes only when you confirm" in window.mode_label.toolTip()


def test_revert_context_menu(studio, studio_ctx, fixture_db, monkeypatch):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    shown = []
    monkeypatch.setattr(QMenu, "popup", lambda menu, *_a: shown.append(menu))
    view = tab.generations_view
    for row, enabled in ((0, False), (GEN, True)):   # the current generation, then generation 0
        pos = view.visualRect(tab.generation_model.index(row, 0)).center()
        tab._on_generations_context_menu_requested(pos)
        action = shown[-1].actions()[0]
        assert action.text() == f"Revert to generation {GEN - row}…"
        assert action.isEnabled() is enabled
    shown[-1].actions()[0].trigger()
    dialog = tab.revert_dialog
    assert dialog is not None and "generation 0" in dialog.text.text()
    dialog.revert()
    wait_until(lambda: tab.revert_dialog is None)
    after = history(path)
    assert after[0].generation_count == GEN + 1 and after[0].active_observations == after[-1].active_observations


def test_revert_refused_when_a_generation_was_written_meanwhile(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    window.watcher.stop()                                    # the history on screen is now outdated
    dialog = open_revert(window, studio_ctx, GEN)
    commit_reflection(path, lookup_key=KEY, expected_record_id=history(path)[0].id,
                      observations="* 🔴 (10:00) written by the agent",
                      observation_tokens=count_observations("* 🔴 (10:00) written by the agent"))
    written = snapshot(path, shm=False)
    failures = []
    tab.write_failed.connect(failures.append)
    assert dialog.revert(force=True)
    wait_until(lambda: dialog.busy is None and dialog.error_text())
    assert failures and "new generation meanwhile" in failures[0] and "nothing was written" in failures[0]
    assert dialog.error_text().startswith("Revert refused: ")
    assert not dialog.revert_button.isEnabled() and dialog.cancel_button.text() == "Close"   # it cannot succeed now
    assert snapshot(path, shm=False) == written
    assert history(path)[0].active_observations == "* 🔴 (10:00) written by the agent"
    # the refusal refreshed the view
    wait_until(lambda: tab.generation_model.index(0, 0).data() == f"{GEN + 1} (current)")


def test_the_quiet_period_is_shown_refuses_and_can_be_forced(studio, studio_ctx, fixture_db):
    # a message written 2 s ago means a turn may be running: the revert is refused with the period shown
    # ("busy", the file byte-identical) unless the user forces it
    path = fixture_db("support")
    touch_newest_message(path, 2)
    window = studio(path, thread_id="support-1", tab="history")
    window.watcher.stop()
    before = snapshot(path, shm=False)
    dialog = open_revert(window, studio_ctx, 1)
    shown = dialog.protocol_panel.activity_label.text()
    assert shown.startswith("The agent is active: a message was written") and "(quiet period 30 s)" in shown
    dialog.interaction = told = ScriptedInteraction(wait_or_force="cancel")
    dialog.revert_button.click()
    wait_until(lambda: dialog.busy is None and dialog.error_text())
    asked = told.texts("wait_or_force")
    assert "The agent is active" in asked[0] and "quiet period 30 s" in asked[0] and "quiet for 30 s" in asked[0]
    assert "(quiet period 30 s)" in dialog.error_text() and "Nothing was written" in dialog.error_text()
    assert snapshot(path, shm=False) == before and dialog.revert_button.isEnabled()

    dialog.protocol.watch_window_ms = 0  # (the watch is tested below)
    dialog.interaction = ScriptedInteraction(wait_or_force="force")
    dialog.revert_button.click()
    wait_until(lambda: closed(dialog))
    assert history(path)[0].generation_count == GEN + 1


def test_wait_writes_once_the_quiet_period_has_passed(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    touch_newest_message(path, 2)
    window = studio(path, thread_id="support-1", tab="history")
    window.watcher.stop()
    dialog = open_revert(window, studio_ctx, 1)
    assert "(quiet period 30 s)" in dialog.protocol_panel.activity_label.text()
    dialog.protocol_panel.quiet_spin.setValue(2)   # adjustable
    studio_ctx.runner.wait_idle()
    assert "(quiet period 2 s)" in dialog.protocol_panel.activity_label.text()   # read again with the new period
    assert window.context.settings.value("writes/quietPeriodS") in (2, "2")   # remembered
    touch_newest_message(path, 0)                  # a turn saves a message now: quiet again 2 s from now
    dialog.protocol.watch_window_ms = 0
    dialog.interaction = ScriptedInteraction(wait_or_force="wait")
    steps, probes = [], []
    dialog.protocol.step.connect(lambda what, text: steps.append(what))
    dialog.protocol.waiting.connect(
        lambda a: probes.append((a.active, dialog.protocol_panel.wait_bar.isVisible(), dialog.cancel_button.text())))
    dialog.revert()
    wait_until(lambda: closed(dialog))
    assert steps[:4] == ["commit", "wait", "commit", "watch"]   # refused, waited, written, watched
    assert probes and probes[0] == (True, True, "Stop waiting")  # progress shown while the agent was active
    assert not dialog.protocol_panel.wait_bar.isVisible()
    assert history(path)[0].generation_count == GEN + 1


def test_stop_waiting_writes_nothing(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    touch_newest_message(path, 0)
    window = studio(path, thread_id="support-1", tab="history")
    window.watcher.stop()
    before = snapshot(path, shm=False)
    dialog = open_revert(window, studio_ctx, 1)
    dialog.interaction = ScriptedInteraction(wait_or_force="wait")
    dialog.revert()
    wait_until(lambda: dialog.busy == "wait")
    dialog.reject()                                # Esc / Stop waiting: the wait ends, the dialog stays
    wait_until(lambda: dialog.busy is None)
    assert not closed(dialog) and "stopped waiting" in dialog.error_text()
    assert snapshot(path, shm=False) == before


def overtaking_turn(path, superseded_id: str, line: str) -> threading.Thread:
    """Start what a running Mastra turn does: it holds the row it read and, once the studio's generation is in,
    appends its observations onto that (now superseded) row, as Mastra's in-place observation update does."""
    def run() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and history(path)[0].id == superseded_id:
            time.sleep(0.02)
        conn = libsql.connect(str(path), isolation_level=None)
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = "activeObservations" || ?, '
                     '"updatedAt" = ? WHERE id = ?',
                     (f"\n\n--- message boundary (x) ---\n\n{line}",
                      time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), superseded_id))
        conn.close()
    turn = threading.Thread(target=run, daemon=True)
    turn.start()
    return turn


def test_a_turn_overtaking_the_revert_is_reported_and_repaired(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="history")
    before = history(path)
    superseded = before[0]                         # generation GEN: the revert replaces it
    line = "* 🟡 (10:00) Observed by the running turn after the studio's revert."
    dialog = open_revert(window, studio_ctx, 1)
    turn = overtaking_turn(path, superseded.id, line)
    written = []
    dialog.protocol.watch_window_ms = 8000
    dialog.interaction = told = ScriptedInteraction(overtaken="repair")
    dialog.committed.connect(written.append)
    dialog.revert()
    wait_until(lambda: closed(dialog))
    turn.join()
    asked = told.texts("overtaken")
    assert len(asked) == 1 and f"wrote 1 observation line(s) onto generation {GEN}" in asked[0]
    rows = history(path)
    assert [r.generation_count for r in rows] == [GEN + 2, GEN + 1, *(r.generation_count for r in before)]
    assert [r["id"] for r in written] == [rows[1].id, rows[0].id]    # the revert, then its repair
    repair = rows[0]
    assert studio_mark(repair)["kind"] == "repair"
    # the studio's log (generation GEN - 1's, restored by the revert) with the agent's line carried forward
    assert repair.active_observations.startswith(before[1].active_observations.rstrip())
    assert repair.active_observations.endswith(line)
    assert rows[2].id == superseded.id and rows[2].active_observations.endswith(line)   # Mastra's row: not edited
    assert unrepaired(find_overtaking_writes(rows)) == []
    wait_until(lambda: window.thread_view.history_tab.generation_model.index(0, 0).data() == f"{GEN + 2} (current)")


def test_the_agents_version_when_the_user_prefers_it(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="history")
    superseded = history(path)[0]
    line = "* 🔴 (10:00) The agent's own line."
    dialog = open_revert(window, studio_ctx, GEN)    # generation 0
    turn = overtaking_turn(path, superseded.id, line)
    dialog.protocol.watch_window_ms = 8000
    dialog.interaction = ScriptedInteraction(overtaken="revert")
    dialog.revert()
    wait_until(lambda: closed(dialog))
    turn.join()
    rows = history(path)
    assert rows[0].generation_count == GEN + 2 and studio_mark(rows[0])["prefer"] == "revert"
    assert rows[0].active_observations == rows[2].active_observations     # generation GEN as the agent left it
    assert unrepaired(find_overtaking_writes(rows)) == []

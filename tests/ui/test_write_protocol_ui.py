"""Reflect Now… beside a running agent: "the agent is active" (wait / force), and an overtaken commit repaired."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import libsql

from studio.store import open_store
from studio.store.records import ms_to_iso
from studio.store.write.protocol import find_overtaking_writes, unrepaired
from tests.scripted_interaction import ScriptedInteraction
from tests.ui.test_reflect_dialog import GEN, open_dialog
from tests.ui.write_dialogs import wait_until

KEY = "thread:support-1"


def history(path):
    with open_store(path) as store:
        return store.om_history(KEY)


def touch_newest_message(path, seconds_ago: float) -> None:
    """Make support-1's newest message look saved SECONDS_AGO (a running turn just saved it)."""
    at = int(datetime.now(UTC).timestamp() * 1000 - seconds_ago * 1000)
    conn = libsql.connect(str(path), isolation_level=None)
    try:
        conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = (SELECT id FROM mastra_messages '
                     'WHERE thread_id = ? ORDER BY "createdAt" DESC LIMIT 1)', (ms_to_iso(at), "support-1"))
    finally:
        conn.close()


def previewed(studio, studio_ctx, path):
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    studio_ctx.runner.wait_idle()
    dialog.set_strategy("rule-based")
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.preview is not None, dialog.error_text()
    dialog.interaction = ScriptedInteraction(confirm=True)
    return dialog


def test_the_dialog_says_the_agent_is_active_and_force_writes(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    touch_newest_message(path, 2)
    dialog = previewed(studio, studio_ctx, path)
    assert dialog.protocol_panel.activity_label.text().startswith("The agent is active: a message was written")
    dialog.protocol.watch_window_ms = 0  # (the protocol's watch is tested below)
    dialog.interaction = told = ScriptedInteraction(wait_or_force="force")
    dialog.commit()
    wait_until(lambda: getattr(dialog, "closed_with", None) is not None)
    asked = told.texts("wait_or_force")
    assert "The agent is active" in asked[0] and "quiet period 30 s" in asked[0]
    assert history(path)[0].generation_count == GEN + 1


def test_cancel_leaves_the_file_alone_and_wait_writes_once_it_is_quiet(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    touch_newest_message(path, 2)
    dialog = previewed(studio, studio_ctx, path)
    dialog.interaction = ScriptedInteraction(wait_or_force="cancel")
    dialog.commit()
    wait_until(lambda: dialog.busy is None and "Commit refused" in dialog.error_text())
    assert history(path)[0].generation_count == GEN
    dialog.protocol_panel.quiet_spin.setValue(3)  # quiet about a second from now
    dialog.protocol.watch_window_ms = 0
    dialog.interaction = ScriptedInteraction(wait_or_force="wait")
    dialog.commit()
    wait_until(lambda: getattr(dialog, "closed_with", None) is not None)
    assert history(path)[0].generation_count == GEN + 1


def test_a_turn_overtaking_the_commit_is_found_and_repaired(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    dialog = previewed(studio, studio_ctx, path)
    superseded = history(path)[0]
    line = "* 🟡 (10:00) Observed by the running turn after the studio's commit."

    def running_turn():  # holds the record it read; writes onto it once the studio's generation is in
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and history(path)[0].id == superseded.id:
            time.sleep(0.02)
        conn = libsql.connect(str(path), isolation_level=None)
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = "activeObservations" || ? '
                     'WHERE id = ?', (f"\n\n--- message boundary (x) ---\n\n{line}", superseded.id))
        conn.close()
    turn = threading.Thread(target=running_turn, daemon=True)
    turn.start()
    repaired = []
    dialog.protocol.watch_window_ms = 4000
    dialog.interaction = told = ScriptedInteraction(overtaken="repair")
    dialog.protocol.repaired.connect(repaired.append)
    dialog.commit()
    wait_until(lambda: getattr(dialog, "closed_with", None) is not None)
    turn.join()
    asked = told.texts("overtaken")
    assert f"wrote 1 observation line(s) onto generation {GEN}" in asked[0]
    rows = history(path)
    assert [r["id"] for r in repaired] == [rows[0].id] and rows[0].generation_count == GEN + 2
    assert rows[0].active_observations.endswith(line)
    assert unrepaired(find_overtaking_writes(rows)) == []

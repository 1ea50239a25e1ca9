"""Thread ▸ Reflect Now…: preview in the background (fake model on 127.0.0.1, or offline), commit or refuse safely."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel

from studio.engine.condenser import condense
from studio.engine.diff import diff_logs
from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.writes import commit_reflection
from studio.ui.widgets.reflect_dialog import ReflectDialog
from tests.fake_llm import Reply, refuse_remote_hosts
from tests.oracle_facts import current_generation, generations, status
from tests.scripted_interaction import ScriptedInteraction
from tests.ui.write_dialogs import open_write_dialog, wait_until

MODEL = "openai-compatible/fake-reflector"
# support-1 as Mastra left it (its oracle): the current generation, how many there are, the reflection threshold
GEN = current_generation("support", "thread:support-1")
ROWS = len(generations("support", "thread:support-1"))
THRESHOLD = status("support", "support-1")["effectiveObservationTokensThreshold"]
RESOURCE_THRESHOLD = status("resource", "res-a")["effectiveObservationTokensThreshold"]


def snapshot(path: Path, *, shm: bool = True) -> dict[str, str]:
    """Return the sha256 of the db and its -wal / -shm (those that exist).

    SHM False leaves out the -shm (SQLite's shared-memory index, which any read-write open rewrites;
    it holds no data): a refused write leaves the data files identical.
    """
    out = {}
    for ext in ("", "-wal", "-shm") if shm else ("", "-wal"):
        f = Path(str(path) + ext)
        if f.exists():
            out[ext or "db"] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def current(path: Path, key: str = "thread:support-1"):
    with open_store(path) as store:
        return store.om_current(key)


def answer_for(log: str) -> tuple[str, str]:
    """Return (model answer, its observations): the log's first lines, some lines dropped, one added."""
    lines = [ln for ln in log.splitlines() if ln.strip() and "message boundary" not in ln]
    kept = lines[:3] + lines[6:12] + ["* 🟡 (09:30) User prefers short answers about trip logistics."]
    observations = "\n".join(kept)
    answer = (f"<observations>\n{observations}\n</observations>\n"
              "<current-task>\nPrimary: plan the Lisbon itinerary\n</current-task>\n"
              "<suggested-response>\nOffer a two-day Lisbon plan.\n</suggested-response>")
    return answer, observations


def open_dialog(window) -> ReflectDialog:
    dialog = open_write_dialog(window, "reflect_action", "reflect_dialog", ReflectDialog)
    assert dialog.reflection_input is not None, dialog.error_text()
    assert dialog.progress_label.text() == ""  # not the read's "Reading …" left behind (the page says what to do)
    return dialog


def test_preview_then_commit_writes_the_next_generation(studio, studio_ctx, fixture_db, fake_llm):
    path = fixture_db("support")
    untouched = snapshot(path, shm=False)
    before = current(path)
    answer, observations = answer_for(before.active_observations)
    fake_llm.push(Reply(text=answer))
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    inp = dialog.reflection_input
    assert (inp.lookup_key, inp.generation_count, inp.reflection_threshold) == ("thread:support-1", GEN, THRESHOLD)
    size = before.observation_token_count
    assert dialog.size_bar.text() == f"{size:,} / {THRESHOLD:,} · {size * 100 // THRESHOLD}%"   # rounded down
    dialog.set_model(MODEL, fake_llm.base_url)
    wait_until(lambda: "No key found" in dialog.key_text())   # a local server needs none; the key is never shown

    QTest.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)   # Ctrl+Enter previews
    assert dialog.busy == "preview"
    studio_ctx.runner.wait_idle()
    assert dialog.error_text() == ""
    preview = dialog.preview
    assert preview is not None and preview.result.observations == observations
    assert len(fake_llm.requests) == 1 and before.active_observations.splitlines()[0] in fake_llm.requests[0].prompt
    want = diff_logs(before.active_observations, observations, size, count_observations(observations))
    got = dialog.proposal.diff_model.diff
    assert (got.kept, got.added, got.removed) == (want.kept, want.added, want.removed)
    assert dialog.proposal.diff_model.rowCount() == len(want.rows)
    assert f"compression {want.compression_ratio:.2f}×" in dialog.proposal.summary.text()
    assert f"tokens {size:,} → {want.new_tokens:,}" in dialog.proposal.summary.text()
    losses = want.high_priority_losses
    assert losses and dialog.proposal.losses.isVisible()                  # every dropped 🔴 line is called out
    assert f"{len(losses)} high-priority observations would be lost" in dialog.proposal.losses.text()
    for row in losses:
        assert row.text.split(") ", 1)[1] in dialog.proposal.losses.text()
    assert dialog.proposal.task_label.text() == "Primary: plan the Lisbon itinerary"
    assert dialog.commit_button.text() == f"Commit generation {GEN + 1}…"
    assert snapshot(path, shm=False) == untouched                 # the preview wrote nothing

    dialog.interaction = told = ScriptedInteraction(confirm=True)
    QTest.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)   # Ctrl+Enter commits
    studio_ctx.runner.wait_idle()
    asked = told.texts("confirm")
    assert asked and f"generation {GEN + 1}" in asked[0] and "high-priority" in asked[0]
    assert "row backup" in asked[0]                               # every write saves its rows first
    assert list(path.parent.glob("support.backup-*.db")) == []    # and no copy of the whole file
    assert window.context.session.backup_for(path).suffix == ".json"
    assert window.dialogs.reflect_dialog is None                          # accepted and closed
    after = current(path)
    assert after.generation_count == GEN + 1 and after.origin_type == "reflection"
    assert after.active_observations == observations
    assert after.observation_token_count == count_observations(observations)
    with open_store(path) as store:
        om = store.get_thread("support-1").om_metadata
    assert om["currentTask"] == "Primary: plan the Lisbon itinerary"
    assert om["suggestedResponse"] == "Offer a two-day Lisbon plan."
    # The view refreshed: History shows the new generation first.
    studio_ctx.runner.wait_idle()
    history = window.thread_view.history_tab
    assert history.generation_model.rowCount() == ROWS + 1
    assert history.generation_model.index(0, 0).data() == f"{GEN + 1} (current)"
    assert f"Generation {GEN + 1}" in window.statusBar().currentMessage()


def test_cancel_during_a_slow_answer_leaves_the_file_byte_identical(studio, studio_ctx, fixture_db, fake_llm):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1")
    fake_llm.push(Reply(text="<observations>\n* 🔴 late\n</observations>", delay_s=3600))  # held till teardown
    dialog = open_dialog(window)
    dialog.set_model(MODEL, fake_llm.base_url)
    before = snapshot(path)
    assert dialog.start_preview()
    wait_until(lambda: len(fake_llm.requests) == 1)              # the model is "thinking"
    assert dialog.busy == "preview" and dialog.cancel_button.isEnabled()
    assert not dialog.preview_button.isEnabled() and not dialog.strategy_box.model_combo.isEnabled()
    wait_until(lambda: "Waiting for" in dialog.progress_label.text())
    assert dialog.progress_label.text().startswith("Attempt 1 · level 1")   # attempt and compression level
    assert dialog.progress_bar.isVisible() and not dialog.commit_button.isEnabled()
    QTest.keyClick(dialog, Qt.Key.Key_Escape)                     # Esc cancels the preview first…
    assert dialog.busy is None and dialog.isVisible()
    assert "cancelled" in dialog.progress_label.text()
    assert studio_ctx.runner.wait_idle()                          # the request was aborted, not waited for:
    assert fake_llm.handled == 0                                  # the task ended with the answer still held
    assert dialog.preview is None and not dialog.commit_button.isEnabled()
    assert snapshot(path) == before
    QTest.keyClick(dialog, Qt.Key.Key_Escape)                     # …and closes the dialog next
    assert window.dialogs.reflect_dialog is None
    assert snapshot(path) == before and current(path).generation_count == GEN


def test_commit_refused_when_the_agent_reflected_meanwhile(studio, studio_ctx, fixture_db, fake_llm):
    path = fixture_db("support")
    before = current(path)
    answer, _ = answer_for(before.active_observations)
    fake_llm.push(Reply(text=answer))
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    dialog.set_model(MODEL, fake_llm.base_url)
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.preview is not None
    dialog.interaction = ScriptedInteraction(confirm=False)      # "Cancel" in the confirmation: nothing happens
    dialog.commit_button.click()
    assert dialog.busy is None and dialog.isVisible() and current(path).id == before.id
    # Meanwhile "the agent" reflects: generation GEN + 1 appears.
    commit_reflection(path, lookup_key="thread:support-1", expected_record_id=before.id,
                      observations="* 🔴 (10:00) written by the agent",
                      observation_tokens=count_observations("* 🔴 (10:00) written by the agent"))
    written = snapshot(path, shm=False)
    dialog.interaction = ScriptedInteraction(confirm=True)
    assert dialog.commit()
    studio_ctx.runner.wait_idle()
    assert dialog.isVisible()
    assert "Commit refused" in dialog.error_text() and "reflected" in dialog.error_text()
    assert "Preview again" in dialog.error_text()
    assert not dialog.commit_button.isEnabled()                   # this preview can no longer be committed
    assert snapshot(path, shm=False) == written
    assert current(path).active_observations == "* 🔴 (10:00) written by the agent"


def test_rule_based_preview_needs_no_network(studio, studio_ctx, fixture_db, monkeypatch):
    refuse_remote_hosts(monkeypatch)
    import socket

    def no_connections(*_args, **_kwargs):
        raise AssertionError("the offline strategy opened a connection")

    monkeypatch.setattr(socket, "create_connection", no_connections)
    path = fixture_db("support")
    before = current(path)
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    assert dialog.strategy() == "rule-based"                      # the record's model is not one we can call
    dialog.set_strategy("rule-based")
    assert not dialog.strategy_box.model_combo.isEnabled()
    start = snapshot(path)
    assert dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.error_text() == ""
    want = condense(before.active_observations, THRESHOLD)
    assert dialog.preview.result.observations == want.observations
    assert dialog.preview.result.observation_token_count == want.tokens
    assert "Offline rule-based condenser" in dialog.proposal.attempts_label.text()
    assert not dialog.proposal.losses.isVisible()                          # never drops a 🔴 line
    assert "high-priority" in dialog.proposal.notes_label.text()           # the markers are named in words
    assert snapshot(path) == start


TAGS_ONLY_LOG = """<thread id="res-a">
Date: Dec 4, 2026
</thread>

--- message boundary (2026-12-04T20:13:18.000Z) ---

<thread id="res-b">
</thread>"""  # thread sections (as Mastra writes them in resource scope) without one observation line


def test_an_empty_proposal_cannot_be_committed(studio, studio_ctx, fixture_db):
    path = fixture_db("resource")
    commit_reflection(path, lookup_key="resource:user-erin", expected_record_id=current(path, "resource:user-erin").id,
                      observations=TAGS_ONLY_LOG, observation_tokens=count_observations(TAGS_ONLY_LOG))
    window = studio(path, thread_id="res-a")
    dialog = open_dialog(window)
    dialog.set_strategy("rule-based")
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.preview is not None and not dialog.preview.result.observations.strip()
    assert "nothing to commit" in dialog.error_text()
    assert not dialog.commit_button.isEnabled()


def test_a_proposal_identical_to_the_current_generation_cannot_be_committed(studio, studio_ctx, fixture_db):
    """The rules applied to a log they already condensed change nothing: Commit stays disabled and says why."""
    path = fixture_db("support")
    log = condense(current(path).active_observations, THRESHOLD).observations
    commit_reflection(path, lookup_key="thread:support-1", expected_record_id=current(path).id, observations=log,
                      observation_tokens=count_observations(log))
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    dialog.set_strategy("rule-based")
    start = snapshot(path)
    assert dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.preview is not None and dialog.preview.result.observations == log, dialog.error_text()
    assert not dialog.commit_button.isEnabled()
    why = f"Nothing to condense: the rules leave the log as it is; a copy of generation {GEN + 1} is not written."
    assert dialog.commit_button.toolTip() == why and dialog.write_note.text() == why
    QTest.keyClick(dialog, Qt.Key_Return, Qt.ControlModifier)    # Ctrl+Enter previews again, never commits
    studio_ctx.runner.wait_idle()
    assert current(path).generation_count == GEN + 1 and snapshot(path) == start


RESOURCE_LOG = """Date: Nov 29, 2026
* 🔴 (20:40) Erin's flight to Lisbon leaves on Dec 3.
* 🟢 (20:41) Erin said hello.
* ✅ (20:41) Booked the hotel near Alfama.
* 🟡 (20:42) Erin prefers window seats.

--- message boundary (2026-11-29T20:42:30.000Z) ---

Date: Nov 29, 2026
* 🟡 (20:43) Erin asked about tram passes."""  # the rules drop the boundary and the repeated date header


def test_rule_based_commit_on_a_resource_scope_record(studio, studio_ctx, fixture_db):
    path = fixture_db("resource")
    gen = current_generation("resource", "resource:user-erin")
    seeded = commit_reflection(path, lookup_key="resource:user-erin", expected_record_id=current(
        path, "resource:user-erin").id, observations=RESOURCE_LOG,
                               observation_tokens=count_observations(RESOURCE_LOG))
    window = studio(path, thread_id="res-a")
    dialog = open_dialog(window)
    assert dialog.reflection_input.lookup_key == "resource:user-erin"
    assert dialog.reflection_input.record_id == seeded["id"]
    assert "resource scope" in dialog.subtitle.text() and "res-a" in dialog.subtitle.text()
    dialog.set_strategy("rule-based")
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.preview is not None, dialog.error_text()
    proposed = dialog.preview.result.observations
    assert proposed == condense(RESOURCE_LOG, RESOURCE_THRESHOLD).observations != RESOURCE_LOG
    dialog.interaction = ScriptedInteraction(confirm=True)
    dialog.protocol_panel.quiet_spin.setValue(0)  # the seeded generation was written a moment ago, not by the dialog
    dialog.commit()
    studio_ctx.runner.wait_idle()
    after = current(path, "resource:user-erin")
    assert after.generation_count == gen + 2 and after.active_observations == proposed   # seeded, then condensed
    assert after.columns["metadata"]["studio"]["strategy"] == "rule-based"
    assert window.thread_view.history_tab.generation_model.rowCount() == len(generations("resource",
                                                                                      "resource:user-erin")) + 2


def test_stale_is_reflecting_is_cleared_only_after_asking(studio, studio_ctx, fixture_db):
    import libsql

    path = fixture_db("support")
    conn = libsql.connect(str(path))
    conn.execute("UPDATE mastra_observational_memory SET isReflecting = 1 WHERE id = ?", (current(path).id,))
    conn.commit()
    conn.close()
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    assert dialog.reflection_input.reflecting == "stale" and dialog.flag_note.isVisible()
    dialog.set_strategy("rule-based")
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    dialog.interaction = told = ScriptedInteraction(confirm=[True, False])   # yes, then no
    before = snapshot(path, shm=False)
    dialog.commit()
    studio_ctx.runner.wait_idle()
    assert told.titles == ["Commit reflection", "Clear the stale isReflecting flag?"]
    assert "Commit refused" in dialog.error_text() and snapshot(path, shm=False) == before
    dialog.interaction = ScriptedInteraction(confirm=True)
    dialog.commit()
    studio_ctx.runner.wait_idle()
    after = current(path)
    assert after.generation_count == GEN + 1 and not after.flag("isReflecting")
    with open_store(path) as store:
        assert not store.om_history("thread:support-1")[1].flag("isReflecting")   # cleared on the previous row


@pytest.mark.parametrize("case", ["http-401", "dead-network", "no-key"])
def test_preview_errors_are_said_clearly(studio, studio_ctx, fixture_db, fake_llm, monkeypatch, case):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    start = snapshot(path)
    if case == "http-401":
        monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-not-a-real-key-123456")
        fake_llm.push(Reply(status=401, body={"error": {"message": "Incorrect API key provided"}}))
        dialog.set_model(MODEL, fake_llm.base_url)
        expected = "rejected the API key"
    elif case == "dead-network":
        port = fake_llm.port
        fake_llm.stop()
        dialog.set_model(MODEL, f"http://127.0.0.1:{port}/v1")
        expected = "Cannot reach"
    else:
        dialog.set_model("openai/gpt-4o-mini")
        wait_until(lambda: "No key" in dialog.key_text())
        assert "OPENAI_API_KEY" in dialog.key_text()
        expected = "OPENAI_API_KEY"
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    text = dialog.error_text()
    assert text.startswith("Preview failed: ") and expected in text and "Nothing was written" in text
    assert "sk-test-not-a-real-key-123456" not in text + dialog.key_text()
    assert dialog.preview is None and not dialog.commit_button.isEnabled() and dialog.preview_button.isEnabled()
    assert snapshot(path) == start


def test_model_and_base_url_are_remembered_but_no_key(studio, studio_ctx, fixture_db, fake_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-remember-me-not-0123456789")
    path = fixture_db("support")
    answer, _ = answer_for(current(path).active_observations)
    fake_llm.push(Reply(text=answer))
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    dialog.set_model(MODEL, fake_llm.base_url)
    wait_until(lambda: "OPENAI_COMPATIBLE_API_KEY" in dialog.key_text())
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert fake_llm.requests[0].headers.get("authorization") == "Bearer sk-remember-me-not-0123456789"
    dialog.reject()
    studio_ctx.settings.sync()
    stored = Path(studio_ctx.settings.fileName()).read_text()
    assert MODEL in stored and str(fake_llm.port) in stored and "sk-remember" not in stored
    again = open_dialog(window)
    assert again.strategy() == "llm" and again.model_text() == MODEL and again.base_url() == fake_llm.base_url


def test_stored_text_is_shown_as_plain_text(studio, studio_ctx, fixture_db, fake_llm):
    path = fixture_db("support")
    markup = "<b>bold</b> & <i>not italic</i>"
    fake_llm.push(Reply(text=f"<observations>\n* 🔴 (09:00) {markup}\n</observations>\n"
                             f"<current-task>\n{markup}\n</current-task>"))
    window = studio(path, thread_id="support-1")
    dialog = open_dialog(window)
    dialog.set_model(MODEL, fake_llm.base_url)
    dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.proposal.task_label.text() == markup
    assert all(label.textFormat() == Qt.TextFormat.PlainText for label in dialog.findChildren(QLabel))
    texts = [dialog.proposal.diff_model.index(r, 3).data() for r in range(dialog.proposal.diff_model.rowCount())]
    assert any(markup in (t or "") for t in texts)


def test_switching_from_a_rule_based_preview_to_a_model_without_a_key_disables_commit(studio, studio_ctx, fixture_db,
                                                                                       monkeypatch):
    """Commit writes the preview shown: once another strategy or model is chosen, it waits for a new preview."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    window = studio(fixture_db("support"), thread_id="support-1")
    dialog = open_dialog(window)
    dialog.set_strategy("rule-based")
    assert dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.preview is not None and dialog.commit_button.isEnabled(), dialog.error_text()
    dialog.set_model("openai/gpt-4o")          # the model strategy, and no key for it
    assert dialog.strategy() == "llm"
    assert not dialog.commit_button.isEnabled()
    why = dialog.commit_button.toolTip()
    assert "made with the offline rule-based strategy" in why and "preview again" in why
    assert dialog.write_note.text() == why
    QTest.keyClick(dialog, Qt.Key_Return, Qt.ControlModifier)    # Ctrl+Enter previews (and fails: no key)
    studio_ctx.runner.wait_idle()
    assert not dialog.commit_button.isEnabled()
    dialog.set_strategy("rule-based")
    assert dialog.start_preview()
    studio_ctx.runner.wait_idle()
    assert dialog.commit_button.isEnabled()    # the rule-based preview again
    dialog.reject()

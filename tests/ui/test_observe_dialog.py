"""Thread ▸ Observe Now… and Activate Buffered Chunks…: preview in the background (fake model on 127.0.0.1, or
offline), commit with the write protocol, refuse safely.

Expected values: the dialog's write must equal the CLI's `observe --answer-file` write of the same
answer (itself equal to real Mastra's, tests/interop/test_observe_interop.py) and the activation
must equal `activate_buffered` (tests/interop), cell for cell, write times and per-run ids aside.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from studio.cli import main
from studio.engine.observer_format import format_messages_for_observer
from studio.engine.tokens import stamp_estimates
from studio.store import open_store
from studio.store.write.activation import activate_buffered
from studio.store.write.row_backup import load_row_backup
from studio.ui.widgets.activate_dialog import ActivateDialog
from studio.ui.widgets.observe_dialog import ObserveDialog
from tests.cli.test_observe_llm import ANSWER, _same_write, resource_answer
from tests.conftest import copy_fixture
from tests.fake_llm import Reply
from tests.interop.conftest import dump_tables, file_state
from tests.observe_cases import (
    above_everything,
    at_threshold,
    busiest_thread,
    current_row,
    resource_window_tokens,
)
from tests.scripted_interaction import ScriptedInteraction
from tests.ui.write_dialogs import open_write_dialog, wait_until

MODEL = "openai-compatible/fake-observer"


def open_observe(window) -> ObserveDialog:
    dialog = open_write_dialog(window, "observe_action", "observe_dialog", ObserveDialog)
    assert dialog.window is not None, dialog.error_text()
    assert dialog.progress_label.text() == ""  # not the read's "Reading …" left behind (the page says what to do)
    dialog.protocol_panel.quiet_spin.setValue(0)   # the fixture was written minutes ago by the corpus run
    return dialog


def test_model_preview_then_commit_writes_what_the_cli_writes(studio, studio_ctx, fixture_db, fake_llm, tmp_path,
                                                              capsys):
    # the busiest thread with its record at the threshold, on both copies (tests/observe_cases.py)
    path, other, thread_id = fixture_db("support"), copy_fixture("support", tmp_path / "cli"), busiest_thread("support")
    for copy in (path, other):
        at_threshold(copy, "support", thread_id)
    before = dump_tables(other)
    fake_llm.push(Reply(text=ANSWER))
    window = studio(path, thread_id=thread_id)
    dialog = open_observe(window)
    w = dialog.window
    assert w.meets and not dialog.below_check.isVisible()
    dialog.set_model(MODEL, fake_llm.base_url)
    QTest.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)   # Ctrl+Enter previews
    assert dialog.busy == "preview"
    studio_ctx.runner.wait_idle()
    wait_until(lambda: dialog.preview is not None or dialog.error_text())
    p = dialog.preview
    assert p is not None, dialog.error_text()
    (request,) = fake_llm.requests
    assert format_messages_for_observer(w.messages).strip() in request.prompt
    assert dialog.proposal.row_count() == len(w.message_ids)
    assert dialog.proposal.new_lines_text() == p.proposal.new_lines
    assert f"{p.proposal.tokens_before:,} → {p.proposal.tokens_after:,}" in dialog.proposal.summary.text()
    assert "plan the Friday launch" in dialog.proposal.state.toPlainText()
    dialog.interaction = told = ScriptedInteraction(confirm=True)
    assert dialog.commit()
    wait_until(lambda: getattr(dialog, "closed_with", None) is not None)
    asked = told.texts("confirm")
    assert asked and "Observe" in asked[0] and "row backup" in asked[0]
    backup = window.context.session.backup_for(path)   # the rows the write changed, saved before its COMMIT
    assert backup is not None and load_row_backup(backup)["operation"] == "observe"
    assert [p.name for p in path.parent.iterdir() if "backup" in p.name] == []   # no copy of the file
    answer = tmp_path / "answer.txt"
    answer.write_text(ANSWER, encoding="utf-8")
    assert main(["observe", str(other), "--thread", thread_id, "--answer-file", str(answer), "--yes"]) == 0
    capsys.readouterr()
    assert _same_write(before, path, other) > 3


def test_cancel_with_escape_writes_nothing(studio, studio_ctx, fixture_db, fake_llm):
    path = fixture_db("support")
    state = file_state(path)
    fake_llm.push(Reply(text=ANSWER, delay_s=30))
    window = studio(path, thread_id="support-1")
    dialog = open_observe(window)
    dialog.set_model(MODEL, fake_llm.base_url)
    assert dialog.start_preview() and dialog.busy == "preview"
    wait_until(lambda: len(fake_llm.requests) == 1)
    QTest.keyClick(dialog, Qt.Key.Key_Escape)     # Esc cancels the preview, the dialog stays open
    assert dialog.busy is None and dialog.isVisible() and dialog.preview is None
    assert "cancelled" in dialog.progress_label.text().lower()
    studio_ctx.runner.wait_idle()
    assert file_state(path) == state


def test_below_threshold_needs_the_explicit_choice(studio, studio_ctx, fixture_db, fake_llm, tmp_path, capsys):
    # the resource record's threshold raised above everything its gate counts: Mastra would not observe yet;
    # no rule-based there
    key = "resource:user-erin"
    path, other = fixture_db("resource"), copy_fixture("resource", tmp_path / "cli")
    threshold = above_everything(path, "resource", key)
    above_everything(other, "resource", key)   # the same threshold in the copy the CLI writes
    stored, tokens = current_row(path, key)["pendingMessageTokens"], resource_window_tokens(path, "resource", key)
    before = dump_tables(other)
    state = file_state(path)
    window = studio(path, thread_id="res-a")
    dialog = open_observe(window)
    picked = [t for t, _, _ in dialog.window.threads]
    assert len(picked) >= 2, f"the case needs two threads with unobserved messages, the window has {picked}"
    answer_text = resource_answer(picked[0], picked[1])
    fake_llm.push(Reply(text=answer_text))
    assert not dialog.window.meets and dialog.below_check.isVisible()
    assert not dialog.strategy_box.rule_radio.isEnabled()
    assert "below the threshold" in dialog.size_state.text()
    dialog.set_model(MODEL, fake_llm.base_url)
    assert dialog.start_preview()
    studio_ctx.runner.wait_idle()
    wait_until(lambda: dialog.preview is not None or dialog.error_text())
    assert dialog.preview is not None, dialog.error_text()
    assert dialog.proposal.window_table.rowCount() == len(dialog.window.message_ids)
    assert (f"window: {stored:,} tokens the record still counts as pending (pendingMessageTokens) + {tokens:,} "
            f"unobserved-message tokens = {stored + tokens:,}, below the {threshold:,}-token observation threshold "
            "(Mastra would wait)") in dialog.proposal.summary.text()
    assert not dialog.commit_button.isEnabled()
    dialog.interaction = ScriptedInteraction(confirm=True)
    assert not dialog.commit() and "tick" in dialog.error_text()      # refused without the explicit choice
    assert file_state(path) == state
    dialog.below_check.setChecked(True)
    assert dialog.commit_button.isEnabled() and dialog.commit()
    wait_until(lambda: getattr(dialog, "closed_with", None) is not None)
    answer = tmp_path / "answer.txt"
    answer.write_text(answer_text, encoding="utf-8")
    assert main(["observe", str(other), "--thread", "res-a", "--answer-file", str(answer), "--below-threshold",
                 "--yes", "--quiet-period", "0"]) == 0
    capsys.readouterr()
    assert _same_write(before, path, other) > 3


def test_rule_based_preview_and_refusal_when_the_record_moved_on(studio, studio_ctx, fixture_db):
    path, thread_id = fixture_db("support"), busiest_thread("support")
    at_threshold(path, "support", thread_id)   # the CLI's observe below runs without --below-threshold
    window = studio(path, thread_id=thread_id)
    dialog = open_observe(window)
    dialog.set_strategy("rule-based")
    assert dialog.start_preview()
    studio_ctx.runner.wait_idle()
    wait_until(lambda: dialog.preview is not None or dialog.error_text())
    assert "[rule-based]" in dialog.proposal.new_lines_text()
    # another process observes meanwhile: the commit is refused inside its transaction, nothing written
    assert main(["observe", str(path), "--thread", thread_id, "--strategy", "rule-based", "--yes",
                 "--quiet-period", "0"]) == 0
    state = file_state(path)
    dialog.interaction = ScriptedInteraction(confirm=True)
    assert dialog.commit()
    wait_until(lambda: dialog.busy is None)
    assert "Commit refused" in dialog.error_text() and not dialog.commit_button.isEnabled()
    assert file_state(path) == state


def test_activate_dialog_writes_what_activate_buffered_writes(studio, studio_ctx, fixture_db, tmp_path):
    path = fixture_db("buffered")
    other = copy_fixture("buffered", tmp_path / "other")
    before = dump_tables(other)
    window = studio(path, thread_id="long-run")
    assert window.thread_view.om_tab.activate_button.isVisibleTo(window)
    dialog = open_write_dialog(window, "activate_action", "observe_dialog", ActivateDialog)
    wait_until(lambda: dialog.plan is not None or dialog.error_text())
    plan = dialog.plan
    assert plan.count >= 1 and f"moves the oldest {plan.count}" in dialog.summary.text()
    dialog.protocol_panel.quiet_spin.setValue(0)
    dialog.interaction = ScriptedInteraction(confirm=True)
    assert dialog.activate()
    wait_until(lambda: getattr(dialog, "closed_with", None) is not None)
    ours = activate_buffered(other, thread_id="long-run", lookup_key="thread:long-run", stamp_estimates=stamp_estimates)
    assert ours["chunks_after"] == len(plan.chunks) - plan.count
    assert _same_write(before, path, other) > 3
    with open_store(path) as store:
        assert len(store.om_current("thread:long-run").buffered_chunks) == len(plan.chunks) - plan.count


def test_the_activate_dialog_says_why_its_pending_figure_differs_from_the_bars(studio, studio_ctx, fixture_db):
    from tests.cli.test_write_previews import activation_figures, why_they_differ

    path = fixture_db("buffered")
    stored, bar = activation_figures(path)
    window = studio(path, thread_id="long-run")
    dialog = open_write_dialog(window, "activate_action", "observe_dialog", ActivateDialog)
    wait_until(lambda: dialog.plan is not None or dialog.error_text())
    assert why_they_differ(stored, bar) in dialog.summary.text()
    dialog.reject()

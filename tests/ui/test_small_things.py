"""Small things a user trips over (issue 9 §7): figures of over-threshold bars, stale flags, plurals,
a tool-only message's blank Text pane, where File ▸ Open starts."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QStyleOptionViewItem

from studio.engine import tokens
from studio.ui.delegates import bar_label
from studio.ui.models.roles import BAR_ROLE
from studio.ui.models.threads import ThreadColumn
from tests.conftest import load_oracle
from tests.ui.mastra_edits import append_message, set_flag


def _cell_label(window, thread_id: str, column: ThreadColumn) -> tuple[str, str]:
    view = window.threads_view
    index = window.thread_model.index(window.thread_model.row_of(thread_id), column)
    bar = index.data(BAR_ROLE)
    option = QStyleOptionViewItem()
    view.itemDelegateForIndex(index).initStyleOption(option, index)
    option.rect = view.visualRect(index)
    return bar.text, bar_label(bar, option, option.rect.width() - 8)


def test_over_threshold_bar_keeps_its_figures(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    # support-1's unobserved tokens and threshold (the oracle); one more message, long enough, takes it over.
    oracle = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]
    pending, threshold = oracle["pendingTokens"], oracle["threshold"]
    assert pending < threshold, "support-1 is already over its threshold"
    sentence = "A question the observer has not seen yet, long enough to pass the threshold. "
    text = sentence * (1 + (threshold * 105 // 100 - pending) // tokens.estimate_text(sentence))   # ~105 %
    append_message(path, "support-1", text)
    window = studio(path, thread_id="support-1")
    full, shown = _cell_label(window, "support-1", ThreadColumn.OBSERVATION)
    value = int(full.split(" / ")[0].replace(",", ""))
    # Mastra counts the new message with its tokenx estimate on top of what was pending.
    assert value > threshold and value >= pending + tokens.estimate_text(text)
    assert full.endswith("%") and int(full.rsplit("· ", 1)[1][:-1]) > 100
    assert shown == full                     # "2,7xx / 2,500 · 10x%", not just "10x%"


def test_over_bar_at_mastras_default_threshold_keeps_its_figures(studio, fixture_db):
    # Mastra's default observation threshold is 30,000 tokens (messageTokens); 32,400 pending is 108 %.
    # The bar columns are sized from the widest bar the statuses give: a thread at 32,400 / 30,000 widens
    # the column until that bar shows its figures, not only its percentage.
    import copy

    from studio.ui.style import BarValue

    window = studio(fixture_db("support"), thread_id="support-1")
    view = window.threads_view
    model = window.thread_model
    row = next(r for r in range(model.rowCount()) if model.thread_row(r).status is not None)
    status = copy.copy(model.thread_row(row).status)
    status.pending_tokens, status.threshold = 32_400, 30_000
    model.apply_statuses([status])
    QCoreApplication.processEvents()
    index = model.index(row, ThreadColumn.OBSERVATION)
    option = QStyleOptionViewItem()
    view.itemDelegateForIndex(index).initStyleOption(option, index)
    bar = BarValue(32_400, 30_000)
    width = view.columnWidth(ThreadColumn.OBSERVATION) - 8
    assert bar_label(bar, option, width) == "32,400 / 30,000 · 108%"


def test_stale_busy_flag_is_a_visible_warning_with_its_age(studio, fixture_db):
    path = fixture_db("support")
    set_flag(path, "thread:support-1", "isReflecting", updated_ms_ago=3 * 3600 * 1000 + 60_000)
    window = studio(path, thread_id="support-1")
    tab = window.thread_view.om_tab
    assert tab.stale_warning.isVisible()
    assert "isReflecting" in tab.stale_warning.text() and "3 h ago" in tab.stale_warning.text()
    assert tab.stale_warning.styleSheet()                      # not the muted grey of the summary


def test_no_warning_without_a_stale_flag(studio, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    assert not window.thread_view.om_tab.stale_warning.isVisible()


def test_one_token_left_is_singular(studio, fixture_db):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1")
    bar = window.thread_view.om_tab.messages_bar
    bar.set_value(2499, 2500)
    assert bar.state_text() == "1 token left"
    bar.set_value(2501, 2500)
    assert bar.state_text() == "Over the threshold by 1 token"
    bar.set_value(2488, 2500)
    assert bar.state_text() == "12 tokens left"


def test_tool_only_message_text_pane_says_why_it_is_blank(studio, studio_ctx, fixture_db):
    # tools.db (real Mastra) stores tools-msg-5 as an assistant message whose only part is a tool-invocation.
    window = studio(fixture_db("tools"), thread_id="tools-1", tab="messages")
    tab = window.thread_view.messages_tab
    tab.show_in_context("tools-msg-5")
    studio_ctx.runner.wait_idle()
    window.settle()
    assert tab.text_view.toPlainText() == ""
    hint = tab.text_view.placeholderText()
    assert "tool-invocation" in hint and "Parts" in hint
    tab.show_in_context("tools-msg-1") if tab.model.row_of("tools-msg-1") >= 0 else None
    studio_ctx.runner.wait_idle()


def test_speaker_column_only_when_the_thread_has_speakers(studio, studio_ctx, fixture_db):
    from studio.ui.models.messages import MessageColumn

    window = studio(fixture_db("support"), thread_id="support-1", tab="messages")
    studio_ctx.runner.wait_idle()
    window.settle()
    assert window.thread_view.messages_tab.view.isColumnHidden(MessageColumn.SPEAKER)
    window = studio(fixture_db("collab"), tab="messages")     # collab.db: <turn> tags of several people
    studio_ctx.runner.wait_idle()
    window.settle()
    assert not window.thread_view.messages_tab.view.isColumnHidden(MessageColumn.SPEAKER)


def test_open_dialog_starts_in_the_open_files_folder(studio, studio_ctx, fixture_db, monkeypatch):
    path = fixture_db("support")
    window = studio(path)
    assert window.open_dialog_directory() == str(path.parent)
    # Opened by a relative path (`memory-studio fx/support.db`): still that folder after the process moves on.
    monkeypatch.chdir(path.parent.parent)
    window.open_database(f"{path.parent.name}/{path.name}")
    assert studio_ctx.runner.wait_idle()
    monkeypatch.chdir("/")
    assert window.database_path == str(path)
    assert window.open_dialog_directory() == str(path.parent)


def test_last_activity_is_the_newest_message_when_updated_at_is_stale(studio, fixture_db):
    # Mastra #17932: messages saved without touching the thread leave updatedAt behind. A message three
    # years after the thread's updatedAt must become its last activity, and the thread is marked.
    from studio.store.records import iso_to_ms
    from studio.ui.models.threads import STALE_MARK

    path = fixture_db("support")
    three_years = 3 * 365 * 86_400_000
    append_message(path, "support-4", "Back after a long while.", after_ms=three_years)
    window = studio(path, thread_id="support-4")
    model = window.thread_model
    row = model.row_of("support-4")
    listed = model.thread_row(row)
    newest = iso_to_ms(listed.thread.newest_message_at)
    assert newest - iso_to_ms(listed.thread.updated_at) > three_years - 86_400_000
    assert listed.activity_ms == newest
    cell = model.index(row, ThreadColumn.LAST_ACTIVITY).data()
    assert cell.endswith(STALE_MARK)
    assert str(int(listed.thread.updated_at[:4]) + 3) in cell      # a date years on: shown with its year
    assert "17932" in model.index(row, ThreadColumn.LAST_ACTIVITY).data(3)   # Qt.ToolTipRole
    assert row == 0                        # the list sorts by last activity, newest first
    assert "stale" in window.thread_view.subtitle.text()
    # Threads Mastra wrote normally (updatedAt a millisecond before the last message) are not marked.
    other = model.index(model.row_of("support-1"), ThreadColumn.LAST_ACTIVITY).data()
    assert not other.endswith(STALE_MARK)

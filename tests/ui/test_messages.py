"""Thread ▸ Messages: every stored message, read in pages, with token counts and a full-text detail pane."""

from __future__ import annotations

from studio.engine import tokens
from studio.store import open_store
from studio.ui.models.messages import MessageColumn, MessageTableModel
from studio.ui.models.roles import ID_ROLE
from tests.conftest import load_oracle


def test_messages_tab_lists_every_message(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        messages = store.list_messages("support-1")
    window = studio(path, thread_id="support-1", tab="messages")
    tab = window.thread_view.messages_tab
    model = tab.model
    while model.canFetchMore():
        model.fetchMore()
        studio_ctx.runner.wait_idle()
    n = len(load_oracle("support")["threads"]["support-1"]["messages"])   # what Mastra lists
    assert model.rowCount() == len(messages) == n
    assert [model.index(r, 0).data(ID_ROLE) for r in range(model.rowCount())] == [m.id for m in messages]
    first = messages[0]
    assert model.index(0, MessageColumn.ROLE).data() == first.role
    assert model.index(0, MessageColumn.ESTIMATE).data() == f"{tokens.count_messages([first.as_mastra()]):,}"
    assert tab.summary.text().startswith(f"{n} of {n} messages")

    tab.select_row(1)
    assert tab.text_view.toPlainText() == messages[1].text
    assert '"type": "text"' in tab.parts_view.toPlainText()
    assert messages[1].id in tab.header.text()


def test_message_model_pages(qtbot, studio_ctx, fixture_db):
    path = fixture_db("buffered")
    studio_ctx.runner.open_store(str(path))
    studio_ctx.runner.wait_idle()
    n = len(load_oracle("buffered")["threads"]["long-run"]["messages"])   # what Mastra lists
    assert n > 20, "long-run needs more than two pages of 10 messages"
    model = MessageTableModel(studio_ctx.runner, page_size=10)
    model.set_thread("long-run")
    studio_ctx.runner.wait_idle()
    assert model.rowCount() == 10 and model.total == n and model.canFetchMore()
    with qtbot.waitSignal(model.rowsInserted, timeout=30_000) as blocker:
        model.fetchMore()
        assert not model.canFetchMore()            # one page in flight at a time
    assert blocker.args[1:] == [10, 19]            # inclusive last row
    while model.canFetchMore():
        model.fetchMore()
        studio_ctx.runner.wait_idle()
    assert model.rowCount() == n
    with open_store(path) as store:
        assert [model.index(r, 0).data(ID_ROLE) for r in range(n)] == [m.id for m in store.list_messages("long-run")]
    model.set_thread(None)
    assert model.rowCount() == 0


def test_a_filtered_list_keeps_each_messages_number_and_times_show_seconds(studio, studio_ctx, fixture_db):
    """Filtered to the assistant's messages, each row keeps its number in the whole thread (it renumbered from 1),
    and the Time column shows seconds at any width (two turns a few seconds apart read alike without them)."""
    from datetime import datetime

    from studio.app.messages import AGENT, MessageFilters

    path = fixture_db("support")
    with open_store(path) as store:
        messages = store.list_messages("support-1")
    expected = [n for n, m in enumerate(messages, 1) if m.role != "user"]   # # as the unfiltered list numbers
    window = studio(path, thread_id="support-1", tab="messages")
    window.resize(1024, 700)
    model = window.thread_view.messages_tab.model
    model.set_filters(MessageFilters(speaker=AGENT))
    studio_ctx.runner.wait_idle()
    while model.canFetchMore():
        model.fetchMore()
        studio_ctx.runner.wait_idle()
    assert expected[0] != 1 and model.rowCount() == len(expected)
    assert [int(model.index(r, MessageColumn.NUMBER).data()) for r in range(model.rowCount())] == expected
    first = messages[expected[0] - 1]
    local = datetime.fromisoformat(first.created_at.replace("Z", "+00:00")).astimezone()
    assert model.index(0, MessageColumn.TIME).data().endswith(local.strftime("%H:%M:%S"))

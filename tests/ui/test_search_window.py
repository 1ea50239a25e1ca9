"""View ▸ Search All Threads…: the window shows what `studio.app.search.search` finds (grouped by resource and
thread, plain text) and Enter on a result opens that message in the Messages tab."""

from __future__ import annotations

from studio.app.search import search
from studio.store import open_store
from studio.ui.widgets.search_window import HIT_ROLE


def _message_items(tree):
    out = []
    for r in range(tree.topLevelItemCount()):
        resource = tree.topLevelItem(r)
        for t in range(resource.childCount()):
            thread = resource.child(t)
            out += [thread.child(m) for m in range(thread.childCount())]
    return out


def test_search_window_lists_and_opens(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("support")
    with open_store(path) as store:
        expected = search(store, "lisbon budget")
    assert len({h.thread_id for h in expected}) >= 1 and expected
    window = studio(path)
    dialog = window.show_search()
    assert window.search_action.shortcut().toString() == "Ctrl+Shift+F"
    dialog.query_edit.setText("lisbon budget")
    dialog.start()
    studio_ctx.runner.wait_idle()
    qtbot.waitUntil(lambda: not dialog.running, timeout=10000)
    items = _message_items(dialog.tree)
    assert [it.data(0, HIT_ROLE) for it in items] == [(h.thread_id, h.message_id) for h in expected]
    assert dialog.status.text().startswith(f"Done: {len(expected):,} message")
    thread_id, message_id = items[-1].data(0, HIT_ROLE)
    dialog.tree.itemActivated.emit(items[-1], 0)
    qtbot.waitUntil(lambda: window.thread_view.thread_id == thread_id, timeout=10000)
    tab = window.thread_view.messages_tab
    from studio.ui.models.roles import ID_ROLE

    qtbot.waitUntil(lambda: tab.view.currentIndex().isValid()
                    and tab.view.currentIndex().siblingAtColumn(0).data(ID_ROLE) == message_id, timeout=10000)
    assert window.thread_view.current_tab() == "messages"
    dialog.close()


def test_blank_and_bad_queries_say_so(studio, fixture_db):
    window = studio(fixture_db("history"))
    dialog = window.show_search()
    dialog.start()
    assert "Type words" in dialog.status.text() and not dialog.running
    dialog.query_edit.setText("x")
    dialog.metadata_edit.setText("=bad")
    dialog.start()
    assert "metadata filter is not valid" in dialog.status.text() and not dialog.running
    dialog.close()

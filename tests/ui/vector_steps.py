"""What the UI tests of semantic recall share: opening a thread of a store on one tab, with its loads done, and
reading the Vectors tab's grouped results."""

from __future__ import annotations


def open_thread(studio, studio_ctx, path, thread="sem-lisbon", tab="vectors"):
    """Open PATH in a studio window on THREAD's TAB, every load done; return (window, the thread view)."""
    window = studio(path, thread_id=thread, tab=tab)
    studio_ctx.runner.wait_idle()
    assert window.thread_view.current_tab() == tab
    return window, window.thread_view


def result_groups(tree) -> dict[str, list[list[str]]]:
    """The Vectors tab's results: {group title up to " (": [[column texts] of each row]}."""
    out = {}
    for i in range(tree.topLevelItemCount()):
        group = tree.topLevelItem(i)
        out[group.text(0).split(" (")[0]] = [[group.child(j).text(c) for c in range(3)]
                                             for j in range(group.childCount())]
    return out


def set_options(tab, top_k: int, message_range: int, scope: str, last_messages: int) -> None:
    """Set the Vectors tab's semanticRecall options (remembered for the store)."""
    tab.top_k.setValue(top_k)
    tab.message_range.setValue(message_range)
    tab.scope.setCurrentText(scope)
    tab.last_messages.setValue(last_messages)

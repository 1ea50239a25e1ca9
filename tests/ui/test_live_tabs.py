"""The open thread's tabs after live refreshes show exactly what a freshly opened window shows.

A live refresh of the thread shown redraws what changed only (`ThreadView.show_detail` with the
refresh's ChangeSet): the Messages tab counts and repaints the new or changed rows and appends the
new ones, the OM and History tabs keep an unchanged record's log, chunks and generations, and the
Speakers, Working memory and Vectors tabs are re-read when shown. Here another program writes to
the thread shown as Mastra writes (tests/live_writes.py: saveMessages' insert, an upsert of an
existing message, deleteMessages, an in-place OM record update and a new OM generation); after each
write and its live refresh every label, bar and table row of the tabs must equal a second window
opened afresh on the same file, thread and tab; every tab is then shown in both and compared again.
"""

from __future__ import annotations

import random

import pytest
from PySide6.QtCore import QModelIndex, QSettings, Qt
from PySide6.QtWidgets import QAbstractItemView, QAbstractSpinBox, QComboBox, QLabel, QLineEdit, QPlainTextEdit

from studio.ui.context import AppContext
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.main_window import MainWindow
from studio.ui.widgets.thread_view import TAB_NAMES
from studio.ui.widgets.threshold_bar import ThresholdBar
from tests.live_writes import MESSAGES, OM, FileSql, MastraWrites

THREAD = "support-1"
#: The tabs compared after each write (Timeline, Trace and Context draw charts or answer queries; Health: test_health).
COMPARED = ["observations", "history", "messages", "participants", "working-memory", "vectors"]


def _model_rows(model, parent=QModelIndex()) -> list:
    """Every row of MODEL (a tree's children after their parent) as its cells' display texts."""
    out = []
    for r in range(model.rowCount(parent)):
        cells = tuple(model.index(r, c, parent).data(Qt.ItemDataRole.DisplayRole)
                      for c in range(model.columnCount(parent)))
        out.append(cells)
        first = model.index(r, 0, parent)
        if first.isValid() and model.rowCount(first) > 0:
            out.append(_model_rows(model, first))
    return out


def tab_state(widget) -> list:
    """What WIDGET (a tab) shows: its labels, text boxes, combos, bars and the rows of its tables and trees."""
    out: list = []
    for child in widget.findChildren(QLabel):
        out.append(("label", child.text()))
    for child in widget.findChildren(QLineEdit):
        if not isinstance(child.parent(), (QComboBox, QAbstractSpinBox)):
            out.append(("line", child.text()))
    for child in widget.findChildren(QPlainTextEdit):
        out.append(("text", child.toPlainText()))
    for child in widget.findChildren(QComboBox):
        out.append(("combo", [child.itemText(i) for i in range(child.count())], child.currentText()))
    for child in widget.findChildren(ThresholdBar):
        out.append(("bar", child.value(), child.threshold(), child.figures_text(), child.state_text()))
    for child in widget.findChildren(QAbstractItemView):
        if child.model() is not None and not isinstance(child.parent(), QComboBox):
            out.append(("rows", _model_rows(child.model())))
    return out


def window_state(window, tabs) -> dict:
    """The thread view's header and TABS' states."""
    view = window.thread_view
    state = {"title": view.title.text(), "subtitle": view.subtitle.text()}
    for name in tabs:
        state[name] = tab_state(view.tabs.widget(TAB_NAMES.index(name)))
    return state


def fresh_state(qtbot, tmp_path, path, tab: str, tabs) -> dict:
    """Open PATH in a new window (its own runner and store) on THREAD and TAB, wait for every read; its state."""
    ctx = AppContext(settings=QSettings(str(tmp_path / "fresh.ini"), QSettings.Format.IniFormat), runner=TaskRunner())
    window = MainWindow(ctx)   # closing it shuts its runner down
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    window.open_database(str(path), thread_id=THREAD, tab=tab)
    qtbot.waitUntil(lambda: window.thread_view.thread_id == THREAD and ctx.runner.pending == 0, timeout=20000)
    assert ctx.runner.wait_idle(), "the fresh window's reads did not finish"
    assert window.current_thread_id == THREAD and window.thread_view.current_tab() == tab
    state = window_state(window, tabs)
    window.close()
    return state


def refresh_live(qtbot, ctx, window) -> None:
    """Make WINDOW notice the commit now (as its watcher's tick does) and wait for the live refresh and its reads."""
    before = window.loader.last_refresh
    window.loader.check_for_changes()
    qtbot.waitUntil(lambda: window.loader.last_refresh is not before and ctx.runner.pending == 0, timeout=20000)
    assert ctx.runner.wait_idle()
    assert not window.loader.last_refresh.changes.everything   # a refresh of what changed, not a reload
    assert THREAD in window.loader.last_refresh.changes.threads


class Writer:
    """Mastra's writes (tests/live_writes.py) aimed at THREAD of the file at PATH."""

    def __init__(self, path, seed: int):
        self.sql = FileSql(path)
        self.writes = MastraWrites(self.sql, random.Random(seed))
        self.thread = self.sql.query('SELECT id, "resourceId" FROM mastra_threads WHERE id = ?', (THREAD,))[0]
        self.writes.a_thread = lambda: self.thread

    def append(self) -> None:
        """saveMessages of a new message (the insert, then the thread's updatedAt)."""
        self.writes.save_message()

    def upsert_existing(self, position: int) -> None:
        """saveMessages of the thread's message at POSITION (storage order) with new text: Mastra's upsert."""
        ids = [r[0] for r in self.sql.query(f'SELECT id FROM {MESSAGES} WHERE thread_id = ? ORDER BY "createdAt", '
                                            "rowid", (THREAD,))]
        w = self.writes
        self.sql.run([w.message_upsert(ids[position], self.thread, "Rewritten by the agent: " + w.text(40), w.now())])
        self.sql.run([w.bump(THREAD, w.now())])

    def delete(self, position: int) -> None:
        """deleteMessages of the thread's message at POSITION (and the thread's updatedAt)."""
        ids = [r[0] for r in self.sql.query(f'SELECT id FROM {MESSAGES} WHERE thread_id = ? ORDER BY "createdAt", '
                                            "rowid", (THREAD,))]
        self.sql.run([(f"DELETE FROM {MESSAGES} WHERE id = ?", (ids[position],)), self.writes.bump(THREAD,
                                                                                                  self.writes.now())])

    def current_record(self) -> str:
        return self.sql.query(f'SELECT id FROM {OM} WHERE "lookupKey" = ? ORDER BY "generationCount" DESC LIMIT 1',
                              (f"thread:{THREAD}",))[0][0]

    def om_update(self) -> None:
        """An in-place update of the thread's OM record (its active observations and pending tokens; updatedAt)."""
        w = self.writes
        self.sql.run([(f'UPDATE {OM} SET "activeObservations" = ?, "pendingMessageTokens" = ?, {w.stamp(OM)} '
                       "WHERE id = ?", ("* 🔴 12:00 The user asked again about " + w.text(30), 1234,
                                        *w.stamp_params(OM, w.now()), self.current_record()))])

    def om_generation(self) -> None:
        """A new generation of the thread's OM record (a row copied with generationCount + 1)."""
        w = self.writes
        [(rid, count)] = self.sql.query(f'SELECT id, "generationCount" FROM {OM} WHERE id = ?',
                                        (self.current_record(),))
        now = w.now()
        self.sql.run([w.copy_row(OM, rid, {"id": w.fresh_id("om"), "generationCount": int(count) + 1,
                                           "activeObservations": "* 🟡 12:05 Reflected: " + w.text(30),
                                           "observationTokenCount": 42, "createdAt": now, "updatedAt": now})])

    def close(self) -> None:
        self.sql.close()


@pytest.mark.parametrize("tab", ["observations", "messages"])
def test_live_refreshed_tabs_equal_a_fresh_window(studio, studio_ctx, fixture_db, qtbot, tmp_path, tab):
    path = fixture_db("support")
    window = studio(path, thread_id=THREAD, tab=tab)
    assert window.current_thread_id == THREAD
    view = window.thread_view
    resets = {"messages": 0, "log": 0, "generations": 0}
    view.messages_tab.model.modelReset.connect(lambda: resets.__setitem__("messages", resets["messages"] + 1))
    view.om_tab.log_model.modelReset.connect(lambda: resets.__setitem__("log", resets["log"] + 1))
    view.history_tab.generation_model.modelReset.connect(
        lambda: resets.__setitem__("generations", resets["generations"] + 1))
    writer = Writer(path, seed=21)
    try:
        steps = [("append", writer.append), ("append", writer.append),
                 ("upsert", lambda: writer.upsert_existing(1)), ("delete", lambda: writer.delete(2)),
                 ("om update", writer.om_update), ("append", writer.append), ("om generation", writer.om_generation)]
        for step, write in steps:
            before = dict(resets)
            write()
            refresh_live(qtbot, studio_ctx, window)
            assert window.current_thread_id == THREAD and view.current_tab() == tab, step
            if step in ("append", "upsert"):   # rows appended or repainted in place; the record's tabs kept
                assert resets == before, (step, resets, before)
            if step != "om update" and step != "om generation":
                assert resets["log"] == before["log"] and resets["generations"] == before["generations"], step
            if step == "delete" and tab == "messages":
                assert resets["messages"] == before["messages"] + 1   # rows went: laid out again
            if tab != "messages":   # the hidden Messages tab is re-read when shown
                assert "messages" in view.stale_tabs and resets["messages"] == before["messages"], step
            # the tab shown, the header and the record's tabs, as they are now
            want = fresh_state(qtbot, tmp_path, path, tab, COMPARED)
            # History keeps the pair the user compared while both exist (a fresh window: the newest two)
            view.history_tab.select_generation(0)
            assert studio_ctx.runner.wait_idle()
            got = window_state(window, COMPARED)
            for name in ("title", "subtitle", "observations", "history", tab):
                assert got[name] == want[name], (step, name)
            # a tab left stale is read again when shown: then it too equals the fresh window's
            for other in COMPARED:
                view.set_tab(other)
                assert studio_ctx.runner.wait_idle()
                assert window_state(window, [other])[other] == want[other], (step, other)
            assert view.stale_tabs == set()
            view.set_tab(tab)
            assert studio_ctx.runner.wait_idle()
    finally:
        writer.close()
    assert resets["log"] >= 1 and resets["generations"] >= 1   # the OM writes did redraw the record's tabs


def test_show_in_context_waits_for_a_refresh_in_flight(studio, studio_ctx, fixture_db, qtbot):
    """`load_through` (Show in context) asked while a refresh of the rows is under way reads on once it is in."""
    from studio.ui.models.messages import MessageTableModel

    window = studio(fixture_db("support"), thread_id=THREAD)
    total = window.thread_model.thread_row(window.thread_model.row_of(THREAD)).thread.message_count
    assert total >= 6
    model = MessageTableModel(studio_ctx.runner, page_size=2)
    model.set_thread(THREAD)
    qtbot.waitUntil(lambda: model.rowCount() == 2 and studio_ctx.runner.pending == 0, timeout=10000)
    model.refresh()                      # under way: the rows are being re-read
    called: list[int] = []
    model.load_through(5, lambda: called.append(model.rowCount()))
    qtbot.waitUntil(lambda: bool(called), timeout=10000)
    assert called[0] >= 6 and model.row_of(model.message_row(5).message.id) == 5
    assert studio_ctx.runner.wait_idle()


def test_live_speakers_are_made_from_the_messages_tabs_rows(studio, studio_ctx, fixture_db, qtbot, monkeypatch):
    """With the Messages tab shown, a live refresh's Speakers report (the speaker filter's) is made from the
    Messages tab's refreshed rows, not read again: after a new speaker's message is appended and another message
    is rewritten in place with a third speaker's tag, the report equals `thread_speakers` of a fresh store (the
    speakers, their counts and Mastra's token estimates, the attributions), and the combo offers them."""
    from studio.engine.speakers import thread_speakers
    from studio.store import open_store
    from studio.ui.widgets import participants

    path = fixture_db("collab")
    window = studio(path, thread_id="doc_42", tab="messages")
    assert studio_ctx.runner.wait_idle()
    view = window.thread_view
    reads = []
    real = participants.load_speakers

    def spy(*args, **kwargs):
        reads.append(args[1:2])
        return real(*args, **kwargs)

    monkeypatch.setattr(participants, "load_speakers", spy)
    sql = FileSql(path)
    writes = MastraWrites(sql, random.Random(5))
    try:
        ids = [r[0] for r in sql.query(f"SELECT id FROM {MESSAGES} WHERE thread_id = 'doc_42' AND role = 'user' "
                                       'ORDER BY "createdAt", id')]

        def tagged(who: str, name: str) -> str:
            return writes.content(f'<turn author_id="{who}" author_name="{name}" functional_role="editor">\n'
                                  f"A word from {name}: {writes.text(30)}\n</turn>")

        steps = [  # saveMessages of a new user message (a new speaker), then an upsert of an existing one in place
            [writes.copy_row(MESSAGES, ids[0], {"id": "dana-1", "content": tagged("u_dana", "Dana"),
                                                "createdAt": writes.now()})],
            [(f"UPDATE {MESSAGES} SET content = ? WHERE id = ?", (tagged("u_eve", "Eve"), ids[1]))],
        ]
        for statements in steps:
            sql.run(statements)
            sql.run([writes.bump("doc_42", writes.now())])
            before = window.loader.last_refresh
            window.loader.check_for_changes()
            qtbot.waitUntil(lambda before=before: window.loader.last_refresh is not before
                            and studio_ctx.runner.pending == 0, timeout=20000)
            assert studio_ctx.runner.wait_idle()
            with open_store(path) as store:
                fresh = thread_speakers(store, "doc_42")
            assert view.participants_tab.report == fresh
            combo = view.messages_tab.speaker_combo
            assert [combo.itemData(i) for i in range(combo.count())][1:-1] == [s.key for s in fresh.speakers]
        assert {"u_dana", "u_eve"} <= {s.key for s in fresh.speakers}
        assert reads == []   # never read again: made from the rows the Messages tab read
        view.set_tab("participants")   # shown, it is what a read gives
        assert studio_ctx.runner.wait_idle() and view.participants_tab.report == fresh
    finally:
        sql.close()

"""What keeps the GUI thread free: incremental status batches, one model call per painted cell, the helper process."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QHeaderView, QStyledItemDelegate, QStyleOptionViewItem

from studio.app.listing import load_listing
from studio.app.statuses import iter_thread_statuses
from studio.store import open_store
from studio.ui.models.roles import BAR_ROLE, ID_ROLE
from studio.ui.models.threads import ThreadColumn, ThreadTableModel
from studio.ui.widgets import window_loading
from tests.conftest import load_oracle


def listing_and_statuses(path):
    with open_store(path) as store:
        listing = load_listing(store)
        statuses = list(iter_thread_statuses(store, [r.thread for r in listing.rows]))
    return listing, statuses


def test_status_batch_touches_only_its_rows(qtbot, fixture_db):
    listing, statuses = listing_and_statuses(fixture_db("support"))
    model = ThreadTableModel()
    model.set_rows(listing.rows)
    changed, layouts, resets = [], [], []
    model.dataChanged.connect(lambda a, b, _roles=None: changed.append((a.row(), b.row(), a.column(), b.column())))
    model.layoutChanged.connect(lambda *_: layouts.append(1))
    model.modelReset.connect(lambda: resets.append(1))
    model.sort(ThreadColumn.OBSERVATION, Qt.SortOrder.DescendingOrder)
    layouts.clear()
    # the thread nearest its message threshold, by Mastra's getStatus (the oracle): it sorts first
    oracle = {t: st for om in load_oracle("support")["om"].values() for t, st in om["status"].items()}
    ratios = {t: st["pendingTokens"] / st["threshold"] for t, st in oracle.items()}
    top = max(ratios, key=ratios.get)
    assert sorted(ratios.values())[-2] < ratios[top], "two threads share the highest message ratio"
    batch = "support-2" if top != "support-2" else "support-3"

    one = next(s for s in statuses if s.thread_id == batch)
    model.apply_statuses([one])
    row = model.row_of(batch)
    assert changed == [(row, row, ThreadColumn.OBSERVATION, ThreadColumn.REFLECTION)]
    assert layouts == [] and resets == []                     # no re-sort, no reset for a batch
    assert model.index(row, ThreadColumn.OBSERVATION).data(BAR_ROLE).value == one.pending_tokens
    other = model.row_of(top)
    assert model.index(other, ThreadColumn.OBSERVATION).data() == "…"    # still pending

    changed.clear()
    model.apply_statuses([s for s in statuses if s.thread_id != batch], final=True)
    assert layouts == [1]                                     # sorted once, at the end, by the bar column
    assert model.index(0, 0).data(ID_ROLE) == top             # the fullest message window comes first
    assert changed and changed[-1][:2] == (0, model.rowCount() - 1)   # "…" of unknown rows turns into "—"


def test_adjacent_changed_rows_share_one_signal(fixture_db):
    listing, statuses = listing_and_statuses(fixture_db("support"))
    model = ThreadTableModel()
    model.set_rows(listing.rows)
    spans = []
    model.dataChanged.connect(lambda a, b, _roles=None: spans.append((a.row(), b.row())))
    model.apply_statuses(statuses)
    rows = sorted(model.row_of(s.thread_id) for s in statuses)
    covered = sorted(r for a, b in spans for r in range(a, b + 1))
    assert covered == rows
    assert len(spans) < len(rows)                             # runs of adjacent rows are merged


def test_views_get_every_role_of_a_cell_in_one_call(fixture_db, qtmodeltester):
    listing, statuses = listing_and_statuses(fixture_db("support"))
    model = ThreadTableModel()
    model.set_rows(listing.rows)
    model.apply_statuses(statuses, final=True)
    qtmodeltester.check(model)
    data_calls = []
    model.data = lambda *args: data_calls.append(args)      # the per-role path a view would otherwise take
    delegate = QStyledItemDelegate()
    for col in (ThreadColumn.TITLE, ThreadColumn.MESSAGES, ThreadColumn.OBSERVATION):
        index = model.index(0, col)
        option = QStyleOptionViewItem()
        delegate.initStyleOption(option, index)        # what a view does before painting a cell
        assert option.text == ThreadTableModel.data(model, index)
    assert data_calls == []                            # every role came from one multiData call per cell
    del model.data
    row = model.thread_row(0)
    assert model.index(0, ThreadColumn.TITLE).data(Qt.ItemDataRole.ToolTipRole).count(row.thread.id) == 1


def test_table_model_base_answers_roles_from_python(fixture_db):
    import sys

    from studio.ui.models.resources import ResourceListModel

    callers = []

    class Recording(ResourceListModel):
        def data(self, index, role=Qt.ItemDataRole.DisplayRole):
            callers.append(sys._getframe(1).f_code.co_name)
            return super().data(index, role)

    listing, _ = listing_and_statuses(fixture_db("support"))
    model = Recording()
    model.set_resources(listing.resources)
    option = QStyleOptionViewItem()
    QStyledItemDelegate().initStyleOption(option, model.index(1, 0))
    assert option.text == "user-alice"
    assert len(callers) > 1 and set(callers) == {"multiData"}   # one call from C++, the roles in Python


def test_big_models_are_never_sized_to_contents(studio, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    tab = window.thread_view
    views = {"messages": tab.messages_tab.view.horizontalHeader(), "diff": tab.history_tab.diff_view.horizontalHeader(),
             "log": tab.om_tab.log_view.header(), "threads": window.threads_view.horizontalHeader()}
    for name, header in views.items():
        modes = [header.sectionResizeMode(c) for c in range(header.count())]
        assert QHeaderView.ResizeMode.ResizeToContents not in modes, name


@pytest.fixture
def helper_for_every_database(monkeypatch):
    """Make every database 'big': statuses, details and message pages run in the helper process."""
    monkeypatch.setattr(window_loading, "HELPER_MIN_MESSAGES", 0)


def test_helper_process_computes_what_mastra_reports(studio, studio_ctx, fixture_db, helper_for_every_database):
    window = studio(fixture_db("support"), thread_id="support-1", tab="messages")
    assert window.uses_helper
    helper = studio_ctx.runner.helper
    assert helper.available and helper.pid not in (None, os.getpid())
    oracle = load_oracle("support")["om"]
    model = window.thread_model
    for record in oracle.values():
        for thread_id, st in record["status"].items():
            bar = model.index(model.row_of(thread_id), ThreadColumn.OBSERVATION).data(BAR_ROLE)
            assert (bar.value, bar.threshold) == (st["pendingTokens"], st["threshold"]), thread_id
    assert model.statuses_done
    om = window.thread_view.om_tab
    st = oracle["thread:support-1"]["status"]["support-1"]
    assert (om.messages_bar.value(), om.observations_bar.value()) == (st["pendingTokens"], st["observationTokenCount"])
    messages = window.thread_view.messages_tab.model
    assert messages.use_helper and messages.rowCount() == 57


def test_dead_helper_falls_back_to_the_worker(studio, studio_ctx, fixture_db, helper_for_every_database, monkeypatch):
    from studio.app.helper_process import HelperProcess

    def cannot_start(self):
        raise OSError("no python here")

    monkeypatch.setattr(HelperProcess, "_ensure", cannot_start)
    window = studio(fixture_db("support"), thread_id="support-1")
    assert window.uses_helper and not studio_ctx.runner.helper.available
    st = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]
    assert window.thread_view.om_tab.messages_bar.value() == st["pendingTokens"]
    assert window.thread_model.statuses_done
    bar = window.thread_model.index(window.thread_model.row_of("support-1"), ThreadColumn.OBSERVATION).data(BAR_ROLE)
    assert bar.value == st["pendingTokens"]


def test_helper_reports_store_errors(qapp, fixture_db, tmp_path):
    from studio.app import listing as loaders
    from studio.app.helper_process import HelperProcess
    from studio.errors import StoreError

    helper = HelperProcess()
    try:
        listing = helper.call(str(fixture_db("tools")), 1, loaders.load_listing)
        assert [r.thread.id for r in listing.rows] == ["tools-1"]
        with pytest.raises(StoreError, match="No such file"):
            helper.call(str(tmp_path / "missing.db"), 2, loaders.load_listing)
        assert helper.available                      # an error in a call does not kill the helper
    finally:
        helper.close()
    assert not helper.available and helper.pid is None


def test_loaders_import_without_qt():
    import subprocess
    import sys

    code = ("import sys, studio.app.listing, studio.app.helper_process; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_listing_computes_sort_keys_off_the_gui_thread(fixture_db):
    with open_store(fixture_db("support")) as store:
        rows = load_listing(store).rows
    assert all(r.activity_ms > 0 for r in rows)
    model = ThreadTableModel()
    model.set_rows(rows)
    times = [model.thread_row(r).activity_ms for r in range(model.rowCount())]
    assert times == sorted(times, reverse=True)
    assert model.index(0, 0).parent() == QModelIndex()


def test_a_live_refresh_repaints_only_the_rows_it_re_read(qtbot, fixture_db):
    """`update_rows` (a live refresh that re-read one thread): only that row changes, no reset; the new values
    show, its status is kept until recomputed; a new last activity moves it to the top in one layout change."""
    import copy

    from studio.app.listing import ThreadRow

    listing, statuses = listing_and_statuses(fixture_db("support"))
    model = ThreadTableModel()
    model.set_rows(listing.rows)
    model.apply_statuses(statuses, final=True)
    changed, layouts, resets = [], [], []
    model.dataChanged.connect(lambda a, b, _roles=None: changed.append((a.row(), b.row())))
    model.layoutChanged.connect(lambda *_: layouts.append(1))
    model.modelReset.connect(lambda: resets.append(1))
    first = model.thread_row(0)
    thread = copy.copy(first.thread)
    thread.title = "Renamed by the agent"
    model.update_rows([ThreadRow(thread, first.lookup_key, activity_ms=first.activity_ms)])
    assert changed == [(0, 0)] and layouts == [] and resets == []
    assert model.index(0, ThreadColumn.TITLE).data() == "Renamed by the agent"
    assert model.thread_row(0).status == first.status            # kept until the refresh's status batch lands

    last = model.thread_row(model.rowCount() - 1)
    moved = copy.copy(last.thread)
    model.update_rows([ThreadRow(moved, last.lookup_key, activity_ms=first.activity_ms + 1)])
    assert layouts == [1] and resets == []
    assert model.index(0, 0).data(ID_ROLE) == moved.id


def test_a_live_refresh_of_one_row_keeps_the_order_a_sort_gives(qtbot, fixture_db):
    """`update_rows` of one thread puts its row in place without sorting every row when its new sort key stays
    strictly between its neighbours' (no layout change); a key that ties with a neighbour or passes one sorts
    again. Whatever the case, the rows are in the order a freshly filled model gives them, by every column."""
    import copy
    import random

    from studio.app.listing import ThreadRow

    listing, _statuses = listing_and_statuses(fixture_db("support"))
    rng = random.Random(4)
    for column in (ThreadColumn.LAST_ACTIVITY, ThreadColumn.TITLE, ThreadColumn.MESSAGES):
        for order in (Qt.SortOrder.DescendingOrder, Qt.SortOrder.AscendingOrder):
            model = ThreadTableModel()
            model.set_rows(listing.rows)
            model.sort(column, order)
            filled = list(listing.rows)   # the rows in the order the model was filled, updated ones in place
            layouts = []
            model.layoutChanged.connect(lambda *_, layouts=layouts: layouts.append(1))
            for _ in range(30):
                i = rng.randrange(model.rowCount())
                row = model.thread_row(i)
                keys = [model.thread_row(k).activity_ms for k in range(model.rowCount())]
                thread = copy.copy(row.thread)
                activity = row.activity_ms
                kind = rng.choice(["between", "tie", "far"])
                if column == ThreadColumn.LAST_ACTIVITY:
                    activity = {"between": activity + rng.choice([-1, 1]), "tie": rng.choice(keys),
                                "far": max(keys) + 10}[kind]
                elif column == ThreadColumn.TITLE:
                    thread.title = {"between": (thread.title or thread.id) + " ", "tie": model.thread_row(
                        rng.randrange(model.rowCount())).thread.title, "far": "~ last"}[kind]
                else:
                    thread.message_count = {"between": thread.message_count, "tie": model.thread_row(
                        rng.randrange(model.rowCount())).thread.message_count, "far": 10**6}[kind]
                new = ThreadRow(thread, row.lookup_key, activity_ms=activity)
                before = len(layouts)
                model.update_rows([new])
                filled = [new if r.thread.id == thread.id else r for r in filled]
                fresh = ThreadTableModel()
                fresh.set_rows(filled)
                fresh.sort(column, order)
                ids = [model.thread_row(k).thread.id for k in range(model.rowCount())]
                assert ids == [fresh.thread_row(k).thread.id for k in range(fresh.rowCount())], (column, order, kind)
                if kind == "between" and ids.index(thread.id) == i:
                    assert len(layouts) == before   # put in place: no layout change

"""Small things users read: empty diffs, diff markers, chunk text, "no OM" on a selected row, dates, errors, Open."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import libsql
import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPalette
from PySide6.QtWidgets import QFileDialog, QStyle, QStyleOptionViewItem

from studio.app.listing import ThreadRow
from studio.engine.diff import diff_logs
from studio.store import open_store
from studio.store.records import Thread, ms_to_iso
from studio.ui.delegates import BarDelegate
from studio.ui.models.diff import OP_ROLE, DiffMode, DiffModel, display_line
from studio.ui.models.roles import ID_ROLE, RAW_ROLE
from studio.ui.models.threads import NO_OM, ThreadColumn, ThreadTableModel
from studio.ui.style import MUTED
from studio.ui.widgets import main_window
from studio.ui.widgets.history_tab import BOTH_EMPTY
from tests.conftest import load_oracle, make_plain_sqlite
from tests.oracle_facts import current_generation, generations

# -- 5. empty diffs say so ---------------------------------------------------------------

def test_identical_generations_say_no_differences(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        history = store.om_history("thread:support-1")
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    assert tab.diff_message_text() == ""                     # a real diff: no sentence
    tab.compare(history[1].id, history[1].id)
    studio_ctx.runner.wait_idle()
    n, g = tab.diff_model.diff.kept, history[1].generation_count
    assert n > 0 and tab.diff_model.diff.added == tab.diff_model.diff.removed == 0
    assert tab.diff_message_text() == f"No differences: Generation {g} and Generation {g} have the same {n} lines."
    assert tab.diff_message.isVisible() and tab.diff_view.isVisible()


def test_empty_log_against_nothing_is_explained(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    conn = libsql.connect(str(path))
    conn.execute("UPDATE mastra_observational_memory SET activeObservations = '' "
                 "WHERE lookupKey = 'thread:support-1' AND generationCount = 0")
    conn.commit()
    conn.close()
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    tab.select_generation(len(generations("support", "thread:support-1")) - 1)   # generation 0: against nothing
    studio_ctx.runner.wait_idle()
    assert tab.old_combo.currentData() is None
    assert tab.diff_model.rowCount() == 0
    assert tab.diff_message_text() == BOTH_EMPTY
    assert tab.diff_message.isVisible() and not tab.diff_view.isVisible()
    tab.select_generation(0)                                 # a diff with rows puts the table back
    studio_ctx.runner.wait_idle()
    assert tab.diff_view.isVisible() and tab.diff_message_text() == ""


# -- 7. the marker comes first in the side-by-side diff ----------------------------------

def test_side_by_side_marker_comes_before_the_priority_dot(fixture_db, qtmodeltester):
    with open_store(fixture_db("support")) as store:
        history = store.om_history("thread:support-1")
    model = DiffModel()
    model.set_diff(diff_logs(history[1].active_observations, history[0].active_observations), "G1", "G2")
    model.set_mode(DiffMode.SIDE_BY_SIDE)
    qtmodeltester.check(model)
    assert model.columnCount() == 6
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(6)] == ["", "Old", "G1", "", "New", "G2"]
    seen = set()
    for r in range(model.rowCount()):
        for marker_col, text_col in ((0, 2), (3, 5)):
            op = model.index(r, text_col).data(OP_ROLE)
            if op is None:
                continue
            marker = model.index(r, marker_col).data()
            assert marker == {"kept": " ", "added": "+", "removed": "-"}[op]
            text = model.index(r, text_col).data()
            assert text == display_line(model.index(r, text_col).data(RAW_ROLE))   # no marker in front
            assert model.index(r, marker_col).data(Qt.ItemDataRole.DecorationRole) is None
            if model.index(r, text_col).data(Qt.ItemDataRole.DecorationRole) is not None:
                seen.add(op)
    assert {"added", "removed", "kept"} <= seen                 # dots sit in the text column, after the marker
    model.set_mode(DiffMode.UNIFIED)
    assert model.columnCount() == 4 and model.index(0, 0).data() in ("+", "-", " ")


def test_side_by_side_view_lays_out_six_columns(studio, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    tab.side_button.click()
    header = tab.diff_view.horizontalHeader()
    assert header.count() == 6
    assert header.sectionSize(0) < header.sectionSize(2) and header.sectionSize(3) < header.sectionSize(5)
    assert header.sectionViewportPosition(0) < header.sectionViewportPosition(2)


# -- 8. buffered chunks show their observations ------------------------------------------

def test_buffered_chunk_observations_are_readable(studio, studio_ctx, fixture_db):
    path = fixture_db("buffered")
    with open_store(path) as store:
        chunks = store.om_current("thread:long-run").buffered_chunks
    window = studio(path, thread_id="long-run")
    om = window.thread_view.om_tab
    assert om.chunks_view.currentIndex().row() == 0
    assert om.chunk_text.toPlainText() == chunks[0]["observations"]     # in full, as plain text
    assert om.chunk_text.isReadOnly()
    assert om.chunk_heading.text() == "Chunk 1 · observations"
    window.select_thread("long-run")
    om.chunks_view.clearSelection()
    om.chunk_model.set_chunks([*chunks, {"observations": "<b>second</b>", "tokenCount": 1}])
    om.chunks_view.setCurrentIndex(om.chunk_model.index(len(chunks), 0))
    assert om.chunk_text.toPlainText() == "<b>second</b>"
    om.clear()
    assert om.chunk_text.toPlainText() == ""


# -- 6. "no OM" on a selected row uses the selection's text colour -----------------------

def render_bar_cell(view, row: int, col: int, selected: bool) -> QImage:
    option = QStyleOptionViewItem()
    option.initFrom(view)
    rect = QRect(0, 0, 140, 24)
    option.rect = rect
    option.state |= QStyle.StateFlag.State_Enabled | QStyle.StateFlag.State_Active
    if selected:
        option.state |= QStyle.StateFlag.State_Selected
    option.widget = view
    option.fontMetrics = view.fontMetrics()
    image = QImage(rect.size(), QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    BarDelegate().paint(painter, option, view.model().index(row, col))
    painter.end()
    return image


def colours(image: QImage) -> list[QColor]:
    return [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())]


def near(a: QColor, b: QColor, tolerance: int = 40) -> bool:
    return abs(a.red() - b.red()) + abs(a.green() - b.green()) + abs(a.blue() - b.blue()) <= tolerance


def test_no_om_is_readable_on_a_selected_row(studio, fixture_db):
    window = studio(fixture_db("support"))
    view = window.threads_view
    row = window.thread_model.row_of("support-meta")
    assert window.thread_model.index(row, ThreadColumn.OBSERVATION).data() == NO_OM
    selected_text = view.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.HighlightedText)
    highlight = view.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.Highlight)
    plain = colours(render_bar_cell(view, row, ThreadColumn.OBSERVATION, selected=False))
    assert any(near(c, MUTED) for c in plain)                    # unselected: the muted grey
    chosen = colours(render_bar_cell(view, row, ThreadColumn.OBSERVATION, selected=True))
    assert any(near(c, highlight) for c in chosen)               # the selection background is drawn
    assert any(near(c, selected_text) for c in chosen)           # and the text in the selection's text colour
    assert not any(near(c, MUTED, 12) for c in chosen)


# -- 12. dates in "Last activity", newest first ------------------------------------------

def thread_at(thread_id: str, when: datetime) -> ThreadRow:
    iso = ms_to_iso(int(when.timestamp() * 1000))
    return ThreadRow(Thread(id=thread_id, resource_id="r", title=thread_id, updated_at=iso, created_at=iso), None)


def test_last_activity_shows_the_date_unless_today_and_sorts_newest_first():
    now = datetime.now(UTC)
    rows = [thread_at("old", now - timedelta(days=400)), thread_at("today", now),
            thread_at("yesterday", now - timedelta(days=1))]
    model = ThreadTableModel()
    model.set_rows(rows)
    assert [model.index(r, 0).data(ID_ROLE) for r in range(3)] == ["today", "yesterday", "old"]
    text = {model.index(r, 0).data(ID_ROLE): model.index(r, ThreadColumn.LAST_ACTIVITY).data() for r in range(3)}
    local = {k: datetime.fromisoformat(r.thread.updated_at.replace("Z", "+00:00")).astimezone() for k, r in
             zip(["old", "today", "yesterday"], rows, strict=True)}
    assert text["today"] == local["today"].strftime("%H:%M")
    y = local["yesterday"]
    if y.year == local["today"].year:
        assert text["yesterday"] == f"{y.strftime('%b')} {y.day} {y.strftime('%H:%M')}"
    else:  # run on 1 January: yesterday is last year, shown as a date
        assert text["yesterday"] == f"{y.year:04d}-{y.month:02d}-{y.day:02d}"
    assert text["old"] == f"{local['old'].year:04d}-{local['old'].month:02d}-{local['old'].day:02d}"


@pytest.mark.parametrize("tz", ["Asia/Tokyo", "America/New_York"])
def test_last_activity_is_shown_in_the_local_zone(tz):
    """A thread updated at a fixed UTC instant is shown at that zone's wall-clock time (tz database offsets)."""
    from studio.app import text as fmt

    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    with local_zone(tz):
        # 2026-11-29T20:42:26.901Z: Tokyo +09:00 -> the next day 05:42; New York -05:00 (EST) -> 15:42
        expected = {"Asia/Tokyo": ("2026-11-30 05:42", "Nov 30 05:42"),
                    "America/New_York": ("2026-11-29 15:42", "15:42")}[tz]
        iso = "2026-11-29T20:42:26.901Z"
        assert (fmt.local_time(iso), fmt.short_time(iso, now)) == expected


def raw_activity(path: Path) -> dict[str, str]:
    """Return {thread id: its last activity}: the later of updatedAt and its newest message's createdAt (raw rows).

    Mastra does not always bump a thread's updatedAt when it saves a message (#17932), so the newest
    message can be the later one.
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute('SELECT t.id, t."updatedAt", (SELECT max(m."createdAt") FROM mastra_messages m '
                            'WHERE m.thread_id = t.id) FROM mastra_threads t').fetchall()
    finally:
        conn.close()
    return {tid: max(updated, newest or "") for tid, updated, newest in rows}


def test_thread_list_starts_sorted_by_most_recent_activity(studio, fixture_db):
    path = fixture_db("support")
    window = studio(path)
    header = window.threads_view.horizontalHeader()
    assert header.sortIndicatorSection() == ThreadColumn.LAST_ACTIVITY
    assert header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    model = window.thread_model
    shown = [model.index(r, 0).data(ID_ROLE) for r in range(model.rowCount())]
    activity = raw_activity(path)
    assert len(set(activity.values())) == len(activity), "two threads share a last activity: the order is open"
    assert shown == sorted(activity, key=activity.get, reverse=True)


# -- 9. every open error names the file ---------------------------------------------------

def test_every_open_error_names_the_file(studio, studio_ctx, fixture_db, tmp_path):
    path = fixture_db("collab")
    window = studio(path)
    plain = make_plain_sqlite(tmp_path / "plain.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database\n" * 10)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    folder = tmp_path / "folder.db"
    folder.mkdir()
    for bad in (plain, garbage, empty, folder, tmp_path / "missing.db"):
        window.open_database(bad)
        studio_ctx.runner.wait_idle()
        assert str(bad) in window.last_error, window.last_error
        assert str(bad) in window.error_box.text()
        window.error_box.close()
    assert window.database_path == str(path)                  # the open database stays


def test_no_mastra_tables_error_text(studio, studio_ctx, fixture_db, tmp_path):
    window = studio(fixture_db("tools"))
    plain = make_plain_sqlite(tmp_path / "plain.db")
    window.open_database(plain)
    studio_ctx.runner.wait_idle()
    assert window.error_box.text().startswith(f"{plain}: ") and "Mastra" in window.error_box.text()
    window.error_box.close()


# -- 10. File ▸ Open starts next to the open database, or at home ---------------------------

def test_open_dialog_starts_in_the_database_folder(studio, fixture_db, monkeypatch):
    path = fixture_db("tools")
    window = studio(path)
    seen = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args: (seen.append(args[2]), ("", ""))[1])
    window.open_action.trigger()
    assert seen == [str(Path(path).parent)]


def test_open_dialog_skips_the_bundled_sample(studio, fixture_db, monkeypatch):
    sample = fixture_db("tools")                               # stands in for resources/sample/memory.db
    monkeypatch.setattr(main_window, "SAMPLE_DATABASE", Path(sample))
    window = studio(sample)
    assert window.open_dialog_directory() == str(Path.home())
    seen = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args: (seen.append(args[2]), ("", ""))[1])
    window.open_action.trigger()
    assert seen == [str(Path.home())]
    empty = studio()
    assert empty.open_dialog_directory() == str(Path.home())


def test_malformed_config_is_called_out_beside_default_thresholds(studio, fixture_db):
    import libsql

    path = fixture_db("buffered")
    conn = libsql.connect(str(path))
    conn.execute("""UPDATE mastra_observational_memory SET config = '{broken' WHERE "generationCount" = ?""",
                 (current_generation("buffered", "thread:long-run"),))
    conn.commit()
    conn.close()
    window = studio(path, thread_id="long-run", tab="observations")
    om = window.thread_view.om_tab
    # pending tokens do not depend on the config: still Mastra's getStatus figure for the intact file
    status = load_oracle("buffered")["om"]["thread:long-run"]["status"]["long-run"]
    assert om.messages_bar.value() == status["pendingTokens"]
    assert om._status_error.isVisibleTo(om)
    text = om._status_error.text()
    assert "config" in text and "malformed JSON" in text and "default thresholds" in text


@contextlib.contextmanager
def local_zone(tz: str):
    """Run the block with TZ as the process's local time zone (libc's, which `astimezone()` uses)."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = tz
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


# The tz database's offsets at the edges: before railway time every zone used its local mean time
# (LMT): Asia/Tokyo +09:18:59, America/New_York -04:56:02; at the year 9999 they are the standard
# offsets, +09:00 and -05:00 (December). A local time outside years 1..9999 cannot be shown as a date,
# so the stored text is shown as it is.
CALENDAR_EDGES = [
    ("UTC", "0001-01-01T00:00:00.000Z", "0001-01-01 00:00", "0001-01-01"),
    ("UTC", "9999-12-31T23:59:59.999Z", "9999-12-31 23:59", "9999-12-31"),
    ("Asia/Tokyo", "0001-01-01T00:00:00.000Z", "0001-01-01 09:18", "0001-01-01"),        # + 9:18:59
    ("Asia/Tokyo", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),  # 10000
    ("America/New_York", "0001-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000Z",
     "0001-01-01T00:00:00.000Z"),                                                        # year 0
    ("America/New_York", "9999-12-31T23:59:59.999Z", "9999-12-31 18:59", "9999-12-31"),  # - 5:00
]


@pytest.mark.parametrize(("tz", "iso", "local", "short"), CALENDAR_EDGES)
def test_times_at_the_edges_of_the_calendar_are_shown_as_stored(tz, iso, local, short):
    from studio.app import text as fmt

    now = datetime(2026, 6, 1, tzinfo=UTC)  # another year than both edges: the date form
    with local_zone(tz):
        assert (fmt.local_time(iso), fmt.short_time(iso, now)) == (local, short)

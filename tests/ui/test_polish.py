"""New-user polish: the observation log's date count and repeated date headers, the Timeline's legend,
footer and turn ticks, the History loss banner, and the Messages Text column at 1024×700.

Expected values come from first principles stated per test (the stored log text read with sqlite3,
label widths from the label's own font metrics).
"""

from __future__ import annotations

import re
import sqlite3

import pytest
from PySide6.QtCore import Qt

from studio.ui.models.messages import MessageColumn
from studio.ui.models.observations import LogColumn
from tests.mastra_facts import marker_messages, om_rows, raw_messages

DATE_HEADER = re.compile(r"^Date:\s*(.+?)\s*$")


def active_log(path, thread_id: str) -> str:
    """Return the newest generation's stored activeObservations for THREAD_ID (read straight from sqlite)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (text,) = conn.execute(
            "SELECT activeObservations FROM mastra_observational_memory WHERE threadId = ? "
            "ORDER BY generationCount DESC LIMIT 1", (thread_id,)).fetchone()
    finally:
        conn.close()
    return text


@pytest.mark.parametrize("fixture, thread_id", [("support", "support-1"), ("collab", "doc_42"),
                                                ("buffered", "long-run")])
def test_log_summary_counts_distinct_real_dates(studio, studio_ctx, fixture_db, fixture, thread_id):
    path = fixture_db(fixture)
    headers = [m.group(1) for line in active_log(path, thread_id).splitlines()
               if (m := DATE_HEADER.match(line))]
    distinct = len(dict.fromkeys(headers))
    assert len(headers) > distinct          # these logs repeat a header: the case the count got wrong
    window = studio(path, thread_id=thread_id)
    summary = window.thread_view.om_tab._log_summary.text()
    assert f" · {distinct} date{'s' if distinct != 1 else ''} · " in summary, summary


def add_empty_date_header(path, thread_id: str) -> None:
    """Append a boundary and a date header without lines to THREAD_ID's current log (raw write on the copy).

    What an Observer answer holding only a `Date:` line leaves: Mastra appends the answer's text after
    a message boundary as it is.
    """
    import libsql

    conn = libsql.connect(str(path))
    try:
        record_id, text = conn.execute(
            "SELECT id, activeObservations FROM mastra_observational_memory WHERE threadId = ? "
            "ORDER BY generationCount DESC LIMIT 1", (thread_id,)).fetchall()[0]
        [*_, last] = [m.group(1) for line in text.splitlines() if (m := DATE_HEADER.match(line))]
        conn.execute("UPDATE mastra_observational_memory SET activeObservations = ? WHERE id = ?",
                     (f"{text}\n\n--- message boundary (2026-12-31T00:00:00.000Z) ---\n\nDate: {last}", record_id))
        conn.commit()
    finally:
        conn.close()


def test_repeated_and_empty_date_headers_read_as_continuations(studio, studio_ctx, fixture_db):
    path = fixture_db("buffered")
    add_empty_date_header(path, "long-run")
    text = active_log(path, "long-run")
    headers = [(n, m.group(1)) for n, line in enumerate(text.splitlines(), start=1)
               if (m := DATE_HEADER.match(line))]
    assert len({date for _, date in headers}) < len(headers), "long-run's log repeats no date header"
    window = studio(path, thread_id="long-run")
    model = window.thread_view.om_tab.log_model
    rows = [(model.index(r, LogColumn.OBSERVATION).data(), model.index(r, LogColumn.LINE).data())
            for r in range(model.rowCount())]
    dated = [row for row in rows if row[1]]
    # One row per stored header, in order, with its line number: the log's real structure.
    assert [int(line) for _, line in dated] == [n for n, _ in headers]
    seen: set[str] = set()
    for (title, _), (_, date) in zip(dated, headers, strict=True):
        assert title.startswith(f"{date} (continued)" if date in seen else f"{date}  ·"), title
        assert "·" in title, f"a date row without a count or 'no observations': {title!r}"
        seen.add(date)
    assert dated[-1][0].endswith("no observations")                 # the empty repeat added above


# -- Timeline: whole-turn ticks, a footer that is read whole --------------------------------------

SIZES = [(1024, 700), (1400, 900)]


def open_at(studio, studio_ctx, path, size, thread_id):
    """Open PATH on THREAD_ID in a window of SIZE, placed as on a first start (as test_fit does)."""
    window = studio()
    window.resize(*size)
    window._panes_placed = False
    window.hide()
    window.show()
    window.open_database(path, thread_id=thread_id)
    assert studio_ctx.runner.wait_idle()
    window.settle()
    return window


def show_tab(window, studio_ctx, name):
    window.thread_view.set_tab(name)
    assert studio_ctx.runner.wait_idle()
    window.settle()
    return window.thread_view.tabs.currentWidget()


@pytest.mark.parametrize("size", SIZES)
def test_timeline_turn_ticks_are_whole_turns_and_the_footer_is_not_cut(studio, studio_ctx, fixture_db, size):
    # support-2 is a short thread: pyqtgraph's own spacing over ~5 turns is 0.5 (ticks at 1.5, 2.5, ...).
    path = fixture_db("support")
    messages = raw_messages(path, "support-2")
    # its OM events as Mastra recorded them: observation and activation markers, reflections (new generations)
    events = (len(marker_messages(messages, "data-om-observation-end"))
              + len(marker_messages(messages, "data-om-activation"))
              + sum(row["originType"] == "reflection" for row in om_rows(path, "thread:support-2")))
    window = open_at(studio, studio_ctx, path, size, "support-2")
    tab = show_tab(window, studio_ctx, "timeline")
    axis = tab.chart.plot.getPlotItem().getAxis("bottom")
    low, high = axis.range
    assert high - low < 10                                   # a short thread: the case that got halves
    values = [v for _spacing, level in axis.tickValues(low, high, axis.width()) for v in level]
    assert values and all(float(v).is_integer() for v in values), values
    label = tab.summary
    assert label.isVisible() and label.text().startswith(f"{events} OM event")
    # Every line of the footer is shown: not elided, and tall enough for its wrapped lines.
    assert label.wordWrap() and label.height() >= label.heightForWidth(label.width()) - 1, \
        (label.size().toTuple(), label.heightForWidth(label.width()))


# -- History: the loss banner shows whole lines -------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("fixture", "thread_id"), [("support", "support-1"), ("collab", "doc_42")])
def test_loss_banner_shows_only_whole_lines(studio, studio_ctx, fixture_db, size, fixture, thread_id):
    window = open_at(studio, studio_ctx, fixture_db(fixture), size, thread_id)
    tab = show_tab(window, studio_ctx, "history")
    callout = tab.losses
    assert callout.isVisible() and "high-priority observation" in callout.head.text()
    callout.set_expanded(True)
    window.settle()
    line = callout.body.fontMetrics().lineSpacing()
    shown = callout.scroll.viewport().height()
    # A whole number of text lines, never a line cut at the bottom (first principles: lines are
    # lineSpacing apart from the top of a margin-free label).
    assert shown % line == 0, (shown, line)
    assert shown // line >= 1
    assert shown <= callout.body.height()


# -- Messages: the Text preview keeps the room at 1024 px --------------------------------------

@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("fixture", "thread_id"), [("support", "support-1"), ("collab", "doc_42")])
def test_messages_text_column_keeps_a_readable_share(studio, studio_ctx, fixture_db, size, fixture, thread_id):
    window = open_at(studio, studio_ctx, fixture_db(fixture), size, thread_id)
    tab = show_tab(window, studio_ctx, "messages")
    table = tab.view.viewport().width()
    text = tab.view.columnWidth(MessageColumn.TEXT)
    # The preview (the column read most) keeps at least 45 % of the table: ~270 px at 1024×700.
    assert text >= 0.45 * table - 2, (text, table)
    # Every other shown column still holds its values: the widest token count and time fit.
    fm = tab.view.fontMetrics()
    model = tab.model
    for col in (MessageColumn.NUMBER, MessageColumn.TIME, MessageColumn.ESTIMATE, MessageColumn.EXACT):
        widest = max(fm.horizontalAdvance(model.index(r, col).data()) for r in range(model.rowCount()))
        header = fm.horizontalAdvance(model.headerData(col, Qt.Orientation.Horizontal))
        assert tab.view.columnWidth(col) >= max(widest, header) + 6, (col, tab.view.columnWidth(col), widest)
    # No information is lost: each row still says its role (Role column, or "Who" when Role is folded in).
    if tab.view.isColumnHidden(MessageColumn.ROLE):
        assert not tab.view.isColumnHidden(MessageColumn.SPEAKER)
        for r in range(model.rowCount()):
            who = model.index(r, MessageColumn.SPEAKER).data()
            role = model.message_row(r).message.role
            assert who == (model.speaker_text(r) or role), (r, who, role)

"""Stored content is data, never markup: titles, messages and observations containing HTML show literally."""

from __future__ import annotations

import json

import libsql
from PySide6.QtCore import Qt

from studio.ui.models.observations import LogColumn
from studio.ui.models.roles import ID_ROLE
from studio.ui.models.threads import ThreadColumn

MARKUP = "<b>x</b>"


def inject_markup(path) -> str:
    """Put MARKUP into support-1's title, first message and active observations; return the message id."""
    conn = libsql.connect(str(path))
    conn.execute("UPDATE mastra_threads SET title = ? WHERE id = 'support-1'", (MARKUP,))
    msg_id, content = conn.execute(
        "SELECT id, content FROM mastra_messages WHERE thread_id = 'support-1' ORDER BY createdAt LIMIT 1"
    ).fetchall()[0]
    data = json.loads(content)
    data["parts"] = [{"type": "text", "text": f"{MARKUP} <i>and</i> &amp; <script>alert(1)</script>"}]
    data["content"] = data["parts"][0]["text"]
    conn.execute("UPDATE mastra_messages SET content = ? WHERE id = ?", (json.dumps(data), msg_id))
    record_id, obs = conn.execute("SELECT id, activeObservations FROM mastra_observational_memory WHERE lookupKey = "
                                  "'thread:support-1' ORDER BY generationCount DESC LIMIT 1").fetchall()[0]
    conn.execute("UPDATE mastra_observational_memory SET activeObservations = ? WHERE id = ?",   # the current one
                 (f"* 🔴 (10:00) {MARKUP} literal\n" + obs, record_id))
    conn.commit()
    conn.close()
    return msg_id


def test_markup_in_stored_content_renders_literally(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    msg_id = inject_markup(path)
    window = studio(path, thread_id="support-1")

    rows = {window.thread_model.index(r, 0).data(ID_ROLE): r for r in range(window.thread_model.rowCount())}
    assert window.thread_model.index(rows["support-1"], ThreadColumn.TITLE).data() == MARKUP

    title = window.thread_view.title
    assert title.text() == MARKUP
    assert title.textFormat() == Qt.TextFormat.PlainText
    # Shown as the eight characters "<b>x</b>", not as a bold "x".
    assert title.sizeHint().width() >= title.fontMetrics().horizontalAdvance(MARKUP)

    log = window.thread_view.om_tab.log_model
    first_group = log.index(0, 0)
    assert log.index(0, LogColumn.OBSERVATION, first_group).data() == f"{MARKUP} literal"

    window.thread_view.set_tab("messages")
    tab = window.thread_view.messages_tab
    row = tab.model.row_of(msg_id)
    assert row == 0
    tab.select_row(row)
    stored = f"{MARKUP} <i>and</i> &amp; <script>alert(1)</script>"
    assert tab.text_view.toPlainText() == stored
    assert tab.model.index(row, 5).data() == stored
    assert tab.header.textFormat() == Qt.TextFormat.PlainText

    window.thread_view.set_tab("history")
    diff = window.thread_view.history_tab.diff_model
    texts = [diff.index(r, 3).data() for r in range(diff.rowCount())]
    assert f"(10:00) {MARKUP} literal" in texts

"""New-user polish: the observation log's date count and repeated date headers, the Timeline's legend,
footer and turn ticks, the History loss banner, and the Messages Text column at 1024×700.

Expected values come from first principles stated per test (the stored log text read with sqlite3,
label widths from the label's own font metrics).
"""

from __future__ import annotations

import re
import sqlite3

import pytest

from studio.ui.models.observations import LogColumn

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


def test_repeated_and_empty_date_headers_read_as_continuations(studio, studio_ctx, fixture_db):
    path = fixture_db("buffered")
    text = active_log(path, "long-run")
    headers = [(n, m.group(1)) for n, line in enumerate(text.splitlines(), start=1)
               if (m := DATE_HEADER.match(line))]
    window = studio(path, thread_id="long-run")
    model = window.thread_view.om_tab.log_model
    rows = [(model.index(r, LogColumn.OBSERVATION).data(), model.index(r, LogColumn.LINE).data())
            for r in range(model.rowCount())]
    dated = [row for row in rows if row[1]]
    # One row per stored header, in order, with its line number: the log's real structure.
    assert [int(line) for _, line in dated] == [n for n, _ in headers]
    seen: set[str] = set()
    for (title, _), (_, date) in zip(dated, headers):
        assert title.startswith(f"{date} (continued)" if date in seen else f"{date}  ·"), title
        assert "·" in title, f"a date row without a count or 'no observations': {title!r}"
        seen.add(date)
    assert any(t.endswith("no observations") for t, _ in dated)     # buffered holds empty repeats

"""A database holding a message Mastra's token count throws on (UncountableMessage), for CLI, doctor and UI tests.

`make_uncountable_db(dest_dir)` copies the support fixture and saves, in thread support-3 after its
14th message (at 20:13:13.180, not yet observed), a user message whose file part points at `https://files.example.com/q3%report.pdf`:
Mastra's TokenCounter URI-decodes the URL's file name to price the file, and `%re` is a bad escape, so
`countMessage` throws `URIError: URI malformed` (the fuzz worker confirms it on this very message,
tests/fuzz/test_fuzz_parity.py). Every earlier message of the thread stays countable.
"""

from __future__ import annotations

from pathlib import Path

import libsql

from tests.conftest import copy_fixture
from tests.engine.doctor_db import insert_message, messages

THREAD = "support-3"
MESSAGE_ID = "uncountable-q3-report"
BAD_URL = "https://files.example.com/q3%report.pdf"
CONTENT = {"format": 2, "parts": [
    {"type": "text", "text": "Here is the Q3 report you asked about."},
    {"type": "file", "data": BAD_URL, "mimeType": "application/pdf"},
]}
POSITION = 14  # messages of the thread before the uncountable one (5 of them not yet observed)
#: After turn 7's observation (20:13:13.162) and its thread update (.175), before turn 8's user message (.187):
#: the timeline up to it is the unmodified thread's, points and events alike.
CREATED_AT = "2026-12-04T20:13:13.180Z"


def uncountable_message() -> dict:
    """Return the stored message as a MastraDBMessage dict (what the counter is given)."""
    return {"id": MESSAGE_ID, "role": "user", "content": CONTENT}


def make_uncountable_db(dest_dir: Path) -> Path:
    """Copy the support fixture into DEST_DIR with the uncountable message saved in support-3; return its path."""
    path = copy_fixture("support", dest_dir)
    conn = libsql.connect(str(path))
    try:
        rows = messages(conn, THREAD)
        assert rows[POSITION - 1]["createdAt"] < CREATED_AT < rows[POSITION]["createdAt"], rows[POSITION]
        insert_message(conn, THREAD, rows[0]["resourceId"], "user", CONTENT, CREATED_AT, MESSAGE_ID)
        conn.commit()
    finally:
        conn.close()
    return path

"""A message read from the store parses its stored content on first use, with the result an eager parse gives.

First principles: Mastra's libSQL store parses `content` with JSON.parse and keeps the raw text when
that fails; `Message.stored` must hold, once asked, exactly `json.loads` of the stored text (or the
text and an error), whatever was asked first; its damaged-text marks must name a content column
whose bytes are not UTF-8. The system-reminder test (recall leaves those out) may decide from the
stored text only when no parse could say otherwise: the marks are written literally unless escaped.
"""

from __future__ import annotations

import json
import pickle
import sqlite3

import pytest

from studio.store import open_store
from studio.store.history import is_system_reminder, recall
from studio.store.records import Message
from tests.conftest import copy_fixture

FIXTURES = ["support", "buffered", "resource", "collab", "tools", "history"]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_stored_message_parses_to_what_json_loads_gives(name, tmp_path):
    path = copy_fixture(name, tmp_path)
    with sqlite3.connect(path) as conn:
        stored = {i: json.loads(c) for i, c in conn.execute("SELECT id, json(content) FROM mastra_messages")}
    assert stored, "the fixture has messages"
    with open_store(path) as store:
        messages = [m for t in store.list_threads() for m in store.list_messages(t.id)]
        assert {m.id for m in messages} == set(stored)
        for m in messages:
            assert m.content == stored[m.id]
            assert m.content_error is None and m.damaged_text == ()
            assert m.stored_lacks(("\"never-there\"",)) is False  # parsed: the stored text is let go
            copy = pickle.loads(pickle.dumps(m))
            assert copy == m and copy.content == stored[m.id]


def _thread_with_messages(conn) -> tuple[str, str]:
    return conn.execute("SELECT thread_id, id FROM mastra_messages ORDER BY \"createdAt\" LIMIT 1").fetchone()


def test_malformed_json_is_kept_as_text_with_its_error(tmp_path):
    path = copy_fixture("support", tmp_path)
    with sqlite3.connect(path) as conn:
        thread_id, message_id = _thread_with_messages(conn)
        conn.execute("UPDATE mastra_messages SET content = ? WHERE id = ?", ('{"format": 2, "parts": [', message_id))
    with open_store(path) as store:
        m = next(m for m in store.list_messages(thread_id) if m.id == message_id)
        assert m.content_error is not None and m.content_error.startswith("malformed JSON")  # asked first
        assert m.content == '{"format": 2, "parts": ['


def test_content_bytes_that_are_not_utf8_are_marked_once_parsed(tmp_path):
    path = copy_fixture("support", tmp_path)
    with sqlite3.connect(path) as conn:
        thread_id, message_id = _thread_with_messages(conn)
        conn.execute("UPDATE mastra_messages SET content = CAST(? AS TEXT) WHERE id = ?",
                     (b'{"format":2,"parts":[{"type":"text","text":"caf\xff"}]}', message_id))
    with open_store(path) as store:
        m = next(m for m in store.list_messages(thread_id) if m.id == message_id)
        assert m.damaged_text == ("content",)  # asked before the content: the parse runs first
        assert m.content["parts"][0]["text"] == "caf\ufffd"


def _user(content: str, role: str = "user") -> tuple[Message, Message]:
    """The same message twice: read lazily from stored text, and built parsed (the reference path)."""
    lazy = Message.stored("m1", "t1", role, content, "2026-01-01T00:00:00.000Z")
    parsed = Message("m1", "t1", role, json.loads(content), "2026-01-01T00:00:00.000Z")
    return lazy, parsed


@pytest.mark.parametrize("content, expected", [
    ('{"format":2,"parts":[{"type":"text","text":"hello"}]}', False),
    ('{"format":2,"parts":[{"type":"text","text":"<system-reminder>be brief</system-reminder>"}]}', True),
    ('{"format":2,"parts":[{"type":"text","text":"\\u003csystem-reminder>be brief"}]}', True),  # escaped <
    ('{"format":2,"metadata":{"systemReminder":{"kind":"x"}},"parts":[]}', True),
    ('{"format":2,"metadata":{"\\u0073ystemReminder":{"kind":"x"}},"parts":[]}', True),  # escaped key
    ('{"format":2,"metadata":{"systemReminder":"text, not an object"},"parts":[]}', False),
    ('{"format":2,"metadata":{"dynamicAgentsMdReminder":null},"parts":[]}', True),
    ('{"format":2,"parts":[{"type":"text","text":"quoting \\"systemReminder\\" is not one"}]}', False),
    ('{"format":2,"parts":[{"type":"reasoning"},{"type":"text","text":"<system-reminder>x"}]}', True),
    ('{"format":2,"parts":[{"type":"text","text":"a"},{"type":"text","text":"<system-reminder>x"}]}', False),
])
def test_system_reminder_from_stored_text_agrees_with_the_parsed_message(content, expected):
    lazy, parsed = _user(content)
    assert is_system_reminder(parsed) is expected
    assert is_system_reminder(lazy) is expected
    assistant, _ = _user(content, role="assistant")
    assert is_system_reminder(assistant) is False


def test_recall_leaves_out_a_reminder_whose_marks_are_escaped(tmp_path):
    path = copy_fixture("support", tmp_path)
    with sqlite3.connect(path) as conn:
        thread_id, _ = _thread_with_messages(conn)
        user_id = conn.execute("SELECT id FROM mastra_messages WHERE thread_id = ? AND role = 'user' "
                               "ORDER BY \"createdAt\" LIMIT 1", (thread_id,)).fetchone()[0]
        conn.execute("UPDATE mastra_messages SET content = ? WHERE id = ?",
                     ('{"format":2,"parts":[{"type":"text","text":"\\u003csystem-reminder>x"}]}', user_id))
    with open_store(path) as store:
        everything = recall(store, thread_id, per_page=False, include_system_reminders=True)
        kept = recall(store, thread_id, per_page=False)
    assert user_id in [m.id for m in everything.messages]
    assert [m.id for m in kept.messages] == [m.id for m in everything.messages if m.id != user_id]


@pytest.mark.parametrize("stored", ['{"format": 2, "parts": [', b'{"format": 2}', None])
def test_a_lazy_field_set_before_it_is_read_acts_as_it_always_did(stored):
    """Thread.metadata and Message.content share one lazy mechanism (records._parsed_on_read); its setters keep
    each field's rule: a message's content set replaces the stored text unread (no error, no damaged mark from
    it), a thread's metadata set parses the stored value first (its error stays told); a NULL column is left
    unparsed and reads as the eager record's defaults."""
    from studio.store.records import Thread, thread_from_row

    m = Message.stored("m1", "t1", "user", stored, "2026-01-01T00:00:00.000Z")
    m.content = {"format": 2, "parts": []}
    assert m == Message("m1", "t1", "user", {"format": 2, "parts": []}, "2026-01-01T00:00:00.000Z")
    assert m.content_error is None and m.damaged_text == ()
    t = thread_from_row({"id": "t1", "resourceId": "r1", "metadata": stored})
    t.metadata = {"a": 1}
    assert t.metadata == {"a": 1}
    assert (t.metadata_error or "").startswith("malformed JSON") is isinstance(stored, str)
    assert Message.stored("m1", "t1", "user", None, None) == Message("m1", "t1", "user", None, None)
    assert thread_from_row({"id": "t1", "resourceId": "r1", "metadata": None}) == Thread("t1", "r1")

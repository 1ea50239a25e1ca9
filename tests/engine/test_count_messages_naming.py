"""count_messages over a list: Mastra's figure for the list, and, where Mastra's TokenCounter throws on one
message, the studio's UncountableMessage naming that message (its loop calls the counter without the
per-message wrapper: the naming happens once, around the loop)."""

from __future__ import annotations

import copy

import pytest

from studio.engine.tokens import count_message, count_messages
from studio.errors import UncountableMessage
from studio.store import open_store
from tests.conftest import load_oracle


def _support_messages(fixture_db) -> tuple[str, list[dict]]:
    with open_store(fixture_db("support")) as store:
        thread_id = "support-1"
        return thread_id, [m.as_mastra() for m in store.list_messages(thread_id)]


def test_a_list_counts_as_mastra(fixture_db):
    thread_id, messages = _support_messages(fixture_db)
    assert len(messages) > 2
    assert count_messages(messages) == load_oracle("support")["tokens"][thread_id]["allMessages"]


def test_the_message_mastra_cannot_count_is_named(fixture_db):
    _thread_id, messages = _support_messages(fixture_db)
    bad = copy.deepcopy(messages[1])
    bad["role"] = 5  # a truthy role that is not text: Mastra's countString calls text.split on it
    with pytest.raises(UncountableMessage) as alone:
        count_message(bad)
    with pytest.raises(UncountableMessage) as listed:
        count_messages([messages[0], bad, messages[2]])
    assert alone.value.message_id == listed.value.message_id == bad["id"]
    assert listed.value.mastra_error == "TypeError: text.split is not a function"

"""Clone lineage on the history fixture (hist-1-branch is a clone of hist-1, written by real Mastra) and on
chains edited by hand: a chain that comes back on itself stops instead of looping (Mastra's getCloneHistory
would never return), and the list's clone / source roles follow listClones' same-resource rule."""

from __future__ import annotations

import json
import sqlite3

from studio.app.lineage import clone_roles, load_lineage
from studio.cli.history import lineage_lines
from studio.store import open_store
from tests.conftest import copy_fixture
from tests.oracle_facts import threads


def _thread_meta(name: str, thread_id: str) -> dict:
    return threads(name)[thread_id]["metadata"]


def test_fixture_clone_as_oracle_says(tmp_path):
    clone = _thread_meta("history", "hist-1-branch")["clone"]   # what Mastra reports of the clone
    path = copy_fixture("history", tmp_path)
    with open_store(path) as store:
        lineage = load_lineage(store, "hist-1-branch")
        source = load_lineage(store, clone["sourceThreadId"])
        ids = [m.id for m in store.list_messages(clone["sourceThreadId"])]
        roles = clone_roles(store.list_threads())
    assert lineage.is_clone and lineage.source.id == clone["sourceThreadId"]
    assert lineage.cloned_at == clone["clonedAt"] and lineage.last_message_id == clone["lastMessageId"]
    assert lineage.last_message_position == ids.index(clone["lastMessageId"]) + 1
    assert [c.id for c in source.clones] == ["hist-1-branch"] and not source.is_clone
    assert [h.id for h in lineage.history] == [clone["sourceThreadId"], "hist-1-branch"]
    assert roles == {"hist-1-branch": "clone", clone["sourceThreadId"]: "source"}
    text = "\n".join(lineage_lines(lineage))
    assert f"clone of {clone['sourceThreadId']}" in text and f"at message {lineage.last_message_position}" in text


def _set_meta(path, thread_id: str, meta: dict) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE mastra_threads SET metadata = ? WHERE id = ?", (json.dumps(meta), thread_id))
    conn.close()


def test_cycle_stops_and_roles_both(tmp_path):
    path = copy_fixture("history", tmp_path)
    _set_meta(path, "hist-1", {"clone": {"sourceThreadId": "hist-1-branch"}})   # each names the other
    with open_store(path) as store:
        lineage = load_lineage(store, "hist-1-branch")
        roles = clone_roles(store.list_threads())
    assert lineage.cycle and [h.id for h in lineage.history] == ["hist-1", "hist-1-branch"]
    assert roles["hist-1"] == roles["hist-1-branch"] == "both"
    assert "comes back on itself" in "\n".join(lineage_lines(lineage))


def test_other_resource_is_not_a_listed_clone_and_odd_metadata(tmp_path):
    path = copy_fixture("history", tmp_path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE mastra_threads SET resourceId = 'elsewhere' WHERE id = 'hist-1-branch'")
    conn.close()
    _set_meta(path, "hist-2", {"clone": "yes"})   # truthy but not an object: a clone, source unknown
    with open_store(path) as store:
        source = load_lineage(store, "hist-1")
        branch = load_lineage(store, "hist-1-branch")
        odd = load_lineage(store, "hist-2")
        roles = clone_roles(store.list_threads())
        assert load_lineage(store, "no-such-thread") is None
    assert source.clones == [] and branch.source.id == "hist-1"   # listClones looks in the source's resource
    assert odd.is_clone and odd.source is None and "unknown thread" in "\n".join(lineage_lines(odd))
    assert roles == {"hist-1-branch": "clone", "hist-2": "clone"}

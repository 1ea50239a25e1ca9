"""The records read from a real Mastra file, without dataclasses: the studio's helper process pickles
them, the UI copies and compares them, so each must survive pickle and copy equal to itself, compare
by value, stay unhashable (mutable) and keep the constructor keywords callers use."""

from __future__ import annotations

import copy
import pickle

import pytest

from studio.store import open_store
from studio.store.records import Message, Thread
from studio.store.thread_list import list_threads
from tests.conftest import copy_fixture


@pytest.fixture()
def store(tmp_path):
    with open_store(copy_fixture("support", tmp_path)) as s:
        yield s


def _round_trips(value) -> None:
    assert pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) == value
    assert copy.deepcopy(value) == value
    assert copy.copy(value) == value


def test_read_records_survive_pickle_and_copy(store):
    threads = store.list_threads(with_counts=True)
    messages = store.list_messages(threads[0].id)
    history = store.om_histories()
    records = [r for gens in history.values() for r in gens]
    assert threads and messages and records  # the fixture has all three
    for value in [store.location, store.schema, threads[0], messages[0], records[0],
                  list_threads(store, per_page=False), list_threads(store, per_page=False, ids_only=True)]:
        _round_trips(value)
    assert hash(store.location) == hash(copy.copy(store.location))
    with pytest.raises(AttributeError):
        store.location.path = None  # a Target is immutable, as the frozen dataclass was


def test_records_compare_by_value_and_are_unhashable(store):
    thread = store.list_threads()[0]
    same = Thread(id=thread.id, resource_id=thread.resource_id, title=thread.title, metadata=thread.metadata,
                  created_at=thread.created_at, updated_at=thread.updated_at, metadata_error=thread.metadata_error)
    assert same == thread and same != Thread(id=thread.id, resource_id="another")
    with pytest.raises(TypeError):
        hash(thread)
    message = Message(id="m1", thread_id=thread.id, role="user", content={"parts": []}, created_at=None)
    assert repr(message).startswith("Message(id='m1', thread_id=")
    assert message != thread  # another class: not equal, as dataclasses compare


def test_ids_only_page_equals_the_full_page_by_ids(store):
    full = list_threads(store, per_page=False)
    ids = list_threads(store, per_page=False, ids_only=True)
    assert ids.thread_ids == full.thread_ids and ids.total == full.total == len(full.threads)
    assert [t.id for t in ids.threads] == full.thread_ids and all(t.resource_id == "" for t in ids.threads)


def test_thread_metadata_is_parsed_on_first_read_as_it_was_eagerly(store):
    import json

    from studio.store.records import parse_json, thread_from_row

    rows = store.select_rows("mastra_threads")
    assert any(r["metadata"] for r in rows)  # the fixture's threads carry metadata
    bad = {**rows[0], "metadata": "{not json"}
    for row in [*rows, bad, {**rows[0], "metadata": None}, {**rows[0], "metadata": ""}]:
        meta, err = parse_json(row["metadata"])
        eager = Thread(id=row["id"], resource_id=row["resourceId"], title=row["title"], metadata=meta,
                       created_at=row["createdAt"], updated_at=row["updatedAt"], metadata_error=err)
        lazy = thread_from_row(row)
        # copied and pickled before its metadata was read, then compared (which reads it)
        _round_trips(lazy)
        assert pickle.loads(pickle.dumps(thread_from_row(row))) == eager
        assert lazy == eager and (lazy.metadata, lazy.metadata_error) == (meta, err)
    unread = thread_from_row(bad)
    assert unread.metadata_error.startswith("malformed JSON") and unread.metadata is None
    written = thread_from_row(rows[0])
    written.metadata = {"k": 1}  # a write before the first read keeps the written value
    assert written.metadata == {"k": 1} and written.metadata_error is None
    assert json.loads(rows[0]["metadata"]) == thread_from_row(rows[0]).metadata


@pytest.mark.parametrize("text", ['{"a":1}', ' {"a":1}', '{"a":1} ', '{"a":1}x', '{"a":1}{"b":2}', "{bad", "[1,2]",
                                  '"s"', "1e400", "-0", "Infinity", "\ufeff{}", '{"a":"\\ud800"}', "[" * 100_000])
def test_parse_json_reads_and_refuses_as_json_loads(text):
    import json

    from studio.store.records import parse_json

    try:
        expected = (json.loads(text), None)
    except ValueError as exc:
        expected = (None, f"malformed JSON: {exc}")
    except RecursionError:
        expected = (None, "JSON nested too deeply to read")
    assert repr(parse_json(text)) == repr(expected)  # repr: the same floats (inf, -0.0) and errors

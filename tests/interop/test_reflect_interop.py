"""Our reflection write equals real Mastra's, column by column, and Mastra keeps working on our file.

For each fixture with Observational Memory: copy A gets a manual reflection from real Mastra
(`mastra-reflect.mjs`, its Reflector answering with a fixed text); copy B gets `commit_reflection`
with what the answer parses to. Every row both runs added or changed must be equal (ids and write
times aside), then `continue.mjs` runs real agent turns on B and must see our observations.
"""

from __future__ import annotations

import libsql
import pytest

from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.writes import commit_reflection
from tests.conftest import copy_fixture
from tests.interop.answers import answer_for, parse_answer
from tests.interop.conftest import changes, dump_tables, run_node

TIME_COLUMNS = {"createdAt", "updatedAt", "lastReflectionAt"}

CASES = [
    ("support", "support-1", {}),                        # third reflection of a thread
    ("support", "support-3", {"metadata_as_text": True, "skip_continue": True}),  # metadata as JSON text
    ("buffered", "long-run", {}),                        # a buffered chunk pending on the old generation
    ("resource", "res-a", {"with_response": False}),     # resource scope, current task only
    ("resource", "res-b", {"with_task": False, "with_response": False, "skip_continue": True}),  # thread untouched
    ("collab", "doc_42", {}),
    ("tools", "tools-1", {}),
    ("live/support", "support-5", {}),                   # newest rows only in the -wal
]


def _metadata_to_text(path, thread_id):
    conn = libsql.connect(f"file:{path}")
    conn.execute("UPDATE mastra_threads SET metadata = json(metadata) WHERE id = ?", (thread_id,))
    conn.commit()
    conn.close()


def _changes(before: dict, after: dict) -> tuple[dict, dict]:
    """Return ({table: [added rows]}, {(table, id, column): new value}) between two dumps; no row removed."""
    added, changed, removed = changes(before, after)
    assert removed == []
    return added, changed


@pytest.mark.parametrize(("name", "thread_id", "options"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_reflection_matches_mastra_and_mastra_continues(mastra_corpus, tmp_path, name, thread_id, options):
    options = dict(options)
    as_text = options.pop("metadata_as_text", False)
    skip_continue = options.pop("skip_continue", False)
    answer = answer_for(name, **options)
    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(answer, encoding="utf-8")
    a, b = copy_fixture(name, tmp_path / "a"), copy_fixture(name, tmp_path / "b")
    if as_text:
        _metadata_to_text(a, thread_id)
        _metadata_to_text(b, thread_id)
    before = dump_tables(a)
    assert dump_tables(b) == before

    mastra = run_node(mastra_corpus, "mastra-reflect.mjs", a, thread_id, answer_file)
    assert mastra["reflected"] is True

    with open_store(b) as store:
        thread = store.get_thread(thread_id)
        lookup_key = store.lookup_key_for_thread(thread)
        current = store.om_current(lookup_key)
    parsed = parse_answer(answer)
    ours = commit_reflection(b, lookup_key=lookup_key, expected_record_id=current.id,
                             expected_active_observations=current.active_observations,
                             observations=parsed["observations"], current_task=parsed["current_task"],
                             suggested_response=parsed["suggested_response"], thread_title=parsed["thread_title"],
                             thread_id=thread_id, observation_tokens=count_observations(parsed["observations"]))

    added_a, changed_a = _changes(before, dump_tables(a))
    added_b, changed_b = _changes(before, dump_tables(b))
    # the same single new row, equal in every column but its id and write times
    assert list(added_a) == list(added_b) == ["mastra_observational_memory"]
    (row_a,), (row_b,) = added_a["mastra_observational_memory"], added_b["mastra_observational_memory"]
    assert row_b == ours  # what commit_reflection returns is the row as stored
    assert {k: v for k, v in row_b.items() if k not in TIME_COLUMNS | {"id"}} == \
           {k: v for k, v in row_a.items() if k not in TIME_COLUMNS | {"id"}}
    assert row_a["activeObservations"] == mastra["row"]["activeObservations"] == parsed["observations"]
    assert row_b["createdAt"] == row_b["updatedAt"] == row_b["lastReflectionAt"]
    # the same cells changed elsewhere (previous row's updatedAt/isReflecting, thread metadata/updatedAt) …
    assert set(changed_b) == set(changed_a)
    # … to the same values, times aside; JSONB stays JSONB (and JSON text becomes JSONB, as in Mastra)
    for cell in changed_a:
        if cell[2] not in TIME_COLUMNS:
            assert changed_b[cell] == changed_a[cell], cell
    if options.get("with_task", True) or options.get("with_response", True):
        assert (("mastra_threads", thread_id, "metadata")) in changed_b
        assert changed_b[("mastra_threads", thread_id, "metadata")].startswith("jsonb:")

    if skip_continue:
        return
    report = run_node(mastra_corpus, "continue.mjs", b, thread_id, "1")
    assert report["ok"] is True, report
    assert report["before"]["recordId"] == ours["id"]
    assert report["before"]["generationCount"] == ours["generationCount"]
    assert report["firstObservationLine"].startswith("* 🔴 (09:00) Studio interop")
    assert report["contextHasActiveObservations"] is True

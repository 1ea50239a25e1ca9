"""Working memory written by the studio equals what real Mastra's Memory.updateWorkingMemory writes (@mastra/memory
1.31.0 over @mastra/libsql 1.23.1), in both scopes: the resource row (updated, or created when the resource has
none, as updateResource does) or the thread's metadata.workingMemory (the rest of the metadata kept)."""

from __future__ import annotations

import json
import shutil

import pytest

from studio.app.thread_writes import update_working_memory
from studio.store.writes import WriteSession
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, run_node

TIMES = {"updatedAt", "createdAt"}
TEXT = "# Notes\n- Name: Zoë O'Brien & <Co>\n- Budget: $3,000\n"
SCHEMA_TEXT = json.dumps({"name": "Zoë", "budget": 3000, "tags": ["a", "b"]})


def _drop_times(rows: dict, table: str, ids: set[str]) -> dict:
    return {tid: {k: v for k, v in row.items() if not (tid in ids and k in TIMES)}
            for tid, row in rows.get(table, {}).items()}


@pytest.mark.parametrize(("fixture", "thread_id", "scope", "text"), [
    ("support", "support-1", "resource", TEXT),          # user-alice's resource row
    ("resource", "res-a", "resource", SCHEMA_TEXT),       # schema mode: JSON text
    ("support", "support-meta", "thread", TEXT),          # thread metadata merged
    ("history", "hist-1", "thread", ""),
])
def test_working_memory_equals_mastra(tmp_path, mastra_corpus, fixture, thread_id, scope, text):
    base = copy_fixture(fixture, tmp_path / "base")
    theirs, ours = tmp_path / "mastra.db", tmp_path / "ours.db"
    for dest in (theirs, ours):
        shutil.copyfile(base, dest)
    before = dump_tables(base)
    run_node(mastra_corpus, "studio-working-memory.mjs", theirs, thread_id, scope, json.dumps(text))
    (tmp_path / "backups").mkdir()
    written = update_working_memory(str(ours), thread_id, scope=scope, text=text,
                                    session=WriteSession(backup_dir=tmp_path / "backups"))
    a, b = dump_tables(theirs), dump_tables(ours)
    resource = written.result["resource_id"]
    changed = {resource} if scope == "resource" else {thread_id}
    table = "mastra_resources" if scope == "resource" else "mastra_threads"
    assert _drop_times(b, table, changed) == _drop_times(a, table, changed)
    assert {k: v for k, v in b.items() if k != table} == {k: v for k, v in a.items() if k != table}
    key = resource if scope == "resource" else thread_id
    assert b[table][key] != before.get(table, {}).get(key)   # not vacuous: the row changed (or was created)
    assert written.result["created_resource"] == (scope == "resource"
                                                   and resource not in before.get("mastra_resources", {}))
    report = run_node(mastra_corpus, "continue.mjs", ours, thread_id, "1")   # Mastra carries on after our write
    assert report["ok"] is True, report


def test_second_resource_write_updates_the_row_as_mastra(tmp_path, mastra_corpus):
    """The resource row exists after a first write: the second is updateResource's UPDATE (workingMemory, updatedAt;
    metadata and createdAt kept)."""
    base = copy_fixture("support", tmp_path / "base")
    theirs, ours = tmp_path / "mastra.db", tmp_path / "ours.db"
    for dest in (theirs, ours):
        shutil.copyfile(base, dest)
    (tmp_path / "backups").mkdir()
    session = WriteSession(backup_dir=tmp_path / "backups")
    for text in (TEXT, "second version"):
        run_node(mastra_corpus, "studio-working-memory.mjs", theirs, "support-3", "resource", json.dumps(text))
        update_working_memory(str(ours), "support-3", scope="resource", text=text, session=session)
    a, b = dump_tables(theirs)["mastra_resources"], dump_tables(ours)["mastra_resources"]
    assert {k: {c: v for c, v in r.items() if c not in TIMES} for k, r in a.items()} == {
        k: {c: v for c, v in r.items() if c not in TIMES} for k, r in b.items()}
    [row] = b.values()
    assert row["workingMemory"] == "second version" and row["createdAt"] < row["updatedAt"]

"""delete_messages / clear_thread / working-memory clones / revert, against real Mastra on copies of fixtures."""

from __future__ import annotations

import json

import pytest

from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.write.transaction import write_transaction
from studio.store.write.tx import Jsonb
from studio.store.writes import clear_thread, clone_thread, delete_messages, revert_to_generation
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, run_node

TIME_COLUMNS = {"createdAt", "updatedAt"}


def _diff(before: dict, after: dict) -> dict:
    """Return what changed: removed / added row keys per table and changed cells (times as 'changed')."""
    out = {"removed": [], "added": {}, "changed": {}}
    for table, rows in before.items():
        for key, row in rows.items():
            new = after[table].get(key)
            if new is None:
                out["removed"].append((table, key))
                continue
            for col, val in new.items():
                if row.get(col) != val:
                    out["changed"][(table, key, col)] = "changed" if col in TIME_COLUMNS else val
    for table, rows in after.items():
        extra = [{k: v for k, v in r.items() if k not in TIME_COLUMNS | {"id"}}
                 for key, r in rows.items() if key not in before.get(table, {})]
        if extra:
            out["added"][table] = sorted(extra, key=json.dumps)
    return out


def _message_ids(path, thread_id):
    with open_store(path) as store:
        return [m.id for m in store.list_messages(thread_id)]


def test_delete_messages_matches_mastra(mastra_corpus, tmp_path):
    a, b = copy_fixture("support", tmp_path / "a"), copy_fixture("support", tmp_path / "b")
    ids = _message_ids(a, "support-1")[3:6] + _message_ids(a, "support-2")[:1] + ["no-such-message"]
    before = dump_tables(a)
    run_node(mastra_corpus, "studio-delete.mjs", a, json.dumps(ids))
    assert delete_messages(b, ids) == 4
    expected, got = _diff(before, dump_tables(a)), _diff(before, dump_tables(b))
    assert got == expected
    assert len(expected["removed"]) == 4 and expected["changed"]  # threads' updatedAt


def test_clear_thread_matches_mastra_deleting_every_message(mastra_corpus, tmp_path):
    a, b = copy_fixture("collab", tmp_path / "a"), copy_fixture("collab", tmp_path / "b")
    ids = _message_ids(a, "doc_42")
    before = dump_tables(a)
    run_node(mastra_corpus, "studio-delete.mjs", a, json.dumps(ids))
    assert clear_thread(b, "doc_42") == len(ids) > 0
    assert _diff(before, dump_tables(b)) == _diff(before, dump_tables(a))


def _seed_resource(path, resource_id, working_memory):
    with write_transaction(path) as tx:
        tx.insert("mastra_resources", {"id": resource_id, "workingMemory": working_memory, "metadata": Jsonb("{}"),
                                       "createdAt": "2026-01-01T00:00:00.000Z",
                                       "updatedAt": "2026-01-01T00:00:00.000Z"})


@pytest.mark.parametrize(("name", "source", "scope", "args", "seed"), [
    ("collab", "doc_42", "thread", {}, []),                                       # thread working memory
    ("support", "support-1", "resource", {"resourceId": "user-new"}, [("user-alice", "# Alice\n- likes tea")]),
    ("support", "support-1", "resource", {"resourceId": "user-bob"},
     [("user-alice", "# Alice\n- likes tea"), ("user-bob", "# Bob")]),           # destination resource updated
    ("support", "support-1", "resource", {}, [("user-alice", "# Alice")]),       # same resource: shared, no copy
], ids=["thread", "resource-new", "resource-existing", "resource-same"])
def test_clone_with_working_memory_matches_mastra(mastra_corpus, tmp_path, name, source, scope, args, seed):
    a, b = copy_fixture(name, tmp_path / "a"), copy_fixture(name, tmp_path / "b")
    for rid, wm in seed:
        _seed_resource(a, rid, wm)
        _seed_resource(b, rid, wm)
    before = dump_tables(a)
    run_node(mastra_corpus, "studio-clone-wm.mjs", a, source, "wm-clone", scope, json.dumps(args))
    clone_thread(b, source, new_thread_id="wm-clone", resource_id=args.get("resourceId"), working_memory_scope=scope)
    expected, got = _diff(before, dump_tables(a)), _diff(before, dump_tables(b))
    for d in (expected, got):  # message / OM ids are new on both sides; compare the clone's thread and resources
        d["added"] = {t: rows for t, rows in d["added"].items() if t in ("mastra_threads", "mastra_resources")}
        for row in d["added"].get("mastra_threads", []):
            meta = json.loads(row["metadata"][len("jsonb:"):])
            meta["clone"].pop("clonedAt")
            row["metadata"] = meta
    assert got == expected
    if scope == "thread":
        (thread,) = got["added"]["mastra_threads"]
        assert thread["metadata"]["workingMemory"]
    else:  # the destination resource got the working memory only when the clone moved to another resource
        touched = (bool(got["added"].get("mastra_resources"))
                   or any(t == "mastra_resources" for t, _, _ in got["changed"]))
        assert touched == bool(args)


def test_revert_then_mastra_continues_on_the_restored_generation(mastra_corpus, tmp_path):
    path = copy_fixture("support", tmp_path)
    with open_store(path) as store:
        history = store.om_history("thread:support-1")
    row = revert_to_generation(path, lookup_key="thread:support-1", generation_count=0,
                               expected_record_id=history[0].id, count_observations=count_observations)
    assert row["activeObservations"] == history[-1].active_observations
    report = run_node(mastra_corpus, "continue.mjs", path, "support-1", "1")
    assert report["ok"] is True, report
    assert report["before"]["recordId"] == row["id"]
    assert report["contextHasActiveObservations"] is True

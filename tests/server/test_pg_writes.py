"""Writes on PostgreSQL equal real @mastra/pg's writes, row by row and twin by twin; Mastra carries on from them.

Expected values come from real Mastra on a copy of the same schema (`copy.mjs`): `mastra-reflect.mjs`
(ObservationalMemory.reflect), `clone.mjs` (Memory.cloneThread) and the test helper `studio-delete.mjs`
(Memory.deleteMessages), all with `--store pg`. Copy A gets Mastra's write, copy B ours; every row both
added or changed must be equal (ids and write times aside; times equal in NULL-ness, and every twin we
write equals its column), and `continue.mjs --store pg` runs real agent turns on B.
"""

from __future__ import annotations

import hashlib
import json
import operator
from pathlib import Path

import pytest

from studio.cli import main
from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.writes import WriteSession, clear_thread, commit_reflection, revert_to_generation
from tests.fake_llm import Reply
from tests.interop.answers import answer_for, parse_answer
from tests.server.pg_rows import TIME_COLUMNS, changes, copy_pair, copy_schema, dump_schema, node_pg, same_row
from tests.server.write_helpers import commit_answer

OM = "mastra_observational_memory"


def _twins_match(row: dict) -> None:
    """Every timestamp we wrote has its TIMESTAMPTZ twin at the same instant (not lastBufferedAtTime: Mastra writes
    none)."""
    for col in ("createdAt", "updatedAt", "lastReflectionAt", "lastObservedAt"):
        if col in row and row[col] is not None:
            assert row[col + "Z"] == row[col] + "+00", (col, row[col], row[col + "Z"])


def _schemas(request, scenario: str) -> tuple[str, str]:
    """Two scratch schema names for this test (copy A: Mastra's write, copy B: ours)."""
    base = "w" + hashlib.sha256(request.node.name.encode()).hexdigest()[:10]
    return f"{base}_a", f"{base}_b"


def _two_copies(pg_corpus, request, scenario: str) -> tuple[str, str, str, dict]:
    """Copy SCENARIO's schema twice for this test (`_schemas`: A for Mastra's write, B for ours); return A, B, the
    studio's URL of B and A's dump before either write (B's is the same)."""
    a, b = _schemas(request, scenario)
    return a, b, *copy_pair(pg_corpus, scenario, a, b)


def _write_answer(tmp_path, text: str):
    path = tmp_path / "answer.txt"
    path.write_text(text, encoding="utf-8")
    return path


# (scenario, thread, answer options)
REFLECT_CASES = [
    ("support", "support-1", {}),                         # thread scope, third reflection
    ("resource", "res-a", {"with_response": False}),      # resource scope, current task only
    ("buffered", "long-run", {}),                         # a buffered chunk pending on the old generation
]


@pytest.mark.parametrize(("scenario", "thread_id", "options"), REFLECT_CASES, ids=[c[1] for c in REFLECT_CASES])
def test_reflection_on_postgresql_equals_mastra_and_mastra_continues(pg_corpus, tmp_path, request, monkeypatch,
                                                                     scenario, thread_id, options):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, scenario)
    assert dump_schema(pg_corpus.url, b) == before
    answer = answer_for(scenario, **options)
    mastra = node_pg(pg_corpus, "mastra-reflect.mjs", a, thread_id, _write_answer(tmp_path, answer))
    assert mastra["reflected"] is True

    session = WriteSession()
    ours = commit_answer(target, thread_id, answer, session).row

    added_a, changed_a, removed_a = changes(before, dump_schema(pg_corpus.url, a))
    after_b = dump_schema(pg_corpus.url, b)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert removed_a == removed_b == []
    assert list(added_a) == list(added_b) == [OM]
    (row_a,), (row_b,) = added_a[OM], added_b[OM]
    assert row_b["id"] == ours["id"]
    assert same_row(row_a, row_b) == []          # every column, twins included (NULL-ness for times)
    assert row_a["lastBufferedAtTimeZ"] is not None and row_a["lastBufferedAtTime"] is None  # Mastra: NOW()
    _twins_match(row_b)
    assert row_b["createdAt"] == row_b["updatedAt"] == row_b["lastReflectionAt"]
    # the same cells changed elsewhere (previous row's updatedAt + twin, thread metadata / updatedAt + twin) …
    assert set(changed_b) == set(changed_a)
    for cell in changed_a:
        if cell[2] not in TIME_COLUMNS:
            assert changed_b[cell] == changed_a[cell], cell
    if options.get("with_task", True) or options.get("with_response", True):
        assert (("mastra_threads", thread_id, "metadata")) in changed_b
    for (table, key, col) in changed_b:
        if col in ("updatedAt", "createdAt"):
            assert after_b[table][key][col + "Z"] == after_b[table][key][col] + "+00"
    # the row backup holds the rows the write touched: the two OM rows (+ the thread when its metadata moved)
    backup = json.loads(session.backup_for(target).read_text(encoding="utf-8"))
    assert {(r["table"], r["id"]) for r in backup["rows"]} == {(t, k) for t, k, _ in changed_b} | {(OM, ours["id"])}
    assert str(tmp_path / "data" / "memory-studio" / "backups") in str(session.backup_for(target))

    report = node_pg(pg_corpus, "continue.mjs", b, thread_id, "1")
    assert report["ok"] is True, report
    assert report["before"]["recordId"] == ours["id"]
    assert report["before"]["generationCount"] == ours["generationCount"]
    assert report["contextHasActiveObservations"] is True


def test_rule_based_reflect_cli_on_postgresql_equals_mastra_writing_the_same_log(pg_corpus, tmp_path, request,
                                                                               monkeypatch, capsys):
    """`reflect URL --strategy rule-based --yes`: Mastra, answering with the log we condensed, writes the same row
    (the studio's self-identifying mark in `metadata` aside), and continues from ours."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, "support")
    code = main(["reflect", target, "--thread", "support-1", "--strategy", "rule-based", "--yes", "--json",
                 "--quiet-period", "0", "--watch", "0"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["reflected"] is True
    assert doc["backup"].startswith(str(tmp_path / "data" / "memory-studio" / "backups"))
    added_b, _, _ = changes(before, dump_schema(pg_corpus.url, b))
    (row_b,) = added_b[OM]
    assert row_b["id"] == doc["record_id"]
    answer = f"<observations>\n{row_b['activeObservations']}\n</observations>\n"
    node_pg(pg_corpus, "mastra-reflect.mjs", a, "support-1", _write_answer(tmp_path, answer))
    added_a, _, _ = changes(before, dump_schema(pg_corpus.url, a))
    (row_a,) = added_a[OM]
    assert row_a["activeObservations"] == row_b["activeObservations"]
    assert same_row(row_a, row_b, skip={"metadata"}) == []
    assert json.loads(row_b["metadata"])["studio"]["recordId"] == row_b["id"]
    _twins_match(row_b)
    report = node_pg(pg_corpus, "continue.mjs", b, "support-1", "1")
    assert report["ok"] is True and report["before"]["recordId"] == row_b["id"], report


def test_llm_reflect_cli_on_postgresql_equals_mastra_with_the_same_answer(pg_corpus, tmp_path, request, monkeypatch,
                                                                          capsys, fake_llm):
    """`reflect URL --model … --yes` (the Reflector against a model answering ANSWER) writes what Mastra's reflect
    writes when its Reflector gives the same ANSWER: the same new row (our `metadata.studio` mark aside), the same
    thread metadata, twins set; Mastra continues from it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, "support")
    answer = answer_for("support")
    fake_llm.push(Reply(text=answer))
    code = main(["reflect", target, "--thread", "support-1", "--model", "openai-compatible/reflector", "--base-url",
                 fake_llm.base_url, "--yes", "--json", "--quiet-period", "0", "--watch", "0"])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    node_pg(pg_corpus, "mastra-reflect.mjs", a, "support-1", _write_answer(tmp_path, answer))
    added_a, changed_a, _ = changes(before, dump_schema(pg_corpus.url, a))
    added_b, changed_b, _ = changes(before, dump_schema(pg_corpus.url, b))
    (row_a,), (row_b,) = added_a[OM], added_b[OM]
    assert row_b["id"] == doc["record_id"] and doc["strategy"] == "llm"
    assert same_row(row_a, row_b, skip={"metadata"}) == []
    assert json.loads(row_b["metadata"])["studio"]["model"] == "openai-compatible/reflector"
    assert set(changed_a) == set(changed_b)
    metadata = ("mastra_threads", "support-1", "metadata")
    assert changed_b[metadata] == changed_a[metadata]
    _twins_match(row_b)
    report = node_pg(pg_corpus, "continue.mjs", b, "support-1", "1")
    assert report["ok"] is True and report["before"]["recordId"] == row_b["id"], report


def test_revert_on_postgresql_equals_mastra_reflecting_that_generation_and_undo_restores(pg_corpus, tmp_path,
                                                                                      request, monkeypatch):
    """A revert is a reflection generation holding generation N's log (Mastra, answering with that log, writes
    the same row but for our `metadata.studio`); `undo_write` then restores every row exactly."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, "support")
    with open_store(target) as store:
        key = store.lookup_key_for_thread(store.get_thread("support-1"))
        history = store.om_history(key)
    assert len(history) >= 3
    old = next(h for h in history if h.generation_count == 1)
    ours = revert_to_generation(target, lookup_key=key, generation_count=1, expected_record_id=history[0].id,
                                count_observations=count_observations)
    node_pg(pg_corpus, "mastra-reflect.mjs", a, "support-1",
            _write_answer(tmp_path, f"<observations>\n{old.active_observations}\n</observations>\n"))
    added_a, changed_a, _ = changes(before, dump_schema(pg_corpus.url, a))
    added_b, changed_b, _ = changes(before, dump_schema(pg_corpus.url, b))
    (row_a,), (row_b,) = added_a[OM], added_b[OM]
    assert row_b["activeObservations"] == old.active_observations == row_a["activeObservations"]
    assert same_row(row_a, row_b, skip={"metadata"}) == []
    assert json.loads(row_b["metadata"])["studio"]["revertedFrom"] == 1
    assert set(changed_b) == {(OM, history[0].id, c) for c in ("updatedAt", "updatedAtZ")} == set(changed_a)
    _twins_match(row_b)
    assert ours["generationCount"] == history[0].generation_count + 1
    report = node_pg(pg_corpus, "continue.mjs", b, "support-1", "1")
    assert report["ok"] is True and report["before"]["recordId"] == ours["id"], report

    # undo: Mastra's continue wrote after the revert, so the rows changed: refused, nothing written
    after_continue = dump_schema(pg_corpus.url, b)
    code = main(["undo", target, "--yes", "--json"])
    assert code == 3
    assert dump_schema(pg_corpus.url, b) == after_continue


def test_undo_restores_a_reflection_exactly_and_only_once(pg_corpus, tmp_path, request, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    _, b = _schemas(request, "collab")
    target = copy_schema(pg_corpus, "collab", b)
    before = dump_schema(pg_corpus.url, b)
    with open_store(target) as store:
        key = store.lookup_key_for_thread(store.get_thread("doc_42"))
        current = store.om_current(key)
    parsed = parse_answer(answer_for("collab"))
    commit_reflection(target, lookup_key=key, expected_record_id=current.id, observations=parsed["observations"],
        observation_tokens=count_observations(parsed["observations"]),
                      current_task=parsed["current_task"], suggested_response=parsed["suggested_response"],
                      thread_id="doc_42")
    assert dump_schema(pg_corpus.url, b) != before
    assert main(["undo", target, "--yes", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["operation"], doc["deleted"], doc["restored"], doc["reinserted"]) == ("reflect", 1, 2, 0)
    assert dump_schema(pg_corpus.url, b) == before    # every column of every row, twins included
    assert json.loads(Path(doc["backup"]).read_text(encoding="utf-8"))["undone"]["by"] == doc["undo_backup"]
    assert main(["undo", target, "--yes", "--json"]) == 2   # nothing left to undo
    assert dump_schema(pg_corpus.url, b) == before


CLONE_CASES = [
    ("support", "support-1", {}, True),
    ("support", "support-3", {"title": "Branch", "metadata": {"branch": True}, "options": {"messageLimit": 3}}, False),
    ("resource", "res-a", {"resourceId": "user-new"}, True),   # resource OM copied, thread tags rewritten
]


@pytest.mark.parametrize(("scenario", "source", "args", "run_continue"), CLONE_CASES,
                         ids=[c[1] for c in CLONE_CASES])
def test_clone_on_postgresql_equals_mastra_clone(pg_corpus, tmp_path, request, monkeypatch, scenario, source, args,
                                                 run_continue):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, scenario)
    node_pg(pg_corpus, "clone.mjs", a, source, "studio-clone-1", json.dumps(args))
    options = args.get("options", {})
    session = WriteSession()
    result = session.clone_thread(target, source, new_thread_id="studio-clone-1", title=args.get("title"),
                                  resource_id=args.get("resourceId"), metadata=args.get("metadata"),
                                  message_limit=options.get("messageLimit"))
    added_a, changed_a, removed_a = changes(before, dump_schema(pg_corpus.url, a))
    added_b, changed_b, removed_b = changes(before, dump_schema(pg_corpus.url, b))
    assert removed_a == removed_b == [] and changed_a == {} and changed_b == {}
    assert sorted(added_a) == sorted(added_b)
    # messages: Mastra's new ids are random; pair them by the source message they copy (same content, createdAt)
    key = operator.itemgetter("createdAt", "createdAtZ", "content")
    msgs_a = sorted(added_a["mastra_messages"], key=key)
    msgs_b = sorted(added_b["mastra_messages"], key=key)
    assert len(msgs_a) == len(msgs_b) == len(result["messages"]) > 0
    for ma, mb in zip(msgs_a, msgs_b, strict=True):
        assert {k: v for k, v in ma.items() if k != "id"} == {k: v for k, v in mb.items() if k != "id"}
    (ta,), (tb,) = added_a["mastra_threads"], added_b["mastra_threads"]
    meta_a, meta_b = json.loads(ta.pop("metadata")), json.loads(tb.pop("metadata"))
    meta_a["clone"].pop("clonedAt"), meta_b["clone"].pop("clonedAt")
    id_map = {v: k for k, v in result["messageIdMap"].items()}
    assert meta_a["clone"]["lastMessageId"] == meta_b["clone"]["lastMessageId"] == id_map.get(
        result["messages"][-1]["id"])
    assert meta_a == meta_b and same_row(ta, tb) == []
    assert tb["createdAtZ"] == tb["createdAt"] + "+00"
    if OM in added_a:
        (oa,), (ob,) = added_a[OM], added_b[OM]
        ids_a = json.loads(oa.pop("observedMessageIds") or "null")
        ids_b = json.loads(ob.pop("observedMessageIds") or "null")
        assert (ids_a is None) == (ids_b is None)
        assert same_row(oa, ob, skip={"bufferedObservationChunks"}) == []
        _twins_match(ob)
    else:
        assert OM not in added_b
    backup = json.loads(session.backup_for(target).read_text(encoding="utf-8"))
    assert all(r["before"] is None for r in backup["rows"])      # a clone only inserts
    assert len(backup["inserted"]) == sum(len(v) for v in added_b.values())
    if run_continue:
        report = node_pg(pg_corpus, "continue.mjs", b, "studio-clone-1", "1")
        assert report["ok"] is True, report


def test_delete_and_clear_on_postgresql_equal_mastra_and_undo_puts_them_back(pg_corpus, tmp_path, request,
                                                                           monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, "history")
    with open_store(target) as store:
        threads = [t.id for t in store.list_threads()]
        msgs = store.list_messages(threads[0])
    ids = [msgs[0].id, msgs[2].id, "no-such-message"]
    node_pg(pg_corpus, "studio-delete-server.mjs", a, json.dumps(ids))
    session = WriteSession()
    assert session.delete_messages(target, ids) == 2
    added_a, changed_a, removed_a = changes(before, dump_schema(pg_corpus.url, a))
    after_b = dump_schema(pg_corpus.url, b)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert added_a == added_b == {}
    assert sorted(removed_a) == sorted(removed_b) == sorted(("mastra_messages", i) for i in ids[:2])
    # the thread's updatedAt and its twin: NOW() in both, as MemoryPG.deleteMessages writes them
    assert set(changed_a) == set(changed_b) == {("mastra_threads", threads[0], c) for c in ("updatedAt", "updatedAtZ")}
    t = after_b["mastra_threads"][threads[0]]
    assert t["updatedAtZ"].startswith(t["updatedAt"][:19])

    # clear the other thread; then undo the clear, then the delete: every row back, twins included
    other = threads[1]
    with open_store(target) as store:
        count = store.message_count(other)
    assert count > 0
    assert clear_thread(target, other) == count
    with open_store(target) as store:
        assert store.message_count(other) == 0 and store.get_thread(other) is not None
    assert main(["undo", target, "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reinserted"] == count
    assert dump_schema(pg_corpus.url, b) == after_b
    assert main(["undo", target, "--yes", "--json"]) == 0
    assert dump_schema(pg_corpus.url, b) == before


def test_an_overtaken_reflection_on_postgresql_is_caught_and_repaired(pg_corpus, tmp_path, monkeypatch):
    """The write protocol reads through the store API on PostgreSQL too: a running turn that writes onto the row
    our generation replaced (as MemoryPG.updateActiveObservations does: text appended, cursor and its twin
    moved) is found, the agent reads as active, and the repair generation carries the line forward."""
    import psycopg

    from studio.store.write.protocol import find_overtaking_writes, history_reader, store_activity, unrepaired
    from studio.store.writes import repair_overtaken_writes

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    schema = "wovertaken"
    target = copy_schema(pg_corpus, "support", schema)
    ours, key, current = commit_answer(target, "support-1", answer_for("support"),
                                       studio_metadata={"kind": "reflection"})
    parsed = parse_answer(answer_for("support"))
    assert unrepaired(find_overtaking_writes(history_reader(target, key)())) == []
    line = "* 🔴 (10:00) A line the running turn observed after the studio's commit"
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute(f'UPDATE {schema}.mastra_observational_memory SET "activeObservations" = "activeObservations" '
                     f"|| %s, \"lastObservedAt\" = (NOW() AT TIME ZONE 'UTC'), \"lastObservedAtZ\" = NOW(), "
                     f"\"updatedAt\" = (NOW() AT TIME ZONE 'UTC'), \"updatedAtZ\" = NOW() WHERE id = %s",
                     (f"\n\n--- message boundary (now) ---\n\n{line}", current.id))
    activity = store_activity(target, key, 30_000)
    assert activity.active and activity.what == f"generation {current.generation_count} of its observational memory"
    (finding,) = unrepaired(find_overtaking_writes(history_reader(target, key)()))
    assert (finding.kind, finding.record_id, finding.overtaken_record_id) == \
        ("superseded-row-written", current.id, ours["id"])
    assert line in finding.added_lines
    before = dump_schema(pg_corpus.url, schema)
    repaired = repair_overtaken_writes(target, lookup_key=key, count_observations=count_observations)
    assert repaired["generationCount"] == ours["generationCount"] + 1
    assert line in repaired["activeObservations"] and parsed["observations"] in repaired["activeObservations"]
    added, changed, removed = changes(before, dump_schema(pg_corpus.url, schema))
    assert list(added) == [OM] and changed == {} and removed == []
    _twins_match(added[OM][0])
    assert unrepaired(find_overtaking_writes(history_reader(target, key)())) == []
    report = node_pg(pg_corpus, "continue.mjs", schema, "support-1", "1")
    assert report["ok"] is True and report["before"]["recordId"] == repaired["id"], report


def test_delete_thread_on_postgresql_equals_mastra_and_undo_puts_it_back(pg_corpus, tmp_path, request,
                                                                        monkeypatch, capsys):
    """Memory.deleteThread on support-1 (thread-scope OM generations): the same rows go as in Mastra's own call;
    undo brings every row back."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, "support")
    node_pg(pg_corpus, "studio-memory-delete-thread-server.mjs", a, "support-1")
    done = WriteSession().delete_thread(target, "support-1")
    added_a, changed_a, removed_a = changes(before, dump_schema(pg_corpus.url, a))
    added_b, changed_b, removed_b = changes(before, dump_schema(pg_corpus.url, b))
    assert added_a == added_b == {} and changed_a == changed_b == {}
    assert sorted(removed_a) == sorted(removed_b)
    assert ("mastra_threads", "support-1") in removed_b
    assert done["messages"] == sum(1 for t, _ in removed_b if t == "mastra_messages") > 0
    assert done["om_records"] == sum(1 for t, _ in removed_b if t == "mastra_observational_memory") > 0
    assert main(["undo", target, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert dump_schema(pg_corpus.url, b) == before
    # the restored store takes the write again, the same rows go, and Mastra runs a real turn in what is left
    assert WriteSession().delete_thread(target, "support-1") == done
    assert changes(before, dump_schema(pg_corpus.url, b)) == (added_b, changed_b, removed_b)
    _carries_on(pg_corpus, b, "support-2")


def _carries_on(pg_corpus, schema: str, thread_id: str) -> None:
    """Real Mastra runs one more agent turn on THREAD_ID in SCHEMA (continue.mjs): no error, and its messages
    are stored."""
    report = node_pg(pg_corpus, "continue.mjs", schema, thread_id, "1")
    assert report["ok"] is True, report
    assert report["after"]["messages"] > report["before"]["messages"], report


def test_update_thread_on_postgresql_equals_mastra(pg_corpus, tmp_path, request, monkeypatch, capsys):
    """Memory.updateThread (title and merged metadata): the same columns change as in Mastra's own call (the times
    aside: both now), twins included; undo puts the row back."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, "support")
    args = {"title": "Renamed", "metadata": {"priority": 3, "nested": {"a": [1, "2"]}, "10": None}}
    node_pg(pg_corpus, "studio-update-thread.mjs", a, "support-meta", json.dumps(args))
    WriteSession().update_thread(target, "support-meta", **args)
    added_a, changed_a, removed_a = changes(before, dump_schema(pg_corpus.url, a))
    after_b = dump_schema(pg_corpus.url, b)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert added_a == added_b == {} and not removed_a and not removed_b
    assert set(changed_a) == set(changed_b) == {("mastra_threads", "support-meta", c)
                                                for c in ("title", "metadata", "updatedAt", "updatedAtZ")}
    ta, tb = dump_schema(pg_corpus.url, a)["mastra_threads"]["support-meta"], after_b["mastra_threads"]["support-meta"]
    assert (ta["title"], json.loads(ta["metadata"])) == (tb["title"], json.loads(tb["metadata"]))
    assert main(["undo", target, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert dump_schema(pg_corpus.url, b) == before
    # written again on the restored row: the same title and metadata; Mastra carries on with the edited thread
    WriteSession().update_thread(target, "support-meta", **args)
    again = dump_schema(pg_corpus.url, b)
    assert set(changes(before, again)[1]) == set(changed_b)
    tc = again["mastra_threads"]["support-meta"]
    assert (tc["title"], json.loads(tc["metadata"])) == (ta["title"], json.loads(ta["metadata"]))
    _carries_on(pg_corpus, b, "support-meta")


@pytest.mark.parametrize(("scope", "thread_id"), [("resource", "support-1"), ("thread", "support-meta")])
def test_working_memory_on_postgresql_equals_mastra(pg_corpus, tmp_path, request, monkeypatch, capsys, scope,
                                                    thread_id):
    """Memory.updateWorkingMemory in each scope: the same rows as Mastra's own call (times aside, twins included);
    undo puts the store back."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = _two_copies(pg_corpus, request, "support")
    text = "# Notes\n- Zoë likes teal"
    node_pg(pg_corpus, "studio-working-memory.mjs", a, thread_id, scope, json.dumps(text))
    WriteSession().update_working_memory(target, thread_id=thread_id, scope=scope, text=text)
    added_a, changed_a, removed_a = changes(before, dump_schema(pg_corpus.url, a))
    added_b, changed_b, removed_b = changes(before, dump_schema(pg_corpus.url, b))
    assert sorted(added_a) == sorted(added_b) and set(changed_a) == set(changed_b) and not removed_a and not removed_b
    assert added_b or changed_b
    after_a, after_b = dump_schema(pg_corpus.url, a), dump_schema(pg_corpus.url, b)
    times = {"createdAt", "updatedAt", "createdAtZ", "updatedAtZ"}
    def strip(rows: dict, table: str) -> dict:
        return {k: {c: v for c, v in r.items() if c not in times} for k, r in rows.get(table, {}).items()}

    for table in ("mastra_resources", "mastra_threads"):
        assert strip(after_a, table) == strip(after_b, table)
    assert main(["undo", target, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert dump_schema(pg_corpus.url, b) == before
    # written again on the restored store: Mastra's rows again; Mastra carries on with that working memory
    WriteSession().update_working_memory(target, thread_id=thread_id, scope=scope, text=text)
    again = dump_schema(pg_corpus.url, b)
    for table in ("mastra_resources", "mastra_threads"):
        assert strip(again, table) == strip(after_a, table)
    _carries_on(pg_corpus, b, thread_id)

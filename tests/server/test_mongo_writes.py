"""Writes on MongoDB equal real @mastra/mongodb's writes, document by document and type by type; Mastra carries on.

Expected values come from real Mastra on a copy of the same database (the corpus's `mongo-load.mjs` reloads the
dump `mongo_corpus` took, same `_id`s and BSON types): `mastra-reflect.mjs`, `studio-update-thread.mjs`,
`studio-working-memory.mjs`, `studio-memory-delete-thread-server.mjs`, all with `--store mongodb`. Copy A gets
Mastra's write, copy B ours; both are dumped as canonical Extended JSON (`mongo-dump.mjs`) and every document
either side added or changed must be equal field by field, in the same order and with the same BSON types;
`_id`s, new ids and write times are compared by type only (both are "now"). Runs on the replica set (one
transaction) and on a standalone jongodb (ordered compare-and-set steps). Deterministic: no clock, no race.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import NamedTuple

import pytest

from studio.cli import main
from studio.engine.tokens import count_observations
from studio.errors import WriteRefused
from studio.store import open_store
from studio.store.writes import WriteSession, revert_to_generation
from tests.interop.answers import answer_for
from tests.server.conftest import _run
from tests.server.write_helpers import commit_answer

OM, THREADS, RESOURCES, MESSAGES = ("mastra_observational_memory", "mastra_threads", "mastra_resources",
                                    "mastra_messages")
#: Fields whose values are "now" or new: compared by BSON type only.
NEW_VALUES = {"_id", "createdAt", "updatedAt", "lastReflectionAt"}


def _db(request, suffix: str) -> str:
    return "w" + hashlib.sha256(request.node.name.encode()).hexdigest()[:10] + suffix


def load_copy(mongo_corpus, server, scenario: str, db: str) -> str:
    """Load SCENARIO's dump into database DB of SERVER; return the studio's URL of it."""
    _run(["node", "mongo-load.mjs", str(mongo_corpus.dump / scenario), server.node_url, db], mongo_corpus.corpus, 120)
    return server.target(db)


class Copies(NamedTuple):
    """Two databases loaded from one scenario's dump: A for Mastra's write, B for ours."""

    a: str
    b: str
    target: str   # the studio's URL of B
    before: dict  # B's dump (as `dump` gives it) before either write; A's is the same


def two_copies(mongo_corpus, server, request, tmp_path, scenario: str) -> Copies:
    """Load SCENARIO's dump into this test's databases A and B of SERVER and dump B before any write."""
    a, b = _db(request, "a"), _db(request, "b")
    load_copy(mongo_corpus, server, scenario, a)
    target = load_copy(mongo_corpus, server, scenario, b)
    return Copies(a, b, target, dump(mongo_corpus, server, b, tmp_path / "before"))


def dump(mongo_corpus, server, db: str, out: Path) -> dict[str, list[dict]]:
    """{collection: [canonical Extended JSON documents in natural order]} of database DB (mongo-dump.mjs)."""
    _run(["node", "mongo-dump.mjs", server.node_url, str(out), db], mongo_corpus.corpus, 120)
    found = {}
    for path in sorted((out / db).glob("mastra_*.json")):
        found[path.stem] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return found


def node(mongo_corpus, server, script: str, *args: str) -> dict:
    """Run a corpus script with `--store mongodb` on SERVER; its JSON output."""
    out = _run(["node", script, *args, "--store", "mongodb", "--url", server.node_url], mongo_corpus.corpus, 300)
    text = out.stdout if hasattr(out, "stdout") else out
    return json.loads(text[text.index("{"):]) if "{" in text else {}


def by_id(docs: dict[str, list[dict]]) -> dict[tuple[str, str], dict]:
    return {(c, d["id"]): d for c, ds in docs.items() for d in ds}


def exact(docs: dict[str, list[dict]]) -> dict[tuple[str, str], str]:
    """{(collection, id): the document's canonical Extended JSON text}: every field, its order and BSON type, `_id`
    included. A collection's natural order is left out: MongoDB puts a document deleted and inserted again (an
    undo of a delete) after the others, whatever it restores."""
    return {key: json.dumps(doc) for key, doc in by_id(docs).items()}


def changes(before: dict, after: dict) -> tuple[dict, dict, list]:
    """(added {key: doc}, changed {key: doc after}, removed [key]) between two dumps."""
    b, a = by_id(before), by_id(after)
    added = {k: d for k, d in a.items() if k not in b}
    changed = {k: d for k, d in a.items() if k in b and json.dumps(b[k]) != json.dumps(d)}
    return added, changed, sorted(k for k in b if k not in a)


def shape(doc: dict, skip: set[str] = frozenset()) -> list:
    """DOC's fields in order with their values (canonical EJSON), values of NEW_VALUES / SKIP reduced to their type."""
    out = []
    for key, value in doc.items():
        if key in NEW_VALUES or key in skip:
            out.append((key, sorted(value) if isinstance(value, dict) else type(value).__name__))
        else:
            out.append((key, value))
    return out


def continue_on_copy(mongo_corpus, server, dumped: Path, db: str, thread_id: str) -> dict:
    """Reload database DB as the dump folder DUMPED holds it (our write's result) into a fresh database and let real
    Mastra run one more agent turn on THREAD_ID there (`continue.mjs`); its report. The database written by the
    studio stays as it was, so its undo can still be checked."""
    copy = db + "c"
    _run(["node", "mongo-load.mjs", str(dumped / db), server.node_url, copy], mongo_corpus.corpus, 120)
    return node(mongo_corpus, server, "continue.mjs", copy, thread_id, "1")


def answer_file(tmp_path, text: str) -> str:
    path = tmp_path / "answer.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_reflection_on_mongodb_equals_mastra_and_mastra_continues(mongo_corpus, server, tmp_path, request,
                                                                  monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    answer = answer_for("support")
    mastra = node(mongo_corpus, server, "mastra-reflect.mjs", a, "support-1", answer_file(tmp_path, answer))
    assert mastra["reflected"] is True
    session = WriteSession()
    ours = commit_answer(target, "support-1", answer, session).row

    added_a, changed_a, removed_a = changes(before, dump(mongo_corpus, server, a, tmp_path / "a"))
    added_b, changed_b, removed_b = changes(before, dump(mongo_corpus, server, b, tmp_path / "b"))
    assert removed_a == removed_b == []
    (doc_a,), (doc_b,) = added_a.values(), added_b.values()
    assert doc_b["id"] == ours["id"]
    assert shape(doc_a, {"id"}) == shape(doc_b, {"id"})   # every field, in Mastra's order, with its BSON type
    assert doc_b["createdAt"] == doc_b["updatedAt"] == doc_b["lastReflectionAt"]
    with open_store(target) as store:   # the previous generation (its flag and updatedAt) and the thread
        previous = store.om_history("thread:support-1")[1].id
    assert set(changed_a) == set(changed_b) == {(OM, previous), (THREADS, "support-1")}
    for key in changed_a:
        assert shape(changed_a[key]) == shape(changed_b[key]), key
    backup = json.loads(session.backup_for(target).read_text(encoding="utf-8"))
    assert {(r["table"], r["id"]) for r in backup["rows"]} == set(changed_b) | {(OM, ours["id"])}

    report = node(mongo_corpus, server, "continue.mjs", b, "support-1", "1")
    assert report["ok"] is True, report
    assert report["before"]["recordId"] == ours["id"]


def test_revert_and_undo_on_mongodb_restore_the_exact_dump(mongo_corpus, server, tmp_path, request, monkeypatch,
                                                            capsys):
    """A revert is Mastra's reflection holding generation 1's log (our `metadata.studio` aside); undo puts back
    every document byte for byte (field order, types, `_id`s), and a second undo finds nothing."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    with open_store(target) as store:
        key = store.lookup_key_for_thread(store.get_thread("support-1"))
        history = store.om_history(key)
    old = next(h for h in history if h.generation_count == 1)
    ours = revert_to_generation(target, lookup_key=key, generation_count=1, expected_record_id=history[0].id,
                                count_observations=count_observations)
    node(mongo_corpus, server, "mastra-reflect.mjs", a, "support-1",
         answer_file(tmp_path, f"<observations>\n{old.active_observations}\n</observations>\n"))
    added_a, changed_a, _ = changes(before, dump(mongo_corpus, server, a, tmp_path / "a"))
    added_b, changed_b, _ = changes(before, dump(mongo_corpus, server, b, tmp_path / "b"))
    (doc_a,), (doc_b,) = added_a.values(), added_b.values()
    assert doc_b["id"] == ours["id"] and doc_b["activeObservations"] == old.active_observations
    assert list(doc_a) == list(doc_b)   # Mastra's field order; the values but our mark in `metadata`:
    assert [f for f in shape(doc_a, {"id"}) if f[0] != "metadata"] == [f for f in shape(doc_b, {"id"})
                                                                       if f[0] != "metadata"]
    assert doc_a["metadata"] is None
    assert doc_b["metadata"]["studio"]["revertedFrom"] == {"$numberInt": "1"}
    assert set(changed_a) == set(changed_b) == {(OM, history[0].id)}

    assert main(["undo", target, "--yes", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["operation"], doc["deleted"], doc["restored"], doc["reinserted"]) == ("revert", 1, 1, 0)
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone")) == exact(before)
    assert main(["undo", target, "--yes", "--json"]) == 2
    assert exact(dump(mongo_corpus, server, b, tmp_path / "again")) == exact(before)


def _same_changes(before: dict, after_a: dict, after_b: dict) -> tuple[dict, dict, list]:
    """Assert Mastra's write (AFTER_A) and ours (AFTER_B) added, changed and removed the same documents, each equal
    in fields, order and BSON types (new values by type); return ours."""
    added_a, changed_a, removed_a = changes(before, after_a)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert sorted(added_a) == sorted(added_b) and sorted(changed_a) == sorted(changed_b)
    assert removed_a == removed_b
    for key in changed_a:
        assert shape(changed_a[key]) == shape(changed_b[key]), key
    for key in added_a:
        assert shape(added_a[key]) == shape(added_b[key]), key
    return added_b, changed_b, removed_b


def test_update_thread_on_mongodb_equals_mastra_and_undo_restores(mongo_corpus, server, tmp_path, request,
                                                                 monkeypatch, capsys):
    """Memory.updateThread (a title, metadata merged: a new numeric-looking key goes first, as in a JavaScript
    object; a nested document; a double and an int): the same document as Mastra's; Mastra carries on from ours;
    undo restores the dump."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    args = {"title": "Renamed", "metadata": {"priority": 3, "ratio": 0.5, "nested": {"a": [1, "2"]}, "10": None}}
    node(mongo_corpus, server, "studio-update-thread.mjs", a, "support-meta", json.dumps(args))
    WriteSession().update_thread(target, "support-meta", **args)
    _, changed, _ = _same_changes(before, dump(mongo_corpus, server, a, tmp_path / "a"),
                                  dump(mongo_corpus, server, b, tmp_path / "b"))
    assert list(changed) == [(THREADS, "support-meta")]
    assert next(iter(changed[(THREADS, "support-meta")]["metadata"])) == "10"
    report = continue_on_copy(mongo_corpus, server, tmp_path / "b", b, "support-meta")
    assert report["ok"] is True, report
    assert main(["undo", target, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone")) == exact(before)


@pytest.mark.parametrize(("scope", "thread_id"), [("resource", "support-1"), ("thread", "support-meta")])
def test_working_memory_on_mongodb_equals_mastra_and_undo_restores(mongo_corpus, server, tmp_path, request,
                                                                  monkeypatch, capsys, scope, thread_id):
    """Memory.updateWorkingMemory in each scope, twice (resource scope: the first creates the missing resource as
    updateResource's upsert does, the second updates it): the same documents as Mastra's; two undos restore."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    states = [before]
    for n, text in enumerate(["# Notes\n- Zoë likes teal", "# Notes\n- Zoë likes teal\n- and 3 cats"]):
        node(mongo_corpus, server, "studio-working-memory.mjs", a, thread_id, scope, json.dumps(text))
        done = WriteSession().update_working_memory(target, thread_id=thread_id, scope=scope, text=text)
        added, changed, _ = _same_changes(states[-1], dump(mongo_corpus, server, a, tmp_path / f"a{n}"),
                                          after_b := dump(mongo_corpus, server, b, tmp_path / f"b{n}"))
        assert added or changed
        if scope == "resource":
            assert done["created_resource"] is (n == 0) and bool(added) is (n == 0)
        states.append(after_b)
        # the next round compares from the same state on both sides: bring A to B's times (Mastra's own "now")
        _run(["node", "mongo-load.mjs", str(tmp_path / f"b{n}" / b), server.node_url, a], mongo_corpus.corpus, 120)
    report = continue_on_copy(mongo_corpus, server, tmp_path / "b1", b, thread_id)
    assert report["ok"] is True, report
    for n in (1, 0):
        assert main(["undo", target, "--yes", "--json"]) == 0
        capsys.readouterr()
        assert exact(dump(mongo_corpus, server, b, tmp_path / f"undone{n}")) == exact(states[n])


def test_delete_thread_on_mongodb_equals_mastra_and_undo_puts_it_back(mongo_corpus, server, tmp_path, request,
                                                                     monkeypatch, capsys):
    """Memory.deleteThread on support-1 (messages, the thread, its thread-scope OM generations): the same documents
    go as in Mastra's own call; undo brings every document back as it was (`_id`, field order, types)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    node(mongo_corpus, server, "studio-memory-delete-thread-server.mjs", a, "support-1")
    done = WriteSession().delete_thread(target, "support-1")
    _, _, removed = _same_changes(before, dump(mongo_corpus, server, a, tmp_path / "a"),
                                  dump(mongo_corpus, server, b, tmp_path / "b"))
    assert (THREADS, "support-1") in removed
    assert done["messages"] == sum(1 for t, _ in removed if t == MESSAGES) > 0
    assert done["om_records"] == sum(1 for t, _ in removed if t == OM) > 0
    assert main(["undo", target, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone")) == exact(before)


def test_a_document_changed_under_a_standalone_step_puts_back_what_was_written(mongo_corpus, mongo_standalone,
                                                                              tmp_path, request, monkeypatch):
    """On a standalone server a reflection is three compare-and-set steps (new generation, the old one's flag, the
    thread's metadata). Another program renames the thread just before the third step (sequenced by a hook on the
    backup rewrite that precedes every step, no timing): the step finds the thread changed, the two steps done are
    put back, the write is refused and its backup removed; the store equals the dump but for that rename."""
    from pymongo import MongoClient

    from studio.store.write.backends.mongodb import MongoWriteTx

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    db = _db(request, "b")
    target = load_copy(mongo_corpus, mongo_standalone, "support", db)
    before = dump(mongo_corpus, mongo_standalone, db, tmp_path / "before")
    save = MongoWriteTx._save_backup
    steps = []

    def save_then_interfere(tx):
        save(tx)
        steps.append(tx.journal()[-1]["table"])
        if len(steps) == 3:
            assert steps == [OM, OM, THREADS]
            with MongoClient(mongo_standalone.url) as client:
                client[db][THREADS].update_one({"id": "support-1"}, {"$set": {"title": "Renamed by the agent"}})

    monkeypatch.setattr(MongoWriteTx, "_save_backup", save_then_interfere)
    session = WriteSession()
    with pytest.raises(WriteRefused) as refused:
        commit_answer(target, "support-1", answer_for("support"), session)
    assert refused.value.reason == "generation-changed"
    assert "put back" in str(refused.value)
    assert session.backup_for(target) is None
    assert list((tmp_path / "data" / "memory-studio" / "backups").glob("*.json")) == []
    after = dump(mongo_corpus, mongo_standalone, db, tmp_path / "after")
    _, changed, removed = changes(before, after)
    assert removed == [] and by_id(after).keys() == by_id(before).keys()
    assert list(changed) == [(THREADS, "support-1")]
    assert changed[(THREADS, "support-1")]["title"] == "Renamed by the agent"


def test_the_cli_says_a_standalone_write_is_not_atomic_and_json_tells_it(mongo_corpus, server, tmp_path, request,
                                                                         monkeypatch, capsys):
    """update-thread --json carries `atomic` (False on the standalone server, True on the replica set); on the
    standalone server the sentence is said (on stderr, with --yes too)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    target = load_copy(mongo_corpus, server, "support", _db(request, "b"))
    assert main(["update-thread", target, "--thread", "support-meta", "--title", "T", "--yes", "--json"]) == 0
    out = capsys.readouterr()
    standalone = server is not mongo_corpus.server
    assert json.loads(out.out)["atomic"] is (not standalone)
    assert ("this write is not atomic there" in out.err) is standalone


def test_delete_messages_and_clear_on_mongodb_equal_mastra_and_undo_puts_them_back(mongo_corpus, server, tmp_path,
                                                                                   request, monkeypatch, capsys):
    """Memory.deleteMessages of two messages and an unknown id, then a clear of another thread (the studio's: every
    message of it deleted as deleteMessages would): the same documents go and the same threads are stamped as in
    Mastra's own calls; two undos put every document back exactly."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    with open_store(target) as store:
        first = [m.id for m in store.list_messages("support-1")]
        other = [m.id for m in store.list_messages("support-2")]
    ids = [first[0], first[2], "no-such-message"]
    node(mongo_corpus, server, "studio-delete-server.mjs", a, json.dumps(ids))
    assert WriteSession().delete_messages(target, ids) == 2
    after_delete = dump(mongo_corpus, server, b, tmp_path / "b1")
    _, changed, removed = _same_changes(before, dump(mongo_corpus, server, a, tmp_path / "a1"), after_delete)
    assert removed == sorted((MESSAGES, i) for i in ids[:2]) and list(changed) == [(THREADS, "support-1")]

    _run(["node", "mongo-load.mjs", str(tmp_path / "b1" / b), server.node_url, a], mongo_corpus.corpus, 120)
    node(mongo_corpus, server, "studio-delete-server.mjs", a, json.dumps(other))
    assert WriteSession().clear_thread(target, "support-2") == len(other) > 0
    _, changed, removed = _same_changes(after_delete, dump(mongo_corpus, server, a, tmp_path / "a2"),
                                        dump(mongo_corpus, server, b, tmp_path / "b2"))
    assert removed == sorted((MESSAGES, i) for i in other) and list(changed) == [(THREADS, "support-2")]
    for dumped, thread_id in ((tmp_path / "b1", "support-1"), (tmp_path / "b2", "support-2")):
        report = continue_on_copy(mongo_corpus, server, dumped, b, thread_id)
        assert report["ok"] is True, (thread_id, report)

    assert main(["undo", target, "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reinserted"] == len(other)
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone1")) == exact(after_delete)
    assert main(["undo", target, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone2")) == exact(before)


CLONE_CASES = [
    ("support", "support-1", {}, True),
    ("support", "support-3", {"title": "Branch", "metadata": {"branch": True, "n": 2.5},
                              "options": {"messageLimit": 3}}, False),
    ("resource", "res-a", {"resourceId": "user-new"}, True),   # resource OM copied, thread tags rewritten
]


def _clone_shape(doc: dict) -> list:
    """A cloned document's fields in order, values compared exactly but for what is new in each clone: `_id`, the
    new message ids (remapped arrays by length), the clone's own times (by type)."""
    out = []
    for key, value in doc.items():
        if key in ("_id", "lastReflectionAt") or (key in ("createdAt", "updatedAt") and "thread_id" not in doc):
            out.append((key, sorted(value) if isinstance(value, dict) else type(value).__name__))
        elif key == "id" and "lookupKey" in doc:
            out.append((key, type(value).__name__))
        elif (key == "id" and "thread_id" in doc) or (key == "observedMessageIds" and isinstance(value, list)):
            out.append((key, len(value) if isinstance(value, list) else type(value).__name__))
        elif key == "bufferedObservationChunks" and isinstance(value, list):
            out.append((key, [{**c, "id": None, "messageIds": len(c.get("messageIds") or [])} for c in value]))
        elif key == "metadata" and isinstance(value, dict) and isinstance(value.get("clone"), dict):
            out.append((key, {**value, "clone": {k: (sorted(v) if k == "clonedAt" else v)
                                                 for k, v in value["clone"].items()}}))
        else:
            out.append((key, value))
    return out


@pytest.mark.parametrize(("scenario", "source", "args", "run_continue"), CLONE_CASES,
                         ids=["support-1", "support-3-limit", "res-a-new-resource"])
def test_clone_on_mongodb_equals_mastra_clone(mongo_corpus, server, tmp_path, request, monkeypatch, capsys, scenario,
                                              source, args, run_continue):
    """Memory.cloneThread: the same new thread (metadata.clone with clonedAt a Date), the same message copies (source
    createdAt, type, content; insertMany), the same copied OM record (bufferedObservationChunks [] when the source
    has none, ids remapped); continue.mjs carries on from our clone; undo removes exactly what it added."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, scenario)
    # (its printout of the clone is not read: a pipe keeps only what was flushed before its process.exit)
    _run(["node", "clone.mjs", a, source, "studio-clone-1", json.dumps(args), "--store", "mongodb", "--url",
          server.node_url], mongo_corpus.corpus, 300)
    options = args.get("options", {})
    session = WriteSession()
    result = session.clone_thread(target, source, new_thread_id="studio-clone-1", title=args.get("title"),
                                  resource_id=args.get("resourceId"), metadata=args.get("metadata"),
                                  message_limit=options.get("messageLimit"))
    added_a, changed_a, removed_a = changes(before, dump(mongo_corpus, server, a, tmp_path / "a"))
    added_b, changed_b, removed_b = changes(before, dump(mongo_corpus, server, b, tmp_path / "b"))
    assert removed_a == removed_b == [] and changed_a == changed_b == {}
    kinds_a = sorted(c for c, _ in added_a)
    assert kinds_a == sorted(c for c, _ in added_b) and MESSAGES in kinds_a
    for collection in set(kinds_a):
        docs_a = sorted((_clone_shape(d) for (c, _), d in added_a.items() if c == collection), key=json.dumps)
        docs_b = sorted((_clone_shape(d) for (c, _), d in added_b.items() if c == collection), key=json.dumps)
        assert docs_a == docs_b, collection
    (thread_b,) = [d for (c, _), d in added_b.items() if c == THREADS]
    assert "$date" in thread_b["metadata"]["clone"]["clonedAt"]
    assert len(result["messages"]) == sum(1 for c, _ in added_b if c == MESSAGES)
    if run_continue:
        report = node(mongo_corpus, server, "continue.mjs", b, "studio-clone-1", "1")
        assert report["ok"] is True, report
    else:
        assert main(["undo", target, "--yes", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["deleted"] == len(added_b)
        assert exact(dump(mongo_corpus, server, b, tmp_path / "undone")) == exact(before)


def test_the_studio_dialogs_say_a_standalone_write_is_not_atomic(mongo_corpus, server, studio, qtbot, request,
                                                                  tmp_path):
    """Delete Thread…, Edit Working Memory's confirmation and Undo on MongoDB: the dialog's backup note says the
    write is not atomic on the standalone server, and one transaction on the replica set (screenshot saved at
    1024x700 for a look)."""
    target = load_copy(mongo_corpus, server, "support", _db(request, "b"))
    standalone = server is not mongo_corpus.server
    window = studio(target)
    assert window.write_note is not None if standalone else window.write_note is None
    assert window.select_thread("support-1")
    window.resize(1024, 700)
    dialog = window.history_actions.delete_thread()
    assert dialog is not None
    note = dialog.backup_note.text()
    assert ("this write is not atomic there" in note) is standalone
    assert ("The write is one transaction" in note) is not standalone
    assert (window.thread_view.history_tab.write_note is not None) is standalone
    qtbot.waitExposed(dialog)
    dialog.grab().save(str(tmp_path / f"delete-thread-{request.node.callspec.id}.png"))
    dialog.reject()


def test_a_message_changed_under_a_standalone_clear_keeps_every_message(mongo_corpus, mongo_standalone, tmp_path,
                                                                       request, monkeypatch):
    """A clear on a standalone server deletes a batch with one `$or` of compare-and-set filters. Another program
    edits one of the messages after the backup is written and before the delete (a hook, no timing): that message
    stays, the others deleted are put back, the write is refused and its backup removed; every document is as
    before but the edited one."""
    from pymongo import MongoClient

    from studio.store.write.backends.mongodb import MongoWriteTx

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    db = _db(request, "b")
    target = load_copy(mongo_corpus, mongo_standalone, "support", db)
    before = dump(mongo_corpus, mongo_standalone, db, tmp_path / "before")
    with open_store(target) as store:
        victim = store.list_messages("support-2")[1].id
    save = MongoWriteTx._save_backup

    def save_then_interfere(tx):
        save(tx)
        with MongoClient(mongo_standalone.url) as client:
            client[db][MESSAGES].update_one({"id": victim}, {"$set": {"content": "edited by the agent"}})

    monkeypatch.setattr(MongoWriteTx, "_save_backup", save_then_interfere)
    session = WriteSession()
    with pytest.raises(WriteRefused) as refused:
        session.clear_thread(target, "support-2")
    assert refused.value.reason == "generation-changed" and "put back" in str(refused.value)
    assert list((tmp_path / "data" / "memory-studio" / "backups").glob("*.json")) == []
    after = dump(mongo_corpus, mongo_standalone, db, tmp_path / "after")
    expected = exact(before)
    edited = {**by_id(before)[(MESSAGES, victim)], "content": "edited by the agent"}
    expected[(MESSAGES, victim)] = json.dumps(edited)
    assert exact(after) == expected


def test_rule_based_reflect_cli_on_mongodb_runs_the_whole_protocol_and_equals_mastra(mongo_corpus, server, tmp_path,
                                                                                     request, monkeypatch, capsys):
    """`reflect URL --strategy rule-based --yes --json` with the protocol's own watch window (`--watch auto`: the
    thread's turn timings read from MongoDB) writes the generation Mastra writes when its Reflector answers with
    the log we condensed (our `metadata.studio` mark aside); `atomic` says how it was written."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    code = main(["reflect", target, "--thread", "support-1", "--strategy", "rule-based", "--yes", "--json",
                 "--quiet-period", "0", "--watch", "auto"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["reflected"] is True
    assert doc["atomic"] is (server is mongo_corpus.server)
    added_b, _, _ = changes(before, dump(mongo_corpus, server, b, tmp_path / "b"))
    ((key, ours),) = [(k, d) for k, d in added_b.items() if k[0] == OM]
    assert key[1] == doc["record_id"]
    node(mongo_corpus, server, "mastra-reflect.mjs", a, "support-1",
         answer_file(tmp_path, f"<observations>\n{ours['activeObservations']}\n</observations>\n"))
    added_a, _, _ = changes(before, dump(mongo_corpus, server, a, tmp_path / "a"))
    ((_, mastra),) = [(k, d) for k, d in added_a.items() if k[0] == OM]
    assert list(mastra) == list(ours)
    assert [f for f in shape(mastra, {"id"}) if f[0] != "metadata"] == [f for f in shape(ours, {"id"})
                                                                       if f[0] != "metadata"]
    assert ours["metadata"]["studio"]["recordId"] == ours["id"]


def test_a_lost_commit_answer_keeps_the_backup_and_undo_tells(mongo_corpus, tmp_path, request, monkeypatch, capsys):
    """Replica set: commitTransaction reaches the server and its answer is lost (the driver call commits, then
    raises AutoReconnect: no timing). The write says it may or may not be written (ServerUnreachable, outcome
    "unknown"), keeps its row backup, and `undo` finds the write there and restores the dump exactly."""
    import pymongo
    from pymongo.client_session import ClientSession

    from studio.errors import ServerUnreachable

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    server = mongo_corpus.server
    target = load_copy(mongo_corpus, server, "support", _db(request, "b"))
    before = dump(mongo_corpus, server, _db(request, "b"), tmp_path / "before")
    commit = ClientSession.commit_transaction

    def commit_then_lose_the_answer(session):
        commit(session)
        raise pymongo.errors.AutoReconnect("connection closed (the test drops the answer)")

    monkeypatch.setattr(ClientSession, "commit_transaction", commit_then_lose_the_answer)
    with pytest.raises(ServerUnreachable) as lost:
        WriteSession().update_thread(target, "support-meta", title="Renamed")
    monkeypatch.setattr(ClientSession, "commit_transaction", commit)
    assert lost.value.outcome == "unknown" and lost.value.backup
    assert Path(lost.value.backup).exists()
    assert main(["undo", target, "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["restored"] == 1
    assert exact(dump(mongo_corpus, server, _db(request, "b"), tmp_path / "undone")) == exact(before)


#: Run in a child process: the CLI's update-thread, killed (os._exit, no cleanup, as a killed process) right after
#: its row backup is saved and before anything is written: on a replica set just before commitTransaction, on a
#: standalone server after the backup naming the first step is written and before the step.
_KILLED_WRITE = r"""
import os, sys
import studio.store.write.backends.mongodb as mongo
if sys.argv[1] == "replica-set":
    mongo._commit = lambda *args, **kwargs: os._exit(9)
else:
    saved = mongo.MongoWriteTx._save_backup
    def save_then_die(self):
        saved(self)
        os._exit(9)
    mongo.MongoWriteTx._save_backup = save_then_die
from studio.cli import main
main(["update-thread", sys.argv[2], "--thread", "support-meta", "--title", "Killed", "--yes"])
"""


def test_a_backup_left_by_a_killed_write_is_set_aside_and_undo_undoes_the_write_before(
        mongo_corpus, server, tmp_path, request, monkeypatch, capsys):
    """A real update-thread, then one killed after its row backup was saved and before anything was written (a
    child process ended by os._exit): the studio's undo check (`undo-check`, read-only) finds the second backup's
    write never happened, sets it aside, and `undo` offers and undoes the first; the dump equals the one before
    both writes. On both server kinds: the replica set's backup is saved before commitTransaction, the standalone
    server's before its first step."""
    import os
    import subprocess
    import sys

    from studio.store.write.undo import candidate_backups, pick_backup

    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    db = _db(request, "b")
    target = load_copy(mongo_corpus, server, "support", db)
    before = dump(mongo_corpus, server, db, tmp_path / "before")
    WriteSession().update_thread(target, "support-meta", title="First")
    first = dump(mongo_corpus, server, db, tmp_path / "first")
    kind = request.node.callspec.params["server"]
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITE, kind, target], capture_output=True, text=True,
                            env={**os.environ, "XDG_DATA_HOME": str(data)}, timeout=120,
                            cwd=Path(__file__).resolve().parents[2])
    assert killed.returncode == 9, killed.stderr
    assert exact(dump(mongo_corpus, server, db, tmp_path / "killed")) == exact(first)   # nothing was written
    candidates = candidate_backups(target)
    assert [d["operation"] for _, d in candidates] == ["update-thread", "update-thread"]
    assert "Killed" in json.dumps(candidates[0][1]["rows"])   # the newest backup is the killed write's

    path, document = pick_backup(target, None)
    assert path == candidates[1][0] and "First" in json.dumps(document["rows"])
    assert json.loads(candidates[0][0].read_text(encoding="utf-8")).get("never_written")
    assert main(["undo", target, "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["restored"] == 1
    assert exact(dump(mongo_corpus, server, db, tmp_path / "undone")) == exact(before)


def test_a_write_conflict_on_the_replica_set_refuses_busy_and_writes_nothing(mongo_corpus, tmp_path, request,
                                                                           monkeypatch):
    """A real server answers a document another transaction holds with WriteConflict (code 112, labelled
    TransientTransactionError); jongodb isolates nothing, so the driver's update raises the error a real replica
    set sends, inside a real transaction. The write is refused "busy" with a sentence, the transaction aborted: the
    dump is unchanged and no row backup is left."""
    import pymongo
    from pymongo.collection import Collection

    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    server = mongo_corpus.server
    db = _db(request, "b")
    target = load_copy(mongo_corpus, server, "support", db)
    before = dump(mongo_corpus, server, db, tmp_path / "before")

    def conflict(self, *args, **kwargs):
        raise pymongo.errors.OperationFailure(
            "WriteConflict error: this operation conflicted with another operation. Please retry your operation or "
            "multi-document transaction.", 112, {"errorLabels": ["TransientTransactionError"], "code": 112,
                                                 "codeName": "WriteConflict", "ok": 0})
    monkeypatch.setattr(Collection, "update_one", conflict)
    with pytest.raises(WriteRefused) as refused:
        WriteSession().update_thread(target, "support-meta", title="Conflicted")
    monkeypatch.undo()
    said = str(refused.value)
    assert refused.value.reason == "busy" and "write conflict" in said and "Try again" in said
    assert exact(dump(mongo_corpus, server, db, tmp_path / "after")) == exact(before)
    folder = data / "memory-studio" / "backups"
    assert not folder.is_dir() or not list(folder.glob("*.json"))

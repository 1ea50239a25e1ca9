"""Observations on MongoDB equal real @mastra/mongodb's (mastra-observe.mjs `--store mongodb` on a copy), document by
document and BSON type by type; Mastra carries on after ours; an undo restores the exact dump.

As in test_mongo_writes (whose helpers these tests use): copy A gets Mastra's observation, copy B ours, both
dumped as canonical Extended JSON; every document either side changed must be equal field by field, in the same
order and with the same BSON types. Write times (`updatedAt`) are compared by type; a message's `content` (JSON
text) is compared parsed, key order included, without the markers' per-run ids and times (cycleId, startedAt,
completedAt, timestamp, durationMs), as the SQL stores' observation tests do. The Observer's answer is a fixed
text (no model, no network). Runs on the replica set (one transaction) and on a standalone jongodb (ordered
compare-and-set steps). Deterministic: no clock, no race.
"""

from __future__ import annotations

import json

from studio.app.observation import parse_multi_thread_answer
from studio.engine.observe_window import observation_window, resource_observation_window
from studio.engine.observer import parse_answer
from studio.engine.tokens import count_observations
from studio.store.write.observation import commit_observation
from studio.store.write.observation_resource import commit_resource_observation
from studio.store.writes import undo_write
from tests.interop.test_observe_interop import RESOURCE_ANSWER, _answer, _ordered, _strip
from tests.server.test_mongo_writes import (
    MESSAGES,
    OM,
    THREADS,
    _db,
    by_id,
    changes,
    dump,
    exact,
    load_copy,
    node,
    shape,
    two_copies,
)
from tests.server.write_helpers import commit_answer


def _comparable(key: tuple[str, str], doc: dict) -> list:
    """DOC's fields in order as `shape` gives them, a message's content parsed without the markers' volatile values."""
    if key[0] == MESSAGES:
        doc = {**doc, "content": _ordered(_strip(json.loads(doc["content"])))}
    return shape(doc)


def _same_observation(before: dict, after_a: dict, after_b: dict) -> dict:
    """Assert Mastra's observation (AFTER_A) and ours (AFTER_B) changed the same documents to the same fields, order
    and BSON types, and added or removed none; return our changed documents."""
    added_a, changed_a, removed_a = changes(before, after_a)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert added_a == added_b == {} and removed_a == removed_b == []
    assert sorted(changed_a) == sorted(changed_b)
    for key in changed_a:
        assert _comparable(key, changed_a[key]) == _comparable(key, changed_b[key]), key
    return changed_b


def _thread_observation(mongo_corpus, server, tmp_path, request, scenario: str, thread_id: str, shape_args: dict):
    """Load SCENARIO twice, let Mastra observe THREAD_ID on copy A and the studio on copy B with the same answer;
    return (the dump before, copy B's target, B's database, Mastra's report, our changed documents)."""
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, scenario)
    text, _ = _answer(**shape_args)
    answer = tmp_path / "answer.txt"
    answer.write_text(text, encoding="utf-8")
    window = observation_window(target, thread_id)
    mastra = node(mongo_corpus, server, "mastra-observe.mjs", a, thread_id, str(answer))
    assert mastra["observed"] is True and window.message_ids == mastra["window"]["ids"]
    row = commit_observation(target, window, parse_answer(window, text), force=mastra["forced"] is not None)
    assert row["activeObservations"] == mastra["row"]["activeObservations"]
    changed = _same_observation(before, dump(mongo_corpus, server, a, tmp_path / "a"),
                                dump(mongo_corpus, server, b, tmp_path / "b"))
    return before, target, b, mastra, changed


def test_observation_on_mongodb_equals_mastra_and_mastra_continues(mongo_corpus, server, tmp_path, request,
                                                                   monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    _, _, b, mastra, changed = _thread_observation(
        mongo_corpus, server, tmp_path, request, "support", "support-1",
        {"task": True, "response": True, "title": "Observed title here"})
    assert {k[0] for k in changed} == {OM, THREADS, MESSAGES}   # the record, the thread, the markers' message
    report = node(mongo_corpus, server, "continue.mjs", b, "support-1", "1")
    assert report["ok"] is True, report
    assert report["before"]["recordId"] == mastra["recordId"]


def test_observation_undo_on_mongodb_restores_the_exact_dump(mongo_corpus, server, tmp_path, request, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    before, target, b, _, _ = _thread_observation(
        mongo_corpus, server, tmp_path, request, "support", "support-1",
        {"task": True, "response": False, "title": "ab"})
    undo_write(target)
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone")) == exact(before)


def test_cli_observe_with_a_model_on_mongodb_equals_mastra(mongo_corpus, server, tmp_path, request, monkeypatch,
                                                          fake_llm, capsys):
    """`observe --model` through the whole write protocol on MongoDB, its Observer a local fake answering a fixed
    text (no network): the documents equal Mastra's observation with that answer; `atomic` says how it was
    written (one transaction on the replica set, compare-and-set steps on a standalone server)."""
    from studio.cli import main
    from tests.fake_llm import Reply

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "support")
    text, _ = _answer(task=True, response=True, title="Observed title here")
    answer = tmp_path / "answer.txt"
    answer.write_text(text, encoding="utf-8")
    mastra = node(mongo_corpus, server, "mastra-observe.mjs", a, "support-1", str(answer))
    assert mastra["observed"] is True
    fake_llm.push(Reply(text=text))
    argv = ["observe", target, "--thread", "support-1", "--model", "openai-compatible/observer", "--base-url",
            fake_llm.base_url, "--yes", "--json"] + (["--below-threshold"] if mastra["forced"] is not None else [])
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["observed"] is True and doc["atomic"] is (server is mongo_corpus.server)
    assert len(fake_llm.requests) == 1
    _same_observation(before, dump(mongo_corpus, server, a, tmp_path / "a"),
                      dump(mongo_corpus, server, b, tmp_path / "b"))


def test_resource_observation_on_mongodb_equals_mastra_and_mastra_continues(mongo_corpus, server, tmp_path, request,
                                                                            monkeypatch):
    """Resource scope, on the server set (one transaction) and on a standalone server (compare-and-set steps over
    the record, every thread of the resource and the markers' messages): the `resource` scenario's dump loaded
    into each; the documents equal Mastra's observation with the same answer, and Mastra carries on."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b, target, before = two_copies(mongo_corpus, server, request, tmp_path, "resource")
    answer = tmp_path / "answer.txt"
    answer.write_text(RESOURCE_ANSWER, encoding="utf-8")
    window = resource_observation_window(target, "res-a")
    mastra = node(mongo_corpus, server, "mastra-observe.mjs", a, "res-a", str(answer))
    assert mastra["observed"] is True and mastra["scope"] == "resource"
    assert window.window_ids == mastra["window"]["ids"]
    outputs = parse_multi_thread_answer(RESOURCE_ANSWER, window.record.config)
    row = commit_resource_observation(target, window, outputs, force=mastra["forced"] is not None)
    assert row["activeObservations"] == mastra["row"]["activeObservations"]
    changed = _same_observation(before, dump(mongo_corpus, server, a, tmp_path / "a"),
                                dump(mongo_corpus, server, b, tmp_path / "b"))
    assert {k[0] for k in changed} >= {OM, THREADS}
    report = node(mongo_corpus, server, "continue.mjs", b, "res-a", "1")
    assert report["ok"] is True, report


def test_an_overtaken_reflection_on_mongodb_is_caught_and_repaired(mongo_corpus, server, tmp_path, request,
                                                                    monkeypatch):
    """A running turn writes onto the row our generation replaced, as MongoDBStore.updateActiveObservations does
    ($set text, cursor and updatedAt as Dates, $inc totalTokensObserved): the watch finds it, the repair is one more
    generation in createReflectionGeneration's fields, order and types carrying the line forward, Mastra continues
    on it, and undo puts back the exact dump taken before the repair."""
    from datetime import timedelta

    import pymongo

    from studio.store.write.protocol import find_overtaking_writes, history_reader, unrepaired
    from studio.store.writes import repair_overtaken_writes
    from tests.interop.answers import answer_for, parse_answer

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    b = _db(request, "b")
    target = load_copy(mongo_corpus, server, "support", b)
    ours, key, current = commit_answer(target, "support-1", answer_for("support"),
                                       studio_metadata={"kind": "reflection"})
    parsed = parse_answer(answer_for("support"))
    assert unrepaired(find_overtaking_writes(history_reader(target, key)())) == []
    line = "* 🔴 (10:00) A line the running turn observed after the studio's commit"
    client = pymongo.MongoClient(server.url, tz_aware=True)
    try:
        coll = client[b][OM]
        ours_doc = coll.find_one({"id": ours["id"]})
        late = ours_doc["createdAt"] + timedelta(seconds=5)   # after our commit, whatever the clock said
        old = coll.find_one({"id": current.id})
        coll.update_one({"id": current.id}, {"$set": {
            "activeObservations": f"{old['activeObservations']}\n\n--- message boundary ({late.isoformat()}) ---\n\n"
                                  f"{line}",
            "lastObservedAt": late, "pendingMessageTokens": 0, "observationTokenCount": 700,
            "observedMessageIds": old.get("observedMessageIds"), "updatedAt": late},
            "$inc": {"totalTokensObserved": 700}})
    finally:
        client.close()
    (finding,) = unrepaired(find_overtaking_writes(history_reader(target, key)()))
    assert (finding.kind, finding.record_id, finding.overtaken_record_id) == \
        ("superseded-row-written", current.id, ours["id"])
    before = dump(mongo_corpus, server, b, tmp_path / "before")
    repaired = repair_overtaken_writes(target, lookup_key=key, count_observations=count_observations)
    assert repaired["generationCount"] == ours["generationCount"] + 1
    assert line in repaired["activeObservations"] and parsed["observations"] in repaired["activeObservations"]
    after = dump(mongo_corpus, server, b, tmp_path / "after")
    added, changed, removed = changes(before, after)
    assert list(added) == [(OM, repaired["id"])] and changed == {} and removed == []
    doc = added[(OM, repaired["id"])]
    ours_dumped = by_id(before)[(OM, ours["id"])]
    # createReflectionGeneration's fields in its order, each with the BSON type a reflection stores
    assert [(k, type(v).__name__ if not isinstance(v, dict) else sorted(v)) for k, v in doc.items()
            if k != "metadata"] == [(k, type(v).__name__ if not isinstance(v, dict) else sorted(v))
                                    for k, v in ours_dumped.items() if k != "metadata"]
    assert doc["lastObservedAt"] == {"$date": {"$numberLong": str(int(late.timestamp() * 1000))}}
    # totalTokensObserved: the rows' maximum, the overtaken row's after the turn's $inc
    assert doc["totalTokensObserved"] == by_id(after)[(OM, current.id)]["totalTokensObserved"]
    assert unrepaired(find_overtaking_writes(history_reader(target, key)())) == []
    undo_write(target)
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone")) == exact(before)
    again = repair_overtaken_writes(target, lookup_key=key, count_observations=count_observations)
    report = node(mongo_corpus, server, "continue.mjs", b, "support-1", "1")
    assert report["ok"] is True and report["before"]["recordId"] == again["id"], report


def test_the_observe_dialog_opens_on_mongodb_with_the_stores_note(mongo_corpus, server, studio, qtbot, request):
    """Observe Now… on MongoDB opens its dialog (no refusal any more); the confirmation's backup note carries the
    store's sentence: the write is not atomic on the standalone server, and there is none on the replica set."""
    from studio.app.reflection import backup_note

    target = load_copy(mongo_corpus, server, "support", _db(request, "b"))
    standalone = server is not mongo_corpus.server
    window = studio(target)
    assert window.select_thread("support-1")
    dialogs = window.dialogs
    qtbot.waitUntil(lambda: dialogs.observe_action.isEnabled(), timeout=60_000)
    dialogs.observe_action.trigger()
    dialog = dialogs.observe_dialog
    assert dialog is not None
    note = backup_note(dialog._session, target, dialog._write_note)
    assert ("this write is not atomic there" in note) is standalone
    dialog.reject()


def _plant_chunks(server, db: str) -> list[str]:
    """Put two buffered observation chunks on `thread:long-run`'s record of database DB, in the shape
    MongoDBStore.updateBufferedObservations appends them (its pipeline update, which jongodb refuses, written here
    as a plain `$set` of the array): `ombuf-` ids, the thread's four newest messages two by two (the corpus leaves
    fewer unobserved), each
    chunk's lastObservedAt its newest message's createdAt (a Date), createdAt a Date, absent hints as null.
    Every value is fixed by the corpus (no clock, no random draw); return the chunks' cycle ids."""
    from datetime import timedelta

    import pymongo

    client = pymongo.MongoClient(server.url, tz_aware=True)
    try:
        record = client[db][OM].find_one({"lookupKey": "thread:long-run"}, sort=[("generationCount", -1)])
        newest = client[db][MESSAGES].find({"thread_id": "long-run"}).sort([("createdAt", -1), ("_id", -1)]).limit(4)
        messages = list(newest)[::-1]
        assert len(messages) == 4, "the buffered scenario needs four messages on long-run"
        chunks = []
        for n, pair in enumerate((messages[:2], messages[2:]), start=1):
            chunks.append({
                "id": f"ombuf-00000000-0000-4000-8000-00000000000{n}", "cycleId": f"planted-cycle-{n}",
                "observations": f"* 🟡 (10:0{n}) Planted buffered observation {n} \"quoted\" ünï",
                "tokenCount": 14 + n, "messageIds": [m["id"] for m in pair], "messageTokens": 1500,
                "lastObservedAt": pair[-1]["createdAt"], "createdAt": pair[-1]["createdAt"] + timedelta(seconds=1),
                "suggestedContinuation": f"Continue with step {n}.", "currentTask": f"- Primary: planted task {n}",
                "threadTitle": None, "extractedValues": None, "extractionFailures": None})
        client[db][OM].update_one({"id": record["id"]}, {"$set": {"bufferedObservationChunks": chunks}})
    finally:
        client.close()
    return [c["cycleId"] for c in chunks]


def test_activation_on_mongodb_equals_mastra_undo_restores_and_mastra_continues(mongo_corpus, server, tmp_path,
                                                                                request, monkeypatch, capsys):
    """Buffered chunks planted in Mastra's shape on two copies: Mastra activates on A (mastra-activate.mjs), the
    studio on B; the documents are equal (the record's fields, order and types; the thread; the marker's
    message), undo restores B's exact dump, and after activating again (`activate --yes`: the CLI's protocol)
    Mastra runs a real turn on B."""
    from studio.cli import main
    from studio.engine.tokens import stamp_estimates
    from studio.store.write.activation import activate_buffered

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = _db(request, "a"), _db(request, "b")
    load_copy(mongo_corpus, server, "buffered", a)
    target = load_copy(mongo_corpus, server, "buffered", b)
    assert _plant_chunks(server, a) == _plant_chunks(server, b)
    before = dump(mongo_corpus, server, b, tmp_path / "before")
    mastra = node(mongo_corpus, server, "mastra-activate.mjs", a, "long-run")
    assert mastra["activated"] is True
    ours = activate_buffered(target, thread_id="long-run", lookup_key="thread:long-run",
                             stamp_estimates=stamp_estimates)
    assert ours["activated_cycle_ids"] == mastra["chunks"]["activatedCycleIds"]
    changed = _same_observation(before, dump(mongo_corpus, server, a, tmp_path / "a"),
                                dump(mongo_corpus, server, b, tmp_path / "b"))
    assert {k[0] for k in changed} >= {OM, THREADS}
    undo_write(target)
    assert exact(dump(mongo_corpus, server, b, tmp_path / "undone")) == exact(before)
    code = main(["activate", target, "--thread", "long-run", "--yes", "--json"])   # again, through the protocol
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["activated_cycle_ids"] == ours["activated_cycle_ids"]
    assert doc["atomic"] is (server is mongo_corpus.server)
    report = node(mongo_corpus, server, "continue.mjs", b, "long-run", "1")
    assert report["ok"] is True, report

"""The write layer on copies of the real fixtures: refusals leave the file byte-identical; writes do what Mastra does.

(Parity with real Mastra, column by column, is in tests/interop; these tests need no node.)
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import libsql
import pytest

from studio.engine.status import STALE_FLAG_AFTER_MS
from studio.engine.tokens import count_observations
from studio.errors import SchemaError, StoreError, WriteRefused
from studio.store import open_store
from studio.store.records import iso_to_ms, ms_to_iso
from studio.store.write import threads as write_threads
from studio.store.write.transaction import write_transaction
from studio.store.writes import (
    clear_thread,
    clone_thread,
    commit_reflection,
    delete_messages,
    revert_to_generation,
)
from tests.conftest import load_oracle, make_plain_sqlite
from tests.observe_cases import current_generation, raw_thread_title

NOW = 1_900_000_000_000  # a fixed write time (ms), 2030-03-17
OBS = "* 🔴 (09:00) Condensed: the user's key fact.\n* 🟡 (09:05) A detail."
#: The generation of support-1's current record, as Mastra lists it (the oracle); a reflection writes GEN + 1.
GEN = current_generation("support", "thread:support-1")


def state(path: Path) -> tuple:
    """(main file digest, -wal digest or None): what a refused or failed write must leave as it was."""
    wal = Path(str(path) + "-wal")
    return (hashlib.sha256(path.read_bytes()).hexdigest(),
            hashlib.sha256(wal.read_bytes()).hexdigest() if wal.exists() else None)


def current(path, key):
    with open_store(path) as store:
        return store.om_current(key)


def history(path, key):
    with open_store(path) as store:
        return store.om_history(key)


def thread(path, thread_id):
    with open_store(path) as store:
        return store.get_thread(thread_id)


def set_columns(path, record_id, **values):
    """Change an OM row for a test's setup (through our own write path, so a live -wal stays a live -wal)."""
    with write_transaction(path) as tx:
        tx.update("mastra_observational_memory", values, "id = ?", (record_id,))


def reflect(path, key="thread:support-1", **kwargs):
    rec = current(path, key)
    args = {"lookup_key": key, "expected_record_id": rec.id, "observations": OBS, "now_ms": NOW}
    args.update(kwargs)
    args.setdefault("observation_tokens", count_observations(args["observations"]))
    return commit_reflection(path, **args)


# -- refusals: nothing written, file byte-identical ---------------------------------------------

@pytest.mark.parametrize("name", ["support", "live/support"])
def test_refused_when_the_generation_changed_since_the_read(fixture_db, name):
    path = fixture_db(name)
    older = history(path, "thread:support-1")[1]
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        reflect(path, expected_record_id=older.id)
    assert info.value.reason == "generation-changed"
    assert f"is now {GEN}" in str(info.value)
    assert state(path) == before


def test_refused_when_observations_were_appended_since_the_read(fixture_db):
    path = fixture_db("support")
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        reflect(path, expected_active_observations="what the preview saw")
    assert info.value.reason == "generation-changed" and "added" in str(info.value)
    assert state(path) == before


@pytest.mark.parametrize("name", ["support", "live/support"])
def test_refused_while_another_process_is_reflecting(fixture_db, name):
    path = fixture_db(name)
    rec = current(path, "thread:support-1")
    set_columns(path, rec.id, isReflecting=1, updatedAt=ms_to_iso(NOW - 5_000))
    before = state(path)
    for clear in (False, True):  # a live flag is never cleared
        with pytest.raises(WriteRefused) as info:
            reflect(path, clear_stale_reflecting=clear)
        assert info.value.reason == "reflecting" and "right now" in str(info.value)
        assert state(path) == before


def test_stale_reflecting_flag_is_refused_then_cleared_on_request(fixture_db):
    path = fixture_db("support")
    rec = current(path, "thread:support-1")
    set_columns(path, rec.id, isReflecting=1, updatedAt=ms_to_iso(NOW - STALE_FLAG_AFTER_MS - 1))
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        reflect(path)
    assert info.value.reason == "reflecting" and "stale" in str(info.value) and "clear" in str(info.value)
    assert state(path) == before
    row = reflect(path, clear_stale_reflecting=True)
    old = next(r for r in history(path, "thread:support-1") if r.id == rec.id)
    assert row["generationCount"] == GEN + 1 and row["isReflecting"] == 0
    assert old.flag("isReflecting") is False and old.updated_at == ms_to_iso(NOW)


@pytest.mark.parametrize("flag", ["isObserving", "isBufferingObservation", "isBufferingReflection"])
def test_refused_while_another_process_observes_or_buffers(fixture_db, flag):
    path = fixture_db("support")
    rec = current(path, "thread:support-1")
    set_columns(path, rec.id,
                **{flag: 1, "updatedAt": ms_to_iso(NOW - 1000), "lastBufferedAtTime": ms_to_iso(NOW - 1000)})
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        reflect(path)
    assert info.value.reason == "busy" and flag in str(info.value)
    assert state(path) == before
    set_columns(path, rec.id, updatedAt=ms_to_iso(NOW - STALE_FLAG_AFTER_MS - 1),
                lastBufferedAtTime=ms_to_iso(NOW - STALE_FLAG_AFTER_MS - 1))
    assert reflect(path)["generationCount"] == GEN + 1  # a stale one does not block


def test_refused_when_the_conversation_was_written_moments_ago(fixture_db):
    path = fixture_db("support")
    updated = iso_to_ms(thread(path, "support-1").updated_at)
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        reflect(path, now_ms=updated + 500, idle_ms=2000)
    assert info.value.reason == "busy" and "0.5 s ago" in str(info.value)
    assert state(path) == before
    assert reflect(path, now_ms=updated + 2500, idle_ms=2000)["generationCount"] == GEN + 1


def test_a_reflection_identical_to_the_current_generation_is_not_written(fixture_db, tmp_path):
    """Mastra's createReflectionGeneration would write the copy; the studio refuses it ("unchanged"), before the
    write session's backup too. A copy that moves the current task is a change and is written."""
    from studio.store.writes import WriteSession

    path = fixture_db("support")
    rec = current(path, "thread:support-1")
    task = thread(path, "support-1").om_metadata["currentTask"]
    before = state(path)
    for kwargs in ({}, {"current_task": task}, {"suggested_response": None, "current_task": "  "}):
        with pytest.raises(WriteRefused) as info:
            reflect(path, observations=rec.active_observations, **kwargs)
        assert info.value.reason == "unchanged" and "nothing was written" in str(info.value)
    session = WriteSession(backup_dir=tmp_path / "backups")
    with pytest.raises(WriteRefused) as info:
        session.commit_reflection(path, lookup_key="thread:support-1", expected_record_id=rec.id,
                                  observations=rec.active_observations, now_ms=NOW,
                                  observation_tokens=count_observations(rec.active_observations))
    assert info.value.reason == "unchanged"
    assert session.backup_for(path) is None and not (tmp_path / "backups").exists()
    assert state(path) == before
    row = reflect(path, observations=rec.active_observations, current_task="- Primary: a new task")
    assert row["generationCount"] == GEN + 1 and row["activeObservations"] == rec.active_observations


def test_refused_when_another_connection_holds_the_write_lock(fixture_db):
    path = fixture_db("live/support")
    before = state(path)
    holder = libsql.connect(f"file:{path}", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(WriteRefused) as info:  # how soon: benchmarks/latency_benchmark.py (write_refusal_ms)
            reflect(path, busy_timeout_ms=50)
        assert info.value.reason == "busy"
    finally:
        holder.execute("ROLLBACK")
        # keep a reader open while the holder closes, so the -wal is not checkpointed by the test itself
        reader = libsql.connect(f"file:{path}?mode=ro")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchall()
        holder.close()
        reader.close()
    assert state(path) == before


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"lookup_key": "thread:no-such-thread"}, "not-found"),
    ({"lookup_key": "thread:"}, "invalid"),
    ({"lookup_key": "support-1"}, "invalid"),
    ({"observations": "  \n "}, "invalid"),
    ({"observations": None}, "invalid"),
    ({"current_task": 42}, "invalid"),
    ({"studio_metadata": {"x": object()}}, "invalid"),
    ({"studio_metadata": ["not", "a", "dict"]}, "invalid"),
    ({"thread_id": "support-2"}, "invalid"),        # does not match the thread lookup key
    ({"now_ms": -1}, "invalid"),
    ({"idle_ms": -5}, "invalid"),
    ({"observation_tokens": -1}, "invalid"),
    ({"observation_tokens": "12"}, "invalid"),
    ({"observation_tokens": True}, "invalid"),
])
def test_bad_arguments_are_refused_without_writing(fixture_db, kwargs, reason):
    path = fixture_db("support")
    rec = current(path, "thread:support-1")
    before = state(path)
    args = {"lookup_key": "thread:support-1", "expected_record_id": rec.id, "observations": OBS, "now_ms": NOW,
            "observation_tokens": count_observations(OBS)}
    args.update(kwargs)
    with pytest.raises(WriteRefused) as info:
        commit_reflection(path, **args)
    assert info.value.reason == reason
    assert state(path) == before


def test_resource_scope_needs_the_thread_for_its_current_task(fixture_db):
    path = fixture_db("resource")
    rec = current(path, "resource:user-erin")
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        commit_reflection(path, lookup_key="resource:user-erin", expected_record_id=rec.id, observations=OBS,
                          current_task="Summarise", observation_tokens=count_observations(OBS))
    assert info.value.reason == "invalid" and "thread_id" in str(info.value)
    assert state(path) == before


def test_resource_scope_refuses_a_thread_of_another_resource(fixture_db):
    path = fixture_db("resource")
    rec = current(path, "resource:user-erin")
    with write_transaction(path) as tx:  # a thread of another resource, for the test
        tx.insert("mastra_threads", {"id": "stranger", "resourceId": "user-zed", "title": "", "createdAt": "x",
                                     "updatedAt": "x"})
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        commit_reflection(path, lookup_key="resource:user-erin", expected_record_id=rec.id, observations=OBS,
                          current_task="Summarise", thread_id="stranger", observation_tokens=count_observations(OBS))
    assert info.value.reason == "invalid" and "belongs to resource" in str(info.value)
    assert state(path) == before
    row = commit_reflection(path, lookup_key="resource:user-erin", expected_record_id=rec.id, observations=OBS,
                            current_task="Summarise", thread_id="res-b", now_ms=NOW,
                            observation_tokens=count_observations(OBS))
    assert row["threadId"] is None and row["lookupKey"] == "resource:user-erin"
    assert thread(path, "res-b").metadata["mastra"]["om"]["currentTask"] == "Summarise"


def test_a_file_url_is_accepted(fixture_db):
    path = fixture_db("support")
    ids = [m.id for m in open_store(path).list_messages("support-4")]
    assert delete_messages(f"file://{path}", ids) == len(ids) > 0


def test_missing_file_and_non_mastra_file_write_nothing(tmp_path):
    with pytest.raises(StoreError):
        commit_reflection(tmp_path / "missing.db", lookup_key="thread:t", expected_record_id="x", observations=OBS,
                          observation_tokens=count_observations(OBS))
    assert not (tmp_path / "missing.db").exists()
    plain = make_plain_sqlite(tmp_path / "plain.db")
    digest = hashlib.sha256(plain.read_bytes()).hexdigest()
    with pytest.raises(SchemaError):
        clone_thread(plain, "t")
    assert hashlib.sha256(plain.read_bytes()).hexdigest() == digest


# -- what a reflection writes -------------------------------------------------------------------

def test_commit_writes_the_next_generation_like_mastra(fixture_db):
    path = fixture_db("support")
    old = current(path, "thread:support-1")
    meta_before = thread(path, "support-1").metadata
    title_before = raw_thread_title(path, "support-1")
    row = reflect(path, current_task="  - Primary: plan the trip  ", suggested_response=None,
                  thread_title="Not written", studio_metadata={"strategy": "rule-based", "model": None})
    assert row["generationCount"] == old.generation_count + 1
    assert row["originType"] == "reflection" and row["lookupKey"] == "thread:support-1"
    assert row["activeObservations"] == OBS
    assert row["observationTokenCount"] == count_observations(OBS)
    assert row["totalTokensObserved"] == old.get_int("totalTokensObserved")
    assert row["lastObservedAt"] == old.last_observed_at
    assert row["pendingMessageTokens"] == 0 and row["lastBufferedAtTokens"] == 0
    assert row["createdAt"] == row["updatedAt"] == row["lastReflectionAt"] == ms_to_iso(NOW)
    assert json.loads(row["config"]) == old.config
    studio = json.loads(row["metadata"])["studio"]
    assert {k: studio[k] for k in ("strategy", "model", "kind")} == {"strategy": "rule-based", "model": None,
                                                                     "kind": "reflection"}
    assert studio["recordId"] == row["id"] and studio["basedOn"]["recordId"] == old.id  # the protocol's mark
    meta = thread(path, "support-1").metadata
    om = meta["mastra"]["om"]
    assert om["currentTask"] == "- Primary: plan the trip"  # trimmed, as Mastra's parser leaves it
    assert om["suggestedResponse"] == meta_before["mastra"]["om"]["suggestedResponse"]  # kept
    assert om["threadTitle"] == meta_before["mastra"]["om"]["threadTitle"]  # reflection has no title extractor
    assert {k: v for k, v in meta.items() if k != "mastra"} == {k: v for k, v in meta_before.items() if k != "mastra"}
    assert thread(path, "support-1").title == title_before  # a reflection does not rename the thread


def test_a_thread_without_metadata_gets_mastras_om_object(fixture_db):
    path = fixture_db("collab")
    rec = current(path, "thread:room_7")
    assert thread(path, "room_7").metadata is None
    commit_reflection(path, lookup_key="thread:room_7", expected_record_id=rec.id, observations=OBS,
                      current_task="Gather the notes", now_ms=NOW, observation_tokens=count_observations(OBS))
    assert thread(path, "room_7").metadata == {"mastra": {"om": {"currentTask": "Gather the notes", "extracted": {}}}}
    conn = libsql.connect(f"file:{path}?mode=ro")
    assert conn.execute("SELECT typeof(metadata) FROM mastra_threads WHERE id = 'room_7'").fetchall() == [("blob",)]
    conn.close()


def test_no_current_task_or_response_leaves_the_thread_alone(fixture_db):
    path = fixture_db("support")
    before = thread(path, "support-1")
    reflect(path)
    after = thread(path, "support-1")
    assert (after.metadata, after.updated_at) == (before.metadata, before.updated_at)


def test_a_second_reflection_does_not_carry_the_studio_mark_forward(fixture_db):
    path = fixture_db("support")
    reflect(path, studio_metadata={"strategy": "llm"})
    row = reflect(path, observations=OBS + "\n* 🟢 (09:10) A second reflection's line.")
    assert row["metadata"] is None and row["generationCount"] == GEN + 2


# -- revert -----------------------------------------------------------------------------------

def test_revert_appends_a_generation_with_the_old_observations(fixture_db):
    path = fixture_db("support")
    rows = history(path, "thread:support-1")
    meta_before = thread(path, "support-1")
    row = revert_to_generation(path, lookup_key="thread:support-1", generation_count=0,
                               expected_record_id=rows[0].id, now_ms=NOW, count_observations=count_observations)
    gen0 = rows[-1]
    assert row["generationCount"] == GEN + 1 and row["originType"] == "reflection"
    assert row["activeObservations"] == gen0.active_observations
    assert row["observationTokenCount"] == count_observations(gen0.active_observations)
    studio = json.loads(row["metadata"])["studio"]
    assert {k: studio[k] for k in ("kind", "revertedFrom", "revertedFromRecordId")} == {
        "kind": "revert", "revertedFrom": 0, "revertedFromRecordId": gen0.id}
    assert studio["recordId"] == row["id"] and studio["basedOn"]["recordId"] == rows[0].id
    after = history(path, "thread:support-1")
    assert [r.id for r in after[1:]] == [r.id for r in rows]  # append-only
    for old, new in zip(rows[1:], after[2:], strict=True):
        assert old.columns == new.columns
    t = thread(path, "support-1")
    assert (t.metadata, t.updated_at) == (meta_before.metadata, meta_before.updated_at)


LIVE_GEN = current_generation("live/support", "thread:support-1")


@pytest.mark.parametrize(("generation", "expected", "reason"), [
    (LIVE_GEN, "current", "invalid"),          # the current generation itself
    (LIVE_GEN + 5, "current", "not-found"),    # a generation that does not exist
    (-1, "current", "invalid"), (0, "older", "generation-changed"),
], ids=["current", "missing", "negative", "older-read"])
def test_revert_refusals_write_nothing(fixture_db, generation, expected, reason):
    path = fixture_db("live/support")
    rows = history(path, "thread:support-1")
    before = state(path)
    with pytest.raises(WriteRefused) as info:
        revert_to_generation(path, lookup_key="thread:support-1", generation_count=generation,
                             expected_record_id=rows[0].id if expected == "current" else rows[1].id, now_ms=NOW,
                             count_observations=count_observations)
    assert info.value.reason == reason
    assert state(path) == before


# -- clone / delete / clear -------------------------------------------------------------------

def test_clone_defaults(fixture_db):
    path = fixture_db("support")
    title, resource = raw_thread_title(path, "support-2"), load_oracle("support")["threads"]["support-2"]["resourceId"]
    out = clone_thread(path, "support-2", now_ms=NOW)
    t = out["thread"]
    # Mastra's cloneThread default title: "Clone of " + the source's title
    assert len(t["id"]) == 36 and t["title"] == f"Clone of {title}" and t["resourceId"] == resource
    source_ids = [m.id for m in open_store(path).list_messages("support-2")]
    assert t["metadata"] == {"clone": {"sourceThreadId": "support-2", "clonedAt": ms_to_iso(NOW),
                                       "lastMessageId": source_ids[-1]}}
    assert [out["messageIdMap"][i] for i in source_ids] == [m["id"] for m in out["messages"]]
    assert thread(path, t["id"]).metadata == t["metadata"]


@pytest.mark.parametrize("name", ["history", "live/support"])
def test_clone_refusals_and_failures_leave_the_file_unchanged(fixture_db, monkeypatch, name):
    path = fixture_db(name)
    source, existing = ("hist-1", "hist-2") if name == "history" else ("support-1", "support-2")
    before = state(path)
    for kwargs, reason in (({"new_thread_id": existing}, "conflict"), ({"message_limit": -1}, "invalid"),
                           ({"metadata": "x"}, "invalid"), ({"start_date": object()}, "invalid")):
        with pytest.raises(WriteRefused) as info:
            clone_thread(path, source, **kwargs)
        assert info.value.reason == reason
        assert state(path) == before
    with pytest.raises(WriteRefused) as info:
        clone_thread(path, "no-such-thread")
    assert info.value.reason == "not-found"
    # a failure after the thread and its messages were inserted rolls everything back
    monkeypatch.setattr(write_threads, "_clone_om", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("disk full")))
    with pytest.raises(RuntimeError):
        clone_thread(path, source, new_thread_id="half-made")
    assert state(path) == before
    assert thread(path, "half-made") is None


def test_delete_messages_deletes_and_touches_their_threads(fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        ids = [m.id for m in store.list_messages("support-1")[:2]] + [store.list_messages("support-3")[0].id]
        untouched = store.get_thread("support-2").updated_at
    assert delete_messages(path, [*ids, "unknown"], now_ms=NOW) == 3
    with open_store(path) as store:
        assert store.message_count("support-1") == 55 and store.message_count("support-3") == 17
        assert store.get_thread("support-1").updated_at == store.get_thread("support-3").updated_at == ms_to_iso(NOW)
        assert store.get_thread("support-2").updated_at == untouched


@pytest.mark.parametrize("name", ["support", "live/support", "history"])
def test_delete_and_clear_refusals_leave_the_file_unchanged(fixture_db, name):
    path = fixture_db(name)
    before = state(path)
    assert delete_messages(path, []) == 0
    assert delete_messages(path, ["no-such-message"]) == 0
    for bad in ("a-single-string", [""], [None], [3]):
        with pytest.raises(WriteRefused) as info:
            delete_messages(path, bad)
        assert info.value.reason == "invalid"
    with pytest.raises(WriteRefused) as info:
        clear_thread(path, "no-such-thread")
    assert info.value.reason == "not-found"
    assert state(path) == before


def test_clear_thread_keeps_the_thread(fixture_db):
    path = fixture_db("history")
    listed = len(load_oracle("history")["threads"]["hist-2"]["messages"])   # what Mastra's recall lists
    assert clear_thread(path, "hist-2", now_ms=NOW) == listed > 0
    t = thread(path, "hist-2")
    assert t is not None and t.updated_at == ms_to_iso(NOW)
    with open_store(path) as store:
        assert store.message_count("hist-2") == 0
    assert clear_thread(path, "hist-2", now_ms=NOW + 1) == 0
    assert thread(path, "hist-2").updated_at == ms_to_iso(NOW)  # nothing deleted, nothing touched


def test_writes_never_change_the_journal_mode(fixture_db):
    path = fixture_db("support")
    header = path.read_bytes()[18:20]
    reflect(path)
    clone_thread(path, "support-2")
    delete_messages(path, [m.id for m in open_store(path).list_messages("support-4")])
    assert path.read_bytes()[18:20] == header == b"\x02\x02"  # WAL


def test_concurrent_commits_from_two_threads_one_wins(fixture_db):
    """Two studio windows committing on the same generation: exactly one commits, the other is refused."""
    path = fixture_db("support")
    rec = current(path, "thread:support-1")
    results = []

    def run():
        try:
            results.append(commit_reflection(path, lookup_key="thread:support-1", expected_record_id=rec.id,
                                             observations=OBS,
                                             observation_tokens=count_observations(OBS))["generationCount"])
        except WriteRefused as exc:
            results.append(exc.reason)

    workers = [threading.Thread(target=run) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(results, key=str) == [GEN + 1, "generation-changed"]
    assert [r.generation_count for r in history(path, "thread:support-1")] == list(range(GEN + 1, -1, -1))

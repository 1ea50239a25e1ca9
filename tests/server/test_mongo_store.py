"""A MongoDB store written by real Mastra (`@mastra/mongodb` 1.19.0) reads exactly as Mastra reports it, and
reading it writes nothing.

Expected values: the oracle `oracle.mjs --store mongodb` recorded for each scenario that `gen.mjs --store
mongodb` wrote on the corpus's jongodb, started by the tests as a single-node replica set
(tests/server/conftest.py `mongo_corpus`): every thread (order, title, metadata, times), message count, OM
status of every thread (both bars), generation history, Mastra's token estimate of every message, and
every listThreads / recall call of the oracle. "Nothing written" is checked two ways: the corpus's
`mongo-dump.mjs` (canonical Extended JSON of every document) before and after the studio's reads, and
pymongo's command monitoring (only read commands are sent; inside a load, every read carries
`readConcern: snapshot`).
"""

from __future__ import annotations

import contextlib
import io

import pytest

from studio.cli import main
from studio.errors import SchemaError, StoreError
from studio.store import open_store
from studio.store.history import list_threads, recall
from tests.server.checks import cli_json, history_differences, inspect_differences, tab_failures, tokens_differences
from tests.server.conftest import MONGO_SCENARIOS

#: The commands a read may send (server selection and session bookkeeping included): nothing that writes.
READ_COMMANDS = {"hello", "ismaster", "isMaster", "ping", "find", "getMore", "aggregate", "count", "distinct",
                 "listCollections", "killCursors", "endSessions", "buildInfo", "saslStart", "saslContinue"}


@pytest.mark.parametrize("scenario", MONGO_SCENARIOS)
def test_inspect_equals_mastra_on_mongodb(mongo_corpus, scenario):
    oracle = mongo_corpus.oracles[scenario]
    assert oracle["store"] == "mongodb" and oracle["threads"]
    assert inspect_differences(mongo_corpus.target(scenario), oracle) == []


@pytest.mark.parametrize("scenario", MONGO_SCENARIOS)
def test_tokens_equal_mastra_on_mongodb(mongo_corpus, scenario):
    oracle = mongo_corpus.oracles[scenario]
    assert tokens_differences(mongo_corpus.target(scenario), oracle) == []


@pytest.mark.parametrize("scenario", MONGO_SCENARIOS)
def test_list_threads_and_recall_equal_mastra_on_mongodb(mongo_corpus, scenario):
    oracle = mongo_corpus.oracles[scenario]
    cases = sum(len(r["listThreads"]) for r in oracle["resources"].values()) + sum(
        len(t["recall"]) for t in oracle["threads"].values())
    assert cases > 0
    assert history_differences(mongo_corpus.target(scenario), oracle) == []


def test_every_scenario_with_om_has_statuses(mongo_corpus):
    """The comparison covers both bars of every OM thread the corpus writes (not an empty oracle):
    support 5 thread-scope threads, buffered 1, resource 3 threads under one resource record, collab 2,
    tools 1; history has no OM (as on the other stores)."""
    statuses = {s: sum(len(om["status"]) for om in o["om"].values()) for s, o in mongo_corpus.oracles.items()}
    assert statuses == {"support": 5, "buffered": 1, "resource": 3, "collab": 2, "tools": 1, "history": 0}


def _read_everything(target: str, oracle: dict) -> None:
    """Every read document of the CLI and the Python API on TARGET (what the dump comparison covers)."""
    cli_json(["inspect", target, "--json"])
    cli_json(["threads", target, "--all", "--json"])
    cli_json(["doctor", target, "--json"])
    with_om = {t for om in oracle["om"].values() for t in om["status"]}
    for thread_id in oracle["threads"]:
        cli_json(["tokens", target, thread_id, "--json"])
        cli_json(["recall", target, "--thread", thread_id, "--json"])
        if thread_id in with_om:
            cli_json(["timeline", target, "--thread", thread_id, "--json"])
    with open_store(target) as store, store.snapshot():
        store.om_current_all()
        store.message_stats()
        store.resource_ids()
        for thread_id in oracle["threads"]:
            recall(store, thread_id, per_page=False)


def test_reads_leave_every_document_identical(mongo_corpus, tmp_path):
    """mongo-dump before (right after Mastra wrote and the oracles ran) and after the studio's reads and a
    refused write: every collection file byte-identical (same `_id`s, field order and BSON types)."""
    for scenario in MONGO_SCENARIOS:
        _read_everything(mongo_corpus.target(scenario), mongo_corpus.oracles[scenario])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["activate", mongo_corpus.target("support"), "--thread", "support-1", "--yes"])
    assert code == 2 and "has no buffered observation chunks" in err.getvalue()
    after = mongo_corpus.dump_now(tmp_path / "dump-after")
    before_files = sorted(p.relative_to(mongo_corpus.dump) for p in mongo_corpus.dump.rglob("*.json"))
    after_files = sorted(p.relative_to(after) for p in after.rglob("*.json"))
    assert before_files == after_files and len(before_files) > len(MONGO_SCENARIOS)
    changed = [str(p) for p in before_files if (mongo_corpus.dump / p).read_bytes() != (after / p).read_bytes()]
    assert changed == []


def _command_listener():
    """A pymongo CommandListener keeping (command name, readConcern) of every command sent, in `sent`."""
    from pymongo import monitoring

    class Commands(monitoring.CommandListener):
        def __init__(self):
            self.sent: list[tuple[str, dict | None]] = []

        def started(self, event):
            self.sent.append((event.command_name, event.command.get("readConcern")))

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    return Commands()


def test_a_load_is_one_snapshot_session_of_reads_only(mongo_corpus):
    """On a replica set every read of a load carries `readConcern: {level: snapshot}` (one snapshot session,
    MongoBackend.begin_read), and nothing but read commands reaches the server (no insert/update/delete,
    no createIndexes, no transaction). jongodb accepts snapshot reads without isolating them (a write by
    another client shows inside the session), so this checks what is sent, not the server's isolation."""
    from pymongo import monitoring

    listener = _command_listener()
    monitoring.register(listener)
    try:
        with open_store(mongo_corpus.target("resource")) as store:
            assert store.notices == ()
            listener.sent.clear()
            with store.snapshot():
                page = list_threads(store, filter={"resource_id": "user-res"})
                store.om_current_all()
                store.message_stats()
                list(store.iter_messages_since_many([(t, None) for t in page.thread_ids]))
                for thread_id in page.thread_ids:
                    recall(store, thread_id)
                store.fingerprint()
            in_load = list(listener.sent)
            cli_json(["inspect", mongo_corpus.target("resource"), "--json"])
    finally:
        with contextlib.suppress(AttributeError, ValueError):  # pymongo has no unregister: drop ours by hand
            monitoring._LISTENERS.command_listeners.remove(listener)
    reads = [(name, rc) for name, rc in in_load if name in ("find", "aggregate", "distinct")]
    assert len(reads) >= 6 and all(rc and rc.get("level") == "snapshot" for _name, rc in reads), in_load
    sent = {name for name, _rc in listener.sent}
    assert sent <= READ_COMMANDS, sent - READ_COMMANDS


def test_a_standalone_server_reads_the_same_and_says_it_has_no_snapshot(mongo_corpus, mongo_standalone):
    """The `support` database reloaded (mongo-load.mjs) on a standalone jongodb: the same figures as Mastra's
    oracle of the original, a notice that loads are not snapshots, and no snapshot read concern sent."""
    target = mongo_standalone.target("support")
    with open_store(target) as store:
        assert len(store.notices) == 1 and "standalone MongoDB server" in store.notices[0]
        with store.snapshot():
            assert store.backend._session is None
    oracle = mongo_corpus.oracles["support"]
    assert inspect_differences(target, oracle) == []
    assert history_differences(target, oracle) == []


def test_fingerprint_changes_when_another_process_writes(mongo_corpus, mongo_standalone):
    """Live refresh: the fingerprint stays put between reads and changes when a thread's `updatedAt` moves
    or a message is added (what @mastra/mongodb's saveMessages does), on a scratch copy of `support`."""
    import pymongo

    from tests.server.conftest import _run

    _run(["node", "mongo-load.mjs", str(mongo_corpus.dump / "support"), mongo_standalone.node_url, "fpcheck"],
         mongo_corpus.corpus, 120)
    target = mongo_standalone.target("fpcheck")
    client = pymongo.MongoClient(mongo_standalone.url, tz_aware=True)
    try:
        with open_store(target) as store:
            first = store.fingerprint()
            assert store.fingerprint() == first
            doc = client["fpcheck"]["mastra_messages"].find_one({"thread_id": "support-2"})
            doc.pop("_id")
            doc["id"] = "fingerprint-probe"
            client["fpcheck"]["mastra_messages"].insert_one(doc)
            second = store.fingerprint()
            assert second != first
            client["fpcheck"]["mastra_threads"].update_one({"id": "support-2"},
                                                           {"$set": {"updatedAt": doc["createdAt"].replace(year=2099)}})
            assert store.fingerprint() != second
            assert store.message_count("support-2") == len(mongo_corpus.oracles["support"]["threads"]["support-2"]
                                                           ["messages"]) + 1
    finally:
        client.close()


def test_bad_targets_get_one_sentence(mongo_corpus, monkeypatch):
    """A database without Mastra's collections, a server that does not answer, a URL without a database:
    one sentence each (StoreError / SchemaError), the password never in it."""
    import studio.store.backends.mongodb as mongo

    with pytest.raises(SchemaError, match="no Mastra collections"):
        open_store(mongo_corpus.target("no_such_db"))
    monkeypatch.setattr(mongo, "SERVER_SELECTION_TIMEOUT_MS", 300)
    with pytest.raises(StoreError) as caught:
        open_store("mongodb://someone:s3cret-pw@127.0.0.1:9/support?serverSelectionTimeoutMS=300")
    assert "down or unreachable" in str(caught.value) and "s3cret-pw" not in str(caught.value)
    assert caught.value.kind == "unreachable"   # pymongo's ServerSelectionTimeoutError (a ConnectionFailure)
    assert "mongodb://someone:***@127.0.0.1:9/support" in str(caught.value)
    with pytest.raises(StoreError, match="names no database"):
        open_store("mongodb://127.0.0.1:9")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["inspect", "mongodb://someone:s3cret-pw@127.0.0.1:9/x?serverSelectionTimeoutMS=300", "--json"])
    # a server that does not answer is a dead server: exit 6 (issue 22's exit contract)
    assert code == 6 and "Traceback" not in err.getvalue() and "s3cret-pw" not in err.getvalue() + out.getvalue()


def test_thread_metadata_filters_match_as_mongodb_does(mongo_corpus):
    """listThreads' metadata filter is MongoDB's own match on `metadata.<key>` (the oracle's cases pass,
    above); beyond them, from MongoDB's query semantics: `{key: null}` also matches threads without the key,
    and a number matches an int32 or a double of equal value."""
    with open_store(mongo_corpus.target("history")) as store:
        every = list_threads(store, per_page=False)
        missing = [t.id for t in every.threads if "no_such_key" not in (t.metadata or {})]
        got = list_threads(store, filter={"metadata": {"no_such_key": None}}, per_page=False)
        assert sorted(got.thread_ids) == sorted(missing) and missing


def test_the_studio_opens_a_mongodb_store_with_every_tab_working(mongo_corpus, tmp_path):
    """Every tab of the support-1 thread loads from the replica set (`--screenshot` exits non-zero otherwise)."""
    assert tab_failures(mongo_corpus.target("support"), "support-1", tmp_path) == []


def test_the_studios_results_round_reads_a_mongodb_store(mongo_corpus, tmp_path, monkeypatch):
    """An open's round (every thread listed once) and a live refresh's (its threads read by id, without SQL)
    give every thread the results computed afresh (issue 21's results round)."""
    from studio.app import open_results
    from studio.app.thread_results import compute_thread_results

    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(tmp_path / "cache"))
    with open_store(mongo_corpus.target("support")) as store, store.snapshot():
        ids = [t.id for t in store.list_threads()]
        fresh = compute_thread_results(store, ids)
        every = open_results.load_results_batch(store, 1, ids, True)
        live = open_results.load_results_batch(store, 2, ids[:2], False)

    def shown(batch, wanted):
        return (sorted(repr(s) for s in batch.statuses),
                sorted(repr(f) for f in batch.findings if f["check"] != "stale-flag"), batch.messages)

    want = (sorted(repr(r.status) for r in fresh.values() if r.status is not None),
            sorted(repr(f) for r in fresh.values() for f in r.findings if f["check"] != "stale-flag"),
            {t: r.messages for t, r in fresh.items()})
    assert len(ids) > 2 and shown(every, ids) == want
    assert shown(live, ids[:2])[2] == {t: fresh[t].messages for t in ids[:2]}
    assert sorted(repr(s) for s in live.statuses) == sorted(repr(fresh[t].status) for t in ids[:2]
                                                            if fresh[t].status is not None)

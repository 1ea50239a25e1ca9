"""The studio's results round (studio.app.open_results): batches through the result cache, growing while reused."""

from __future__ import annotations

from studio.app import open_results as opr
from studio.store import open_store
from tests.conftest import copy_fixture


def test_a_round_grows_while_every_result_is_reused_and_shrinks_when_one_is_computed():
    ids = [f"t{i}" for i in range(opr.RESULTS_CHUNK * (1 + opr.REUSED_GROWTH) + 5)]
    rnd = opr.ResultsRound(ids)
    first = rnd.next_ids()
    assert len(first) == opr.RESULTS_CHUNK
    assert not rnd.take(opr.ResultsBatch(handled=first, reused=len(first)))
    second = rnd.next_ids()
    assert len(second) == opr.RESULTS_CHUNK * opr.REUSED_GROWTH
    assert not rnd.take(opr.ResultsBatch(handled=second, reused=len(second) - 1))   # one computed
    assert rnd.next_ids() == ids[-5:]
    rnd.add(["t0", "new"])        # a live refresh during the round: computed again, their rows re-read
    rnd.discard([ids[-1]])        # deleted by a live refresh before its batch
    assert rnd.left == [*ids[-5:-1], "t0", "new"] and rnd.total == len(ids) + 2
    assert rnd.reread(rnd.next_ids()) == ["t0", "new"]
    assert rnd.take(opr.ResultsBatch(handled=rnd.next_ids()))
    assert rnd.done == rnd.total and not rnd.left


def test_batches_reuse_the_cache_of_a_previous_session(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(tmp_path / "cache"))
    path = copy_fixture("support", tmp_path / "db")
    shown = []
    for _session in range(2):
        with open_store(path) as store:
            ids = [t.id for t in store.list_threads()]
            batch = opr.load_results_batch(store, 1, ids)
            opr.save_results(store)
            shown.append((sorted(map(repr, batch.statuses)), sorted(map(repr, batch.findings)), batch.messages,
                          batch.uncountable, batch.handled))
            reused = batch.reused
    assert reused == len(ids) and shown[0] == shown[1]
    with open_store(path) as store:   # a live refresh's threads: computed, never taken from the cache
        again = opr.load_results_batch(store, 7, ids[:2], False)
    assert again.reused == 0 and again.handled == ids[:2]


def _per_thread(batch) -> dict:
    """{thread id: (status, findings, messages, uncountable)} of BATCH, canonical."""
    statuses = {s.thread_id: repr(s) for s in batch.statuses}
    findings: dict = {}
    for f in batch.every_finding():
        findings.setdefault(f.get("thread_id"), []).append(repr(sorted(f.items())))
    return {t: (statuses.get(t), sorted(findings.get(t, [])), batch.messages.get(t), batch.uncountable.get(t))
            for t in batch.handled}


def _two_resources(dest) -> tuple:
    """A copy of the resource fixture with a second resource: res-c cloned into resource user-finn (cloneThread
    with a resourceId: the thread row and its messages copied, as Mastra's clone writes them), and user-finn's
    own resource-scope record (user-erin's current generation copied under `resource:user-finn`) whose message
    threshold (`observation.messageTokens`) is 1 token, so every unobserved message of the clone is over it (a
    message-over-threshold finding per message, of the clone only: user-erin's threads stay below theirs).
    Return (path, {thread id: resource id})."""
    import random

    from tests.live_writes import MESSAGES, OM, THREADS, FileSql, MastraWrites

    path = copy_fixture("resource", dest)
    sql = FileSql(str(path))
    try:
        writes = MastraWrites(sql, random.Random(3))
        now = "2027-01-01T00:00:00.000Z"
        statements = [writes.copy_row(THREADS, "res-c", {"id": "res-c-finn", "resourceId": "user-finn",
                                                          "createdAt": now, "updatedAt": now})]
        for n, (mid,) in enumerate(sql.query(f"SELECT id FROM {MESSAGES} WHERE thread_id = 'res-c' "
                                             'ORDER BY "createdAt", id')):
            statements.append(writes.copy_row(MESSAGES, mid, {"id": f"finn-{n}", "thread_id": "res-c-finn",
                                                              "resourceId": "user-finn"}))
        (record,) = sql.query(f'SELECT id FROM {OM} WHERE "lookupKey" = ? ORDER BY "generationCount" DESC LIMIT 1',
                              ("resource:user-erin",))[0]
        statements.append(writes.copy_row(OM, record, {"id": "om-finn", "lookupKey": "resource:user-finn",
                                                       "resourceId": "user-finn"}))
        statements.append((f"UPDATE {OM} SET config = json_set(config, '$.observation.messageTokens', 1) "
                           'WHERE "lookupKey" = ?', ("resource:user-finn",)))
        sql.run(statements)
        resources = dict(sql.query(f'SELECT id, "resourceId" FROM {THREADS}'))
    finally:
        sql.close()
    return path, resources


def test_a_live_refresh_round_reads_its_threads_keys_only_and_equals_an_open(tmp_path, monkeypatch):
    """A live refresh's round (every_thread False) reads the lookup keys of its threads and their resources only,
    not the store's; each thread's status, findings, count and ⚠ equal what an open's round computes, on a store
    with thread-scope records (support) and one with resource-scope records of two resources whose findings
    differ (a thread checked against another resource's record, or none, gets other findings)."""
    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(tmp_path / "cache"))
    support = copy_fixture("support", tmp_path / "support")
    with open_store(support) as store:
        support_resources = {t.id: t.resource_id for t in store.list_threads()}
    stores = [(support, support_resources), _two_resources(tmp_path / "resource")]
    for path, resources in stores:
        with open_store(path) as store:
            ids = [t.id for t in store.list_threads()]
            every = _per_thread(opr.load_results_batch(store, 1, ids))
            asked: list = []
            real = store.om_lookup_keys
            def spy(only=None, asked=asked, real=real):
                asked.append(only)
                return real(only)
            monkeypatch.setattr(store, "om_lookup_keys", spy)
            for n, tid in enumerate(ids):
                del asked[:]
                live = _per_thread(opr.load_results_batch(store, 2 + n, [tid], False))
                assert live == {tid: every[tid]}, (path.name, tid)
                # never the whole store's keys: the thread's own and its resource's
                assert [set(only) for only in asked] == [{f"thread:{tid}", f"resource:{resources[tid]}"}], tid
    # the second resource's record is what the clone is checked against: its threshold finds every message over it
    over = [f for f in every["res-c-finn"][1] if "message-over-threshold" in f]
    assert over and all("resource:user-finn" in f for f in over)
    assert not any("message-over-threshold" in f for t in ("res-a", "res-b", "res-c") for f in every[t][1])


def test_an_open_of_a_file_begins_with_every_thread_and_keeps_what_a_live_refresh_adds():
    """A by-stamp round's first call names every thread; the threads its batch handled leave the round (any number,
    none included: the round goes on with RESULTS_CHUNK), except those a live refresh put back meanwhile."""
    ids = [f"t{i}" for i in range(opr.RESULTS_CHUNK * 3)]
    rnd = opr.ResultsRound(ids, by_stamp=True)
    assert rnd.next_ids() == ids and rnd.by_stamp
    rnd.add(["t1"])   # changed by a live refresh while the by-stamp call runs
    assert not rnd.take(opr.ResultsBatch(handled=ids[:5], reused=5))
    assert not rnd.by_stamp and rnd.left == ["t1", *ids[5:]] and rnd.done == 4
    assert rnd.next_ids() == rnd.left[:opr.RESULTS_CHUNK] and rnd.reread(rnd.next_ids()) == ["t1"]
    empty = opr.ResultsRound(ids, by_stamp=True)
    assert not empty.take(opr.ResultsBatch()) and empty.left == ids   # nothing under the stamp: nothing handled
    every = opr.ResultsRound(ids, by_stamp=True)
    assert every.take(opr.ResultsBatch(handled=list(reversed(ids)), reused=len(ids)))


def test_stamped_results_are_the_cached_results_of_an_unchanged_file_without_a_row_read(tmp_path, monkeypatch):
    """`load_stamped_results` returns in one call, reading no row, what the batches computed, while the file is the
    one the cache was written for; once a message is edited in place (same length) it returns nothing."""
    from tests.app.test_thread_results import _edit_same_length

    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(tmp_path / "cache"))
    path = copy_fixture("support", tmp_path / "db")
    with open_store(path) as store:
        ids = [t.id for t in store.list_threads()]
        computed = _per_thread(opr.load_results_batch(store, 1, ids))
        opr.save_results(store)
    with open_store(path) as store:   # a new session
        statements: list[str] = []
        real = store.rows
        monkeypatch.setattr(store, "rows", lambda sql, *a, **k: (statements.append(sql), real(sql, *a, **k))[1])
        batch = opr.load_stamped_results(store, ["gone", *ids])
        assert statements == []
    assert batch.handled == ids and batch.reused == len(ids) and _per_thread(batch) == computed
    # the findings come packed (decoded by the view when read), with their counts per severity for the badges
    assert batch.findings == [] and set(batch.packed) == set(ids)
    assert any(p.severities for p in batch.packed.values())
    for tid, packed in batch.packed.items():
        severities: dict = {}
        for f in packed.decode():
            severities[f["severity"]] = severities.get(f["severity"], 0) + 1
        assert packed.severities == severities, tid
    _edit_same_length(path)
    with open_store(path) as store:
        assert opr.load_stamped_results(store, ids).handled == []


def test_store_findings_are_kept_under_the_files_stamp_unless_a_flag_may_be_set(tmp_path, monkeypatch):
    """The store-wide findings of a file are reused by the next session while the file is unchanged; a file with a
    busy flag set (its staleness reads the clock) has them computed every time; each answer equals a fresh one."""
    import libsql

    from studio.app import thread_results
    from tests.app.test_thread_results import _edit_same_length

    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(tmp_path / "cache"))
    path = copy_fixture("resource", tmp_path / "db")
    computed: list[int] = []
    real = thread_results.store_findings
    monkeypatch.setattr(thread_results, "store_findings",
                        lambda store, **kw: (computed.append(1), real(store, **kw))[1])

    def session() -> tuple[list, list]:
        with open_store(path) as store, store.snapshot():
            return sorted(map(repr, opr.load_store_findings(store))), sorted(map(repr, real(store)))

    for expect_computed in (1, 0, 0):
        computed.clear()
        got, fresh = session()
        assert got == fresh and len(computed) == expect_computed
    assert fresh   # findings to compare
    _edit_same_length(path)
    for expect_computed in (1, 0):
        computed.clear()
        got, fresh = session()
        assert got == fresh and len(computed) == expect_computed
    conn = libsql.connect(str(path))   # the current generation of the resource's record: its flag ages with the clock
    conn.execute('UPDATE mastra_observational_memory SET "isReflecting" = 1 WHERE rowid = '
                 '(SELECT max(rowid) FROM mastra_observational_memory)')
    conn.commit()
    conn.close()
    for _ in range(2):
        computed.clear()
        with open_store(path) as store, store.snapshot():
            got = opr.load_store_findings(store)
        assert len(computed) == 1 and any(f["check"] == "stale-flag" and f["evidence"]["age_ms"] for f in got)


def test_a_thread_changed_while_its_batch_is_computed_stays_in_the_round():
    """A live refresh that changes a thread of the batch in flight: that batch may have read the rows before the
    change, so when it lands the thread stays in the round, its rows read again by a later batch."""
    ids = [f"t{i}" for i in range(opr.RESULTS_CHUNK + 3)]
    rnd = opr.ResultsRound(ids)
    first = rnd.next_ids()
    rnd.add(["t2", ids[-1]])   # t2 in flight; the last one not yet
    assert not rnd.take(opr.ResultsBatch(handled=first, reused=0))
    assert rnd.left == ["t2", *ids[opr.RESULTS_CHUNK:]] and rnd.done == opr.RESULTS_CHUNK - 1
    assert rnd.reread(rnd.next_ids()) == ["t2", ids[-1]]
    assert rnd.take(opr.ResultsBatch(handled=rnd.next_ids()))

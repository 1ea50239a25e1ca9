"""OM status (the two bars) equals what Mastra's getStatus reported for every fixture thread."""

from __future__ import annotations

import pytest

from studio.app.statuses import iter_statuses
from studio.engine.status import compute_status
from studio.store import open_store
from tests.conftest import FIXTURE_NAMES, load_oracle

CASES = [
    (name, key, thread_id)
    for name in FIXTURE_NAMES
    for key, om in load_oracle(name)["om"].items()
    for thread_id in om["status"]
]


def test_every_fixture_with_om_is_covered():
    assert {c[0] for c in CASES} == {"support", "buffered", "resource", "collab", "tools", "live/support"}
    assert len(CASES) >= 15


@pytest.mark.parametrize("name,key,thread_id", CASES, ids=[f"{n}:{t}" for n, _, t in CASES])
def test_status_matches_mastra(fixture_db, name, key, thread_id):
    expected = load_oracle(name)["om"][key]["status"][thread_id]
    with open_store(fixture_db(name)) as store:
        status = compute_status(store, thread_id)
    assert status is not None
    assert status.lookup_key == key
    got = {
        "pendingTokens": status.pending_tokens,
        "threshold": status.threshold,
        "effectiveObservationTokensThreshold": status.reflection_threshold,
        "unbufferedPendingTokens": status.unbuffered_pending_tokens,
        "shouldObserve": status.should_observe,
        "shouldReflect": status.should_reflect,
        "bufferedChunkCount": status.buffered_chunk_count,
        "bufferedChunkTokens": status.buffered_chunk_tokens,
        "canActivate": status.can_activate,
        "asyncObservationEnabled": status.async_observation_enabled,
        "asyncReflectionEnabled": status.async_reflection_enabled,
        "scope": status.scope,
        "recordId": status.record_id,
        "generationCount": status.generation_count,
        "observationTokenCount": status.observation_token_count,
    }
    assert got == expected


@pytest.mark.parametrize("name", sorted({c[0] for c in CASES}))
def test_streamed_statuses_equal_one_at_a_time(fixture_db, name):
    """iter_statuses (inspect: each thread's messages read, counted and dropped in turn, resource
    scope read together) gives every thread the status compute_status gives it, figure for figure."""
    with open_store(fixture_db(name)) as store:
        threads = store.list_threads()
        pairs = []
        for key in store.om_lookup_keys():
            current = store.om_current(key["lookupKey"])
            governed = ([t for t in threads if t.resource_id == current.resource_id] if current.scope == "resource"
                        else [t for t in threads if t.id == current.thread_id])
            pairs += [(t, current) for t in governed]
        streamed = {(s.thread_id, s.record_id): s for s in iter_statuses(store, pairs, threads, now_ms=0)}
        assert len(streamed) == len(pairs) > 0
        for thread, record in pairs:
            one = compute_status(store, thread, record, now_ms=0)
            assert streamed[(thread.id, record.id)] == one
            assert streamed[(thread.id, record.id)].to_json() == one.to_json()


def test_thread_without_om_has_no_status(fixture_db):
    with open_store(fixture_db("history")) as store:
        for thread in store.list_threads():
            assert compute_status(store, thread) is None


def test_busy_flags_live_or_stale_by_age(fixture_db):
    """A set flag is live while its record was updated recently, stale once older than the limit."""
    import libsql

    from studio.engine.status import STALE_FLAG_AFTER_MS
    from studio.store.records import iso_to_ms

    path = fixture_db("support")
    conn = libsql.connect(str(path))
    conn.execute("""UPDATE mastra_observational_memory SET "isReflecting" = 1, "isObserving" = 0
                    WHERE "lookupKey" = 'thread:support-1' AND "generationCount" = (
                        SELECT max("generationCount") FROM mastra_observational_memory
                        WHERE "lookupKey" = 'thread:support-1')""")   # the current generation
    conn.commit()
    conn.close()
    with open_store(path) as store:
        record = store.om_current("thread:support-1")
        updated = iso_to_ms(record.updated_at)
        live = compute_status(store, "support-1", now_ms=updated + 1000)
        stale = compute_status(store, "support-1", now_ms=updated + STALE_FLAG_AFTER_MS + 1)
    flags_live = {f.name: f for f in live.flags}
    assert flags_live["isReflecting"].set and not flags_live["isReflecting"].stale
    assert not flags_live["isObserving"].set
    assert {f.name: f.stale for f in stale.flags}["isReflecting"] is True

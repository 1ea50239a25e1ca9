"""What the model saw at turn N: checked against Mastra's oracle (last turn) and from first principles."""

from __future__ import annotations

import pytest

from studio.engine import tokens
from studio.engine.context import ContextError, turn_context
from studio.engine.events import extract_markers
from studio.engine.timeline import build_timeline
from studio.store.memory_store import MemoryStore
from tests.conftest import load_oracle

THREAD_SCOPE = [("support", t) for t in ("support-1", "support-2", "support-3", "support-4", "support-5")] + [
    ("buffered", "long-run"), ("collab", "doc_42"), ("collab", "room_7"), ("tools", "tools-1")]


@pytest.mark.parametrize("name,thread", THREAD_SCOPE)
def test_last_turn_matches_what_getstatus_and_the_record_imply(fixture_db, name, thread):
    """Last turn: the block is the current record's whole log, the window what getStatus counts as pending."""
    status = load_oracle(name)["om"][f"thread:{thread}"]["status"][thread]
    with MemoryStore.open(fixture_db(name)) as store:
        tl = build_timeline(store, thread)
        ctx = turn_context(store, thread, len(tl.event_log.user_times), timeline=tl)
        record = store.om_current(f"thread:{thread}")
    assert ctx.generation == status["generationCount"]
    assert ctx.record_id == status["recordId"]
    assert ctx.observations.text.strip() == record.active_observations.strip()
    assert ctx.segments_shown == ctx.segments_total
    assert ctx.observations.estimate == status["observationTokenCount"]
    assert ctx.window_after_turn_tokens == status["pendingTokens"]
    assert len(ctx.pending_chunks) == status["bufferedChunkCount"]


def _support_1(store):
    tl = build_timeline(store, "support-1")
    users = sorted((m.created_ms, i) for i, m in enumerate(tl.messages) if m.role == "user")
    return tl, users


def test_before_the_first_observation_the_window_is_every_message_so_far(fixture_db):
    with MemoryStore.open(fixture_db("support")) as store:
        tl, users = _support_1(store)
        first_obs = next(m for m in extract_markers(tl.messages) if m.type == "data-om-observation-end")
        host = next(i for i, m in enumerate(tl.messages) if m.id == first_obs.message_id)
        turn = sum(1 for _, i in users if i < host) - 1  # the turn before the one the Observer ran in
        ctx = turn_context(store, "support-1", turn, timeline=tl)
    upto = users[turn - 1][1]
    expected = [m.as_mastra() for m in tl.messages[:upto + 1]]
    assert ctx.observations.text == "" and ctx.segments_shown == 0 and ctx.generation == 0
    assert [w.id for w in ctx.window] == [m["id"] for m in expected]
    assert ctx.window_estimate == tokens.count_messages_for_status(expected)
    assert not any(w.in_flight for w in ctx.window)


def test_the_turn_that_observed_sees_the_new_block_and_keeps_its_prompt(fixture_db):
    with MemoryStore.open(fixture_db("support")) as store:
        tl, users = _support_1(store)
        end = next(m for m in extract_markers(tl.messages) if m.type == "data-om-observation-end")
        host = next(i for i, m in enumerate(tl.messages) if m.id == end.message_id)
        turn = sum(1 for _, i in users if i < host)  # the user message the observing turn answered
        ctx = turn_context(store, "support-1", turn, timeline=tl)
    # Mastra's Observer output for that cycle is the whole block; the prompt was observed but kept.
    assert ctx.observations.text.strip() == end.data["observations"].strip()
    assert ctx.observations.estimate == tokens.count_observations(end.data["observations"].strip())
    assert ctx.current_task == end.data["currentTask"]
    assert [(w.id, w.in_flight) for w in ctx.window] == [(tl.messages[users[turn - 1][1]].id, True)]


def test_turn_out_of_range_and_unknown_thread(fixture_db):
    with MemoryStore.open(fixture_db("support")) as store:
        with pytest.raises(ContextError):
            turn_context(store, "support-1", 0)
        with pytest.raises(ContextError):
            turn_context(store, "support-1", 10_000)
        with pytest.raises(ContextError):
            turn_context(store, "no-such-thread", 1)


def test_resource_scope_turns_are_the_threads_own_user_messages(fixture_db):
    with MemoryStore.open(fixture_db("resource")) as store:
        tl = build_timeline(store, "res-a")
        own = sorted(m.created_ms for m in tl.messages if m.role == "user" and m.thread_id == "res-a")
        assert len(own) < len(tl.event_log.user_times)  # the Timeline counts every thread of the resource
        first = turn_context(store, "res-a", 1, timeline=tl)
        last = turn_context(store, "res-a", len(own), timeline=tl)
    assert first.turns == last.turns == len(own)
    ids = {m.id: m for m in tl.messages}
    assert ids[first.user_message_id].thread_id == ids[last.user_message_id].thread_id == "res-a"
    assert ids[last.user_message_id].created_ms == own[-1]
    assert all(w.thread_id == "res-a" for w in first.window + last.window)
    assert first.reconstructed and last.scope == "resource"


@pytest.mark.parametrize("thread", ["res-a", "res-b", "res-c"])
def test_resource_last_turn_after_window_is_getstatus_pending(fixture_db, thread):
    # Mastra's getStatus in resource scope: pending = the resource's unobserved messages plus the
    # other threads' <other-conversation> context; the oracle reports it per thread (1146 / 1363 / 859).
    status = load_oracle("resource")["om"]["resource:user-erin"]["status"][thread]
    with MemoryStore.open(fixture_db("resource")) as store:
        tl = build_timeline(store, thread)
        users = [m for m in tl.messages if m.role == "user" and m.thread_id == thread]
        last = turn_context(store, thread, len(users), timeline=tl)
        earlier = turn_context(store, thread, 1, timeline=tl)
    assert last.window_after_turn_tokens == status["pendingTokens"]
    assert last.status_pending_tokens == status["pendingTokens"]
    assert 0 < last.other_threads_after_turn_tokens < status["pendingTokens"]
    # Earlier turns: the other threads' context then is not reconstructed, and says so (None, not 0).
    assert earlier.other_threads_after_turn_tokens is None and earlier.status_pending_tokens is None


def test_turn_start_and_after_turn_figures_are_both_named(fixture_db):
    # support-1's last turn: the model got 2,125 unobserved tokens at its start (the window after
    # step 0, before the reply); after the reply Mastra's getStatus reports 2,488 pending tokens over
    # 10 messages (oracle). The sentences name both figures, the second as getStatus's.
    from studio.engine.context import after_turn_lines

    status = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]
    with MemoryStore.open(fixture_db("support")) as store:
        ctx = turn_context(store, "support-1", 30)
        before = turn_context(store, "support-1", 29)
    assert ctx.status_pending_tokens == ctx.window_after_turn_tokens == status["pendingTokens"] == 2488
    assert ctx.window_estimate < ctx.window_after_turn_tokens
    assert ctx.status_unobserved_messages == 10
    start, after = after_turn_lines(ctx.to_json())
    assert f"{ctx.window_estimate:,} tokens" in start and "start of turn 30" in start
    assert "2,488 tokens" in after and "getStatus" in after and "10 message(s)" in after
    # Turn 29's window after it is where turn 30 started before the new prompt and its step 0.
    assert before.status_pending_tokens is None
    assert "before turn 30's step 0" in after_turn_lines(before.to_json())[1]

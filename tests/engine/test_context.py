"""What the model saw at turn N: checked against Mastra's oracle (last turn), the rows Mastra wrote, and
from first principles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.engine import tokens
from studio.engine.context import ContextError, after_turn_lines, turn_context
from studio.engine.events import extract_markers
from studio.engine.timeline import build_timeline
from studio.store import open_store
from tests.conftest import load_oracle
from tests.mastra_facts import marker_messages, om_rows, raw_messages, turn_at, window_tokens

RESOURCE_KEY = "resource:user-erin"
OBSERVATION_END = "data-om-observation-end"


def _resource_threads() -> list[str]:
    """Return the threads of the resource-scope fixture's record, as the oracle lists their statuses."""
    return sorted(load_oracle("resource")["om"][RESOURCE_KEY]["status"])


def _unobserved(messages: list[dict], record: dict) -> list[dict]:
    """Return the MESSAGES Mastra's getStatus counts as unobserved under RECORD (a raw OM row).

    getUnobservedMessages: system messages never count; a message whose id is in observedMessageIds
    does not; otherwise one created after lastObservedAt does, and a message holding an observation's
    end marker only with parts after its last such marker (getUnobservedParts).
    """
    observed = set(json.loads(record["observedMessageIds"] or "[]"))
    cursor = record["lastObservedAt"]
    out = []
    for m in messages:
        if m["role"] == "system" or m["id"] in observed or (cursor is not None and m["createdAt"] <= cursor):
            continue
        ends = [i for i, p in enumerate(m["parts"]) if isinstance(p, dict) and p.get("type") == OBSERVATION_END]
        if ends and not m["parts"][ends[-1] + 1:]:
            continue
        out.append(m)
    return out


def _resource_messages(path: Path) -> list[dict]:
    """Return the resource's messages as stored, every thread, oldest first (ISO-8601 UTC strings sort)."""
    return sorted((m for t in _resource_threads() for m in raw_messages(path, t)), key=lambda m: m["createdAt"])

THREAD_SCOPE = [("support", t) for t in ("support-1", "support-2", "support-3", "support-4", "support-5")] + [
    ("buffered", "long-run"), ("collab", "doc_42"), ("collab", "room_7"), ("tools", "tools-1")]


@pytest.mark.parametrize("name,thread", THREAD_SCOPE)
def test_last_turn_matches_what_getstatus_and_the_record_imply(fixture_db, name, thread):
    """Last turn: the block is the current record's whole log, the window what getStatus counts as pending."""
    status = load_oracle(name)["om"][f"thread:{thread}"]["status"][thread]
    with open_store(fixture_db(name)) as store:
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


def test_a_buffered_reflections_activation_brings_its_unreflected_tail(fixture_db):
    # Activating a buffered reflection writes the new generation as the Reflector's text plus the
    # observation lines it had not reflected (the unreflected tail, older Observer outputs with their
    # message boundaries); its data-om-activation marker records that whole log and its size
    # (`observations`, `observationTokens`, @mastra/memory 1.31.0 tryActivateBufferedReflection). From
    # that turn on, the context holds it all (the corpus prompt log shows the tail in the system prompt):
    # before, only the Reflector's part was shown (455 of 1,652 tokens in buffered.db's last turns).
    path = fixture_db("buffered")
    messages = raw_messages(path, "long-run")
    activations = [p["data"] for _, p in marker_messages(messages, "data-om-activation")
                   if p["data"].get("operationType") == "reflection"
                   and "--- message boundary" in str(p["data"].get("observations"))]
    if not activations:
        pytest.fail("buffered.db has no activated buffered reflection with an unreflected tail "
                    "(a message boundary in its marker's observations): nothing for this test to check")
    data = activations[-1]
    turn = turn_at(messages, data["activatedAt"])
    with open_store(path) as store:
        tl = build_timeline(store, "long-run")
        ctx = turn_context(store, "long-run", turn, timeline=tl)
        last = turn_context(store, "long-run", len(tl.event_log.user_times), timeline=tl)
    assert ctx.generation == data["generationCount"]
    assert ctx.observations.text.strip().startswith(data["observations"].strip())
    assert ctx.observations.estimate >= data["observationTokens"]
    if last.generation == data["generationCount"]:  # later turns keep it (appends may follow)
        assert last.observations.text.strip().startswith(data["observations"].strip())


def _support_1(store):
    tl = build_timeline(store, "support-1")
    users = sorted((m.created_ms, i) for i, m in enumerate(tl.messages) if m.role == "user")
    return tl, users


def test_before_the_first_observation_the_window_is_every_message_so_far(fixture_db):
    with open_store(fixture_db("support")) as store:
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
    with open_store(fixture_db("support")) as store:
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
    with open_store(fixture_db("support")) as store:
        with pytest.raises(ContextError):
            turn_context(store, "support-1", 0)
        with pytest.raises(ContextError):
            turn_context(store, "support-1", 10_000)
        with pytest.raises(ContextError):
            turn_context(store, "no-such-thread", 1)


def test_resource_scope_turns_are_the_threads_own_user_messages(fixture_db):
    with open_store(fixture_db("resource")) as store:
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


def _resource_own_window(path: Path) -> int:
    """Return Mastra's count of the resource's own unobserved messages, from raw rows and the oracle's counts.

    getStatus in resource scope adds the other threads' <other-conversation> context to this; the
    oracle gives each message's count (`tokens.<thread>.perMessage`), which is the window's count of a
    message unless an observation's end marker splits it (then only its later parts count).
    """
    oracle = load_oracle("resource")
    per_message = {i: n for t in _resource_threads() for i, n in oracle["tokens"][t]["perMessage"].items()}
    window = _unobserved(_resource_messages(path), om_rows(path, RESOURCE_KEY)[-1])
    if any(p.get("type") == OBSERVATION_END for m in window for p in m["parts"] if isinstance(p, dict)):
        pytest.fail("the resource's unobserved window holds a message split by an observation's end marker: "
                    "the oracle's per-message counts do not give its count, so this test cannot derive it")
    return window_tokens(per_message, [m["id"] for m in window])


@pytest.mark.parametrize("thread", _resource_threads())
def test_resource_last_turn_after_window_is_getstatus_pending(fixture_db, thread):
    # Mastra's getStatus in resource scope: pending = the resource's unobserved messages plus the other
    # threads' <other-conversation> context; the oracle reports it per thread. The window after the last
    # turn replays every thread's later turns and observations too (before, the other threads' messages
    # arrived after their observations had run, and counted as unobserved: 5,470 for 2,473 on res-a).
    statuses = load_oracle("resource")["om"][RESOURCE_KEY]["status"]
    status = statuses[thread]
    path = fixture_db("resource")
    own = _resource_own_window(path)
    if not any(s["pendingTokens"] > own for s in statuses.values()):
        pytest.fail("no thread of the resource has other threads' unobserved context in its getStatus pending "
                    "tokens (oracle): the fixture no longer shows the case this test is about")
    with open_store(path) as store:
        tl = build_timeline(store, thread)
        users = [m for m in tl.messages if m.role == "user" and m.thread_id == thread]
        last = turn_context(store, thread, len(users), timeline=tl)
        earlier = turn_context(store, thread, 1, timeline=tl)
    assert last.window_after_turn_tokens == status["pendingTokens"]
    assert last.status_pending_tokens == status["pendingTokens"]
    assert last.other_threads_after_turn_tokens == status["pendingTokens"] - own
    # Earlier turns: the other threads' context then is not reconstructed, and says so (None, not 0).
    assert earlier.other_threads_after_turn_tokens is None and earlier.status_pending_tokens is None


def test_resource_turn_start_holds_only_what_om_had_written_by_then(fixture_db):
    # A resource's threads take turns: what OM did in another thread's later turn (an observation, a
    # reflection's new generation) was not in this turn's context. A turn ends for OM at the resource's
    # next user message, of any thread; the generation in force then is the newest OM row created before
    # it (Mastra's rows), and with no observation completed by then the block is empty. Checked at each
    # thread's last turn; before, those showed the current generation whatever came after them.
    path = fixture_db("resource")
    messages = _resource_messages(path)
    rows = om_rows(path, RESOURCE_KEY)
    current = rows[-1]["generationCount"]
    checked = []
    with open_store(path) as store:
        for thread in _resource_threads():
            own_users = [m for m in raw_messages(path, thread) if m["role"] == "user"]
            start = own_users[-1]["createdAt"]
            later = [m["createdAt"] for m in messages if m["role"] == "user" and m["createdAt"] > start]
            end = min(later) if later else None
            made = [r["generationCount"] for r in rows if end is None or r["createdAt"] < end]
            expected = max(made) if made else rows[0]["generationCount"]
            observed = [p for _, p in marker_messages(messages, OBSERVATION_END)
                        if end is None or ((p.get("data") or {}).get("completedAt") or "") < end]
            ctx = turn_context(store, thread, len(own_users))
            assert ctx.generation == expected, thread
            if not observed and expected == rows[0]["generationCount"]:
                assert ctx.observations.text == "" and ctx.segments_shown == 0, thread
            checked.append(expected)
    if all(g == current for g in checked):
        pytest.fail("every thread's last turn came after the resource's newest generation was written: the "
                    "fixture no longer has a turn that another thread's later reflection must not reach")


def test_resource_turn_lists_only_the_events_of_that_turn(fixture_db):
    # The Timeline numbers turns over the whole resource; a thread's turn k is its own k-th user message.
    # The events a turn's context lists happened between that message and the resource's next user message
    # (before, turn k listed the events of the resource's k-th turn, another thread's).
    path = fixture_db("resource")
    messages = _resource_messages(path)
    listed = 0
    with open_store(path) as store:
        for thread in _resource_threads():
            tl = build_timeline(store, thread)
            own_users = [m for m in raw_messages(path, thread) if m["role"] == "user"]
            for turn, user in enumerate(own_users, start=1):
                later = [m["createdAt"] for m in messages if m["role"] == "user" and m["createdAt"] > user["createdAt"]]
                end = min(later) if later else None
                ctx = turn_context(store, thread, turn, timeline=tl)
                for event in ctx.events:
                    if event["at"] is None:  # placed nowhere in time: only the last turn lists those
                        assert end is None, (thread, turn)
                        continue
                    assert event["at"] >= user["createdAt"] and (end is None or event["at"] < end), (thread, turn)
                listed += len(ctx.events)
    if not listed:
        pytest.fail("no turn of the resource lists an event: nothing for this test to check")


def test_turn_start_and_after_turn_figures_are_both_named(fixture_db):
    # support-1's last turn: the model got the window after step 0 at its start; after the reply Mastra's
    # getStatus reports the pending tokens of the oracle over the messages still unobserved (Mastra's rows).
    # The sentences name both figures, the second as getStatus's.
    path = fixture_db("support")
    status = load_oracle("support")["om"]["thread:support-1"]["status"]["support-1"]
    messages = raw_messages(path, "support-1")
    last = sum(1 for m in messages if m["role"] == "user")
    unobserved = len(_unobserved(messages, om_rows(path, "thread:support-1")[-1]))
    with open_store(path) as store:
        ctx = turn_context(store, "support-1", last)
        before = turn_context(store, "support-1", last - 1)
    assert ctx.status_pending_tokens == ctx.window_after_turn_tokens == status["pendingTokens"]
    assert ctx.status_unobserved_messages == unobserved
    # Both figures must differ for the text to tell them apart (the reply arrived after step 0).
    assert ctx.window_estimate != ctx.window_after_turn_tokens
    start, after = after_turn_lines(ctx.to_json())
    assert f"start of turn {last} (after OM's step 0), {ctx.window_estimate:,} tokens" in start
    assert f"After the turn (now): {status['pendingTokens']:,} tokens unobserved = Mastra's getStatus" in after
    assert f"{unobserved:,} message(s)" in after
    # The turn before: its window after it is where the last turn started before the new prompt and its step 0.
    assert before.status_pending_tokens is None
    assert f"before turn {last}'s step 0" in after_turn_lines(before.to_json())[1]

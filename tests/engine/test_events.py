"""OM events read from marker parts and generations (studio.engine.events), checked on real Mastra files."""

from __future__ import annotations

import re

import pytest

from studio.engine.events import (
    ACTIVATION,
    BUFFERING,
    OBSERVATION,
    REFLECTION,
    REFLECTION_ACTIVATION,
    REFLECTION_BUFFERING,
    THREAD_UPDATE,
    build_events,
    extract_markers,
    split_segments,
)
from studio.engine.timeline import build_timeline
from studio.store import open_store
from studio.store.records import Message, OMRecord
from tests.conftest import load_oracle
from tests.mastra_facts import marker_messages, om_rows, raw_messages, turn_at

#: Fixtures with thread-scope OM records (Mastra's oracle); their threads holding markers are read from the rows.
FIXTURE_NAMES = ["support", "buffered", "collab"]


def marked_threads(path, name: str) -> list[str]:
    """Return the thread-scope threads of fixture NAME whose stored messages hold `data-om-*` parts (raw rows)."""
    threads = [key.split(":", 1)[1] for key, record in load_oracle(name)["om"].items() if record["scope"] == "thread"]
    return [t for t in threads if any(str(p.get("type", "")).startswith("data-om-")
                                      for m in raw_messages(path, t) for p in m["parts"])]


def _kind(marker) -> str:
    suffix = marker.type[len("data-om-"):]
    family = suffix.rpartition("-")[0]
    if family == "observation":
        return REFLECTION if marker.operation == "reflection" else OBSERVATION
    if family == "buffering":
        return REFLECTION_BUFFERING if marker.operation == "reflection" else BUFFERING
    if suffix == "activation":
        return REFLECTION_ACTIVATION if marker.operation == "reflection" else ACTIVATION
    return suffix


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_marker_in_the_messages_is_a_timeline_event_with_its_time_and_tokens(fixture_db, name):
    path = fixture_db(name)
    threads = marked_threads(path, name)
    assert threads, f"{name}: no thread-scope thread holds OM markers"
    with open_store(path) as store:
        for thread_id in threads:
            timeline = build_timeline(store, thread_id)
            markers = extract_markers(timeline.messages)
            assert markers, f"{name}/{thread_id} should hold OM markers"
            as_json = timeline.to_json()["events"]
            for marker in markers:
                data, kind = marker.data, _kind(marker)
                matches = [e for e in timeline.events if e.kind == kind and e.cycle_id == data.get("cycleId")]
                assert matches, f"{marker.type} {data.get('cycleId')} missing from the timeline"
                if marker.type.endswith("-start"):
                    event = next(e for e in matches if e.at == data["startedAt"])
                    expected = data.get("tokensToObserve", data.get("tokensToBuffer"))
                    end = next((m for m in markers if m.cycle_id == marker.cycle_id and m.type.endswith("-end")
                                and m.operation == marker.operation), None)
                    if end is not None:  # the pair carries the end's figure (the same messages, counted again)
                        expected = end.data.get("tokensObserved", end.data.get("tokensBuffered"))
                    assert event.tokens == expected
                elif marker.type.endswith("-end"):
                    event = next(e for e in matches if e.end == data["completedAt"])
                    assert event.status == "completed"
                    assert event.tokens == data.get("tokensObserved", data.get("tokensBuffered"))
                elif marker.type.endswith("-failed"):
                    assert any(e.status == "failed" and e.end == data["failedAt"] for e in matches)
                elif kind in (ACTIVATION, REFLECTION_ACTIVATION):
                    event = next(e for e in matches if e.at == data["activatedAt"]
                                 and e.tokens == data["tokensActivated"])
                    assert event.generation == data["generationCount"]
                elif kind == THREAD_UPDATE:
                    assert any(e.at == data["timestamp"] for e in matches)
                # and the JSON document carries it, with the same time and tokens
                assert any(j["cycle_id"] == data.get("cycleId") and j["type"] == kind for j in as_json)


def test_support_events_join_generations_and_message_boundaries(fixture_db):
    """support-1: its marked observations, and the observations and reflections only the generations show."""
    path = fixture_db("support")
    with open_store(path) as store:
        timeline = build_timeline(store, "support-1")
        history = {g.generation_count: g for g in store.om_history("thread:support-1")}
    events = [e for e in timeline.events if e.kind != THREAD_UPDATE]
    # Expected from Mastra's rows (tests/mastra_facts.py): a marked observation in each turn holding an end
    # marker, in the generation then current; each reflection row's turn holds the observation it followed
    # (no marker: inferred) in the old generation, then the reflection opening the next one.
    messages = raw_messages(path, "support-1")
    reflections = {turn_at(messages, r["createdAt"]): r["generationCount"]
                   for r in om_rows(path, "thread:support-1") if r["originType"] == "reflection"}
    marked = {turn_at(messages, m["createdAt"]) for m, _ in marker_messages(messages, "data-om-observation-end")}
    expected = []
    for turn in sorted(marked | set(reflections)):
        generation = sum(1 for t in reflections if t < turn)
        if turn in reflections:
            expected += [(OBSERVATION, turn, generation, True), (REFLECTION, turn, reflections[turn], True)]
            generation = reflections[turn]
        if turn in marked:
            expected.append((OBSERVATION, turn, generation, False))
    assert reflections and marked, "support-1 should hold marked observations and reflection rows"
    assert [(e.kind, e.turn, e.generation, e.inferred) for e in events] == expected
    # Inferred observations are the log's message boundaries; reflections are the generations' rows.
    boundaries = {b for g in history.values()
                  for b in re.findall(r"--- message boundary \((.*?)\) ---", g.active_observations)}
    inferred = [e for e in events if e.inferred and e.kind == OBSERVATION]
    assert {e.last_observed_at for e in inferred} <= boundaries
    for e in events:
        if e.kind == REFLECTION:
            assert e.at == history[e.generation].get("lastReflectionAt")
            assert e.tokens == history[e.generation - 1].observation_token_count
    # A marked cycle's recordId names its generation; its log size after is the stored log up to it.
    last, current = events[-1], history[max(history)]
    assert last.kind == OBSERVATION and not last.inferred, "support-1 should end with a marked observation"
    assert last.record_id == current.id and last.total_observation_tokens == current.observation_token_count


def test_failed_and_unfinished_cycles_are_paired():
    def part(kind, cycle, **data):
        return {"type": f"data-om-{kind}", "data": {"cycleId": cycle, "recordId": "r0", **data}}

    parts = [
        part("observation-start", "c1", operationType="observation", startedAt="2026-01-01T10:00:01.000Z",
             tokensToObserve=3000),
        part("observation-failed", "c1", operationType="observation", failedAt="2026-01-01T10:00:02.000Z",
             tokensAttempted=3000, error="model timed out"),
        part("observation-start", "c2", operationType="reflection", startedAt="2026-01-01T10:00:03.000Z",
             tokensToObserve=900),
        part("buffering-start", "b1", operationType="observation", startedAt="2026-01-01T10:00:04.000Z",
             tokensToBuffer=700),
        part("buffering-end", "b2", operationType="reflection", completedAt="2026-01-01T10:00:06.000Z",
             durationMs=500, tokensBuffered=900, bufferedTokens=300),
    ]
    messages = [
        Message(id="u1", thread_id="t", role="user", content={"format": 2, "parts": [{"type": "text", "text": "hi"}]},
                created_at="2026-01-01T10:00:00.000Z"),
        Message(id="a1", thread_id="t", role="assistant", content={"format": 2, "parts": parts},
                created_at="2026-01-01T10:00:00.500Z"),
    ]
    record = OMRecord(columns={"id": "r0", "lookupKey": "thread:t", "generationCount": 0, "originType": "initial",
                               "activeObservations": "", "threadId": "t"})
    log = build_events(messages, [record])
    by_cycle = {e.cycle_id: e for e in log.events}
    assert by_cycle["c1"].type == "observation-failed" and by_cycle["c1"].error == "model timed out"
    assert by_cycle["c1"].tokens == 3000 and by_cycle["c1"].end_ms - by_cycle["c1"].at_ms == 1000
    assert by_cycle["c2"].type == "reflection-unfinished" and by_cycle["c2"].tokens == 900
    assert by_cycle["b1"].type == "buffering-unfinished"
    # An end without its start: it started durationMs before it ended.
    assert by_cycle["b2"].type == "reflection-buffering" and by_cycle["b2"].at == "2026-01-01T10:00:05.500Z"
    assert all(e.turn == 1 and e.generation == 0 for e in log.events)
    assert not any(e.changes_state for e in log.events if e.status != "completed")


def test_segments_split_a_log_at_its_message_boundaries(fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        gen0 = store.om_history("thread:support-1")[-1]
    # Mastra's row: each later observation wrote `--- message boundary (<lastObservedAt>) ---` before its lines.
    raw = next(r for r in om_rows(path, "thread:support-1") if r["generationCount"] == 0)["activeObservations"]
    boundaries = re.findall(r"\n\n--- message boundary \((.*?)\) ---\n\n", raw)
    assert boundaries, "support-1's generation 0 should hold several observations"
    segments = split_segments(gen0)
    assert [s.boundary for s in segments] == [None, *boundaries]
    assert gen0.active_observations[:segments[-1].prefix_end] == gen0.active_observations
    assert all(s.text.startswith("Date:") for s in segments)

"""Timeline series (studio.engine.timeline) against what Mastra itself reported for the same files."""

from __future__ import annotations

import csv
import io

import pytest

from studio.engine.events import OBSERVATION, REFLECTION
from studio.engine.timeline import TimelineError, build_timeline, series_csv
from studio.store.memory_store import MemoryStore
from tests.conftest import load_oracle
from tests.mastra_facts import TOKENS_PER_CONVERSATION, marker_messages, om_rows, raw_messages, window_tokens

POINT_KEYS = ["at", "turn", "message_tokens", "observation_tokens", "buffered_tokens", "threshold",
              "reflection_threshold", "reconstructed"]
EVENT_KEYS = ["type", "at", "turn", "cycle_id", "tokens", "generation"]


@pytest.mark.parametrize("name", ["support", "buffered", "collab", "tools"])
def test_the_last_point_is_mastras_status_of_the_thread(fixture_db, name):
    """The replayed window, log, buffer and thresholds end exactly where Mastra's getStatus is."""
    oracle = load_oracle(name)
    with MemoryStore.open(fixture_db(name)) as store:
        for record in oracle["om"].values():
            if record["scope"] != "thread":
                continue
            for thread_id, status in record["status"].items():
                last = build_timeline(store, thread_id).points[-1]
                assert (last.message_tokens, last.observation_tokens, last.buffered_tokens, last.threshold,
                        last.reflection_threshold) == (
                    status["pendingTokens"], status["observationTokenCount"], status["bufferedChunkTokens"],
                    status["threshold"], status["effectiveObservationTokensThreshold"]), thread_id


@pytest.mark.parametrize("name,thread_id", [("support", "support-1"), ("support", "support-5"),
                                            ("collab", "doc_42"), ("tools", "tools-1")])
def test_the_window_before_each_marked_observation_is_what_mastra_observed(fixture_db, name, thread_id):
    """Mastra wrote tokensToObserve into each start marker: the replayed window reaches exactly that."""
    path = fixture_db(name)
    with MemoryStore.open(path) as store:
        timeline = build_timeline(store, thread_id)
    checked = 0
    for i, event in enumerate(timeline.events):
        if event.kind != OBSERVATION or event.inferred:
            continue
        at = next(k for k, p in enumerate(timeline.points) if p.event_index == i)
        before = timeline.points[at - 1]
        start = next(m for m in event.parts if m.type.endswith("-start"))
        assert before.message_tokens == start.data["tokensToObserve"]
        assert timeline.points[at].observation_tokens == event.total_observation_tokens
        checked += 1
    assert checked == len(marker_messages(raw_messages(path, thread_id), "data-om-observation-start")) > 0


def test_points_after_an_inferred_observation_are_reconstructed(fixture_db):
    path = fixture_db("support")
    with MemoryStore.open(path) as store:
        timeline = build_timeline(store, "support-1")
    points = timeline.points
    assert not any(p.reconstructed for p in points[:12])  # before anything was inferred
    inferred = next(i for i, e in enumerate(timeline.events) if e.inferred and e.kind == OBSERVATION)
    at = next(k for k, p in enumerate(points) if p.event_index == inferred)
    assert points[at].reconstructed and points[at].message_tokens == 0
    marked = next(i for i, e in enumerate(timeline.events) if i > inferred and e.kind == OBSERVATION and not e.inferred)
    assert not next(p for p in points if p.event_index == marked).reconstructed
    # A reflection right after a sync observation restarts from the cursor the record had before it.
    # Mastra's own figures: the next marked observation (turn 17) wrote tokensToObserve, the window it saw;
    # that window is the one left by the reflection plus the messages created between the reflection's
    # row and that observation (turn 17's prompt), counted as Mastra counts (oracle per-message figures).
    reflection = next(i for i, e in enumerate(timeline.events) if e.kind == REFLECTION)
    messages = raw_messages(path, "support-1")
    reflected_at = next(r["createdAt"] for r in om_rows(path, "thread:support-1") if r["originType"] == "reflection")
    host, start = next((m, p) for m, p in marker_messages(messages, "data-om-observation-start")
                       if m["createdAt"] > reflected_at)
    added = [m["id"] for m in messages if reflected_at < m["createdAt"] < host["createdAt"]]
    per_message = load_oracle("support")["tokens"]["support-1"]["perMessage"]
    seen = start["data"]["tokensToObserve"]
    expected = seen - (window_tokens(per_message, added) - TOKENS_PER_CONVERSATION)
    assert (seen, len(added), expected) == (3322, 1, 3178)
    assert next(p for p in points if p.event_index == reflection).message_tokens == expected


def test_json_shapes_are_exactly_the_documented_ones(fixture_db):
    with MemoryStore.open(fixture_db("collab")) as store:
        doc = build_timeline(store, "doc_42").to_json()
    assert list(doc) == ["points", "events"]
    assert all(list(p) == POINT_KEYS for p in doc["points"])
    assert all(list(e) == EVENT_KEYS for e in doc["events"])
    assert [p["turn"] for p in doc["points"]] == sorted(p["turn"] for p in doc["points"])


def test_resource_scope_points_are_reconstructed(fixture_db):
    with MemoryStore.open(fixture_db("resource")) as store:
        timeline = build_timeline(store, "res-a")
    assert timeline.scope == "resource" and all(p.reconstructed for p in timeline.points
                                                if p.event_index is not None or p.observation_tokens)
    assert {m.thread_id for m in timeline.messages} == {"res-a", "res-b", "res-c"}


def test_unknown_thread_and_thread_without_om(fixture_db):
    with MemoryStore.open(fixture_db("history")) as store:
        with pytest.raises(TimelineError, match="no observational memory"):
            build_timeline(store, "hist-1")
        with pytest.raises(TimelineError, match="No thread"):
            build_timeline(store, "nope")


def test_series_csv_has_one_row_per_point(fixture_db):
    with MemoryStore.open(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-2")
    rows = list(csv.reader(io.StringIO(series_csv(timeline))))
    assert rows[0][:3] == ["series", "kind", "at"]
    assert len(rows) == len(timeline.points) + 1
    assert rows[1][10] == timeline.messages[0].id and rows[-1][0] == "real"

"""Timeline series (studio.engine.timeline) against what Mastra itself reported for the same files."""

from __future__ import annotations

import csv
import io
import json

import pytest

from studio.engine.events import OBSERVATION, REFLECTION
from studio.engine.timeline import TimelineError, build_timeline, series_csv
from studio.store import open_store
from tests.conftest import FIXTURES, load_oracle
from tests.mastra_facts import TOKENS_PER_CONVERSATION, marker_messages, om_rows, raw_messages, window_tokens

POINT_KEYS = ["at", "turn", "message_tokens", "observation_tokens", "buffered_tokens", "threshold",
              "reflection_threshold", "reconstructed"]
EVENT_KEYS = ["type", "at", "turn", "cycle_id", "tokens", "generation"]


@pytest.mark.parametrize("name", ["support", "buffered", "collab", "tools"])
def test_the_last_point_is_mastras_status_of_the_thread(fixture_db, name):
    """The replayed window, log, buffer and thresholds end exactly where Mastra's getStatus is."""
    oracle = load_oracle(name)
    with open_store(fixture_db(name)) as store:
        for record in oracle["om"].values():
            if record["scope"] != "thread":
                continue
            for thread_id, status in record["status"].items():
                last = build_timeline(store, thread_id).points[-1]
                assert (last.message_tokens, last.observation_tokens, last.buffered_tokens, last.threshold,
                        last.reflection_threshold) == (
                    status["pendingTokens"], status["observationTokenCount"], status["bufferedChunkTokens"],
                    status["threshold"], status["effectiveObservationTokensThreshold"]), thread_id


#: Every fixture whose oracle holds an OM record, with the scope of each record (Mastra's own report).
OM_FIXTURES = sorted(path.name[:-len(".oracle.json")] for path in FIXTURES.glob("*.oracle.json")
                     if json.loads(path.read_text(encoding="utf-8")).get("om"))


@pytest.mark.parametrize("name", OM_FIXTURES)
def test_the_window_before_each_marked_observation_is_what_mastra_observed(fixture_db, name):
    """Mastra wrote tokensToObserve into every observation start marker: the replayed window reaches exactly that.

    Every `data-om-observation-start` part in the fixture's raw rows is checked, on the timeline of
    the thread that holds it. Thread scope: the window just before the cycle is the cycle's input,
    also when the marker sits after content its message already held (the cycle counted that
    content too). Resource scope: the marker counts one thread's share of the cycle, and the
    Observer is never given a message an earlier cycle of the same process observed, while the
    record's window (what getStatus counts, and what the replay draws) still holds messages a
    reflection's older cursor made unobserved again; so the share is at most the window.
    """
    path = fixture_db(name)
    oracle = load_oracle(name)
    scope = {key.split(":", 1)[1]: record["scope"] for key, record in oracle["om"].items()}
    checked = 0
    with open_store(path) as store:
        for thread_id in oracle["threads"]:
            starts = marker_messages(raw_messages(path, thread_id), "data-om-observation-start")
            if not starts:
                continue
            timeline = build_timeline(store, thread_id)
            resource = timeline.scope == "resource"
            for message, part in starts:
                cycle = part["data"]["cycleId"]
                ei = next(i for i, e in enumerate(timeline.events) if e.kind == OBSERVATION and e.cycle_id == cycle)
                at = next(k for k, p in enumerate(timeline.points) if p.event_index == ei)
                before = timeline.points[at - 1].message_tokens
                wanted = part["data"]["tokensToObserve"]
                where = f"{name} {thread_id} cycle {cycle} on message {message['id']}"
                if resource:
                    assert 0 < wanted <= before, where
                else:
                    assert scope.get(thread_id) == "thread", where
                    assert before == wanted, where
                    assert timeline.points[at].observation_tokens == timeline.events[ei].total_observation_tokens, where
                checked += 1
    asynchronous = all(status["asyncObservationEnabled"] for record in oracle["om"].values()
                       for status in record["status"].values())
    # With async buffering Mastra observes through buffered chunks; a synchronous cycle is optional.
    assert checked > 0 or asynchronous, f"{name}: a synchronous OM record but no observation start marker"


def test_a_cycle_marked_after_content_its_message_held_counted_that_content(fixture_db):
    """A start marker after a text part: the cycle observed that text (tokensToObserve includes it).

    Picked by query among the thread-scope fixtures: the message whose first observation start
    marker comes after a text part. Mastra's figure is the messages after the previous cycle's
    cursor up to and including that message (oracle per-message counts, overhead once).
    """
    for name in [n for n in OM_FIXTURES if all(r["scope"] == "thread" for r in load_oracle(n)["om"].values())]:
        path = fixture_db(name)
        for key in load_oracle(name)["om"]:
            thread_id = key.split(":", 1)[1]
            messages = raw_messages(path, thread_id)
            for message, part in marker_messages(messages, "data-om-observation-start"):
                types = [p.get("type") for p in message["parts"]]
                if "text" not in types[:types.index("data-om-observation-start")]:
                    continue
                with open_store(path) as store:
                    timeline = build_timeline(store, thread_id)
                ei = next(i for i, e in enumerate(timeline.events) if e.cycle_id == part["data"]["cycleId"])
                at = next(k for k, p in enumerate(timeline.points) if p.event_index == ei)
                assert timeline.points[at - 1].message_index == next(
                    i for i, m in enumerate(timeline.messages) if m.id == message["id"])
                assert timeline.points[at - 1].message_tokens == part["data"]["tokensToObserve"]
                return
    pytest.fail("No fixture has an observation start marker after content its message held")


def test_points_after_an_inferred_observation_are_reconstructed(fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        timeline = build_timeline(store, "support-1")
    points = timeline.points
    inferred = next(i for i, e in enumerate(timeline.events) if e.inferred and e.kind == OBSERVATION)
    at = next(k for k, p in enumerate(points) if p.event_index == inferred)
    assert at > 0 and not any(p.reconstructed for p in points[:at])  # before anything was inferred
    assert points[at].reconstructed and points[at].message_tokens == 0
    marked = next(i for i, e in enumerate(timeline.events) if i > inferred and e.kind == OBSERVATION and not e.inferred)
    assert not next(p for p in points if p.event_index == marked).reconstructed
    # A reflection right after a sync observation restarts from the cursor the record had before it.
    # Mastra's own figures: the next marked observation wrote tokensToObserve, the window it saw;
    # that window is the one left by the reflection plus the messages created between the reflection's
    # row and that observation's reply (the turn's prompt), counted as Mastra counts (oracle per-message
    # figures). Checked for every reflection row followed by a marked observation on its generation.
    messages = raw_messages(path, "support-1")
    per_message = load_oracle("support")["tokens"]["support-1"]["perMessage"]
    starts = marker_messages(messages, "data-om-observation-start")
    checked = 0
    for row in om_rows(path, "thread:support-1"):
        if row["originType"] != "reflection":
            continue
        reflected_at = row["createdAt"]
        host, start = next(((m, p) for m, p in starts if p["data"]["recordId"] == row["id"]), (None, None))
        if host is None:
            continue
        added = [m["id"] for m in messages if reflected_at < m["createdAt"] < host["createdAt"]]
        seen = start["data"]["tokensToObserve"]
        expected = seen - (window_tokens(per_message, added) - TOKENS_PER_CONVERSATION if added else 0)
        reflection = next(i for i, e in enumerate(timeline.events)
                          if e.kind == REFLECTION and e.generation == row["generationCount"])
        assert next(p for p in points if p.event_index == reflection).message_tokens == expected, row["id"]
        checked += 1
    assert checked > 0, "support-1 has no reflection followed by a marked observation"


def test_json_shapes_are_exactly_the_documented_ones(fixture_db):
    with open_store(fixture_db("collab")) as store:
        doc = build_timeline(store, "doc_42").to_json()
    assert list(doc) == ["points", "events"]
    assert all(list(p) == POINT_KEYS for p in doc["points"])
    assert all(list(e) == EVENT_KEYS for e in doc["events"])
    assert [p["turn"] for p in doc["points"]] == sorted(p["turn"] for p in doc["points"])


def test_resource_scope_points_are_reconstructed(fixture_db):
    with open_store(fixture_db("resource")) as store:
        timeline = build_timeline(store, "res-a")
    assert timeline.scope == "resource" and all(p.reconstructed for p in timeline.points
                                                if p.event_index is not None or p.observation_tokens)
    assert {m.thread_id for m in timeline.messages} == {"res-a", "res-b", "res-c"}


def test_unknown_thread_and_thread_without_om(fixture_db):
    with open_store(fixture_db("history")) as store:
        with pytest.raises(TimelineError, match="no observational memory"):
            build_timeline(store, "hist-1")
        with pytest.raises(TimelineError, match="No thread"):
            build_timeline(store, "nope")


def test_series_csv_has_one_row_per_point(fixture_db):
    with open_store(fixture_db("support")) as store:
        timeline = build_timeline(store, "support-2")
    rows = list(csv.reader(io.StringIO(series_csv(timeline))))
    assert rows[0][:3] == ["series", "kind", "at"]
    assert len(rows) == len(timeline.points) + 1
    assert rows[1][10] == timeline.messages[0].id and rows[-1][0] == "real"

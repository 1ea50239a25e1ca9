"""Trace a fact: a hand-built database with a known drop (first principles) and the real Mastra fixtures."""

from __future__ import annotations

import pytest

from studio.engine import tokens
from studio.engine.observations import Priority, parse_log
from studio.engine.trace import TraceError, match_text, trace_fact
from studio.store.memory_store import MemoryStore
from tests.engine import trace_db as T


@pytest.fixture
def trace_db(fixture_db):
    return T.build_trace_db(fixture_db("history"))


def test_known_drop_is_traced_from_first_generation_to_the_dropping_reflection(trace_db):
    with MemoryStore.open(trace_db) as store:
        result = trace_fact(store, T.THREAD, "teal")
    assert result.generations == 3
    assert len(result.lifelines) == 1  # the reworded line of generation 1 continues generation 0's line
    life = result.lifelines[0]
    assert life.text == T.TEAL_0
    first, kept, dropped = life.steps
    # Generation 0, line 2 of the log; written by cycle c1, whose marker sits on a2 and which
    # started at 10:00:03.100: it observed every message before it but its own (u1, a1, u2).
    assert (first.kind, first.generation, first.line_number) == ("first", 0, 2)
    assert (life.source, life.cycle_id, life.marker_message_id) == ("markers", "c1", "a2")
    assert [m.id for m in life.source_messages] == ["u1", "a1", "u2"]
    # Generation 1's Reflector kept it reworded (not verbatim, but close).
    assert kept.kind == "reworded" and kept.generation == 1 and kept.line_number == 1
    assert 0.6 <= kept.similarity < 1.0
    assert kept.text.endswith(T.TEAL_1)
    # Generation 2's reflection dropped it: its time, model and compression come from that row.
    assert dropped.kind == "dropped" and dropped.generation == 2 and life.dropped_in == 2
    assert dropped.at == T.REFLECTED_AT[2]
    assert dropped.model == T.MODELS[2]
    assert dropped.tokens_before == T.TOKENS[1]
    assert dropped.tokens_after == tokens.count_observations(T.GEN2)  # the Reflector's output, estimated
    assert dropped.compression == round(T.TOKENS[1] / tokens.count_observations(T.GEN2), 3)
    # Messages that mention it, observed or not: u1 is before the cursor (10:00:05), u4 after it.
    assert [(m.id, m.observed) for m in result.messages] == [("u1", True), ("u4", False)]


def test_a_line_without_marker_is_bounded_by_the_cursors(trace_db):
    with MemoryStore.open(trace_db) as store:
        life, = trace_fact(store, T.THREAD, "jazz").lifelines
    # SEG1 has no marker: it covers what came after the previous cycle's cursor (u2, 10:00:02)
    # up to its own boundary (a3, 10:00:05): a2 (its text after c1's end marker was not yet
    # observed), u3 and a3.
    assert life.source == "cursor" and life.cycle_id is None
    assert [m.id for m in life.source_messages] == ["a2", "u3", "a3"]
    assert [s.kind for s in life.steps] == ["first", "verbatim", "verbatim"]
    assert life.dropped_in is None


def test_fuzzy_and_word_matches():
    assert match_text("teal", "colour is Teal.").kind == "phrase"
    assert match_text("Zurich cafe", "café opening in Zürich").kind == "words"
    fuzzy = match_text("teel", "favourite colour is teal")
    assert fuzzy is not None and fuzzy.kind == "fuzzy" and 0.7 < fuzzy.score < 1
    assert match_text("purple", "favourite colour is teal") is None


def test_fuzzy_query_finds_the_line(trace_db):
    with MemoryStore.open(trace_db) as store:
        result = trace_fact(store, T.THREAD, "teel")
    assert [ll.text for ll in result.lifelines] == [T.TEAL_0]
    assert result.lifelines[0].match == "fuzzy"


def test_unknown_thread_and_empty_query_are_refused(trace_db):
    with MemoryStore.open(trace_db) as store:
        with pytest.raises(TraceError):
            trace_fact(store, "nope", "teal")
        with pytest.raises(TraceError):
            trace_fact(store, T.THREAD, "  ")


@pytest.mark.parametrize("name,thread", [("support", "support-1"), ("support", "support-5"),
                                         ("buffered", "long-run"), ("collab", "doc_42")])
def test_fixtures_every_high_priority_line_of_generation_0_is_dropped_where_the_logs_say(fixture_db, name, thread):
    """Expected from first principles: the first later generation whose log no longer holds the line's text."""
    with MemoryStore.open(fixture_db(name)) as store:
        gens = list(reversed(store.om_history(f"thread:{thread}")))
        assert len(gens) >= 2
        high = [ln for ln in parse_log(gens[0].active_observations).observations if ln.priority is Priority.HIGH]
        assert high
        dropped_somewhere = 0
        for ln in high:
            text = ln.text.strip()
            expected = next((g.generation_count for g in gens[1:] if text not in g.active_observations), None)
            result = trace_fact(store, thread, text)
            life = next(ll for ll in result.lifelines if ll.first.generation == 0 and ll.text == text)
            assert life.dropped_in == expected, text
            if expected is not None:
                dropped_somewhere += 1
                step = life.steps[-1]
                gen = next(g for g in gens if g.generation_count == expected)
                assert (step.kind, step.record_id) == ("dropped", gen.id)
                assert step.at == (gen.get("lastReflectionAt") or gen.created_at)
        assert dropped_somewhere, "the fixture drops at least one high-priority line"


def test_buffered_chunks_name_the_messages_their_activation_marker_counts(fixture_db):
    """Each activated chunk's lines are traced to as many messages as its marker's messagesActivated."""
    from studio.engine.events import extract_markers

    with MemoryStore.open(fixture_db("buffered")) as store:
        markers = [m for m in extract_markers(store.list_messages("long-run")) if m.type == "data-om-activation"
                   and m.data.get("operationType") == "observation" and m.data.get("generationCount") == 0]
        assert len(markers) >= 3
        for marker in markers[:4]:
            first_line = next(ln for ln in parse_log(marker.data["observations"]).observations)
            result = trace_fact(store, "long-run", first_line.text.strip())
            life = next(ll for ll in result.lifelines if ll.text == first_line.text.strip())
            assert life.source == "markers" and life.cycle_id == marker.cycle_id
            assert len(life.source_messages) == marker.data["messagesActivated"]


def test_without_om_messages_are_still_listed_with_no_observed_state(fixture_db):
    with MemoryStore.open(fixture_db("history")) as store:
        thread = store.list_threads()[0]
        assert store.lookup_key_for_thread(thread) is None
        result = trace_fact(store, thread.id, "Careful engineering")
    assert result.lifelines == [] and result.generations == 0
    assert result.messages and all(m.observed is None for m in result.messages)


def test_numbers_are_whole_words_and_never_fuzzy():
    # First principles: "7.2" is one number; a text holding "7" and "2" apart (or "7.21", "2.7") does
    # not mention it, and a number one digit off is another number, not a typo.
    assert match_text("Obs 7.2", "Obs 8.2: detail 7 (v2.7), due day 2") is None
    assert match_text("Obs 7.2", "Obs 7.21: detail") is None
    assert match_text("7.2", "detail 17.2 and 7.2.5") is None
    assert match_text("Obs 7.2", "Obs 7.2, then Obs 8.1").kind == "phrase"
    assert match_text("teal", "two teals").kind == "phrase"  # words still match inside longer words
    assert match_text("Obs 7.2", "obs here, and 7.2 there.").kind == "words"
    assert match_text("7.2", "version v7.2.").kind == "phrase"
    assert match_text("2,125 tokens", "tokens: 2,125 in total").kind == "words"
    assert match_text("2,125 tokens", "tokens: 2,128 in total") is None
    assert match_text("2125 tokens", "tokens: 2126 in total") is None


def test_support_trace_of_obs_7_2_matches_only_messages_that_say_it(fixture_db):
    # The Observer wrote "Obs 7.2: ..." into generation 0 of support-1 (cycle marker on 319a18d0…).
    # First principles: a message matches only if its text holds "obs" and the number "7.2"; no
    # message text of support-1 holds "7.2" at all (its other observation messages hold "Obs 7.1",
    # "Obs 8.2", "v2.7" ...), so none may match, while the line itself is a phrase match.
    with MemoryStore.open(fixture_db("support")) as store:
        texts = {m.id: m.text for m in store.list_messages("support-1")}
        result = trace_fact(store, "support-1", "Obs 7.2")
    assert not any(" 7.2" in t for t in texts.values())
    assert [m.id for m in result.messages] == []
    life, = result.lifelines
    assert life.text.startswith("Obs 7.2:") and life.match == "phrase"
    assert life.marker_message_id.startswith("319a18d0")

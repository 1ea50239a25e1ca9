"""The observation and activation writes from first principles, and the `activate` / `observe` commands.

Parity with real Mastra is tested in tests/interop/test_observe_interop.py; here each expected
value follows from the rule stated beside it (mastra-corpus README, "Observation and activation
writes") applied to the fixture's stored values.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import libsql
import pytest

from studio.app.observation import parse_multi_thread_answer, parse_observer_answer
from studio.common.om_settings import activation_chunk_count
from studio.engine.observe_window import observation_window
from studio.engine.tokens import count_observations, stamp_estimates
from studio.errors import WriteRefused
from studio.store import open_store
from studio.store.write.activation import activate_buffered
from studio.store.write.observation import ObserverOutput, commit_observation
from studio.store.write.om_messages import filter_for_persistence
from tests.conftest import copy_fixture
from tests.interop.conftest import file_state
from tests.observe_cases import above_everything, observable_copy, oracle_status, raw_thread_title

OBS = "Date: Dec 1, 2026\n* 🔴 (09:00) First-principles fact.\n* 🟡 (09:05) Another one."


def _set(path, sql, params=()):
    conn = libsql.connect(f"file:{path}")
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "studio", *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


# -- the chunk-count rule ----------------------------------------------------------------------

def test_chunk_count_readme_example_takes_one_chunk():
    # pending 3822, chunks 2112 + 1144, floor 800 (4000 × (1 − 0.8)): target 3022; both chunks (3256)
    # would leave 566 < min(1000, 800); one chunk leaves 1710: one chunk.
    chunks = [{"messageTokens": 2112}, {"messageTokens": 1144}]
    assert activation_chunk_count(chunks, 3822, 4000, 0.8, False) == 1


def test_chunk_count_takes_the_over_boundary_when_it_leaves_enough():
    # floor 2000 (10000 × 0.2): target 6000; cumulative 3000, 6500 (overshoot 500 ≤ 1900, leaves 1500 ≥ 1000)
    chunks = [{"messageTokens": 3000}, {"messageTokens": 3500}, {"messageTokens": 1000}]
    assert activation_chunk_count(chunks, 8000, 10000, 0.8, False) == 2


def test_chunk_count_absolute_activation_and_no_chunks():
    # bufferActivation 3000 ≥ 1000: retention 3000 of 10000 → ratio 0.7, floor 3000; pending 9000 → target
    # 6000: cumulative 6000 reaches it exactly and leaves 3000 ≥ 1000.
    chunks = [{"messageTokens": 2000}, {"messageTokens": 4000}, {"messageTokens": 3000}]
    assert activation_chunk_count(chunks, 9000, 10000, 3000, False) == 2
    assert activation_chunk_count([], 9000, 10000, 0.8, False) == 0


def test_chunk_count_force_max_ignores_the_overshoot_limit():
    # floor 30000 (100000 × (1 − 0.7)), pending 50000: target 20000. Cumulative 5000 (under), 48800 (over:
    # overshoot 28800 > 0.95 × 30000 = 28500, leaves 1200 ≥ min(1000, floor)). Without force the under
    # boundary (leaves 45000) wins; with pending ≥ blockAfter the over boundary is taken.
    chunks = [{"messageTokens": 5000}, {"messageTokens": 43800}]
    assert activation_chunk_count(chunks, 50000, 100000, 0.7, False) == 1
    assert activation_chunk_count(chunks, 50000, 100000, 0.7, True) == 2


# -- the observation write ---------------------------------------------------------------------

def test_observation_extends_the_log_cursor_and_counts(tmp_path):
    path, thread_id = observable_copy("support", tmp_path)   # a window at observe()'s threshold
    window = observation_window(path, thread_id)
    assert window.meets
    before = window.record
    newest = max(window.messages, key=lambda m: m["createdAt"])
    row = commit_observation(path, window, ObserverOutput(OBS, "- Primary: x", None, "New observed title"))
    boundary = f"\n\n--- message boundary ({newest['createdAt']}) ---\n\n"
    assert row["activeObservations"] == before.active_observations + boundary + OBS
    assert row["lastObservedAt"] == newest["createdAt"]
    assert row["pendingMessageTokens"] == 0
    assert row["observationTokenCount"] == count_observations(row["activeObservations"])
    assert row["totalTokensObserved"] == int(before.columns["totalTokensObserved"]) + row["observationTokenCount"]
    assert json.loads(row["observedMessageIds"]) == list(before.observed_message_ids) + window.message_ids
    assert row["generationCount"] == before.generation_count and row["id"] == before.id  # in place
    with open_store(path) as store:
        thread = store.get_thread(thread_id)
        om = thread.metadata["mastra"]["om"]
        assert thread.title == "New observed title"
        assert om["currentTask"] == "- Primary: x" and "suggestedResponse" not in om
        assert om["lastObservedMessageCursor"] == {"createdAt": newest["createdAt"], "id": newest["id"]}
        last_assistant = [m for m in store.list_messages(thread_id) if m.role == "assistant"][-1]
        types = [p.get("type") for p in last_assistant.parts[-3:]]
        assert types == ["data-om-observation-start", "data-om-thread-update", "data-om-observation-end"]
        end = last_assistant.parts[-1]["data"]
        assert end["observations"] == OBS and end["observationTokens"] == count_observations(OBS)
        assert end["tokensObserved"] == window.tokens
        # the support records have observation.threadTitle on: the title is an extracted value too, after the task
        assert window.record.config["observation"]["threadTitle"] is True
        assert list(end["extractedValues"].items()) == [("current-task", "- Primary: x"),
                                                        ("thread-title", "New observed title")]
        assert om["threadTitle"] == "New observed title"


def test_pinned_title_is_kept_and_no_update_marker(tmp_path):
    path, thread_id = observable_copy("support", tmp_path)
    _set(path, "UPDATE mastra_threads SET metadata = jsonb(json_set(json(metadata), '$.titlePinned', json('true'))) "
               "WHERE id = ?", (thread_id,))
    title = raw_thread_title(path, thread_id)
    assert title != "A pinned thread's new title"
    window = observation_window(path, thread_id)
    commit_observation(path, window, ObserverOutput(OBS, None, None, "A pinned thread's new title"))
    with open_store(path) as store:
        assert store.get_thread(thread_id).title == title
        last_assistant = [m for m in store.list_messages(thread_id) if m.role == "assistant"][-1]
        assert [p.get("type") for p in last_assistant.parts[-2:]] == ["data-om-observation-start",
                                                                     "data-om-observation-end"]


def test_below_threshold_needs_force_and_leaves_the_file(tmp_path):
    path = copy_fixture("support", tmp_path)
    window = observation_window(path, "support-1")
    _set(path, 'UPDATE mastra_observational_memory SET "pendingMessageTokens" = 0 WHERE id = ?', (window.record.id,))
    window = observation_window(path, "support-1")
    assert window.tokens < window.threshold and not window.meets  # Mastra's own status: below (shouldObserve false)
    assert oracle_status("support")["support-1"][1]["shouldObserve"] is False
    state = file_state(path)
    with pytest.raises(WriteRefused) as err:
        commit_observation(path, window, ObserverOutput(OBS))
    assert err.value.reason == "invalid"
    assert file_state(path) == state
    assert commit_observation(path, window, ObserverOutput(OBS), force=True)["pendingMessageTokens"] == 0


def test_activation_moves_the_chunks(tmp_path):
    path = copy_fixture("buffered", tmp_path)
    with open_store(path) as store:
        before = store.om_current("thread:long-run")
    while before.buffered_chunks:
        chunks = before.buffered_chunks
        # how many: the chunk-count rule above, with the record's settings (README: pending = the stored
        # pendingMessageTokens, or the chunks' own total when that is 0; force past blockAfter)
        cfg = before.config["observation"]
        pending = before.get_int("pendingMessageTokens") or sum(c["messageTokens"] for c in chunks)
        n = activation_chunk_count(chunks, pending, cfg["messageTokens"], cfg["bufferActivation"],
                                   pending >= cfg["blockAfter"])
        moved, rest = chunks[:n], chunks[n:]
        result = activate_buffered(path, thread_id="long-run", lookup_key="thread:long-run",
                                   stamp_estimates=stamp_estimates)
        row = result["row"]
        assert row["activeObservations"] == (before.active_observations + f"\n\n--- message boundary "
                                             f"({moved[-1]['lastObservedAt']}) ---\n\n"
                                             + "\n\n".join(c["observations"] for c in moved))
        assert row["observationTokenCount"] == before.observation_token_count + sum(c["tokenCount"] for c in moved)
        assert row["pendingMessageTokens"] == max(0, before.get_int("pendingMessageTokens")
                                                  - sum(c["messageTokens"] for c in moved))
        stored = json.loads(row["bufferedObservationChunks"]) if row["bufferedObservationChunks"] else None
        assert stored == (rest or None) and row["lastBufferedAtTokens"] == 0
        assert row["totalTokensObserved"] == before.columns["totalTokensObserved"]  # activation never adds to it
        assert result["chunks_after"] == len(rest)
        with open_store(path) as store:
            before = store.om_current("thread:long-run")
    with pytest.raises(WriteRefused) as err:  # nothing left
        activate_buffered(path, thread_id="long-run", lookup_key="thread:long-run", stamp_estimates=stamp_estimates)
    assert err.value.reason == "not-found"


# -- the commands --------------------------------------------------------------------------------

def test_activate_command_exit_codes(tmp_path):
    path = copy_fixture("buffered", tmp_path)
    assert _cli("activate", path, "--thread", "nope", "--yes").returncode == 2
    state = file_state(path)
    done = _cli("activate", path, "--thread", "long-run")  # not a terminal, no --yes
    assert done.returncode == 2 and "--yes" in done.stderr
    _set(path, 'UPDATE mastra_observational_memory SET "isBufferingObservation" = 1, "updatedAt" = ?',
         (time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),))
    state = file_state(path)
    busy = _cli("activate", path, "--thread", "long-run", "--yes", "--json")
    assert busy.returncode == 3 and json.loads(busy.stdout)["activated"] is False
    assert file_state(path) == state
    _set(path, 'UPDATE mastra_observational_memory SET "isBufferingObservation" = 0, "updatedAt" = ?',
         ("2026-11-29T20:42:31.691Z",))
    with open_store(path) as store:
        chunks_before = len(store.om_current("thread:long-run").buffered_chunks)
    ok = _cli("activate", path, "--thread", "long-run", "--yes", "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    with open_store(path) as store:
        chunks_left = len(store.om_current("thread:long-run").buffered_chunks)
    assert doc["activated"] is True and doc["chunks_after"] == chunks_left < chunks_before and doc["backup"]


def test_observe_command_dry_run_and_write(tmp_path):
    path, thread_id = observable_copy("support", tmp_path / "db")
    answer = tmp_path / "answer.txt"
    answer.write_text(f"<observations>\n{OBS}\n</observations>\n<thread-title>Via the CLI</thread-title>\n",
                      encoding="utf-8")
    state = file_state(path)
    dry = _cli("observe", path, "--thread", thread_id, "--answer-file", answer, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["window"]["meets"] is True and file_state(path) == state
    done = _cli("observe", path, "--thread", thread_id, "--answer-file", answer, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["observed"] is True
    with open_store(path) as store:
        assert store.get_thread(thread_id).title == "Via the CLI"
    # the same window again: nothing unobserved now
    assert _cli("observe", path, "--thread", thread_id, "--answer-file", answer, "--yes").returncode == 2


def test_observe_command_with_the_rule_based_observer(tmp_path):
    # offline: one dated, labelled line per unobserved message, written as Mastra writes an observation
    # (the log gains a boundary then the lines; the cursor moves to the window's newest message)
    path, thread_id = observable_copy("support", tmp_path / "db")
    with open_store(path) as store:
        before = store.om_history(f"thread:{thread_id}")[0]
    dry = _cli("observe", path, "--thread", thread_id, "--strategy", "rule-based", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    lines = [line for line in planned["observations"].splitlines() if line.startswith("* ")]
    assert len(lines) == planned["window"]["messages"] and all("[rule-based]" in line for line in lines)
    done = _cli("observe", path, "--thread", thread_id, "--strategy", "rule-based", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    with open_store(path) as store:
        after = store.om_history(f"thread:{thread_id}")[0]
    assert after.id == before.id and after.generation_count == before.generation_count   # updated in place
    assert after.active_observations.startswith(before.active_observations + "\n\n--- message boundary (")
    assert after.active_observations.endswith(planned["observations"])
    assert after.observed_message_ids[-len(planned["window"]["message_ids"]):] == planned["window"]["message_ids"]
    # neither an answer nor a strategy, or both: bad input, nothing written
    assert _cli("observe", path, "--thread", "support-2").returncode == 2


def test_parse_observer_answer_sections():
    # the CLI reads an answer with the engine's parser, whose parity with Mastra's parseObserverOutput
    # is checked live in tests/interop/test_observer_parse_interop.py: sections count at line start only
    from studio.app.failures import BadInput
    from studio.engine.observer_parse import parse_observer_output

    answer = ("<observations>\n* a\n</observations>\n<current-task> t </current-task>\n"
              "<thread-title></thread-title>")
    engine = parse_observer_output(answer)
    parsed = parse_observer_answer(answer)
    assert parsed == ObserverOutput(engine.observations, engine.current_task, engine.suggested_response,
                                    engine.thread_title, engine.extracted)
    assert parsed.observations == "* a" and parsed.current_task == "t" and parsed.extracted == {"current-task": "t"}
    # a record with observation.threadTitle on makes <thread-title> an extractor: read (last one) and extracted
    titled = parse_observer_answer(answer + "\n<thread-title>T2</thread-title>", {"observation": {"threadTitle": True}})
    assert titled.thread_title == "T2" and titled.extracted == {"current-task": "t", "thread-title": "T2"}
    with pytest.raises(BadInput):   # Mastra rejects an answer that repeats one block over and over
        parse_observer_answer("<observations>\n" + "* the same line again and again\n" * 400 + "</observations>")


def test_marker_upsert_filters_the_message_as_message_history_does():
    # MessageHistory.filterMessagesForPersistence: partial-call and updateWorkingMemory invocations dropped,
    # <working_memory> blocks cut out of text (trimmed when changed), other parts untouched.
    content = {"format": 2, "content": "hi <working_memory>x</working_memory> ", "parts": [
        {"type": "text", "text": " a <working_memory>wm</working_memory>b "},
        {"type": "text", "text": " untouched "},
        {"type": "tool-invocation", "toolInvocation": {"state": "partial-call", "toolName": "search"}},
        {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolName": "updateWorkingMemory"}},
        {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolName": "search"}},
        {"type": "text", "text": "open <working_memory>never closed"}]}
    out = filter_for_persistence(content)
    assert out["content"] == "hi"
    assert out["parts"] == [{"type": "text", "text": "a b"}, {"type": "text", "text": " untouched "},
                            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolName": "search"}},
                            {"type": "text", "text": "open <working_memory>never closed"}]
    assert content["parts"][0]["text"] == " a <working_memory>wm</working_memory>b "  # the input is not changed


def test_parse_multi_thread_answer_blocks():
    parsed = parse_multi_thread_answer('<observations><thread id="t1">\n* a\n<thread-title>T one</thread-title>\n'
                                       '</thread><thread id="t2">* b</thread></observations>')
    assert parsed == {"t1": ObserverOutput("* a", None, None, "T one", {}), "t2": ObserverOutput("* b", extracted={})}


def test_observe_command_resource_scope_below_threshold(tmp_path):
    # the record's threshold raised above everything its gate can count, so Mastra would not observe yet
    path = copy_fixture("resource", tmp_path / "db")
    threshold = above_everything(path, "resource", "resource:user-erin")
    answer = tmp_path / "answer.txt"
    answer.write_text('<observations><thread id="res-a">\nDate: Dec 1, 2026\n* 🔴 (09:00) CLI fact\n</thread>'
                      '</observations>\n', encoding="utf-8")
    state = file_state(path)
    below = _cli("observe", path, "--thread", "res-a", "--answer-file", answer, "--yes")
    assert below.returncode == 2 and f"below the {threshold:,}-token threshold" in below.stderr
    assert file_state(path) == state
    done = _cli("observe", path, "--thread", "res-a", "--answer-file", answer, "--yes", "--below-threshold", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    observed = [t["thread_id"] for t in doc["window"]["threads"]]
    assert doc["observed"] is True and "res-a" in observed
    others = [t for t in observed if t != "res-a"]
    assert others, "the case needs a second thread observed with res-a (one without a block in the answer)"
    with open_store(path) as store:
        log = store.om_current("resource:user-erin").active_observations
    for tid in others:  # a thread without a block gets an empty section
        assert f'<thread id="{tid}">\n\n</thread>' in log
    assert '<thread id="res-a">\nDate: Dec 1, 2026\n* 🔴 (09:00) CLI fact\n</thread>' in log


@pytest.mark.parametrize("overwritten", [True, False])
def test_watch_after_an_in_place_write(tmp_path, overwritten):
    """An agent turn that read the row before our commit writes its own copy back: our lines are gone (exit 3).
    A turn that read our row appends to it: nothing is reported."""
    from studio.app.changes import Written, record_changes
    from studio.app.write_protocol import ProtocolOptions, ProtocolOutcome, WriteJob, protocol_steps, run_steps
    from tests.scripted_interaction import ScriptedInteraction

    path, thread_id = observable_copy("support", tmp_path)
    window = observation_window(path, thread_id)
    stale = window.record.active_observations
    row = commit_observation(path, window, ObserverOutput(OBS))
    calls = []

    def agent_turn(seconds):
        if not calls:
            text = stale + "\n\n* 🔴 (10:00) the agent's own line" if overwritten else \
                row["activeObservations"] + "\n\n* 🔴 (10:00) the agent's next observation"
            _set(path, 'UPDATE mastra_observational_memory SET "activeObservations" = ? WHERE id = ?',
                 (text, row["id"]))
        calls.append(seconds)
        time.sleep(min(seconds, 0.05))

    key = f"thread:{thread_id}"
    job = WriteJob(str(path), key, write=lambda _quiet_ms: Written(row, record_changes(key)), in_place=True)
    outcome, told = ProtocolOutcome(), ScriptedInteraction()
    run_steps(protocol_steps(job, ProtocolOptions(watch_ms=500), told, outcome), job, sleep=agent_turn)
    assert calls  # the watch polled at least once after the agent's write
    assert outcome.unrepaired == (1 if overwritten else 0)
    assert [f["kind"] for f in outcome.overtaken] == (["observation-overwritten"] if overwritten else [])
    assert [kind for kind, _text in told.asked] == (["inform"] if overwritten else [])


def test_the_records_extractors_decide_the_extracted_values(tmp_path):
    """Mastra's composeObservationExtractors, as the record stores it (`observation.extractors`): the built-in
    current-task, suggested-response, thread-title (with threadTitle on), then inline user extractors, whose
    values go to `mastra.om.extracted.<slug>` (their default metadataKeyPath); the end marker lists every value
    in that order, an `<extracted-values>` JSON block's values first."""
    from studio.common.om_settings import observer_extractors

    assert [e.slug for e in observer_extractors({})] == ["current-task", "suggested-response"]
    assert [e.slug for e in observer_extractors({"observation": {"threadTitle": True}})] == [
        "current-task", "suggested-response", "thread-title"]
    stored = [{"slug": "current-task", "mode": "inline", "metadataKeyPath": "currentTask"},
              {"slug": "topic", "mode": "structured"}, {"slug": "mood", "mode": "inline"},
              {"slug": "ping", "mode": "hook", "metadataKeyPath": False}]
    assert [(e.slug, e.metadata_key_path) for e in observer_extractors({"observation": {"extractors": stored}})] == [
        ("current-task", "currentTask"), ("mood", "extracted.mood")]

    path, thread_id = observable_copy("support", tmp_path)
    mood = json.dumps({"slug": "mood", "mode": "inline"})   # appended to the stored list: after the built-ins
    _set(path, "UPDATE mastra_observational_memory SET config = json_insert(config, '$.observation.extractors[#]', "
               "json(?)) WHERE \"lookupKey\" = ?", (mood, f"thread:{thread_id}"))
    window = observation_window(path, thread_id)
    answer = (f"<observations>\n{OBS}\n</observations>\n<mood>calm</mood>\n<thread-title>Mood thread</thread-title>\n"
              '<extracted-values>{"suggested-response": " Ask how it went "}</extracted-values>')
    from studio.engine.observer import parse_answer

    commit_observation(path, window, parse_answer(window, answer))
    with open_store(path) as store:
        om = store.get_thread(thread_id).metadata["mastra"]["om"]
        end = [m for m in store.list_messages(thread_id) if m.role == "assistant"][-1].parts[-1]["data"]
    assert list(end["extractedValues"].items()) == [("suggested-response", " Ask how it went "),
                                                    ("thread-title", "Mood thread"), ("mood", "calm")]
    assert end["suggestedResponse"] == "Ask how it went" and "currentTask" not in end   # the hints are trimmed
    assert om["suggestedResponse"] == " Ask how it went "   # the metadata takes the extractor's value as it came
    assert om["threadTitle"] == "Mood thread" and om["extracted"]["mood"] == "calm" and "currentTask" not in om

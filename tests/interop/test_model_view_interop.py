"""`context --json`'s model_view equals what real Mastra gave the model, turn by turn (the prompt log).

Corpora are generated here with MC_PROMPT_LOG (tests/interop/prompt_log.py): every main-agent
call is one turn; its observation block (rendered: relative dates, sub-bullets, chunks), current
task, suggested response and messages (the continuation reminder by kind) must equal the
studio's model view of that turn. Thread scope (`support`, synchronous observation and
reflection), buffered activation (`buffered`), and a token-limited message history without OM
(`limiter`: `lastMessages: 20`, code, passed as the agent has it; the trim boundary replayed from
the rows, its newest state equal to the stored `memoryTokenLimiter`).

At a turn whose step 0 ran a synchronous observation followed by a reflection the task and
suggestion came from the Reflector and are not kept in the rows: the view says their source is
unknown (text None) instead of guessing, and the test compares only that. On the wall clock turns
overlapped now and then (a call ending with the previous turn's reply, saved after this turn's
input); the corpora are generated under the corpus's virtual clock (timestamps in call order), where
none does, and only `buffered` keeps an allowance shaped for it.
"""

from __future__ import annotations

import itertools

import pytest

from studio.app.trace import context_document, without_om
from studio.engine.context import thread_turns
from studio.engine.events import REFLECTION
from studio.engine.timeline import build_timeline
from studio.store import open_store
from tests.prompt_log import generate, last_user_text, logged_view, studio_view, text_of


def _compare(db, calls, last_messages: int | None = None) -> tuple[int, dict, set]:
    """Return (turns compared, {(thread, turn): differing keys}, {(thread, turn) run after a sync reflection})."""
    diffs, reflected = {}, set()
    with open_store(str(db)) as store, store.snapshot():
        users = {}
        for thread in store.list_threads():
            for m in store.list_messages(thread.id):
                if m.role == "user":
                    users.setdefault(text_of(m.content), []).append(m)
        timelines = {}
        for call in calls:
            [message] = users[last_user_text(call)]
            tid = message.thread_id
            if without_om(store, tid):
                turn = [m.id for m in store.list_messages(tid) if m.role == "user"].index(message.id) + 1
            else:
                tl = timelines.get(tid) or timelines.setdefault(tid, build_timeline(store, tid))
                turn = [tl.messages[i].id for _, i in thread_turns(tl, tid)].index(message.id) + 1
            doc = context_document(store, tid, turn, last_messages=last_messages)
            if any(e["type"] == REFLECTION for e in doc.get("events", [])):
                reflected.add((tid, turn))
            want, got = logged_view(call), studio_view(doc["model_view"])
            for key in ("current_task", "suggested_response"):
                if (doc["model_view"][key]["source"] or {}).get("kind") == "unknown":
                    assert got[key] is None
                    want[key] = None
            diff = [k for k in want if want[k] != got[k]]
            if diff:
                diffs[(tid, turn)] = diff
    return len(calls), diffs, reflected


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("model-view")


def test_thread_scope_every_turn_equals_the_prompt_log(mastra_corpus, corpus_dir):
    db, calls = generate(mastra_corpus, corpus_dir, "support")
    count, diffs, reflected = _compare(db, calls)
    assert count == 58 and reflected  # the corpus's support scenario: 58 turns, three synchronous reflections
    # generated under the corpus's virtual clock (tests/prompt_log.generate), so no turn depends on timing
    assert diffs == {}, diffs
    with_observations = [c for c in calls if logged_view(c)["observations"]]
    assert len(with_observations) > 20 and any("(today)" in logged_view(c)["observations"] for c in with_observations)
    # after a reflection the model kept an older cycle's marker message (its parts after the marker)
    assert any(len(logged_view(c)["messages"]) == 3 and logged_view(c)["messages"][1]["role"] == "assistant"
               for c in calls)


def test_buffered_activation_every_turn_equals_the_prompt_log(mastra_corpus, corpus_dir):
    db, calls = generate(mastra_corpus, corpus_dir, "buffered")
    count, diffs, _ = _compare(db, calls)
    assert count == len(calls) > 30
    # The buffered scenario's turns may overlap (timing-dependent, corpus README): a call then ends
    # with the previous turn's reply, which arrived after this turn's input. Those calls only.
    overlapping = {c["seq"] for c in calls if c["messages"][-1]["role"] == "assistant"}
    assert len(overlapping) <= 5
    assert all(keys == ["messages"] for keys in diffs.values()) and len(diffs) <= len(overlapping), diffs


def test_token_limited_history_every_turn_equals_the_prompt_log(mastra_corpus, corpus_dir):
    db, calls = generate(mastra_corpus, corpus_dir, "limiter")
    count, diffs, _ = _compare(db, calls, last_messages=20)
    assert diffs == {} and count == len(calls) > 10
    windows = [len(c["messages"]) for c in calls]
    assert any(b < a for a, b in itertools.pairwise(windows)), "the budget never trimmed: no test"
    with open_store(str(db)) as store, store.snapshot():
        docs = [context_document(store, t.id, 1, last_messages=20) for t in store.list_threads()]
    trimmed = [d for d in docs if d["stored_boundary"]]
    assert trimmed and all(d["boundary_matches"] for d in trimmed)


def test_resource_scope_tasks_and_messages_equal_the_prompt_log(mastra_corpus, corpus_dir):
    # Resource scope: the model's messages are the resource's unobserved messages, every thread's, in
    # time order, and each thread has its own task and suggestion (a value another thread's cycle may
    # have rewritten is "unknown"). The observation block is rebuilt from the record by the end
    # markers: a later cycle merges its lines into the existing <thread> sections (studio.engine.
    # resource_view), and a step-0 observation removes what the record says it observed.
    db, calls = generate(mastra_corpus, corpus_dir, "resource")
    count, diffs, reflected = _compare(db, calls)
    assert count == len(calls) > 15
    assert diffs == {}, diffs
    assert reflected  # a step-0 observation followed by a reflection (only the turn's input stays)
    assert any(len({m.get("text", "")[:30] for m in logged_view(c)["messages"]}) > 4 for c in calls)
    blocks = [logged_view(c)["observations"] for c in calls if logged_view(c)["observations"]]
    assert any("<thread id=" in b for b in blocks)

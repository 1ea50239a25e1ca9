"""The model view's rendering (Mastra's context rendering, @mastra/memory 1.31.0) and a thread without OM.

Rendering expectations are worked out by hand from Mastra's rules (studio/engine/model_view.py's
docstring); the message history of `limiter` is compared with the prompt log the corpus recorded
with it (../shared/fixtures/mastra/limiter.prompts.jsonl).
"""

from __future__ import annotations

from datetime import UTC, datetime

from studio.app.trace import context_document
from studio.engine.model_view import add_relative_times, optimize_for_context, relative_time, render_observations
from studio.store import open_store
from tests.conftest import FIXTURES, copy_fixture
from tests.prompt_log import last_user_text, logged_view, main_calls, studio_view, text_of

NOW = datetime(2026, 12, 4, 15, 30, tzinfo=UTC)


def test_the_log_is_shortened_as_mastra_shortens_it():
    log = "* 🔴 (09:00) Kept red\n* 🟡 (09:05) Medium [tag, other]\n  * -> sub-bullet\n\n\n\n[O3] anchored"
    assert optimize_for_context(log) == "* 🔴 (09:00) Kept red\n* (09:05) Medium \n * sub-bullet\n\nanchored"


def test_dates_are_annotated_relative_to_the_turn():
    assert relative_time(datetime(2026, 12, 4, tzinfo=UTC), NOW) == "today"
    assert relative_time(datetime(2026, 12, 3, tzinfo=UTC), NOW) == "yesterday"
    assert relative_time(datetime(2026, 11, 13, tzinfo=UTC), NOW) == "3 weeks ago"
    assert relative_time(datetime(2026, 12, 20, tzinfo=UTC), NOW) == "in 2 weeks"
    text = "Date: Nov 1, 2026\n* a\nDate: Dec 4, 2026\n* plans to move (meaning Nov 20, 2026)"
    assert add_relative_times(text, NOW) == ("Date: Nov 1, 2026 (1 month ago)\n* a\n\n[1 month later]\n\n"
                                             "Date: Dec 4, 2026 (today)\n* plans to move "
                                             "(meaning Nov 20, 2026 - 2 weeks ago, likely already happened)")


def test_message_boundaries_split_the_block_into_chunks():
    log = "Date: Dec 4, 2026\n* one\n\n--- message boundary (2026-12-04T10:00:00.000Z) ---\n\nDate: Dec 4, 2026\n* two"
    assert render_observations(log, NOW) == "Date: Dec 4, 2026 (today)\n* one\nDate: Dec 4, 2026 (today)\n* two"
    assert render_observations("  \n", NOW) is None


def test_a_token_limited_history_equals_the_recorded_prompts(tmp_path):
    db = copy_fixture("limiter", tmp_path)
    calls = main_calls(FIXTURES / "limiter.prompts.jsonl")
    with open_store(str(db)) as store, store.snapshot():
        users = {text_of(m.content): m for t in store.list_threads() for m in store.list_messages(t.id)
                 if m.role == "user"}
        for call in calls:
            message = users[last_user_text(call)]
            turn = [m.id for m in store.list_messages(message.thread_id) if m.role == "user"].index(message.id) + 1
            doc = context_document(store, message.thread_id, turn, last_messages=20)
            assert doc["scope"] == "history"
            assert studio_view(doc["model_view"]) == logged_view(call), (message.thread_id, turn)
        trimmed = [context_document(store, t.id, 1) for t in store.list_threads()]
    assert any(d["stored_boundary"] and d["boundary_matches"] for d in trimmed)


def test_working_memory_comes_first_and_says_it_is_the_newest_value(tmp_path):
    # collab: gen.mjs writes doc_42's thread working memory after its turns, and none for room_7
    from studio.engine.model_view import view_rows, view_text

    db = copy_fixture("collab", tmp_path)
    with open_store(str(db)) as store, store.snapshot():
        stored = store.get_thread("doc_42").working_memory
        doc = context_document(store, "doc_42", 1)
        room = context_document(store, "room_7", 1)
    wm = doc["model_view"]["working_memory"]
    assert stored and wm["text"] == stored and wm["exactness"] == "latest"
    assert wm["source"] == {"kind": "thread-working-memory", "thread_id": "doc_42"} and wm["tokens"]["exact"] > 0
    first = view_rows(doc["model_view"])[0]
    assert first[0] == "Working memory (newest value)" and first[1] == wm["tokens"]["estimate"]
    assert "thread doc_42's working memory" in first[3] and "may have seen another" in first[3]
    assert view_text(doc["model_view"]).startswith("[working memory (the newest value")
    assert room["model_view"]["working_memory"] == {"text": None, "tokens": {"estimate": 0, "exact": 0},
                                                    "source": None, "exactness": "exact"}
    assert not view_rows(room["model_view"])[0][0].startswith("Working memory")

"""On PostgreSQL: a token-limited message history's model view equals real Mastra's prompt log, turn by turn.

The `limiter` scenario (no OM, `lastMessages: 20`, `messageHistory.maxTokens` 1500) is written with
`gen.mjs --store pg --only limiter` and MC_PROMPT_LOG into the session's throwaway server (its own
schema, which no other server test uses); every main-agent call must equal `context`'s model view
of that turn read through the studio's PostgreSQL store, and the replayed trim boundary must end on
the stored `memoryTokenLimiter`.
"""

from __future__ import annotations

import os

from studio.app.trace import context_document
from studio.store import open_store
from tests.prompt_log import last_user_text, logged_view, main_calls, studio_view, text_of
from tests.server.conftest import GEN_TIMEOUT_S, _run


def test_limiter_on_pg_equals_the_prompt_log(pg_corpus, tmp_path, monkeypatch):
    log = tmp_path / "limiter.prompts.jsonl"
    monkeypatch.setitem(os.environ, "MC_PROMPT_LOG", str(log))
    _run(["node", "--import", "./clock.mjs", "gen.mjs", str(tmp_path), "--store", "pg", "--url", pg_corpus.url,
          "--seed", "1", "--only", "limiter"], pg_corpus.corpus, GEN_TIMEOUT_S)
    calls = main_calls(log)
    assert len(calls) > 10
    with open_store(pg_corpus.target("limiter")) as store, store.snapshot():
        users = {text_of(m.content): m for t in store.list_threads() for m in store.list_messages(t.id)
                 if m.role == "user"}
        for call in calls:
            message = users[last_user_text(call)]
            turn = [m.id for m in store.list_messages(message.thread_id) if m.role == "user"].index(message.id) + 1
            doc = context_document(store, message.thread_id, turn, last_messages=20)
            assert studio_view(doc["model_view"]) == logged_view(call), (message.thread_id, turn)
        docs = [context_document(store, t.id, 1, last_messages=20) for t in store.list_threads()]
    assert any(d["stored_boundary"] for d in docs) and all(d["boundary_matches"] is not False for d in docs)

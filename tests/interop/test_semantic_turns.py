"""What semantic recall brought into each turn, reproduced offline from the stored vectors, equals what the
agent's model was given.

Real Mastra writes the corpus's `semantic` scenario (`gen.mjs --only semantic`) with `MC_PROMPT_LOG` set:
the log holds, per agent turn, exactly the system prompt and messages Mastra gave the model (the corpus
README, "What the model saw"). For each turn, `turn_recall` takes the turn's user message's stored vector
as the query (no embedder) and must predict the turn's messages (the last-messages window plus the
same-thread messages semantic recall added, in createdAt order) and the other threads' messages in the
`<remembered_from_other_conversation>` system block, in Mastra's order. The per-resource options are the
scenario's (README: user-hana topK 3, messageRange 2, resource scope, lastMessages 6; user-ivan topK 2,
messageRange 1, thread scope, lastMessages 4).
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from studio.app.semantic import turn_recall
from studio.app.trace import context_document
from studio.engine.semantic import SemanticConfig
from studio.store import open_store
from tests.interop.conftest import NODE_TIMEOUT_S, install_corpus

OPTIONS = {"user-hana": (SemanticConfig(3, 2, "resource"), 6), "user-ivan": (SemanticConfig(2, 1, "thread"), 4)}
ENTRY = re.compile(r"Message from previous conversation at \d{1,2}:\d\d [AP]M: (?:User|Assistant): ")


@pytest.fixture(scope="module")
def semantic_run(tmp_path_factory):
    """(database, prompt log lines) of one real Mastra run of the semantic scenario."""
    corpus = install_corpus()
    out = tmp_path_factory.mktemp("semantic-gen")
    log = out / "prompts.jsonl"
    command = ["node", "--import", "./clock.mjs", "gen.mjs", str(out), "--seed", "1", "--only", "semantic"]
    done = subprocess.run(command, cwd=corpus,
                          capture_output=True, text=True, timeout=NODE_TIMEOUT_S * 2,
                          env={**os.environ, "MC_PROMPT_LOG": str(log)})
    assert done.returncode == 0, done.stderr[-2000:]
    return out / "semantic.db", [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _texts(message) -> str:
    parts = message.content.get("parts", []) if isinstance(message.content, dict) else []
    return " ".join(p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text")


def test_every_turn_recalled_what_the_model_saw(semantic_run):
    db, calls = semantic_run
    assert len(calls) == 34 and all(c["kind"] == "main" for c in calls)
    with open_store(str(db)) as store:
        messages = store.select_messages()
        by_id = {m.id: m for m in messages}
        users = {_texts(m): m for m in messages if m.role == "user"}
        seen_other = seen_same = 0
        for n, call in enumerate(calls):
            user = users[call["messages"][-1]["text"]]  # the turn's facts are unique (README)
            config, last = OPTIONS[user.resource_id]
            got = turn_recall(store, user.id, config, last_messages=last)
            assert got["query_exact"]
            predicted = sorted(got["window_ids"] + got["recalled_ids"], key=lambda i: by_id[i].created_at)
            # Mastra's ensureGeminiCompatibleMessages puts a "." user message before a leading assistant one
            shown = [m for i, m in enumerate(call["messages"])
                     if not (i == 0 and m["role"] == "user" and m["text"] == "." and len(call["messages"]) > 1)]
            assert [(by_id[i].role, _texts(by_id[i])) for i in predicted] == \
                [(m["role"], m["text"]) for m in shown], f"turn {n}"
            block = call["system"].split("<remembered_from_other_conversation>")
            entries = [] if len(block) == 1 else [
                re.split(r"\n(?:the following messages are from|<end_remembered_from_other_conversation>)", e)[0]
                for e in ENTRY.split(block[1])[1:]]
            assert entries == [_texts(by_id[i]) for i in got["other_thread_ids"]], f"turn {n}"
            seen_other += len(entries)
            seen_same += len(got["recalled_ids"])
    # the run exercises both kinds of additions
    assert seen_other > 50 and seen_same > 5


def test_context_documents_give_every_turn_what_the_model_saw(semantic_run):
    """`context --json`'s model view at each logged turn: its messages (recalled ones marked) are the logged ones,
    and its other-threads system message is in the logged system prompt verbatim."""
    db, calls = semantic_run
    with open_store(str(db)) as store:
        messages = store.select_messages()
        users = {_texts(m): m for m in messages if m.role == "user"}
        turns = {m.id: n for t in {m.thread_id for m in messages}
                 for n, m in enumerate((u for u in store.list_messages(t) if u.role == "user"), start=1)}
        recalled = blocks = 0
        for n, call in enumerate(calls):
            user = users[call["messages"][-1]["text"]]
            config, last = OPTIONS[user.resource_id]
            doc = context_document(store, user.thread_id, turns[user.id], last_messages=last, semantic=config)
            view = doc["model_view"]
            shown = [m for i, m in enumerate(call["messages"])
                     if not (i == 0 and m["role"] == "user" and m["text"] == "." and len(call["messages"]) > 1)]
            assert [(m["role"], m["text"]) for m in view["messages"]] == \
                [(m["role"], m["text"]) for m in shown], f"turn {n}"
            assert [m["id"] for m in view["messages"] if m.get("recalled")] == \
                [m["id"] for m in doc["semantic_recall"]["recalled"]]
            block = doc["semantic_recall"]["system_message"]
            assert (block is not None) == ("<remembered_from_other_conversation>" in call["system"]), f"turn {n}"
            if block is not None:
                assert block in call["system"], f"turn {n}"
                assert view["remembered"]["text"] == block
                blocks += 1
            recalled += len(doc["semantic_recall"]["recalled"])
    # the previous session's count on this scenario: 22 recalled same-thread messages, 17 turns with the block
    assert (recalled, blocks) == (22, 17)

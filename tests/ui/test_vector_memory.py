"""Thread ▸ Vectors on the `semantic` fixture (real Mastra output, LibSQLVector in the same file).

Expected values: the store's vectors read through studio.app.semantic, itself checked against Mastra's oracle
(tests/cli/test_semantic_recall_cli.py, tests/engine/test_semantic.py) and Mastra's prompt log
(tests/interop/test_semantic_turns.py); the query box against the oracle's recall cases through the hash64
fake embeddings server.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from studio.app.semantic import embedded_messages, similar_messages, turn_recall
from studio.engine.semantic import SemanticConfig
from studio.store import open_store
from tests.semantic_cases import CASES, hash64_server
from tests.ui.vector_steps import open_thread, result_groups, set_options


def _open(studio, studio_ctx, path, thread="sem-lisbon"):
    window, view = open_thread(studio, studio_ctx, path, thread)
    return window, view.vectors_tab


def test_indexes_embedded_messages_and_the_last_turn(studio, studio_ctx, fixture_db):
    path = fixture_db("semantic")
    _window, tab = _open(studio, studio_ctx, path)
    assert tab.indexes_label.text() == ("Vector indexes: memory_messages_64 · 64 dimensions (the corpus's scripted "
                                        "hash64) · 72 vectors · cosine")
    with open_store(str(path)) as store:
        embedded = embedded_messages(store, "sem-lisbon")
        newest_user = [e for e in embedded if e["role"] == "user"][-1]["message_id"]
        turn = turn_recall(store, newest_user, SemanticConfig(), last_messages=10)
        similar = similar_messages(store, newest_user, top_k=8, where={"resource_id": "user-hana"})
    assert tab.embedded.topLevelItemCount() == len(embedded) == 12
    assert tab.embedded.currentItem().data(0, Qt.ItemDataRole.UserRole) == newest_user
    groups = result_groups(tab.results)
    assert [row[0] for row in groups["At this turn: vector hits"]] == [f"{h['score']:.4f}"
                                                                       for h in turn["vector_hits"]]
    assert len(groups["Remembered from other threads"]) == len(turn["other_thread_ids"]) > 0
    assert [row[0] for row in groups["Similar messages"]] == [f"{h.score:.4f}" for h in similar]


def test_options_are_remembered_per_store(studio, studio_ctx, fixture_db):
    path = fixture_db("semantic")
    _window, tab = _open(studio, studio_ctx, path)
    set_options(tab, 3, 2, "thread", 6)
    studio_ctx.runner.wait_idle()
    _again, tab2 = _open(studio, studio_ctx, path)
    assert (tab2.top_k.value(), tab2.message_range.value(), tab2.scope.currentText(), tab2.last_messages.value()) \
        == (3, 2, "thread", 6)
    groups = result_groups(tab2.results)
    assert {row[1].split(" · ")[0] for row in groups["Similar messages"]} == {"sem-lisbon"}


def test_query_box_recalls_as_mastra(studio, studio_ctx, fixture_db, fake_llm):
    hash64_server(fake_llm)
    case = next(c for c in CASES if c["threadId"] == "sem-lisbon" and c["semanticRecall"]["scope"] == "resource"
                and c["perPage"] is None)
    _window, tab = _open(studio, studio_ctx, fixture_db("semantic"))
    tab.top_k.setValue(case["semanticRecall"]["topK"])
    tab.message_range.setValue(case["semanticRecall"]["messageRange"])
    tab.query.setText(case["query"])
    tab.embedder.setText("openai-compatible/hash64")
    tab.base_url.setText(fake_llm.base_url)
    tab.run_query()
    studio_ctx.runner.wait_idle()
    studio_ctx.runner.wait_idle()
    groups = result_groups(tab.results)
    hits = next(v for k, v in groups.items() if k.startswith("Vector hits"))
    assert [row[0] for row in hits] == [f"{r['score']:.4f}" for q in case["vectorQuery"] for r in q["results"]]
    ids = next(v for k, v in groups.items() if k.startswith("Memory.recall's messages"))
    assert [row[2] for row in ids] == case["messageIds"]
    assert [r.path for r in fake_llm.requests] == ["/v1/embeddings"]


def test_wrong_embedder_is_refused_before_any_call(studio, studio_ctx, fixture_db, fake_llm):
    hash64_server(fake_llm)
    _window, tab = _open(studio, studio_ctx, fixture_db("semantic"))
    tab.query.setText("budget for Lisbon")
    tab.embedder.setText("openai/text-embedding-3-small")
    tab.base_url.setText(fake_llm.base_url)
    tab.run_query()
    studio_ctx.runner.wait_idle()
    assert "1536-dimensional" in tab.results_heading.text()
    assert fake_llm.requests == []


def test_store_without_vectors(studio, studio_ctx, fixture_db):
    _window, tab = _open(studio, studio_ctx, fixture_db("support"), thread="support-1")
    assert tab.indexes_label.text().startswith("This store has no vector index")
    assert tab.embedded.topLevelItemCount() == 0


def test_without_a_vector_index_the_controls_are_off_and_say_why(studio, studio_ctx, fixture_db):
    """Before: every option, the query box and Recall were enabled on a store with nothing to recall."""
    _window, tab = _open(studio, studio_ctx, fixture_db("support"), thread="support-1")
    controls = (tab.top_k, tab.message_range, tab.scope, tab.last_messages, tab.query, tab.embedder, tab.base_url,
                tab.recall_button)
    assert not any(widget.isEnabled() for widget in controls)
    assert "the options below are off" in tab.indexes_label.text()
    _window, tab = _open(studio, studio_ctx, fixture_db("semantic"))
    assert all(widget.isEnabled() for widget in (tab.top_k, tab.message_range, tab.scope, tab.last_messages,
                                                 tab.query, tab.embedder, tab.base_url, tab.recall_button))

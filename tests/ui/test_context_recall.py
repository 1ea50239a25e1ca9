"""Context ▸ Semantic recall on the `semantic` fixture (real Mastra output, LibSQLVector in the same file).

Expected values: `context_document` (checked turn by turn against Mastra's prompt log in
tests/interop/test_semantic_turns.py) with the options set in the Vectors tab, rendered by `recall_report`.
"""

from __future__ import annotations

from studio.app.trace import context_document
from studio.engine.model_view import view_rows
from studio.engine.recall_view import recall_report
from studio.engine.semantic import SemanticConfig
from studio.store import open_store
from tests.ui.vector_steps import open_thread, set_options


def _expected(path, thread: str, turn: int, config: SemanticConfig) -> dict:
    with open_store(str(path)) as store:
        return context_document(store, thread, turn, semantic=config)


def test_context_shows_what_the_turn_recalled_with_the_vectors_tab_options(studio, studio_ctx, fixture_db):
    path = fixture_db("semantic")
    _window, view = open_thread(studio, studio_ctx, path, "sem-lisbon", tab="context")
    cv = view.context_view
    assert cv.context is not None and cv.context.turn == 6
    # Mastra's defaults until the Vectors tab says otherwise; the last turn asks about another thread's topic
    doc = _expected(path, "sem-lisbon", 6, SemanticConfig())
    assert cv.recall_text.toPlainText() == recall_report(doc["semantic_recall"], doc["model_view"])
    assert doc["semantic_recall"]["system_message"] in cv.model_text.toPlainText()
    assert [cv.model_table.item(r, 0).text() for r in range(cv.model_table.rowCount())] == \
        [row[0] for row in view_rows(doc["model_view"])]
    assert "Remembered from other conversations" in [row[0] for row in view_rows(doc["model_view"])]
    # the options are the Vectors tab's: changing them there shows the turn again with them
    set_options(view.vectors_tab, 3, 2, "thread", 6)
    studio_ctx.runner.wait_idle()
    doc = _expected(path, "sem-lisbon", 6, SemanticConfig(3, 2, "thread"))
    assert doc["semantic_recall"]["semantic_recall"] == {"topK": 3, "messageRange": 2, "scope": "thread"}
    assert cv.recall_text.toPlainText() == recall_report(doc["semantic_recall"], doc["model_view"])
    assert "Remembered from other conversations: none." in cv.recall_text.toPlainText()


def test_a_turn_recall_brought_messages_into_is_marked(studio, studio_ctx, fixture_db):
    # user-hana's options (corpus README): topK 3, messageRange 2, resource scope, lastMessages 6
    path = fixture_db("semantic")
    config = SemanticConfig(3, 2, "resource")
    with open_store(str(path)) as store:   # the first turn of the fixture where recall added same-thread messages
        found = [(t, n, doc) for t in ("sem-lisbon", "sem-marathon", "sem-postgres", "sem-sourdough")
                 for n in range(1, 1 + sum(1 for m in store.list_messages(t) if m.role == "user"))
                 if (doc := context_document(store, t, n, last_messages=6, semantic=config))["semantic_recall"]
                 and doc["semantic_recall"]["recalled"]]
    thread, turn, doc = found[0]
    _window, view = open_thread(studio, studio_ctx, path, thread, tab="context")
    set_options(view.vectors_tab, 3, 2, "resource", 6)
    cv = view.context_view
    cv.last_messages_box.setValue(6)
    cv.show_turn(turn)
    studio_ctx.runner.wait_idle()
    labels = [cv.model_table.item(r, 0).text() for r in range(cv.model_table.rowCount())]
    assert sum(1 for label in labels if label.endswith("(recalled)")) == len(doc["semantic_recall"]["recalled"]) > 0
    assert cv.recall_text.toPlainText() == recall_report(doc["semantic_recall"], doc["model_view"])

"""File ▸ Vector Store…: Memory's vectors in another database than the one open.

The `semantic` fixture (real Mastra output) split into its storage and its LibSQLVector tables
(tests/vector_rows.py), as LibSQLStore and LibSQLVector write them when their URLs differ. Expected values:
the whole file's, read by the same functions (checked against Mastra's oracle and prompt log elsewhere).
"""

from __future__ import annotations

import pytest

from studio.app.recall_context import load_recall_marks
from studio.app.trace import context_document
from studio.app.vector_store import attached_vector_store
from studio.engine.recall_view import recall_report
from studio.engine.semantic import SemanticConfig
from studio.errors import StoreError
from studio.store import open_store
from studio.ui.widgets import window_loading
from studio.ui.widgets.vector_store_action import _key
from tests.conftest import copy_fixture
from tests.ui.vector_steps import open_thread
from tests.vector_rows import split_vector_store

NO_INDEX = "This store has no vector index"


@pytest.fixture
def split(tmp_path):
    """(whole file, storage file, vector file) of the semantic fixture."""
    whole = copy_fixture("semantic", tmp_path / "whole")
    storage, vectors = tmp_path / "storage.db", tmp_path / "vectors.db"
    split_vector_store(whole, storage, vectors)
    return str(whole), str(storage), str(vectors)


def _recall_text(path: str, turn: int = 6) -> str:
    with open_store(path) as store:
        doc = context_document(store, "sem-lisbon", turn, semantic=SemanticConfig())
    return recall_report(doc["semantic_recall"], doc["model_view"])


def test_attach_remember_and_detach(studio, studio_ctx, split):
    whole, storage, vectors = split
    window, view = open_thread(studio, studio_ctx, storage)
    tab = view.vectors_tab
    assert tab.indexes_label.text().startswith(NO_INDEX) and tab.embedded.topLevelItemCount() == 0
    assert window.vector_store.action.isEnabled()
    window.vector_store.attach(vectors)
    studio_ctx.runner.wait_idle()
    _w, whole_view = open_thread(studio, studio_ctx, whole)
    shown = whole_view.vectors_tab.indexes_label.text()
    assert tab.indexes_label.text() == f"Attached vector store {vectors} · {shown}"
    assert tab.embedded.topLevelItemCount() == whole_view.vectors_tab.embedded.topLevelItemCount() == 12
    # the Context view's recall reads the attached vectors: as on the whole file
    view.set_tab("context")
    studio_ctx.runner.wait_idle()
    assert view.context_view.recall_text.toPlainText() == _recall_text(whole)
    # remembered for this database (a path has no secret to strip), and attached again when it is reopened
    assert studio_ctx.settings.value(_key(storage)) == vectors
    _again, reopened = open_thread(studio, studio_ctx, storage)
    assert reopened.vectors_tab.vector_store == vectors
    assert reopened.vectors_tab.embedded.topLevelItemCount() == 12
    # emptying detaches: the storage's own (no) vectors, and nothing remembered
    window.vector_store.attach(None)
    studio_ctx.runner.wait_idle()
    assert tab.indexes_label.text().startswith(NO_INDEX)
    assert view.context_view.recall_text.toPlainText() == _recall_text(storage)
    assert "no stored vector" in view.context_view.recall_text.toPlainText()
    assert studio_ctx.settings.value(_key(storage)) is None


def test_the_helper_process_attaches_and_detaches(studio, studio_ctx, split, monkeypatch):
    monkeypatch.setattr(window_loading, "HELPER_MIN_MESSAGES", 0)   # every read that can goes to the helper
    whole, storage, vectors = split
    window, view = open_thread(studio, studio_ctx, storage, tab="context")
    assert window.uses_helper and view.context_view.use_helper
    runner = studio_ctx.runner
    in_helper = []

    def ask_helper():
        runner.submit_call(attached_vector_store, helper=True, on_done=in_helper.append)
        runner.wait_idle()
        return in_helper[-1]
    window.vector_store.attach(vectors)
    runner.wait_idle()
    assert runner.helper.pid is not None
    assert view.context_view.recall_text.toPlainText() == _recall_text(whole)
    assert ask_helper() == vectors
    window.vector_store.attach(None)
    runner.wait_idle()
    assert view.context_view.recall_text.toPlainText() == _recall_text(storage)
    assert ask_helper() is None


def test_a_vector_store_that_cannot_be_read_is_said(studio, studio_ctx, split, tmp_path):
    _whole, storage, _vectors = split
    window, view = open_thread(studio, studio_ctx, storage)
    window.vector_store.attach(str(tmp_path / "missing.db"))
    studio_ctx.runner.wait_idle()
    assert view.vectors_tab.indexes_label.text().startswith("The vector memory could not be read")
    assert "missing.db" in view.vectors_tab.indexes_label.text()
    # and the loaders refuse PgVector by name
    with open_store(storage) as store, pytest.raises(StoreError, match="PgVector"):
        load_recall_marks(store, "sem-lisbon", SemanticConfig(), 10, "postgresql://u@127.0.0.1:1/db")

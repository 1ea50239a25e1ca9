"""`memory-studio recall --vector-search` equals Mastra's semantic recall on every case of the `semantic` fixture.

The embedder is a fake OpenAI-compatible `/v1/embeddings` server on 127.0.0.1 implementing the corpus's
`hash64` (tests/hash64.py); the store is a private copy of `semantic.db` (LibSQLVector in the same file).
Expected values: `semantic.oracle.json` (real Mastra's Memory.recall and vector.query results).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from studio.cli import main
from tests.semantic_cases import CASES, assert_case, case_id, hash64_server, run_recall


@pytest.fixture
def semantic_db(fixture_db) -> str:
    return str(fixture_db("semantic"))


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_recall_by_meaning_equals_mastra(semantic_db, fake_llm, case):
    hash64_server(fake_llm)
    doc = run_recall(semantic_db, case, fake_llm.base_url)
    assert_case(doc, case)
    # the path LibSQLVector.query takes: its indexed SQL run here through libSQL itself
    assert doc["vector_search"] == _mastra_path(semantic_db, case)
    # scoring every vector gives the same: the oracle's annEqualsExact
    assert case["annEqualsExact"]
    exact = run_recall(semantic_db, case, fake_llm.base_url, "--exact")
    assert exact["vector_search"] == "exact"
    assert_case(exact, case)
    # the query went to /embeddings once, as Mastra's chunks (one here), with the model id
    assert [(r.path, r.body["model"], r.body["input"]) for r in fake_llm.requests] == \
        [("/v1/embeddings", "hash64", [" ".join(case["query"].split())])] * 2


def _mastra_path(db: str, case: dict) -> str:
    """"ann" when LibSQLVector's indexed query (vector_top_k over topK × 10 candidates, the filter, score > -1)
    returns topK rows for CASE's query, else "exact" (Mastra then scores every row)."""
    import libsql

    from tests.hash64 import hash64

    (query,) = case["vectorQuery"]
    (key, value), = query["filter"].items()
    vector = "[" + ",".join(repr(x) for x in hash64(case["query"])) + "]"
    conn = libsql.connect(db)
    try:
        rows = conn.execute(
            "WITH candidates AS (SELECT t.vector_id AS id, "
            "(1 - vector_distance_cos(t.embedding, vector32(?))) AS score, t.metadata "
            "FROM vector_top_k('memory_messages_64_vector_idx', vector32(?), ?) AS v "
            "JOIN memory_messages_64 AS t ON t.rowid = v.id) SELECT id, score FROM candidates "
            f"WHERE json_extract(metadata, '$.{key}') = ? AND score > -1 ORDER BY score DESC LIMIT ?",
            (vector, vector, query["topK"] * 10, value, query["topK"])).fetchall()
    finally:
        conn.close()
    if len(rows) >= query["topK"]:
        assert [(r[0], r[1]) for r in rows] == [(r["id"], r["score"]) for r in query["results"]]
        return "ann"
    return "exact"


def test_both_paths_are_exercised():
    import shutil
    import tempfile
    from pathlib import Path

    from tests.conftest import FIXTURES

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "semantic.db"
        shutil.copyfile(FIXTURES / "semantic.db", db)
        paths = {_mastra_path(str(db), case) for case in CASES}
    assert paths == {"ann", "exact"}


def _run(args: list[str], capsys) -> tuple[int, dict | None, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(args)
    text = out.getvalue()
    return code, (json.loads(text) if text.strip() else None), capsys.readouterr().err


def test_known_dimension_is_refused_before_any_call(semantic_db, fake_llm, capsys):
    hash64_server(fake_llm)
    code, doc, err = _run(["recall", semantic_db, "--thread", "sem-k8s", "--resource", "user-ivan",
                           "--vector-search", "budget", "--embedder", "openai-compatible/text-embedding-3-small",
                           "--base-url", fake_llm.base_url, "--json"], capsys)
    assert (code, doc) == (2, None)
    assert "1536-dimensional" in err and "memory_messages_64 (64 dimensions)" in err
    assert fake_llm.requests == []


def test_wrong_dimension_answer_is_a_sentence(semantic_db, fake_llm, capsys):
    from tests.fake_llm import Reply

    fake_llm.default = lambda request: Reply(status=200, body={"data": [{"index": 0, "embedding": [0.5] * 8}]})
    code, doc, err = _run(["recall", semantic_db, "--thread", "sem-k8s", "--scope", "thread",
                           "--vector-search", "budget", "--embedder", "openai-compatible/m",
                           "--base-url", fake_llm.base_url, "--json"], capsys)
    assert (code, doc) == (2, None)
    assert "8-dimensional" in err and "Traceback" not in err


def test_resource_scope_needs_a_resource(semantic_db, fake_llm, capsys):
    hash64_server(fake_llm)
    code, doc, err = _run(["recall", semantic_db, "--thread", "sem-k8s", "--vector-search", "budget",
                           "--embedder", "openai-compatible/hash64", "--base-url", fake_llm.base_url, "--json"],
                          capsys)
    assert (code, doc) == (2, None)
    assert "--resource" in err and fake_llm.requests == []


def test_missing_embedder_and_unreachable_embedder(semantic_db, fake_llm, capsys):
    code, _doc, err = _run(["recall", semantic_db, "--thread", "sem-k8s", "--scope", "thread",
                            "--vector-search", "budget", "--json"], capsys)
    assert code == 2 and "--embedder" in err
    code, _doc, err = _run(["recall", semantic_db, "--thread", "sem-k8s", "--scope", "thread",
                            "--vector-search", "budget", "--embedder", "openai-compatible/m",
                            "--base-url", "http://127.0.0.1:9/v1", "--json"], capsys)
    assert code == 1 and "Cannot reach" in err and "Traceback" not in err


def test_context_takes_the_semantic_recall_options(semantic_db, capsys):
    """`context --top-k --message-range --scope` reach the turn's recall; Mastra's defaults without them."""
    from studio.app.trace import context_document
    from studio.engine.semantic import SemanticConfig
    from studio.store import open_store

    base = ["context", semantic_db, "--thread", "sem-lisbon", "--turn", "6", "--json"]
    code, doc, _err = _run([*base, "--top-k", "3", "--message-range", "2", "--scope", "thread",
                            "--last-messages", "6"], capsys)
    code_default, default, _err = _run(base, capsys)
    with open_store(semantic_db) as store:
        assert doc == context_document(store, "sem-lisbon", 6, last_messages=6, semantic=SemanticConfig(3, 2, "thread"))
        assert default == context_document(store, "sem-lisbon", 6, semantic=SemanticConfig(4, 1, "resource"))
    assert (code, code_default) == (0, 0)
    assert doc["semantic_recall"]["semantic_recall"] == {"topK": 3, "messageRange": 2, "scope": "thread"}
    assert len(doc["semantic_recall"]["vector_hits"]) == 3 and len(default["semantic_recall"]["vector_hits"]) == 4
    # resource scope reaches other threads: their messages are the system message's, never the thread's
    assert default["semantic_recall"]["other_threads"] and doc["semantic_recall"]["other_threads"] == []


def test_context_lists_each_hit_on_one_line(semantic_db):
    """The human `context` names every vector hit (score, thread, its stored text on one line cut at 80 characters
    with "…"), in the JSON document's order; the JSON keeps each text whole."""
    from studio.cli.trace import RECALL_HIT_CHARS

    base = ["context", semantic_db, "--thread", "sem-tax", "--turn", "3"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(base) == 0
    out_json = io.StringIO()
    with redirect_stdout(out_json):
        assert main([*base, "--json"]) == 0
    hits = json.loads(out_json.getvalue())["semantic_recall"]["vector_hits"]
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Semantic recall ("))
    shown = lines[start + 1:start + 1 + len(hits)]
    assert len(hits) == 4   # Mastra's default topK
    for line, hit in zip(shown, hits, strict=True):
        score, thread, text = line.split(maxsplit=2)
        flat = " ".join(hit["text"].split())
        assert (score, thread) == (f"{hit['score']:.3f}", hit["thread_id"])
        assert text == flat if len(flat) <= RECALL_HIT_CHARS else text == flat[:RECALL_HIT_CHARS - 1] + "…"
    assert any(line.endswith("…") for line in shown)   # the fixture's hits are longer than a line


@pytest.fixture(scope="module")
def split_semantic(tmp_path_factory) -> tuple[str, str]:
    """(storage file, vector file): the semantic fixture as LibSQLStore and LibSQLVector with different URLs."""
    from tests.conftest import copy_fixture
    from tests.vector_rows import split_vector_store

    folder = tmp_path_factory.mktemp("split-semantic")
    whole = copy_fixture("semantic", folder / "whole")
    storage, vectors = folder / "storage.db", folder / "vectors.db"
    split_vector_store(whole, storage, vectors)
    return str(storage), str(vectors)


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_recall_with_an_attached_vector_store_equals_mastra(split_semantic, semantic_db, fake_llm, case):
    storage, vectors = split_semantic
    hash64_server(fake_llm)
    doc = run_recall(storage, case, fake_llm.base_url, "--vector-store", vectors)
    assert_case(doc, case)
    # the same search path as on the whole file: libSQL's ANN index moved with the vectors
    assert doc["vector_search"] == _mastra_path(semantic_db, case)


def test_context_with_an_attached_vector_store_equals_the_whole_file(split_semantic, semantic_db, capsys):
    storage, vectors = split_semantic
    compared = 0
    for thread, turns in (("sem-lisbon", 6), ("sem-tax", 5), ("sem-notes", 2)):
        for turn in range(1, turns + 1):
            base = ["context", "--thread", thread, "--turn", str(turn), "--json"]
            _c, whole, _e = _run([base[0], semantic_db, *base[1:]], capsys)
            code, split, _e = _run([base[0], storage, *base[1:], "--vector-store", vectors], capsys)
            assert code == 0 and split == whole
            compared += whole["semantic_recall"] is not None
            # sem-notes' messages were saved (Memory.saveMessages: random vector ids), never an agent's turn
            assert whole["semantic_recall"]["agent_turn"] == (thread != "sem-notes")
    assert compared == 13
    # without the vector store the storage file alone knows no vector: no recall, and the refusal names why
    _c, alone, _e = _run(["context", storage, "--thread", "sem-lisbon", "--turn", "6", "--json"], capsys)
    assert alone["semantic_recall"] is None
    code, _doc, err = _run(["recall", storage, "--thread", "sem-lisbon", "--vector-of", "x", "--json",
                            "--vector-store", str(Path(storage).with_name("missing.db"))], capsys)
    assert code != 0 and "missing.db" in err

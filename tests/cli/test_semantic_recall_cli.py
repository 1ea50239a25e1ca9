"""`memory-studio recall --vector-search` equals Mastra's semantic recall on every case of the `semantic` fixture.

The embedder is a fake OpenAI-compatible `/v1/embeddings` server on 127.0.0.1 implementing the corpus's
`hash64` (tests/hash64.py); the store is a private copy of `semantic.db` (LibSQLVector in the same file).
Expected values: `semantic.oracle.json` (real Mastra's Memory.recall and vector.query results).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

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
    # the query went to /embeddings once, as Mastra's chunks (one here), with the model id
    assert [(r.path, r.body["model"], r.body["input"]) for r in fake_llm.requests] == \
        [("/v1/embeddings", "hash64", [" ".join(case["query"].split())])]


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

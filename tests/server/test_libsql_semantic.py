"""Semantic recall over a libSQL server (sqld, Hrana) equals Mastra's on every case of the `semantic` fixture.

The fixture `semantic.db` (real Mastra output, LibSQLVector in the same database) is copied into a throwaway
sqld with the corpus's own `copy.mjs` (schema and rows with their rowids; sqld rebuilds the vector index);
the embedder is the hash64 fake `/v1/embeddings` server on 127.0.0.1. Expected values: `semantic.oracle.json`
(the corpus README: on sqld the semantic oracle equals the file one).
"""

from __future__ import annotations

import subprocess

import pytest

from studio.app.semantic import vector_memory_document
from studio.app.trace import context_document
from studio.engine.semantic import SemanticConfig
from studio.store import open_store
from tests.conftest import FIXTURES
from tests.interop.conftest import install_corpus, run_node
from tests.semantic_cases import CASES, ORACLE, assert_case, case_id, hash64_server, run_recall

#: The fixture's threads (corpus README, "Semantic recall").
ORACLE_THREADS = ["sem-lisbon", "sem-postgres", "sem-sourdough", "sem-marathon", "sem-notes", "sem-k8s", "sem-tax"]


@pytest.fixture(scope="module")
def semantic_server(tmp_path_factory) -> str:
    """A sqld holding a copy of the semantic fixture; its URL."""
    corpus = install_corpus()
    servers = tmp_path_factory.mktemp("sqld-semantic")
    done = subprocess.run(["bash", "servers.sh", "sqld", "start", str(servers), "semantic"], cwd=corpus,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"servers.sh sqld start failed: {done.stderr[-2000:]}")
    url = done.stdout.strip().splitlines()[-1]
    try:
        source = tmp_path_factory.mktemp("semantic-src") / "semantic.db"
        source.write_bytes((FIXTURES / "semantic.db").read_bytes())
        run_node(corpus, "copy.mjs", "fixture", "server", "--store", "libsql-remote", "--url",
                 f"fixture=file:{source},server={url}")
        yield url
    finally:
        subprocess.run(["bash", "servers.sh", "sqld", "stop", str(servers)], cwd=corpus, capture_output=True,
                       timeout=120)


def test_vector_indexes_as_mastra_describes_them(semantic_server):
    with open_store(semantic_server) as store:
        doc = vector_memory_document(store)
    assert [{"indexName": i["index_name"], "dimension": i["dimension"], "count": i["count"], "metric": i["metric"]}
            for i in doc["indexes"]] == ORACLE["vector"]["indexes"]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_recall_by_meaning_over_sqld_equals_mastra(semantic_server, fake_llm, case):
    hash64_server(fake_llm)
    assert_case(run_recall(semantic_server, case, fake_llm.base_url), case)


def _every_turn(target: str, config: SemanticConfig, last: int) -> dict:
    """{(thread, turn): `context --json` document} of every turn of the semantic fixture, at TARGET."""
    out = {}
    with open_store(target) as store:
        for thread in ORACLE_THREADS:
            turns = sum(1 for m in store.list_messages(thread) if m.role == "user")
            for turn in range(1, turns + 1):
                out[thread, turn] = context_document(store, thread, turn, last_messages=last, semantic=config)
    return out


@pytest.mark.parametrize(("config", "last"), [(SemanticConfig(3, 2, "resource"), 6), (SemanticConfig(), None),
                                              (SemanticConfig(2, 1, "thread"), 4)], ids=["hana", "defaults", "ivan"])
def test_turn_recall_over_sqld_equals_the_file(semantic_server, fixture_db, config, last):
    on_file = _every_turn(str(fixture_db("semantic")), config, last)
    assert _every_turn(semantic_server, config, last) == on_file
    recalls = [d["semantic_recall"] for d in on_file.values() if d["semantic_recall"] is not None]
    # the check has something to compare: recall ran on most turns and brought messages in on some
    assert len(recalls) > len(on_file) // 2
    assert any(r["recalled"] or r["other_threads"] for r in recalls)


@pytest.fixture(scope="module")
def storage_only(tmp_path_factory) -> str:
    """The semantic fixture's storage without its vector tables (a file)."""
    from tests.conftest import copy_fixture
    from tests.vector_rows import split_vector_store

    folder = tmp_path_factory.mktemp("semantic-storage")
    storage = folder / "storage.db"
    split_vector_store(copy_fixture("semantic", folder / "whole"), storage, folder / "vectors.db")
    return str(storage)


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_recall_with_the_vector_store_on_sqld_equals_mastra(semantic_server, storage_only, fake_llm, case):
    """Messages from a file, vectors from the server (LibSQLStore and LibSQLVector with different URLs)."""
    hash64_server(fake_llm)
    assert_case(run_recall(storage_only, case, fake_llm.base_url, "--vector-store", semantic_server), case)

"""Semantic recall's arithmetic and the vector reads on the `semantic` fixture (real Mastra output).

Expected values: the corpus README's hash64 test vectors (the test embedder is checked against them and
against all 72 vectors Mastra stored), `semantic.oracle.json` (describeIndex, and `exactTopK`: a brute-force
`1 - vector_distance_cos` ranking libSQL computed over the same rows), and Mastra's chunkText rule stated
in the tests.
"""

from __future__ import annotations

import struct

import pytest

from studio.app.failures import BadInput
from studio.app.semantic import (
    embedded_messages,
    recall_by_meaning,
    similar_messages,
    stored_vector,
    vector_memory_document,
)
from studio.engine.semantic import (
    SemanticConfig,
    chunk_text,
    cosine_scores,
    embedding_matrix,
    query_vector,
    recall_includes,
    vector_query,
)
from studio.errors import EngineError
from studio.store import open_store
from studio.store.vectors import index_name_for, read_vector_rows, vector_indexes
from tests.hash64 import hash64, tokens
from tests.semantic_cases import CASES, ORACLE

INDEX = "memory_messages_64"


@pytest.fixture
def store(fixture_db):
    with open_store(str(fixture_db("semantic"))) as s:
        yield s


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def test_hash64_matches_the_readme_test_vectors():
    v = hash64("Marathon plan: peak at 68 km per week in August, taper for 3 weeks.")
    assert tokens("Marathon plan: peak at 68 km per week in August, taper for 3 weeks.") == \
        ["marathon", "plan", "peak", "68", "km", "per", "week", "august", "taper", "3", "weeks"]
    a = 0.2773500978946686
    assert {i: x for i, x in enumerate(v) if x} == {2: a, 5: a, 18: -0.5547001957893372, 21: a, 29: -a, 35: a,
                                                    36: a, 42: -a, 59: -a, 60: a}
    b = 0.3535533845424652
    v = hash64("We are on version 3.15 and saw 4395 errors last week.")
    assert {i: x for i, x in enumerate(v) if x} == {2: b, 6: -b, 11: b, 23: b, 25: b, 29: -b, 42: -b, 58: -b}
    c = 0.37796446681022644
    v = hash64("Ελληνική μετάφραση ΟΔΟΣ 東京の引っ越し café Zürich x2")
    assert {i: x for i, x in enumerate(v) if x} == {0: -c, 9: -c, 11: c, 30: -c, 34: -c, 43: c, 47: c}
    assert hash64("🎉 the and") == [1.0] + [0.0] * 63


def test_stored_vectors_are_hash64_of_their_text(store):
    rows = read_vector_rows(store, INDEX)
    assert len(rows) == 72
    assert all(r.embedding == struct.pack("<64f", *hash64(r.text)) for r in rows)
    # agent turns store the message id as the vector id; saveMessages (sem-notes) a random one
    notes = [r for r in rows if r.thread_id == "sem-notes"]
    assert len(notes) == 4 and all(r.vector_id != r.message_id for r in notes)
    assert all(r.vector_id == r.message_id for r in rows if r.thread_id != "sem-notes")
    assert all(r.metadata["category"] == "notes" and r.metadata["pinned"] is True for r in notes)


def test_indexes_as_mastra_describes_them(store):
    assert [{"indexName": i.name, "dimension": i.dimension, "count": i.count, "metric": i.metric}
            for i in vector_indexes(store)] == ORACLE["vector"]["indexes"]
    doc = vector_memory_document(store)
    assert doc["indexes"][0]["embedder_hint"] == "the corpus's scripted hash64"
    assert (index_name_for(1536), index_name_for(384)) == ("memory_messages", "memory_messages_384")


def test_plain_sqlite_sees_no_rows_without_not_indexed(fixture_db):
    """Why the reads say NOT INDEXED: plain SQLite answers count(*) from libSQL's (empty) vector index b-tree."""
    import sqlite3

    conn = sqlite3.connect(fixture_db("semantic"))
    try:
        plain = conn.execute(f"SELECT count(*) FROM {INDEX}").fetchone()[0]
        full = conn.execute(f"SELECT count(*) FROM {INDEX} NOT INDEXED").fetchone()[0]
    finally:
        conn.close()
    assert (plain, full) == (0, 72)


@pytest.mark.parametrize("n", range(len(CASES)))
def test_vector_query_equals_libsqls_exact_ranking(store, n):
    case = CASES[n]
    where = case["vectorQuery"][0]["filter"]
    rows = read_vector_rows(store, INDEX, where=where)
    hits = vector_query(rows, embedding_matrix(rows, 64), query_vector(hash64(case["query"])),
                        case["semanticRecall"]["topK"])
    assert [{"id": h.id, "score": h.score} for h in hits] == case["exactTopK"]


def test_scores_are_float32_distances():
    q = query_vector([1.0, 2.0, 3.0])
    m = embedding_matrix([], 3)
    assert cosine_scores(m, q).shape == (0,)
    rows = query_vector([3.0, 2.0, 1.0]).reshape(1, 3)
    score = float(cosine_scores(rows, q)[0])
    # 1 - distance, where the distance (1 - 10/14) was rounded to float32
    assert score == 1.0 - _f32(1.0 - 10.0 / 14.0)
    zero = query_vector([0.0, 0.0, 0.0]).reshape(1, 3)
    assert cosine_scores(zero, q)[0] != cosine_scores(zero, q)[0]  # NaN: SQL NULL, never a hit


def test_chunk_text_as_mastra():
    # words split on JavaScript whitespace and joined by one space; JavaScript's split leaves an empty last
    # word after trailing whitespace, which Mastra joins with its space
    assert chunk_text("  budget\u00a0for\n\nLisbon\u3000trip ") == ["budget for Lisbon trip "]
    assert chunk_text("") == [] and chunk_text("   ") == []
    # 16,384 characters a chunk: a word that does not fit starts the next chunk
    words = ["x" * 9000, "y" * 9000]
    assert chunk_text(" ".join(words)) == words
    # a longer word is cut into pieces of the chunk size
    assert chunk_text("z" * 20000) == ["z" * 16384, "z" * 3616]
    assert chunk_text("a " + "z" * 20000) == ["a", "z" * 16384, "z" * 3616]


def test_config_and_includes():
    with pytest.raises(EngineError):
        SemanticConfig(top_k=0)
    with pytest.raises(EngineError):
        SemanticConfig(scope="global")
    config = SemanticConfig(3, (1, 2), threshold=0.2)
    assert config.to_json() == {"topK": 3, "messageRange": {"before": 1, "after": 2}, "scope": "resource",
                                "threshold": 0.2}
    from studio.engine.semantic import VectorHit

    hits = [VectorHit("v1", "m1", "t", 0.5, "", 1), VectorHit("v2", "m2", "t", 0.1, "", 2)]
    assert recall_includes(hits, config) == [{"id": "m1", "thread_id": "t", "with_previous_messages": 1,
                                              "with_next_messages": 2}]


def test_similar_and_embedded_messages(store):
    first = read_vector_rows(store, INDEX, where={"thread_id": "sem-lisbon"})[0]
    similar = similar_messages(store, first.message_id, top_k=5)
    assert len(similar) == 5 and first.message_id not in [h.message_id for h in similar]
    scores = [h.score for h in similar]
    assert scores == sorted(scores, reverse=True)
    everything = read_vector_rows(store, INDEX)
    expected = vector_query(everything, embedding_matrix(everything, 64), query_vector(first.embedding), 6)
    assert [h.id for h in similar] == [h.id for h in expected if h.message_id != first.message_id][:5]
    within = similar_messages(store, first.message_id, top_k=50, where={"thread_id": "sem-lisbon"})
    assert {h.thread_id for h in within} == {"sem-lisbon"}
    embedded = embedded_messages(store, "sem-notes")
    assert len(embedded) == 4 and all(e["chunks"] == 1 and e["chunk"] == 0 for e in embedded)
    assert stored_vector(store, "no-such-message") is None


def test_store_without_vectors(fixture_db):
    with open_store(str(fixture_db("support"))) as s:
        assert vector_indexes(s) == []
        thread = s.rows("SELECT id, \"resourceId\" FROM mastra_threads LIMIT 1")[0]
        with pytest.raises(BadInput, match="no vector index"):
            recall_by_meaning(s, thread[0], "budget", lambda xs: pytest.fail("embedder called"),
                              SemanticConfig(), resource_id=thread[1])

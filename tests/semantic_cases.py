"""What the semantic-recall tests share: the `semantic` fixture's oracle cases, a fake embeddings server that
implements the corpus's `hash64` embedder, and the check of one case through `memory-studio recall`.

Expected values are Mastra's own (`semantic.oracle.json`, `vector.cases`: Memory.recall with `semanticRecall`
over LibSQLVector, and the `vector.query` results it got), so message ids must be equal in order and the
hits equal in id and float32 score.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

from studio.cli import main
from tests.conftest import load_oracle
from tests.fake_llm import FakeLLM, FakeRequest, Reply
from tests.hash64 import hash64

ORACLE = load_oracle("semantic")
CASES = ORACLE["vector"]["cases"]


def case_id(case: dict) -> str:
    """A readable test id: thread, scope, page."""
    sr = case["semanticRecall"]
    return f"{case['threadId']}-{sr['scope']}-k{sr['topK']}-r{sr['messageRange']}-p{case['perPage']}"


def embeddings_reply(request: FakeRequest) -> Reply:
    """Answer `POST /v1/embeddings` as an OpenAI-compatible server would, with hash64 vectors."""
    if not request.path.endswith("/embeddings"):
        return Reply(status=404, body={"error": {"message": "only /embeddings here"}})
    values = request.body["input"]
    data = [{"object": "embedding", "index": i, "embedding": hash64(v)} for i, v in enumerate(values)]
    return Reply(status=200, body={"object": "list", "data": data, "model": request.body["model"],
                                   "usage": {"prompt_tokens": len(values), "total_tokens": len(values)}})


def hash64_server(fake: FakeLLM) -> FakeLLM:
    """Make FAKE answer every request as the hash64 embeddings server."""
    fake.default = embeddings_reply
    return fake


def run_recall(target: str, case: dict, base_url: str, *extra: str) -> dict:
    """Run `memory-studio recall TARGET … --vector-search QUERY --embedder openai-compatible/hash64` for CASE."""
    sr = case["semanticRecall"]
    args = ["recall", target, "--thread", case["threadId"], "--resource", case["resourceId"],
            "--vector-search", case["query"], "--top-k", str(sr["topK"]), "--message-range", str(sr["messageRange"]),
            "--scope", sr["scope"], "--embedder", "openai-compatible/hash64", "--base-url", base_url, "--json"]
    if case["perPage"] is not None:
        args += ["--per-page", str(case["perPage"])]
    args += list(extra)
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(args)
    assert code == 0
    return json.loads(out.getvalue())


def assert_case(doc: dict, case: dict) -> None:
    """DOC (recall's JSON) equals Mastra's CASE: message ids in order, vector hits by id and float32 score."""
    assert doc["message_ids"] == case["messageIds"]
    expected = [(r["id"], r["score"], r["metadata"].get("message_id"), r["metadata"].get("thread_id"),
                 r["metadata"].get("content")) for q in case["vectorQuery"] for r in q["results"]]
    got = [(h["id"], h["score"], h["message_id"], h["thread_id"], h["text"]) for h in doc["vector_hits"]]
    assert got == expected

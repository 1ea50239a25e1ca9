"""On PostgreSQL and sqld: `context`'s model view equals real Mastra's prompt log, turn by turn.

Each case has real Mastra (@mastra/pg, @mastra/libsql on a server) write a corpus with MC_PROMPT_LOG
under the corpus's virtual clock (`node --import ./clock.mjs`: timestamps follow call order, so
no turn depends on the machine's load), then reads it back through the studio's server store and
compares every main-agent call with the model view of its turn (tests/prompt_log.compare):
- `support`: thread scope, synchronous observation and reflection;
- `resource`: resource scope (the observation block rebuilt by the end markers);
- `limiter`: no OM, `lastMessages: 20` and a token budget (the trim boundary replayed from the rows);
- working memory (tests/interop/scripts/studio-wm-prompts.mjs): exact turns equal, the others latest.

PostgreSQL: a database of its own (`model_view`) on the session's server, so the session corpus's
schemas, which other tests read, are not rewritten. sqld: one new server per case.
"""

from __future__ import annotations

import psycopg
import pytest

from studio.store import open_store
from tests.prompt_log import compare, main_calls, prompt_log
from tests.server.conftest import GEN_TIMEOUT_S, _run

CASES = ["support", "resource", "limiter", "working-memory"]
#: The working-memory script's turns that saw the stored value (its header); every other turn is latest.
WM_EXACT = {("wm-r2", 2), ("wm-r2", 3), ("wm-j1", 2), ("wm-j1", 3), ("wm-t2", 1), ("wm-t2", 2)}


@pytest.fixture(scope="module")
def pg_model_view(pg_corpus) -> str:
    """Return the URL of database `model_view` on the session's PostgreSQL (created empty here)."""
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS model_view")
        conn.execute("CREATE DATABASE model_view")
    base, _, _ = pg_corpus.url.rpartition("/")
    return f"{base}/model_view"


def _generate(corpus, case: str, store_args: list[str], db: str, log) -> None:
    script = ["studio-wm-prompts.mjs", db] if case == "working-memory" else ["gen.mjs", str(log.parent), "--seed", "1",
                                                                              "--only", case]
    with prompt_log(log):
        _run(["node", "--import", "./clock.mjs", *script, *store_args], corpus, GEN_TIMEOUT_S)


def _check(target: str, case: str, calls: list[dict]) -> None:
    with open_store(target) as store, store.snapshot():
        result = compare(store, calls, last_messages=20 if case == "limiter" else None)
        if case == "limiter":
            from studio.app.trace import context_document

            docs = [context_document(store, t.id, 1, last_messages=20) for t in store.list_threads()]
            assert any(d["stored_boundary"] for d in docs) and all(d["boundary_matches"] is not False for d in docs)
    assert result.count == len(calls) > 10
    assert result.diffs == {}, result.diffs
    if case == "support":
        assert result.reflected
    if case == "working-memory":
        assert {t for t, how in result.exactness.items() if how == "exact"} == WM_EXACT
        assert result.saw_other_value and not result.saw_other_value & WM_EXACT


@pytest.mark.parametrize("case", CASES)
def test_model_view_on_pg_equals_the_prompt_log(pg_corpus, pg_model_view, tmp_path, case):
    schema = "wm" if case == "working-memory" else case
    _generate(pg_corpus.corpus, case, ["--store", "pg", "--url", pg_model_view], schema, tmp_path / "prompts.jsonl")
    _check(f"{pg_model_view}?schema={schema}", case, main_calls(tmp_path / "prompts.jsonl"))


@pytest.mark.parametrize("case", CASES)
def test_model_view_on_sqld_equals_the_prompt_log(sqld_corpus, tmp_path, case):
    url = sqld_corpus.start(f"model-view-{case}")
    store_args = [] if case == "working-memory" else ["--url", url]
    _generate(sqld_corpus.corpus, case, ["--store", "libsql-remote", *store_args], url, tmp_path / "prompts.jsonl")
    _check(url, case, main_calls(tmp_path / "prompts.jsonl"))

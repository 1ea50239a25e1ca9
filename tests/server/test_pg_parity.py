"""A PostgreSQL store written by real Mastra (`@mastra/pg`) reads exactly as Mastra reports it.

Expected values: the oracle `oracle.mjs --store pg` recorded for each scenario of the corpus that
`gen.mjs --store pg` wrote on a throwaway server (tests/server/conftest.py): every thread (order,
title, metadata, times), message count, OM status of every thread (both bars), generation history,
Mastra's token estimate of every message, and every listThreads / recall call of the oracle.
"""

from __future__ import annotations

import pytest

from tests.server.checks import history_differences, inspect_differences, tokens_differences
from tests.server.conftest import SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_inspect_equals_mastra_on_postgresql(pg_corpus, scenario):
    oracle = pg_corpus.oracles[scenario]
    assert oracle["store"] == "pg" and oracle["threads"]
    assert inspect_differences(pg_corpus.target(scenario), oracle) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tokens_equal_mastra_on_postgresql(pg_corpus, scenario):
    oracle = pg_corpus.oracles[scenario]
    assert tokens_differences(pg_corpus.target(scenario), oracle) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_list_threads_and_recall_equal_mastra_on_postgresql(pg_corpus, scenario):
    oracle = pg_corpus.oracles[scenario]
    cases = sum(len(r["listThreads"]) for r in oracle["resources"].values()) + sum(
        len(t["recall"]) for t in oracle["threads"].values())
    assert cases > 0
    assert history_differences(pg_corpus.target(scenario), oracle) == []


def test_every_scenario_with_om_has_statuses(pg_corpus):
    """The comparison covers both bars of every OM thread the corpus writes (not an empty oracle):
    support 5 thread-scope threads, buffered 1, resource 3 threads under one resource record, collab 2,
    tools 1; history has no OM."""
    statuses = {s: sum(len(om["status"]) for om in o["om"].values()) for s, o in pg_corpus.oracles.items()}
    assert statuses == {"support": 5, "buffered": 1, "resource": 3, "collab": 2, "tools": 1, "history": 0}

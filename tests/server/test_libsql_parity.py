"""A libSQL server written by real Mastra (`@mastra/libsql` LibSQLStore on `sqld`) reads exactly as Mastra reports it.

Expected values: the oracle `oracle.mjs --store libsql-remote` recorded for each scenario of the
corpus that `gen.mjs --store libsql-remote` wrote on throwaway sqld servers (tests/server/conftest.py):
every thread (order, title, metadata, times), message count, OM status of every thread (both bars),
generation history, Mastra's token estimate of every message, and every listThreads / recall call.
"""

from __future__ import annotations

import pytest

from tests.server.checks import history_differences, inspect_differences, tokens_differences
from tests.server.conftest import SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_inspect_equals_mastra_on_sqld(sqld_corpus, scenario):
    oracle = sqld_corpus.oracles[scenario]
    assert oracle["store"] == "libsql-remote" and oracle["threads"]
    assert inspect_differences(sqld_corpus.target(scenario), oracle) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_tokens_equal_mastra_on_sqld(sqld_corpus, scenario):
    assert tokens_differences(sqld_corpus.target(scenario), sqld_corpus.oracles[scenario]) == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_list_threads_and_recall_equal_mastra_on_sqld(sqld_corpus, scenario):
    oracle = sqld_corpus.oracles[scenario]
    cases = sum(len(r["listThreads"]) for r in oracle["resources"].values()) + sum(
        len(t["recall"]) for t in oracle["threads"].values())
    assert cases > 0
    assert history_differences(sqld_corpus.target(scenario), oracle) == []


def test_every_scenario_with_om_has_statuses(sqld_corpus):
    """The comparison covers both bars of every OM thread the corpus writes (not an empty oracle):
    support 5 thread-scope threads, buffered 1, resource 3 threads under one resource record, collab 2,
    tools 1; history has no OM."""
    statuses = {s: sum(len(om["status"]) for om in o["om"].values()) for s, o in sqld_corpus.oracles.items()}
    assert statuses == {"support": 5, "buffered": 1, "resource": 3, "collab": 2, "tools": 1, "history": 0}


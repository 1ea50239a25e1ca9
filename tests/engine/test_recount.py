"""Which estimator a stored observationTokenCount matches, on every fixture generation."""

from __future__ import annotations

import pytest

from studio.engine.recount import Recount, recount_observations
from studio.store import open_store
from tests.conftest import FIXTURE_NAMES, load_oracle


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_recount_uses_mastra_figures(fixture_db, name):
    """The tokenx recount equals Mastra's own countObservations of the same text (oracle)."""
    oracle = load_oracle(name)
    with open_store(fixture_db(name)) as store:
        for key, om in oracle["om"].items():
            records = {r.id: r for r in store.om_history(key)}
            for h in om["history"]:
                rec = records[h["id"]]
                r = recount_observations(rec.active_observations, rec.observation_token_count)
                assert r.tokenx == h["countObservations"]
                assert r.stored == h["observationTokenCount"]
                assert r.matches == ("tokenx" if h["observationTokenCount"] == h["countObservations"] else
                                     "o200k" if h["observationTokenCount"] == r.o200k else "neither")


def test_matches_names_the_estimator():
    assert Recount(10, 10, 12).matches == "tokenx"
    assert Recount(12, 10, 12).matches == "o200k"
    assert Recount(11, 10, 12).matches == "neither"


def test_older_mastra_counted_with_o200k():
    """A log whose stored count is its exact o200k count (as @mastra/memory 1.5 wrote) reads as o200k."""
    from studio.engine.exact_counts import exact_tokens

    text = "Date: Nov 4, 2026\n* 🔴 (09:15) User's name is Ada; allergic to peanuts.\n"
    r = recount_observations(text, exact_tokens(text))
    assert r.o200k != r.tokenx and r.matches == "o200k"

"""The studio window on a libSQL server (sqld): every tab of a thread loads (no error, no crash).

A thread-scope and a resource-scope thread: the store reads the same SQL as a local file (tests/ui cover
every tab on every fixture), so what is tested here is the server transport under every tab's reads.
"""

from __future__ import annotations

import pytest

from tests.server.checks import TABS, tab_failures


@pytest.mark.parametrize("scenario,thread_id", [("support", "support-1"), ("resource", "res-a")])
def test_every_tab_loads_on_sqld(sqld_corpus, tmp_path, scenario, thread_id):
    assert tab_failures(sqld_corpus.target(scenario), thread_id, tmp_path) == []
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == sorted(TABS)

"""The studio window on a PostgreSQL store: every tab of a thread loads (no error, no crash), URL redacted."""

from __future__ import annotations

import pytest

from tests.server.checks import tab_failures


@pytest.mark.parametrize("scenario,thread_id", [("support", "support-1"), ("resource", "res-a"),
                                                ("buffered", "long-run")])
def test_every_tab_loads_on_postgresql(pg_corpus, tmp_path, scenario, thread_id):
    assert tab_failures(pg_corpus.target(scenario), thread_id, tmp_path) == []

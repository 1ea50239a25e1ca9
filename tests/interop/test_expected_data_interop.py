"""The expected data the fast tests keep is what real Mastra computes now (see tests/interop/regenerate.py).

Each test recomputes one stored set with the npm packages of ../shared/mastra-corpus and compares:
observer_format_expected.json (formatMessagesForObserver, other-threads context, tokenx),
SYNTHETIC_EXPECTED and ASYNC_EXPECTED of test_tokens_parity (TokenCounter countMessages /
countMessagesAsync per model) and MASTRA of test_status_edge_cases (getStatus pendingTokens on altered
fixture copies). A difference means the stored figures are stale:
regenerate them with `PYTHONPATH=. python -m tests.interop.regenerate --write`.
"""

from __future__ import annotations

import json

from tests.engine.test_status_edge_cases import MASTRA
from tests.engine.test_tokens_parity import ASYNC_EXPECTED, SYNTHETIC_EXPECTED
from tests.interop.regenerate import (
    OBSERVER_FORMAT_FILE,
    observer_format_document,
    status_edge_cases,
    token_counter_expected,
)


def test_observer_format_expected_is_mastras(mastra_corpus, tmp_path):
    stored = json.loads(OBSERVER_FORMAT_FILE.read_text(encoding="utf-8"))
    fresh = observer_format_document(mastra_corpus, tmp_path, stored)
    assert fresh["_header"] == stored["_header"]
    for name in stored["fixtures"]:
        assert fresh["fixtures"][name] == stored["fixtures"][name], name
    assert fresh["synthetic"] == stored["synthetic"]
    assert fresh["syntheticContext"] == stored["syntheticContext"]
    assert fresh["tokenx"] == stored["tokenx"]


def test_synthetic_token_counts_are_mastras(mastra_corpus, tmp_path):
    assert token_counter_expected(mastra_corpus, tmp_path) == (SYNTHETIC_EXPECTED, ASYNC_EXPECTED)


def test_status_edge_case_figures_are_mastras(mastra_corpus, tmp_path):
    assert status_edge_cases(mastra_corpus, tmp_path) == MASTRA

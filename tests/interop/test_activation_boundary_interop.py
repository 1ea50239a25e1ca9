"""Mastra's activation-boundary rule (studio.common.om_settings), held to real Mastra, absolute retentions included.

The rule that picks how many buffered chunks an activation moves is one function here
(`activation_boundary`); the status's projection (`projected_message_removal`), the activation write
(`studio.store.write.activation`, through `activation_chunk_count`) and the What-if replay use it.
Mastra uses the rule twice, with two floors, and they part where observation.bufferActivation is an
absolute retention (>= 1000) above the message threshold: its status projection
(calculateProjectedMessageRemoval) keeps the retention itself, its activation (activate() ->
resolveActivationRatio -> swapBufferedToActive) clamps the ratio to 0 and so keeps the threshold.

Two copies of the `buffered` fixture get the same record: its stored config's bufferActivation and
its pendingMessageTokens set per case. Copy A: `studio-activation-boundary.mjs` (Mastra's status
projection for the record's pending tokens, then Mastra's activate(); Mastra's constructor refuses a
retention at or above messageTokens, so the script sets the stored value on the engine after building
it). Copy B: the studio's plan (`activation_plan`), its write (`activate_buffered`) and its projection
with the settings the status resolves. Every figure compared comes from Mastra's run.
"""

from __future__ import annotations

import libsql
import pytest

from studio.common.om_settings import max_threshold, projected_message_removal, resolve_settings
from studio.engine.tokens import stamp_estimates
from studio.store import open_store
from studio.store.write.activation import activate_buffered, activation_plan
from tests.conftest import copy_fixture
from tests.interop.conftest import run_node

THREAD, RECORD = "long-run", "thread:long-run"
#: (bufferActivation, pendingMessageTokens). The fixture's record: threshold 4000, blockAfter 4800, chunks
#: of 1805 and 600 message tokens, 2736 pending. Absolute retentions above the threshold first (the
#: pending figures put the targets where the two floors pick differently), then one below it and a ratio.
CASES = [(5000, 2736), (5000, 4500), (5000, 6000), (9000, 7000), (3000, 6000), (0.8, 6000)]


def _set_record(path, activation: float, pending: int) -> None:
    conn = libsql.connect(f"file:{path}")
    try:
        conn.execute('UPDATE mastra_observational_memory '
                     'SET config = json_set(config, \'$.observation.bufferActivation\', ?), '
                     '"pendingMessageTokens" = ? WHERE id = (SELECT id FROM mastra_observational_memory '
                     'WHERE "lookupKey" = ? ORDER BY "generationCount" DESC LIMIT 1)', (activation, pending, RECORD))
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(("activation", "pending"), CASES)
def test_the_boundary_rule_matches_mastra(mastra_corpus, tmp_path, activation, pending):
    a, b = copy_fixture("buffered", tmp_path / "a"), copy_fixture("buffered", tmp_path / "b")
    for path in (a, b):
        _set_record(path, activation, pending)
    mastra = run_node(mastra_corpus, "studio-activation-boundary.mjs", a, THREAD)
    assert mastra["activated"] is True
    assert (mastra["bufferActivation"], mastra["pendingMessageTokens"]) == (activation, pending)

    with open_store(b) as store:
        record = store.om_current(RECORD)
    plan = activation_plan(record.columns)
    assert plan["threshold"] == mastra["threshold"] and plan["pending_message_tokens"] == pending
    assert plan["activated_cycle_ids"] == mastra["activatedCycleIds"]
    assert plan["chunks_after"] == mastra["chunksAfter"]

    # the status's projection, with the settings the status resolves from the stored config
    settings = resolve_settings(record.config, record.scope)
    projected = projected_message_removal(record.buffered_chunks, settings.buffer_activation,
                                          max_threshold(settings.message_tokens), pending)
    assert projected == mastra["projectedMessageRemoval"]
    if activation >= 1000 and activation > mastra["threshold"] and pending > mastra["threshold"]:
        # where Mastra's two floors part, its projection is not what its activation removes
        assert projected != plan["message_tokens"]

    ours = activate_buffered(b, thread_id=THREAD, lookup_key=RECORD, stamp_estimates=stamp_estimates)
    assert ours["activated_cycle_ids"] == mastra["activatedCycleIds"]
    assert ours["chunks_after"] == mastra["chunksAfter"]
    assert {k: ours["row"][k] for k in mastra["row"]} == mastra["row"]

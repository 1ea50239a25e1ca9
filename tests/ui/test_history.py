"""Thread ▸ History: generations and the diff of any two, checked against the engine on the same records."""

from __future__ import annotations

from studio.engine.diff import diff_logs, side_by_side
from studio.store import open_store
from studio.ui.models.diff import OP_ROLE, DiffMode
from tests.oracle_facts import generations


def expected(old, new):
    return diff_logs(old.active_observations if old else "", new.active_observations,
                     old.observation_token_count if old else 0, new.observation_token_count)


def ops(model) -> dict[str, int]:
    counts = {"kept": 0, "added": 0, "removed": 0}
    for r in range(model.rowCount()):
        counts[model.index(r, 3).data(OP_ROLE)] += 1
    return counts


def test_history_diffs_match_engine(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        history = store.om_history("thread:support-1")      # newest first
    assert [h.generation_count for h in history] == generations("support", "thread:support-1")
    assert len(history) >= 3, "support-1 needs two reflections (three generations) for this test"
    current, previous = history[0], history[1]
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    assert window.thread_view.current_tab() == "history"
    assert tab.has_history
    assert tab.generation_model.rowCount() == len(history)
    assert tab.generation_model.index(0, 0).data() == f"{current.generation_count} (current)"
    compression = previous.observation_token_count / current.observation_token_count   # the reflection's ratio
    assert tab.generation_model.index(0, 4).data() == f"{compression:.2f}×"

    # Default: the current generation against its predecessor.
    want = expected(history[1], history[0])
    got = tab.diff_model.diff
    assert (got.kept, got.added, got.removed) == (want.kept, want.added, want.removed)
    assert tab.diff_model.rowCount() == len(want.rows)
    assert ops(tab.diff_model) == {"kept": want.kept, "added": want.added, "removed": want.removed}
    assert f"{want.kept:,} kept" in tab.summary.text()
    assert f"compression {compression:.2f}×" in tab.summary.text()
    assert tab.losses.isVisible() == bool(want.high_priority_losses)
    assert [tab.diff_model.index(r, 0).data() for r in range(tab.diff_model.rowCount())] == [
        {"kept": " ", "added": "+", "removed": "-"}[row.op] for row in want.rows]

    # Any two generations: 0 -> the current one.
    tab.compare(history[0].id, history[-1].id)
    studio_ctx.runner.wait_idle()
    want = expected(history[-1], history[0])
    got = tab.diff_model.diff
    assert (got.kept, got.added, got.removed) == (want.kept, want.added, want.removed)
    assert ops(tab.diff_model) == {"kept": want.kept, "added": want.added, "removed": want.removed}
    assert got.token_delta == history[0].observation_token_count - history[-1].observation_token_count

    # Side by side pairs rows exactly as the engine does.
    tab.side_button.click()
    assert tab.diff_model.mode == DiffMode.SIDE_BY_SIDE
    assert tab.diff_model.rowCount() == len(side_by_side(want))
    tab.unified_button.click()
    assert tab.diff_model.rowCount() == len(want.rows)

    # Selecting a generation diffs it against its predecessor.
    tab.generations_view.selectRow(1)
    studio_ctx.runner.wait_idle()
    want = expected(history[2], history[1])
    got = tab.diff_model.diff
    assert (got.kept, got.added, got.removed) == (want.kept, want.added, want.removed)
    assert tab.old_combo.currentData() == history[2].id and tab.new_combo.currentData() == history[1].id

    # The initial generation has no predecessor: it is compared with an empty log.
    tab.generations_view.selectRow(len(history) - 1)
    studio_ctx.runner.wait_idle()
    got = tab.diff_model.diff
    assert got.kept == 0 and got.removed == 0 and got.added == tab.diff_model.rowCount()


def test_high_priority_losses_are_called_out(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        history = store.om_history("thread:support-1")
    losses = expected(history[1], history[0]).high_priority_losses
    assert losses, "the fixture's last reflection drops 🔴 observations"
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    assert tab.losses.isVisible()
    assert f"{len(losses)} high-priority observation" in tab.losses.text()
    flagged = [r for r in range(tab.diff_model.rowCount())
               if tab.diff_model.diff.rows[r].high_priority_loss]
    assert len(flagged) == len(losses)

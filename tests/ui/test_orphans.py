"""OM records whose thread was deleted (Mastra #16621) are listed, with their log, history and status."""

from __future__ import annotations

from studio.ui.models.resources import ORPHANS, ORPHANS_TITLE
from studio.ui.models.threads import ORPHAN_TITLE, ThreadColumn
from tests.conftest import load_oracle
from tests.ui.mastra_edits import delete_thread_row


def test_records_without_a_thread_are_listed_with_log_history_and_status(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    # As Mastra's storage deleteThread leaves it (tests/interop/test_orphans_interop.py runs the real one):
    # the thread row and its messages gone, its OM record kept.
    delete_thread_row(path, "support-3")
    oracle = load_oracle("support")["om"]["thread:support-3"]
    window = studio(path)
    resources = window.resource_model
    row = resources.row_of(ORPHANS)
    assert row == resources.rowCount() - 1
    assert resources.index(row, 0).data() == ORPHANS_TITLE and resources.index(row, 1).data() == "1"
    window.resources_view.setCurrentIndex(resources.index(row, 0))
    studio_ctx.runner.wait_idle()
    model = window.thread_model
    assert model.total_rows == 1
    assert model.index(0, ThreadColumn.TITLE).data() == f"{ORPHAN_TITLE} (support-3)"
    assert window.current_thread_id == "support-3"
    studio_ctx.runner.wait_idle()
    window.settle()
    # Mastra's getStatus on the deleted thread's id: no messages left, so 0 pending; thresholds as configured.
    expected = oracle["status"]["support-3"]
    om_tab = window.thread_view.om_tab
    assert (om_tab.messages_bar.value(), om_tab.messages_bar.threshold()) == (0, expected["threshold"])
    assert om_tab.observations_bar.value() == oracle["history"][0]["observationTokenCount"]
    assert om_tab.observations_bar.threshold() == expected["effectiveObservationTokensThreshold"]
    assert om_tab.log_model.rowCount() > 0                                  # its observation log
    history = window.thread_view.history_tab.generation_model
    assert history.rowCount() == len(oracle["history"])                     # its generations
    assert "deleted" in window.thread_view.subtitle.text()
    # It is also listed under its resource, and not counted as a thread.
    window.resources_view.setCurrentIndex(resources.index(resources.row_of(oracle["resourceId"]), 0))
    studio_ctx.runner.wait_idle()
    assert model.row_of("support-3") >= 0
    assert window.count_label.text() == "5 threads · 1 without a thread"


def test_no_orphan_entry_when_every_record_has_its_thread(studio, fixture_db):
    window = studio(fixture_db("support"))
    assert window.resource_model.row_of(ORPHANS) == -1

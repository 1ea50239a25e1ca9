"""The studio's first open of a server store lists the threads before their message counts, then Mastra's exact counts.

On PostgreSQL and a libSQL server the threads query is cheap and the per-thread message aggregate is
not: the list is painted from the first, Messages and Last activity show "…" (never 0) until the
second is in (`studio.ui.loaders.load_listing_in_two_steps`), then equal what Mastra's oracle lists.
"""

from __future__ import annotations

import pytest

from tests.ui.listing_steps import record_steps, step_problems


def _open_and_record(target: str, qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from studio.ui.app import AppContext, application
    from studio.ui.tasks import TaskRunner
    from studio.ui.widgets.main_window import MainWindow

    application()
    ctx = AppContext(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat),
                     runner=TaskRunner())
    window = MainWindow(ctx)
    qtbot.addWidget(window)
    window.resize(1024, 700)
    window.show()
    seen = record_steps(window)
    try:
        window.open_database(target)
        assert ctx.runner.wait_idle()
        assert window.thread_model.counted and window.database_path is not None
    finally:
        ctx.runner.wait_idle()
        window.close()
        ctx.runner.shutdown()
    return seen


@pytest.mark.parametrize("scenario", ["support", "resource", "history"])
def test_postgresql_threads_first_then_exact_counts(pg_corpus, qtbot, tmp_path, scenario):
    seen = _open_and_record(pg_corpus.target(scenario), qtbot, tmp_path)
    assert step_problems(seen, pg_corpus.oracles[scenario]) == []


@pytest.mark.parametrize("scenario", ["support", "history"])
def test_sqld_threads_first_then_exact_counts(sqld_corpus, qtbot, tmp_path, scenario):
    seen = _open_and_record(sqld_corpus.target(scenario), qtbot, tmp_path)
    assert step_problems(seen, sqld_corpus.oracles[scenario]) == []

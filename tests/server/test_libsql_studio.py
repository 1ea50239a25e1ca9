"""The studio window on a libSQL server (sqld): every tab of a thread loads (no error, no crash).

A thread-scope and a resource-scope thread: the store reads the same SQL as a local file (tests/ui cover
every tab on every fixture), so what is tested here is the server transport under every tab's reads.
"""

from __future__ import annotations

import pytest

from tests.server.checks import TABS, tab_failures
from tests.server.sqld import add_thread, make_memory


@pytest.mark.parametrize("scenario,thread_id", [("support", "support-1"), ("resource", "res-a")])
def test_every_tab_loads_on_sqld(sqld_corpus, tmp_path, scenario, thread_id):
    assert tab_failures(sqld_corpus.target(scenario), thread_id, tmp_path) == []
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == sorted(TABS)


def test_the_studio_follows_a_server_store(sqld_corpus, qtbot, tmp_path):
    """A server store has no file to watch: the window polls its fingerprint (one statement; every 5 s, 0.2 s
    here) and re-reads the listing when the agent commits."""
    from PySide6.QtCore import QSettings

    from studio.ui.app import application
    from studio.ui.context import AppContext
    from studio.ui.tasks import TaskRunner
    from studio.ui.widgets.main_window import MainWindow

    url = sqld_corpus.start("live")
    make_memory(url)
    application()
    ctx = AppContext(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat),
                     runner=TaskRunner())
    window = MainWindow(ctx)
    qtbot.addWidget(window)
    window.watcher._timer.setInterval(200)   # (2 s in the studio)
    window.show()
    try:
        window.open_database(url)
        assert ctx.runner.wait_idle()
        assert window.thread_model.rowCount() == 1
        assert window.watcher.active and window.watcher.path is None   # polled, no file to check
        add_thread(url, 2)
        qtbot.waitUntil(lambda: window.thread_model.rowCount() == 2, timeout=15000)
    finally:
        ctx.runner.wait_idle()
        window.close()
    assert not window.watcher.active

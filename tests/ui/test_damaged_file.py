"""The studio on a partly damaged memory.db: the damage is named once, in one banner above the thread view;
the tabs whose reads meet it point to the banner, the others show what could be read.

The damage: mastra_messages' root page overwritten (`tests.conftest.damage_table_root`): threads, OM
records and the message index read; every message row read fails ("database disk image is malformed").
"""

from __future__ import annotations

from argparse import Namespace

from PySide6.QtWidgets import QLabel

from studio.app import text as fmt
from studio.store.history import recall
from studio.ui.app import run_studio
from tests.conftest import damage_table_root
from tests.oracle_facts import generations, threads

DAMAGE = "the database file is corrupt"


def test_the_damage_is_named_once_and_the_rest_is_shown(studio, studio_ctx, fixture_db, qtbot):
    path = damage_table_root(fixture_db("support"))
    said = []
    studio_ctx.runner.store_damaged.connect(said.append)
    window = studio(path, thread_id="support-1", tab="messages")
    view = window.thread_view
    assert studio_ctx.runner.wait_idle()
    qtbot.waitUntil(lambda: view.damage_banner.isVisible(), timeout=10000)
    banner = view.damage_banner.text()
    assert banner.count(DAMAGE) == 1 and str(path) in banner
    # the tabs that met the damage point to the banner instead of repeating SQLite's sentence
    assert view.messages_tab.summary.text() == f"Could not read the messages: {fmt.DAMAGED_HERE}"
    view.set_tab("observations")
    assert view.om_tab._status_error.isVisible()
    assert view.om_tab._status_error.text() == f"The status could not be computed: {fmt.DAMAGED_HERE}"
    # what does not lie in the damaged part is shown: the thread list, the log and every generation
    assert window.thread_model.rowCount() == len(threads("support"))
    assert view.om_tab.log_model.rowCount() > 0
    assert view.history_tab.generation_model.rowCount() == len(generations("support", "thread:support-1"))
    # other threads meet the same damage: it is not said again
    assert window.select_thread("support-2")
    assert studio_ctx.runner.wait_idle()
    assert len(said) == 1 and view.damage_banner.isVisible()
    # an intact file opened in the same window: the banner goes
    window.open_database(fixture_db("buffered"))
    assert studio_ctx.runner.wait_idle()
    assert not view.damage_banner.isVisible()


def test_screenshot_of_a_damaged_file_says_it_once_and_exits_2(qapp, fixture_db, tmp_path, capsys):
    # it printed "not all of the window loaded (messages: <sentence>; participants: <sentence>; doctor-scan:
    # <sentence>)" and exited 1, an "unexpected failure"; a damaged file is a store error (2), as for doctor
    path = damage_table_root(fixture_db("support"))
    out = tmp_path / "shot.png"
    args = Namespace(path=str(path), screenshot=str(out), thread="support-1", tab=None, size="1024x700")
    assert run_studio(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.count(DAMAGE) == 1
    assert "the messages" in err and "the speakers" in err and "no screenshot written" in err
    assert not out.exists()


def test_a_failed_health_check_does_not_read_as_no_findings(studio, studio_ctx, fixture_db):
    # the Health tab said "The check failed: …" above "0 errors · 0 warnings · 0 info" and "No findings for
    # this thread: nothing Mastra's known failures leave behind"
    window = studio(damage_table_root(fixture_db("support")), thread_id="support-1", tab="health")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.health_tab
    assert tab.status.isVisible() and tab.status.text() == f"The check failed: {fmt.DAMAGED_HERE}"
    assert not tab.pane.isVisible()


def test_the_status_bar_and_the_timeline_point_to_the_banner(studio, studio_ctx, fixture_db, qtbot):
    # the status bar said "Statuses could not be computed: <SQLite's whole damage sentence>" for 10 s and the
    # Timeline "The timeline could not be built. <the sentence>": the banner already names the damage
    path = damage_table_root(fixture_db("support"))
    window = studio(path, thread_id="support-1", tab="timeline")
    view = window.thread_view
    assert studio_ctx.runner.wait_idle()
    qtbot.waitUntil(lambda: view.damage_banner.isVisible(), timeout=10000)
    assert view.damage_banner.text().count(DAMAGE) == 1
    said = window.statusBar().currentMessage()
    assert said == f"Statuses could not be computed: {fmt.DAMAGED_HERE}"
    timeline = view.timeline_tab
    shown = [w.text() for w in timeline.findChildren(QLabel) if w.text()]
    assert any(fmt.DAMAGED_HERE in text for text in shown), shown
    assert not any(DAMAGE in text for text in shown), shown
    # a task without its own error handler (the runner's task_failed) says it the same short way
    def read_messages(store, _progress, _cancel):
        return recall(store, "support-1", per_page=False).messages   # every message row: the damaged part

    studio_ctx.runner.submit(read_messages)
    assert studio_ctx.runner.wait_idle()
    said = window.statusBar().currentMessage()
    assert said == f"A read failed: {fmt.DAMAGED_HERE}", said

"""The What-if replay runs in the helper process: the same result as in-process, cancellable there,
and drawn by the Timeline from the arrays it sends back."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from studio.app.helper_process import CANCEL, HelperProcess
from studio.engine.timeline_cache import load_timeline, timeline_key
from studio.engine.whatif import WhatIfSettings, settings_with
from studio.engine.whatif_chart import replay_in_store, replay_packed
from studio.store import open_store
from studio.ui.widgets import window_loading
from tests.helper_calls import process_id, wait_for_cancel, wait_for_cancel_then_fail


@pytest.fixture
def helper():
    process = HelperProcess()
    yield process
    process.close()


def test_the_helpers_replay_equals_the_in_process_replay(fixture_db, helper):
    path = str(fixture_db("support"))
    with open_store(path) as store:
        timeline = load_timeline(store, "support-1")
    stored = WhatIfSettings.from_record(timeline.generations[-1])
    for settings in (stored, settings_with(stored, message_tokens=1200, observation_tokens=500)):
        here = replay_packed(timeline, settings)
        there = helper.call(path, 1, replay_in_store, "support-1", timeline_key(timeline), settings,
                            None, None, None, CANCEL)
        assert there.pid == helper.pid and there.pid != os.getpid()
        assert there.point_columns == here.point_columns and there.event_columns == here.event_columns
        assert there.points == here.points and there.events == here.events
        for name in here.series.y:
            np.testing.assert_array_equal(there.series.y[name], here.series.y[name])
        assert there.timeline_key == timeline_key(timeline)


@pytest.mark.parametrize("before", [True, False], ids=["cancelled-before-it-starts", "cancelled-while-it-runs"])
def test_cancel_reaches_the_call_in_the_helper(fixture_db, helper, before):
    path = str(fixture_db("support"))
    cancel = threading.Event()
    if before:
        cancel.set()
    else:
        threading.Timer(0.2, cancel.set).start()
    # The call waits for its event for up to 10 minutes: it returns early only when the cancel arrived.
    was_set, pid = helper.call(path, 1, wait_for_cancel, CANCEL, 600.0, cancel=cancel)
    assert was_set and pid == helper.pid != os.getpid()
    # the helper goes on serving, and a later call's event is its own (not the cancelled one's)
    assert helper.call(path, 1, wait_for_cancel, CANCEL, 0.05, cancel=threading.Event()) == (False, helper.pid)
    assert helper.call(path, 1, process_id) == helper.pid


def test_cancel_reaches_the_helper_when_this_process_holds_descriptors_past_1024(fixture_db, helper):
    """The parent watches the reply with a selector: select.select refuses a descriptor past 1,023, and the call
    then waited with its cancel unwatched (a long test run holding many files reached it)."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft > 1200, f"this check needs more than 1,200 descriptors (the limit is {soft})"
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        path = str(fixture_db("support"))
        cancel = threading.Event()
        threading.Timer(0.2, cancel.set).start()   # while the call runs: only a watched reply sends it on
        # (a hang guard of 60 s: without the cancel the call returns (False, pid) then)
        assert helper.call(path, 1, wait_for_cancel, CANCEL, 60.0, cancel=cancel) == (True, helper.pid)
    finally:
        for fd in held:
            os.close(fd)


@pytest.fixture
def long_thread_replays_in_helper(monkeypatch):
    """Make every database 'big': the Timeline reads and replays in the helper process."""
    monkeypatch.setattr(window_loading, "HELPER_MIN_MESSAGES", 0)


def test_the_timeline_draws_the_helpers_replay(studio, fixture_db, studio_ctx, qtbot, long_thread_replays_in_helper):
    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    assert window.uses_helper and tab.use_helper and tab.whatif_panel.use_helper
    with qtbot.waitSignal(tab.whatif_drawn, timeout=20000) as blocker:
        tab.whatif_button.setChecked(True)
    drawn = blocker.args[0]
    assert drawn is tab.whatif and drawn.pid == studio_ctx.runner.helper.pid != os.getpid()
    assert drawn.uses_real_sizes
    curves = {item.name(): item for item in tab.plot.getPlotItem().listDataItems() if item.name()}
    x, y = curves["What-if log (estimate)"].getOriginalDataset()
    np.testing.assert_array_equal(y, drawn.series.y["observation"])
    np.testing.assert_array_equal(x, drawn.series.x[tab.x_mode])
    assert sum(len(s.data) for s in tab.chart.spots) == len(tab.timeline.events) + drawn.n_events


def test_a_new_request_or_closing_the_panel_cancels_the_running_replay(
        studio, fixture_db, studio_ctx, qtbot, long_thread_replays_in_helper, monkeypatch):
    from studio.ui.widgets import whatif_panel

    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    panel = tab.whatif_panel
    # A replay that runs until it is cancelled (then it fails as a cancelled replay does): it stands for a
    # long thread's replay, and says whether the cancel reached the helper.
    started = []
    monkeypatch.setattr(whatif_panel, "replay_in_store", wait_for_cancel_then_fail)
    real_submit = studio_ctx.runner.submit_call

    def submit_call(fn, *args, **kwargs):
        task = real_submit(fn, *args, **kwargs)
        if fn is wait_for_cancel_then_fail:
            started.append(task)
        return task

    monkeypatch.setattr(studio_ctx.runner, "submit_call", submit_call)
    tab.whatif_button.setChecked(True)
    panel.message_tokens.setValue(1500)
    panel.run()                             # a new request supersedes the first
    assert len(started) == 2 and started[0].cancelled and not started[1].cancelled
    tab.whatif_button.setChecked(False)     # closing the panel cancels the second
    assert started[1].cancelled
    assert studio_ctx.runner.wait_idle(30)  # both ended early: the helper stopped them (each waits 10 min)
    assert tab.whatif is None and panel.result is None
    # the helper is free again: a real replay is drawn
    monkeypatch.setattr(whatif_panel, "replay_in_store", replay_in_store)
    with qtbot.waitSignal(tab.whatif_drawn, timeout=20000):
        tab.whatif_button.setChecked(True)
    assert tab.whatif.pid == studio_ctx.runner.helper.pid



def test_leaving_the_thread_or_changing_a_setting_cancels_the_running_replay(
        studio, fixture_db, studio_ctx, qtbot, long_thread_replays_in_helper, monkeypatch):
    from studio.ui.widgets import whatif_panel

    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    panel = tab.whatif_panel
    monkeypatch.setattr(whatif_panel, "replay_in_store", wait_for_cancel_then_fail)
    tab.whatif_button.setChecked(True)
    running = studio_ctx.runner._keyed["whatif"]
    panel.observation_tokens.setValue(900)   # typed: the replay of the old settings stops at once
    assert running.cancelled
    panel.run()
    running = studio_ctx.runner._keyed["whatif"]
    window.select_thread("support-2")        # another thread: the replay of support-1 stops
    qtbot.waitUntil(lambda: tab.timeline is not None and tab.timeline.thread_id == "support-2", timeout=20000)
    assert running.cancelled
    tab.whatif_button.setChecked(False)      # and the replay of support-2 when What-if is turned off
    assert studio_ctx.runner.wait_idle(30)   # each replay waits 10 minutes unless cancelled in the helper
    assert tab.whatif is None and studio_ctx.runner.helper.available

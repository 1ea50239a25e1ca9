"""Open a server store in a fresh studio window again and again and close it at each moment of the two-step listing.

    python -m tests.server.listing_close_stress TARGET ROUNDS

Run in a child process by tests/server/test_server_listing_steps.py, so that a crash (the SIGSEGV this
guards against) fails that test with its exit status instead of killing the test run. Each round
builds an AppContext, TaskRunner and MainWindow, opens TARGET and closes the window (close, deleteLater,
deferred deletes, runner shut down) at one of these moments, in turn:

- ``waiting``: the threads are shown without their counts and the worker waits for the first paint;
- ``counting``: the worker was let go (the paint is done) and is reading the counts — the count is
  made 40 ms slower here so that the moment can be reached on a small corpus;
- ``loaded``: everything is in (listing, bars, the selected thread's detail and messages), then refreshed.

Prints one JSON line: {"rounds": N, "closed": {moment: how many closes landed in it}}. Exit 0 unless
something failed (a crash exits with the signal's status).
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import tempfile
import time

#: Extra time (s) the message count takes here, so a close can land while it runs.
SLOW_COUNT_S = 0.04
MOMENTS = ("waiting", "counting", "loaded")


def main(argv: list[str]) -> int:
    """Run the rounds on argv[0] (a server URL), argv[1] rounds; print the JSON summary."""
    faulthandler.enable()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEvent, QSettings
    from PySide6.QtWidgets import QApplication

    from studio.app import listing as loaders
    from studio.ui.app import application
    from studio.ui.context import AppContext
    from studio.ui.tasks import TaskRunner
    from studio.ui.widgets.main_window import MainWindow

    target, rounds = argv[0], int(argv[1])
    counted = loaders.listing_counts

    def slow_count(store, rows):
        time.sleep(SLOW_COUNT_S)
        return counted(store, rows)

    loaders.listing_counts = slow_count
    app = application()
    settings = os.path.join(tempfile.mkdtemp(prefix="listing-close-"), "settings.ini")
    closed = dict.fromkeys(MOMENTS, 0)

    def moment(window: MainWindow) -> str | None:
        """Where WINDOW's listing stands: None (nothing listed yet), "counting", "waiting" or "counted"."""
        model = window.thread_model
        if model.rowCount() == 0:
            return None   # (an empty model counts as counted: nothing is pending)
        if model.counted:
            return "counted"
        return "waiting" if window.loader.awaiting_paint else "counting"

    for i in range(rounds):
        wanted = MOMENTS[i % len(MOMENTS)]
        ctx = AppContext(settings=QSettings(settings, QSettings.Format.IniFormat), runner=TaskRunner(),
                         interactive=False)
        window = MainWindow(ctx)
        window.resize(1024, 700)
        window.show()
        window.open_database(target)
        model = window.thread_model
        deadline = time.monotonic() + 60
        if wanted == "loaded":
            if not ctx.runner.wait_idle(60) or not model.counted:
                print(f"round {i}: the listing never finished", file=sys.stderr)
                return 1
            window.refresh()
            ctx.runner.wait_idle(60)
            landed = "loaded"
        else:
            while moment(window) not in (wanted, "counted") and time.monotonic() < deadline:
                app.processEvents()
                time.sleep(0.0005)
            landed = moment(window)
            landed = "loaded" if landed == "counted" else landed
        if landed in closed:
            closed[landed] += 1
        window.close()
        window.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
        ctx.runner.shutdown()
        app.processEvents()
        del window, ctx
    print(json.dumps({"rounds": rounds, "closed": closed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

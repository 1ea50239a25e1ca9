"""Open every tab of every thread of one database in a studio window; run as a child process by test_every_tab.

`python -m tests.ui.every_tab_probe DB THREAD_ID...` prints, flushed, one line per step before doing it:
`STEP <thread> <tab>`, then `ERROR <thread> <tab> <key>: <message>` for each read that failed while
the tab loaded, then `DONE <steps>`. A crash (segmentation fault, abort) kills the process, so the
last STEP line names the thread and tab that were being drawn; the parent test reports it.
On the Timeline tab the what-if replay is asked for (when it has not run by itself) and drawn, the
path of the pyqtgraph crash of issue 9.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# a segfault in Qt or pyqtgraph then prints the Python stack of every thread to stderr
import faulthandler

faulthandler.enable()

from PySide6.QtCore import QSettings  # noqa: E402  (after QT_QPA_PLATFORM and faulthandler)

from studio.ui.app import application  # noqa: E402  (after QT_QPA_PLATFORM and faulthandler)
from studio.ui.context import AppContext  # noqa: E402  (after QT_QPA_PLATFORM and faulthandler)
from studio.ui.tasks import TaskRunner  # noqa: E402  (after QT_QPA_PLATFORM and faulthandler)
from studio.ui.widgets.main_window import MainWindow  # noqa: E402  (after QT_QPA_PLATFORM and faulthandler)
from studio.ui.widgets.thread_view import TAB_NAMES  # noqa: E402  (after QT_QPA_PLATFORM and faulthandler)

WAIT_S = 120.0


def _say(line: str) -> None:
    print(line, flush=True)


def main(argv: list[str]) -> int:
    """Open ARGV[0], then each thread id of ARGV[1:] and each tab; return 0 when every step ran, else 1."""
    path, thread_ids = argv[0], argv[1:]
    application()
    settings = QSettings(os.path.join(os.path.dirname(path), "probe-settings.ini"), QSettings.Format.IniFormat)
    ctx = AppContext(settings=settings, runner=TaskRunner(), interactive=False)
    errors: list[str] = []
    ctx.runner.error_delivered.connect(lambda key, message: errors.append(f"{key or 'a read'}: {message}"))
    window = MainWindow(ctx)
    window.resize(1400, 900)
    window.show()
    window.open_database(path)
    if not ctx.runner.wait_idle(WAIT_S) or window.database_path is None:
        _say(f"ERROR - - cannot open {path}: {'; '.join(errors)}")
        return 1
    steps = 0
    view = window.thread_view
    for thread_id in thread_ids:
        if not window.select_thread(thread_id):
            _say(f"ERROR {thread_id} - the thread list has no thread {thread_id!r}")
            return 1
        for tab in TAB_NAMES:
            _say(f"STEP {thread_id} {tab}")
            errors.clear()
            view.set_tab(tab)
            idle = ctx.runner.wait_idle(WAIT_S)
            if tab == "timeline" and view.timeline_tab.timeline is not None and view.timeline_tab.whatif is None:
                view.timeline_tab.whatif_button.setChecked(True)  # What-if is off until asked: ask, as a user would
                view.timeline_tab.whatif_panel.run()
                idle = ctx.runner.wait_idle(WAIT_S) and idle
                window.settle()
                if view.timeline_tab.whatif is None:
                    errors.append("the what-if replay was not drawn")
            window.settle()
            window.grab()  # paint every visible widget of the tab
            if not idle:
                errors.append(f"tasks still running after {WAIT_S:.0f} s")
            for error in errors:
                _say(f"ERROR {thread_id} {tab} {error}")
            steps += 1
    _say(f"DONE {steps}")
    ctx.runner.shutdown()
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Make docs/timeline.png: the studio's window on the sample thread, Timeline tab, with a What-if overlay.

    python docs/make_timeline_png.py [OUT.png] [--size 1400x900] [--db PATH]

`memory-studio PATH --screenshot` shows the Timeline with What-if off (as the studio starts); this
turns it on with other settings (messageTokens 1,800, observationTokens 700), so the overlay, its
markers and the comparison table are in the picture. The database is a private copy of the
bundled sample (resources/sample/memory.db, thread support-1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    """Write the screenshot; return 0, or 1 when the replay was not drawn."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?", type=Path, default=REPO / "docs" / "timeline.png")
    p.add_argument("--size", default="1400x900")
    p.add_argument("--db", type=Path, default=REPO / "resources" / "sample" / "memory.db")
    a = p.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings, Qt

    from studio.ui.app import application
    from studio.ui.context import AppContext
    from studio.ui.widgets.main_window import MainWindow

    app = application()
    work = Path(tempfile.mkdtemp(prefix="studio-shot-"))
    db = work / a.db.name
    shutil.copyfile(a.db, db)
    ctx = AppContext(settings=QSettings(str(work / "s.ini"), QSettings.Format.IniFormat))
    window = MainWindow(ctx)
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    width, height = (int(v) for v in a.size.split("x"))
    window.resize(width, height)
    window.show()
    try:
        window.open_database(str(db), thread_id="support-1", tab="timeline")
        ctx.runner.wait_idle()
        tab = window.thread_view.timeline_tab
        tab.whatif_button.setChecked(True)
        ctx.runner.wait_idle()
        panel = tab.whatif_panel
        panel.message_tokens.setValue(1800)
        panel.observation_tokens.setValue(700)
        panel.run()
        ctx.runner.wait_idle()
        for _ in range(5):
            app.processEvents()
        window.settle()
        if tab.whatif is None or tab.whatif.settings.message_tokens != 1800:
            print("the What-if replay was not drawn", file=sys.stderr)
            return 1
        window.grab().save(str(a.out), "PNG")
        print(f"wrote {a.out}")
        return 0
    finally:
        ctx.runner.shutdown()
        window.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

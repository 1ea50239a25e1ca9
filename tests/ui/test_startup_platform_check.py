"""Start-up names missing X11 libraries before Qt loads its xcb plugin (Qt would abort with exit 134).

The studio runs in a child process with DISPLAY set and no QT_QPA_PLATFORM, so Qt would pick xcb;
the display :97 does not exist. One library is reported missing by the check's loader, the way
`ctypes.CDLL` reports a library that is not installed. Without the check, Qt tries the display and
aborts (SIGABRT, exit -6/134); with it, the studio exits 1 naming the Debian package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import sys
import studio.ui.platform_check as pc
pc.missing_xcb_packages = lambda loader=None: ["libxcb-cursor0"]
from studio.main import main
sys.exit(main([]))
"""


def test_missing_xcb_library_is_named_before_qt_aborts(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=":97", PYTHONPATH=str(ROOT), HOME=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "libxcb-cursor0" in done.stderr and "apt-get install libxcb-cursor0" in done.stderr
    assert "could not connect to display" not in done.stderr

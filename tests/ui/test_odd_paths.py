"""The studio opens a file whose name is not UTF-8 (Linux file names are bytes) and shows it with U+FFFD."""

from __future__ import annotations

import os

from tests.cli.test_odd_paths import latin1_copy


def test_the_studio_opens_a_non_utf8_name(studio, studio_ctx, tmp_path):
    path = latin1_copy(tmp_path)
    window = studio(path)
    assert window.last_error is None or window.last_error == ""
    assert window.thread_model.rowCount() == 1
    assert window.current_thread_id == "tools-1"
    assert window.windowTitle() == "Memory Studio — caf\ufffd.db"
    assert os.fsencode(window.database_path).endswith(b"/caf\xe9.db")   # the real bytes are kept

"""The open file goes away (deleted, truncated to 0 bytes, overwritten by a non-database): a banner says so,
what is shown stays readable, and Reopen opens the file again once it is back."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import FIXTURES


def _delete(path):
    for ext in ("", "-wal", "-shm"):
        p = path.with_name(path.name + ext)
        if p.exists():
            p.unlink()


def _truncate(path):
    path.write_bytes(b"")


def _overwrite(path):
    path.write_text("These are someone's notes, saved over the database by mistake.\n" * 20)


@pytest.mark.parametrize(("damage", "said"), [(_delete, "was deleted"), (_truncate, "was truncated to 0 bytes"),
                                              (_overwrite, "not a SQLite database")])
def test_file_gone_banner_keeps_the_view_and_reopens(studio, studio_ctx, fixture_db, qtbot, damage, said):
    path = fixture_db("support")
    window = studio(path, thread_id="support-2", tab="history")
    view = window.thread_view
    title, rows = view.title.text(), view.history_tab.generation_model.rowCount()
    assert not window.file_banner.isVisible()

    damage(path)
    qtbot.waitUntil(window.file_banner.isVisible, timeout=10000)
    assert said in window.file_banner.text() and str(path) in window.file_banner.text()
    studio_ctx.runner.wait_idle()
    window.settle()
    # What was shown is still there, unchanged.
    assert view.detail is not None and view.title.text() == title
    assert view.history_tab.generation_model.rowCount() == rows
    assert window.current_thread_id == "support-2"

    # The file comes back (a copy of the same database): Reopen opens it on the same thread and tab.
    for ext in ("", "-wal", "-shm"):
        src = FIXTURES / f"support.db{ext}"
        if src.exists():
            shutil.copyfile(src, path.with_name(path.name + ext))
    window.file_banner.reopen_button.click()
    assert studio_ctx.runner.wait_idle()
    window.settle()
    assert not window.file_banner.isVisible()
    assert window.current_thread_id == "support-2" and view.current_tab() == "history"
    assert view.history_tab.generation_model.rowCount() == rows

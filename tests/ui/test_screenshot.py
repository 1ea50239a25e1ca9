"""`memory-studio PATH --screenshot OUT.png`: the window rendered to a PNG once everything has loaded."""

from __future__ import annotations

from argparse import Namespace

from PySide6.QtGui import QImage

from studio.ui.app import run_studio


def args(path, out, **kw) -> Namespace:
    return Namespace(path=str(path), screenshot=str(out), thread=kw.get("thread"), tab=kw.get("tab"),
                     size=kw.get("size", "1000x700"))


def test_screenshot_writes_png_of_requested_size(qapp, fixture_db, tmp_path):
    out = tmp_path / "history.png"
    assert run_studio(args(fixture_db("support"), out, thread="support-1", tab="history")) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1000, 700)
    # the picture is of the tab asked for: another tab of the same thread gives another picture
    other = tmp_path / "messages.png"
    assert run_studio(args(fixture_db("support"), other, thread="support-1", tab="messages")) == 0
    assert QImage(str(other)).size() == image.size() and QImage(str(other)) != image


def test_screenshot_default_thread_and_buffered_fixture(qapp, fixture_db, tmp_path):
    out = tmp_path / "buffered.png"
    assert run_studio(args(fixture_db("buffered"), out, tab="observations", size="1200x800")) == 0
    assert QImage(str(out)).width() == 1200


def test_screenshot_of_bad_database_fails_with_message(qapp, tmp_path, capsys, fixture_db):
    bad = tmp_path / "bad.db"
    bad.write_text("not sqlite")
    assert run_studio(args(bad, tmp_path / "x.png")) == 2
    assert "not a SQLite database" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
    assert run_studio(args(fixture_db("support"), tmp_path / "y.png", thread="nope")) == 2
    assert "No thread 'nope'" in capsys.readouterr().err
    assert run_studio(args(fixture_db("support"), tmp_path / "z.png", size="huge")) == 2


def test_screenshot_fails_when_a_tab_could_not_load(qapp, fixture_db, tmp_path, capsys, monkeypatch):
    """A tab whose read failed shows an error, not the data: the screenshot must say so and exit non-zero."""
    from studio.errors import StoreError
    from studio.ui.widgets import working_memory

    def unreadable(_store, thread_id):
        raise StoreError(f"database disk image is malformed (reading {thread_id})")

    monkeypatch.setattr(working_memory, "load_working_memory", unreadable)
    out = tmp_path / "wm.png"
    code = run_studio(args(fixture_db("collab"), out, tab="working-memory"))
    err = capsys.readouterr().err
    assert code == 2, err   # a store error: the command line's exit code for it (doctor and inspect exit 2 alike)
    assert "database disk image is malformed (reading " in err and "(the working memory could not be read)" in err
    assert not out.exists()


def test_screenshot_of_turn_context_of_a_thread_without_om(qapp, fixture_db, tmp_path, capsys):
    # support-meta has no OM record (the oracle's status lists none for it): the Turn context tab says so
    # instead of failing to load, so the screenshot is written and the run exits 0 without a traceback
    out = tmp_path / "context.png"
    assert run_studio(args(fixture_db("support"), out, thread="support-meta", tab="context")) == 0
    assert out.exists()
    assert "Traceback" not in capsys.readouterr().err

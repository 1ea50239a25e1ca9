"""Open Recent keeps absolute paths: a relative path would name another file from another working directory."""

from __future__ import annotations

import os


def test_a_relative_path_is_remembered_absolute(studio_ctx, tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    studio_ctx.add_recent_file("memory.db")
    studio_ctx.add_recent_file("../other.db")
    studio_ctx.add_recent_file("file:/srv/x.db?mode=ro")  # URLs are kept as given
    assert studio_ctx.recent_files() == ["file:/srv/x.db?mode=ro", str(tmp_path / "other.db"),
                                         str(tmp_path / "work" / "memory.db")]
    monkeypatch.chdir(tmp_path)  # from elsewhere, the entries still name the same files
    assert all(os.path.isabs(p) for p in studio_ctx.recent_files()[1:])
    studio_ctx.add_recent_file(str(tmp_path / "work" / "memory.db"))  # the same file again: moved up, not doubled
    assert studio_ctx.recent_files()[0] == str(tmp_path / "work" / "memory.db") and len(studio_ctx.recent_files()) == 3

"""Thread ▸ Export Thread… writes what `memory-studio export` writes; Help ▸ About names the version, the Mastra
packages mirrored (the corpus's pinned versions) and the studio's folders, as plain text."""

from __future__ import annotations

import json

from studio import __version__
from studio.cli import main
from tests.interop.conftest import CORPUS_SRC


def test_export_from_the_window_equals_the_cli(studio, studio_ctx, fixture_db, tmp_path, capsys, qtbot):
    path = fixture_db("collab")
    window = studio(path, thread_id="doc_42")
    assert window.exports.export_action.isEnabled()
    for fmt_name, name in (("json", "t.json"), ("markdown", "t.md")):
        dest = tmp_path / name
        window.exports.export_thread("doc_42", str(dest), fmt_name)
        studio_ctx.runner.wait_idle()
        qtbot.waitUntil(dest.exists, timeout=30_000)
        assert main(["export", str(path), "--thread", "doc_42", "--format", fmt_name]) == 0
        assert dest.read_text(encoding="utf-8") == capsys.readouterr().out
    assert "Exported thread doc_42" in window.statusBar().currentMessage()


def test_export_failure_is_said_and_writes_nothing(studio, studio_ctx, fixture_db, tmp_path):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1")
    before = path.read_bytes()
    window.exports.export_thread("support-1", str(path), "json")   # over the database itself: refused
    studio_ctx.runner.wait_idle()
    assert path.read_bytes() == before


def test_about_lists_version_and_pinned_mastra(studio, fixture_db):
    window = studio(fixture_db("support"))
    window.exports.show_about()
    facts = dict(window.exports.about_dialog.facts)
    assert facts["Memory Studio"] == __version__
    pinned = json.loads((CORPUS_SRC / "package.json").read_text())["dependencies"]
    for name in ("@mastra/memory", "@mastra/core", "@mastra/libsql", "@mastra/pg", "@mastra/mongodb"):
        assert facts[name] == f"{pinned[name]} (mirrored)"
    assert facts["Row backups"].endswith("backups")
    window.exports.about_dialog.close()

"""The studio's writes on a libSQL server (sqld): Thread ▸ Clear Thread's Messages, then Thread ▸ Undo Last Write.

The confirmation names the row backup (a server database is not copied); the write lands on the server; Undo
Last Write, enabled on server stores, puts every row back exactly (typed values and rowids: sqld's own dump).
"""

from __future__ import annotations

from tests.interop.conftest import run_node
from tests.server.sqld import dump
from tests.server.write_helpers import clear_then_undo_in_studio


def test_clear_then_undo_last_write_in_the_studio_on_sqld(sqld_corpus, tmp_path, monkeypatch, studio, studio_ctx,
                                                          qtbot):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    target = sqld_corpus.start("writes-b")      # the scratch server of test_libsql_writes (one sqld for both)
    run_node(sqld_corpus.corpus, "copy.mjs", sqld_corpus.target("support"), target, "--store", "libsql-remote")
    backup = clear_then_undo_in_studio(studio, studio_ctx, qtbot, tmp_path, target, lambda: dump(target)[1])
    assert backup.name.startswith("libsql_127.0.0.1_")

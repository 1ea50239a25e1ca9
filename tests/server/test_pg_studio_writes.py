"""The studio's writes on a PostgreSQL store: Thread ▸ Clear Thread's Messages, then Thread ▸ Undo Last Write.

The confirmation names the row backup (not a file copy); the write lands on the server; Undo Last Write,
enabled only on a server store, restores every row exactly (every column, twins included).
"""

from __future__ import annotations

from tests.server.pg_rows import copy_schema, dump_schema
from tests.server.write_helpers import clear_then_undo_in_studio

SCHEMA = "wstudio"


def test_clear_then_undo_last_write_in_the_studio(pg_corpus, tmp_path, monkeypatch, studio, studio_ctx, qtbot):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    target = copy_schema(pg_corpus, "support", SCHEMA)
    clear_then_undo_in_studio(studio, studio_ctx, qtbot, tmp_path, target, lambda: dump_schema(pg_corpus.url, SCHEMA))

"""Count the SQL statements a store sends to its database (libSQL connection or psycopg session).

    with counting_statements() as count:
        inspect_path(path)
    print(count.statements)

Every store `open_store` opens inside the block gets its backend's connection wrapped once it is open
(and again after a local file's reopen): each `execute` of the connection or of one of its cursors
counts one statement, whatever it is (SELECT, PRAGMA, the width probe of a SELECT). Used by benchmarks
and by the test that `inspect` sends as many statements for N threads as for 3N.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class StatementCount:
    """Statements counted so far; `sql` keeps the first words of each (for a report)."""

    statements: int = 0
    sql: list[str] = field(default_factory=list)

    def add(self, sql: object) -> None:
        self.statements += 1
        self.sql.append(" ".join(str(sql).split())[:80])


class _CountingCursor:
    def __init__(self, cursor, count: StatementCount):
        self._cursor, self._count = cursor, count

    def execute(self, sql, *args, **kwargs):
        self._count.add(sql)
        return self._cursor.execute(sql, *args, **kwargs)

    def __enter__(self):
        self._cursor.__enter__()
        return self

    def __exit__(self, *exc):
        return self._cursor.__exit__(*exc)

    def __getattr__(self, name):
        return getattr(self._cursor, name)


class _CountingConnection:
    def __init__(self, conn, count: StatementCount):
        self._conn, self._count = conn, count

    def execute(self, sql, *args, **kwargs):
        self._count.add(sql)
        return self._conn.execute(sql, *args, **kwargs)

    def cursor(self, *args, **kwargs):
        return _CountingCursor(self._conn.cursor(*args, **kwargs), self._count)

    def __getattr__(self, name):
        return getattr(self._conn, name)


@contextlib.contextmanager
def counting_statements() -> Iterator[StatementCount]:
    """Within the block, count every statement of every store opened (see the module docstring)."""
    from studio.store import memory_store
    from studio.store.backends import sqlite_file

    count = StatementCount()
    original_init = memory_store.MemoryStore.__init__
    original_reopen = sqlite_file.FileBackend._reopen

    def init_counted(self, backend):
        original_init(self, backend)
        backend.conn = _CountingConnection(backend.conn, count)

    def reopen_counted(self, **kwargs):
        original_reopen(self, **kwargs)
        self.conn = _CountingConnection(self.conn, count)

    memory_store.MemoryStore.__init__ = init_counted
    sqlite_file.FileBackend._reopen = reopen_counted
    try:
        yield count
    finally:
        memory_store.MemoryStore.__init__ = original_init
        sqlite_file.FileBackend._reopen = original_reopen


def inspect_path(path: str) -> dict:
    """Return `memory-studio inspect PATH --json`'s document, opened and read as the command does."""
    from studio.app.inspection import inspect_document
    from studio.store import open_store

    with open_store(path) as store, store.snapshot():
        return inspect_document(store)

"""A vector store in another database: LibSQLVector's tables in a libSQL file or server of their own.

Memory's `vector` may point at another database than its `storage` (`new LibSQLVector({url})` beside
`new LibSQLStore({url})`). Such a database holds the `memory_messages_<dim>` tables and no Mastra
tables, so it is not a MemoryStore: a `VectorSource` opens it read-only and answers the reads of
`studio.store.vectors` (`rows`, `dialect`) and nothing else. A file is read through libSQL's driver
(its ANN index answers `vector_top_k`), a server over Hrana. PostgreSQL (pgvector) and MongoDB (Atlas
vector search) are refused: the studio reads neither.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["VectorSource"]


class VectorSource:
    """One read-only connection to a database holding LibSQLVector's tables (the module docstring).

    DISPLAY names it in errors (a server URL without its secrets). `rows` raises StoreError.
    """

    dialect = "sqlite"

    def __init__(self, conn, display: str, statement_error: type[Exception]):
        self._conn = conn
        self.display = display
        self._statement_error = statement_error

    @classmethod
    def open(cls, target: str | os.PathLike[str]) -> VectorSource:
        """Open TARGET (a libSQL file path or `file:` URL, or a libSQL server URL) read-only.

        Raises StoreError (missing, unreadable, unreachable, refused) and for a PostgreSQL or MongoDB URL.
        """
        from studio.errors import StoreError
        from studio.store.target import LIBSQL_SERVER, MONGODB, POSTGRESQL, parse_target

        location = parse_target(target)
        if location.kind in (POSTGRESQL, MONGODB):
            raise StoreError(f"{location.display}: the studio reads vector stores of LibSQLVector only (a libSQL file "
                             "or server); PgVector and MongoDB's vector search are not read")
        if location.kind == LIBSQL_SERVER:
            from studio.store.credentials import libsql_token
            from studio.store.hrana import HranaConnection, HranaStatementError

            token, source = libsql_token(location)
            conn = HranaConnection(location.base_url, token, location.display, token_source=source or "the URL")
            return cls(conn, location.display, HranaStatementError)
        from studio.store.connection import connect

        conn, _immutable, _signature = connect(location)
        return cls(conn, location.display, ValueError)

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """Run one read statement with `?` placeholders and return its rows. Raises StoreError."""
        from studio.errors import StoreError

        try:
            return [tuple(r) for r in self._conn.execute(sql, list(params)).fetchall()]
        except self._statement_error as exc:
            raise StoreError(f"Cannot read the vector store {self.display}: {exc}") from exc

    def close(self) -> None:
        """Close the connection (nothing was written)."""
        self._conn.close()

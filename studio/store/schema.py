"""Discover the Mastra tables and columns a memory.db has (schemas drift between Mastra versions).

Mastra adds columns, never renames them: we read `PRAGMA table_info`, treat missing columns as
NULL and ignore unknown ones. We never ALTER the user's database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.errors import SchemaError
from studio.store.cells import decode_pairs, text_safe_pair

THREADS = "mastra_threads"
MESSAGES = "mastra_messages"
RESOURCES = "mastra_resources"
OBSERVATIONAL_MEMORY = "mastra_observational_memory"
THREAD_STATE = "mastra_thread_state"

REQUIRED = {
    THREADS: {"id", "resourceId", "createdAt"},
    MESSAGES: {"id", "thread_id", "content", "role", "createdAt"},
}


@dataclass
class Schema:
    """Columns per Mastra table present in a database: {table: [column, ...]} in table order."""

    tables: dict[str, list[str]] = field(default_factory=dict)
    types: dict[str, dict[str, str]] = field(default_factory=dict)  # {table: {column: declared type}}

    def has_table(self, table: str) -> bool:
        """Return True if TABLE exists."""
        return table in self.tables

    def columns(self, table: str) -> list[str]:
        """Return TABLE's columns ([] when the table is absent)."""
        return self.tables.get(table, [])

    def has_column(self, table: str, column: str) -> bool:
        """Return True if TABLE exists and has COLUMN."""
        return column in self.tables.get(table, ())

    @property
    def has_observational_memory(self) -> bool:
        """Return True if the database has an OM table (Mastra with Observational Memory)."""
        return OBSERVATIONAL_MEMORY in self.tables

    @property
    def has_buffering(self) -> bool:
        """Return True if the OM table has async-buffering columns (newer @mastra/memory)."""
        return self.has_column(OBSERVATIONAL_MEMORY, "bufferedObservationChunks")


def quote_ident(name: str) -> str:
    """Quote an SQL identifier (names come from PRAGMA output, never from user input)."""
    return '"' + name.replace('"', '""') + '"'


def _text_rows(conn, sql: str, params: tuple = ()) -> list[tuple]:
    """Run SQL whose result columns are `text_safe_pair`s; return the decoded rows."""
    return [decode_pairs(r) for r in conn.execute(sql, params).fetchall()]


def discover(conn) -> Schema:
    """Read every `mastra_*` table and its columns; raise SchemaError if it is not a Mastra memory db.

    Names are read as bytes (see studio.store.cells), so a damaged name cannot panic the driver;
    declared column types go to `Schema.types`.
    """
    names = [r[0] for r in _text_rows(
        conn,
        f"SELECT {text_safe_pair('name')} FROM sqlite_master "
        "WHERE type = 'table' AND name LIKE 'mastra\\_%' ESCAPE '\\'"
    ) if isinstance(r[0], str)]
    schema = Schema()
    for name in sorted(names):
        rows = _text_rows(conn, f"SELECT {text_safe_pair('name')}, {text_safe_pair('type')} "
                                "FROM pragma_table_info(?) ORDER BY cid", (name,))
        schema.tables[name] = [r[0] for r in rows]
        schema.types[name] = {r[0]: str(r[1] or "").upper() for r in rows}
    if not schema.tables:
        raise SchemaError("This SQLite file has no Mastra tables (mastra_threads, mastra_messages…): "
                          "it is not a Mastra memory database")
    for table, needed in REQUIRED.items():
        if table not in schema.tables:
            raise SchemaError(f"This database has Mastra tables but no {table} table: "
                              "it was not written by Mastra's memory (or by a version this studio does not know)")
        missing = needed - set(schema.tables[table])
        if missing:
            raise SchemaError(f"{table} lacks the column(s) {', '.join(sorted(missing))}: "
                              "an unknown Mastra schema version")
    return schema

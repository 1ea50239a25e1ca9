"""Discover the Mastra tables and columns a memory.db has (schemas drift between Mastra versions).

Mastra adds columns, never renames them: we read `PRAGMA table_info`, treat missing columns as
NULL and ignore unknown ones. We never ALTER the user's database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.errors import SchemaError

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


def discover(conn) -> Schema:
    """Read every `mastra_*` table and its columns; raise SchemaError if it is not a Mastra memory db."""
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'mastra\\_%' ESCAPE '\\'"
    ).fetchall()]
    schema = Schema()
    for name in sorted(names):
        schema.tables[name] = [r[1] for r in conn.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()]
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

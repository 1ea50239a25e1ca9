"""Discover the Mastra tables and columns a memory.db has (schemas drift between Mastra versions).

Mastra adds columns, never renames them: we read `PRAGMA table_info`, treat missing columns as
NULL and ignore unknown ones. We never ALTER the user's database.
"""

from __future__ import annotations

from studio.errors import SchemaError
from studio.store.cells import decode_text, text_safe

THREADS = "mastra_threads"
MESSAGES = "mastra_messages"
RESOURCES = "mastra_resources"
OBSERVATIONAL_MEMORY = "mastra_observational_memory"

REQUIRED = {
    THREADS: {"id", "resourceId", "createdAt"},
    MESSAGES: {"id", "thread_id", "content", "role", "createdAt"},
}


class Schema:
    """Columns per Mastra table present in a database: `tables` {table: [column, ...]} in table order,
    `types` {table: {column: declared type}}. Compared by value (a plain class: no dataclasses import)."""

    __slots__ = ("tables", "types")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, tables: dict[str, list[str]] | None = None, types: dict[str, dict[str, str]] | None = None):
        self.tables = {} if tables is None else tables
        self.types = {} if types is None else types

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.tables, self.types) == (other.tables, other.types)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Schema(tables={self.tables!r}, types={self.types!r})"

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
    """Read every `mastra_*` table and its columns; raise SchemaError if it is not a Mastra memory db.

    One query over sqlite_master and pragma_table_info. Names are read as bytes (see
    studio.store.cells), so a damaged name cannot panic the driver; declared column types go to
    `Schema.types`.
    """
    rows = conn.execute(
        f"SELECT {text_safe('m.name')}, CAST(group_concat(p.name || char(31) || coalesce(p.type, ''), char(30)) "
        "AS BLOB) FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p "
        "WHERE m.type = 'table' AND m.name LIKE 'mastra\\_%' ESCAPE '\\' GROUP BY m.name ORDER BY m.name"
    ).fetchall()
    schema = Schema()
    for table, columns in rows:
        table, columns = _name(table), _name(columns)
        if table is None or columns is None:
            continue
        pairs = [item.partition("\x1f") for item in columns.split("\x1e")]
        schema.tables[table] = [name for name, _, _ in pairs]
        schema.types[table] = {name: declared.upper() for name, _, declared in pairs}
    if not schema.tables:
        raise SchemaError("This SQLite file has no Mastra tables (mastra_threads, mastra_messages…): "
                          "it is not a Mastra memory database")
    return check_required(schema)


def check_required(schema: Schema) -> Schema:
    """Return SCHEMA, or raise SchemaError when a table or column every Mastra version writes is missing."""
    for table, needed in REQUIRED.items():
        if table not in schema.tables:
            raise SchemaError(f"This database has Mastra tables but no {table} table: "
                              "it was not written by Mastra's memory (or by a version this studio does not know)")
        missing = needed - set(schema.tables[table])
        if missing:
            raise SchemaError(f"{table} lacks the column(s) {', '.join(sorted(missing))}: "
                              "an unknown Mastra schema version")
    return schema


def _name(value) -> str | None:
    """Return a name read through `text_safe` as str (None for NULL or a number)."""
    if isinstance(value, (bytes, bytearray)):
        return decode_text(value)
    return value if isinstance(value, str) else None

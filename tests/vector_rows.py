"""Vector memory written into a copy of a fixture, as LibSQLVector and the SemanticRecall processor write it (the
corpus README, "How LibSQLVector stores vectors"), with the corpus's `hash64` embedder.

No corpus has Observational Memory and semantic recall together; this gives an OM thread stored vectors, so
what needs both (the Timeline's recall marks) can be tested on real OM rows.
"""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path

from tests.hash64 import DIMENSION, hash64

INDEX = f"memory_messages_{DIMENSION}"


def _text(content: str) -> str:
    """The processor's embedded text: the text parts joined by a newline ('' when there are none)."""
    try:
        parsed = json.loads(content)
    except ValueError:
        return content
    parts = parsed.get("parts") if isinstance(parsed, dict) else None
    if not isinstance(parts, list):
        return ""
    return "\n".join(p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text"
                     and isinstance(p.get("text"), str))


def store_hash64_vectors(db: Path, thread_id: str) -> int:
    """Give THREAD_ID's messages with text a vector each in DB's `memory_messages_64` (created when missing), in
    createdAt order (rowid order), vector_id the message id, metadata {message_id, thread_id, resource_id, role,
    content, created_at}. Plain SQLite: no libSQL ANN index (the studio scores every row). Returns the rows
    written."""
    with sqlite3.connect(db) as con:
        con.execute(f"CREATE TABLE IF NOT EXISTS {INDEX} (id SERIAL PRIMARY KEY, vector_id TEXT UNIQUE NOT NULL, "
                    f"embedding F32_BLOB({DIMENSION}), metadata TEXT DEFAULT '{{}}')")
        rows = con.execute('SELECT id, thread_id, "resourceId", role, content, "createdAt" FROM mastra_messages '
                           'WHERE thread_id = ? ORDER BY "createdAt", id', [thread_id]).fetchall()
        written = 0
        for message_id, thread, resource, role, content, created in rows:
            text = _text(content)
            if not text:
                continue
            blob = struct.pack(f"<{DIMENSION}f", *hash64(text))
            metadata = {"message_id": message_id, "thread_id": thread, "resource_id": resource, "role": role,
                        "content": text, "created_at": created}
            con.execute(f"INSERT INTO {INDEX} (vector_id, embedding, metadata) VALUES (?, ?, ?)",
                        [message_id, blob, json.dumps(metadata)])
            written += 1
    return written


def split_vector_store(db: Path, storage: Path, vectors: Path) -> None:
    """Copy DB (Mastra storage and LibSQLVector in one libSQL file) into STORAGE (without the vector tables) and
    VECTORS (only them, their rowids and libSQL's ANN index kept): what `LibSQLStore` and `LibSQLVector` write
    when their URLs differ. Uses libSQL's driver (plain SQLite cannot drop a `libsql_vector_idx` index)."""
    import libsql

    for out in (storage, vectors):
        out.write_bytes(db.read_bytes())
    for out, keep_vectors in ((storage, False), (vectors, True)):
        con = libsql.connect(str(out))
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()]
        vector_tables = {t for t in tables if t.startswith(("memory_messages", "libsql_vector"))}
        if not keep_vectors:  # the index first: its shadow tables go with it
            for (index,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                        "AND name LIKE 'memory_messages%_vector_idx'").fetchall():
                con.execute(f'DROP INDEX "{index}"')
        for table in tables:
            if (table in vector_tables) != keep_vectors:
                con.execute(f'DROP TABLE IF EXISTS "{table}"')
        con.commit()
        con.execute("VACUUM")
        con.close()

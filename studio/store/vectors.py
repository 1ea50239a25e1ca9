"""Read the vector memory `LibSQLVector` (@mastra/libsql 1.23.1) keeps beside the messages.

Semantic recall stores one row per embedded text in a table named after Memory's index,
`memory_messages_<dim>` (`memory_messages` for 1536 dimensions):

    CREATE TABLE memory_messages_64 (id SERIAL PRIMARY KEY, vector_id TEXT UNIQUE NOT NULL,
      embedding F32_BLOB(64), metadata TEXT DEFAULT '{}')

`embedding` is DIM little-endian float32 values, `metadata` JSON text (`message_id`, `thread_id`,
`resource_id`, `role`, `content` — the embedded text —, `created_at`, and for `saveMessages` the
thread's metadata first). `vector_id` is the message id for vectors written by agent turns and a
random UUID for those of `Memory.saveMessages`; a long text is chunked into several rows of one
message. libSQL's ANN index (`libsql_vector_idx`) is a b-tree plain SQLite sees as empty, so every
read here names the table `NOT INDEXED` (it reads the table itself, on a file or on a libSQL server).

Which tables are indexes follows `LibSQLVector.listIndexes` (a table whose SQL mentions F32_BLOB);
`describeIndex` gives the dimension from `F32_BLOB(N)`, the row count, and always metric "cosine".
`ann_rowids` asks libSQL's ANN index (`vector_top_k`, on a file through the libsql driver or on a server)
for the nearest rows, as LibSQLVector's indexed query does.
Only SQLite-dialect stores (a libSQL file or server) hold these tables; PostgreSQL's pgvector and
MongoDB's Atlas vectors are not read (an empty list).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from typing import Any

    from studio.store.memory_store import MemoryStore

__all__ = ["VectorIndex", "VectorRow", "ann_rowids", "has_ann_index", "index_name_for", "message_vectors",
           "read_embeddings", "read_vector_rows", "vector_indexes"]

_DIMENSION = re.compile(r"F32_BLOB\s*\(\s*(\d+)\s*\)", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Metadata keys a read may filter on (Memory filters on one of them; the studio also on message_id).
FILTER_KEYS = ("resource_id", "thread_id", "message_id")


@dataclass(frozen=True)
class VectorIndex:
    """One vector index as `LibSQLVector.describeIndex` reports it: NAME (the table), DIMENSION (from
    `F32_BLOB(N)`), COUNT (rows) and METRIC (always "cosine" in LibSQLVector)."""

    name: str
    dimension: int
    count: int | None
    metric: str = "cosine"

    def to_json(self) -> dict:
        """Return {index_name, dimension, count, metric} (JSON-ready)."""
        return {"index_name": self.name, "dimension": self.dimension, "count": self.count, "metric": self.metric}


@dataclass(frozen=True)
class VectorRow:
    """One stored vector: ROWID (the table's key: `id` is always NULL), VECTOR_ID (what a query returns
    as `id`), EMBEDDING (DIM little-endian float32 values, as stored) and METADATA (parsed JSON; {} when
    the stored text is not a JSON object)."""

    rowid: int
    vector_id: str
    embedding: bytes
    metadata: dict = field(default_factory=dict)

    @property
    def message_id(self) -> str | None:
        """The message this vector was made from (`metadata.message_id`)."""
        value = self.metadata.get("message_id")
        return value if isinstance(value, str) else None

    @property
    def thread_id(self) -> str | None:
        """The message's thread (`metadata.thread_id`)."""
        value = self.metadata.get("thread_id")
        return value if isinstance(value, str) else None

    @property
    def text(self) -> str:
        """The embedded text (`metadata.content`), "" when absent."""
        value = self.metadata.get("content")
        return value if isinstance(value, str) else ""


def index_name_for(dimension: int) -> str:
    """Memory's index name for an embedder of DIMENSION values (getEmbeddingIndexName, separator `_`)."""
    return "memory_messages" if dimension == 1536 else f"memory_messages_{dimension}"


def _quoted(name: str) -> str:
    if not _NAME.match(name):
        from studio.errors import StoreError

        raise StoreError(f"Not a vector index name: {name!r}")
    return f'"{name}"'


def vector_indexes(store: MemoryStore, *, counted: bool = True) -> list[VectorIndex]:
    """Return the store's vector indexes (listIndexes + describeIndex), sorted by name.

    COUNTED False leaves `count` None (describeIndex's count(*) reads the whole table). Empty on a
    PostgreSQL store (pgvector is not read) or when there are none. Raises StoreError.
    """
    if store.dialect != "sqlite":
        return []
    found = store.rows("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%F32_BLOB%' "
                       "ORDER BY name")
    out = []
    for name, sql in found:
        if not isinstance(name, str) or not _NAME.match(name):
            continue
        match = _DIMENSION.search(str(sql or ""))
        count = int(store.rows(f"SELECT count(*) FROM {_quoted(name)} NOT INDEXED")[0][0] or 0) if counted else None
        out.append(VectorIndex(name, int(match.group(1)) if match else 0, count))
    return out


def _metadata(text: Any) -> dict:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _where(where: dict[str, str] | None, rowids: list[int] | None, below: int | None) -> tuple[str, list]:
    terms: list[str] = []
    params: list[Any] = []
    for key, value in (where or {}).items():
        if key not in FILTER_KEYS:
            from studio.errors import StoreError

            raise StoreError(f"Vector rows cannot be filtered on {key!r}")
        terms.append(f"json_extract(metadata, '$.{key}') = ?")
        params.append(value)
    if rowids is not None:
        terms.append(f"rowid IN ({', '.join('?' * len(rowids))})")
        params.extend(int(r) for r in rowids)
    if below is not None:
        terms.append("rowid < ?")
        params.append(int(below))
    return (f" WHERE {' AND '.join(terms)}" if terms else ""), params


def read_vector_rows(store: MemoryStore, index: str, *, where: dict[str, str] | None = None,
                     rowids: list[int] | None = None, below: int | None = None) -> list[VectorRow]:
    """Return the rows of vector index INDEX in table order (rowid), read `NOT INDEXED`.

    WHERE: {metadata key: string value} with keys among `FILTER_KEYS`, every one must hold (Mastra's
    equality filter on `json_extract(metadata, '$.key')`). ROWIDS: only those rows. BELOW: only rows
    inserted before that rowid. A row whose embedding is not a blob is skipped. Raises StoreError (and
    for an unknown filter key).
    """
    if rowids is not None and not rowids:
        return []
    tail, params = _where(where, rowids, below)
    rows = store.rows(f"SELECT rowid, vector_id, embedding, metadata FROM {_quoted(index)} NOT INDEXED{tail} "
                      "ORDER BY rowid", params)
    return [VectorRow(int(r[0]), str(r[1]), bytes(r[2]), _metadata(r[3]))
            for r in rows if isinstance(r[2], (bytes, bytearray, memoryview))]


def message_vectors(store: MemoryStore, index: str, message_id: str) -> list[VectorRow]:
    """Return MESSAGE_ID's rows of INDEX in table order: first through `vector_id`'s UNIQUE index (the
    SemanticRecall processor stores one vector per message under the message's id), else by scanning the
    metadata (`Memory.saveMessages` stores random ids, one per chunk). Raises StoreError."""
    rows = store.rows(f"SELECT rowid, vector_id, embedding, metadata FROM {_quoted(index)} WHERE vector_id = ?",
                      [message_id])
    found = [VectorRow(int(r[0]), str(r[1]), bytes(r[2]), _metadata(r[3])) for r in rows
             if isinstance(r[2], (bytes, bytearray, memoryview))]
    if found and all(r.message_id == message_id for r in found):
        return found
    return read_vector_rows(store, index, where={"message_id": message_id})


def read_embeddings(store: MemoryStore, index: str, *, where: dict[str, str] | None = None,
                    below: int | None = None) -> tuple[list[int], list[bytes]]:
    """Return (rowids, embeddings as stored) of INDEX's rows in table order, filtered as `read_vector_rows`
    does, without their metadata (the scan a brute-force query scores). Raises StoreError."""
    tail, params = _where(where, None, below)
    rows = store.rows(f"SELECT rowid, embedding FROM {_quoted(index)} NOT INDEXED{tail} ORDER BY rowid", params)
    kept = [r for r in rows if isinstance(r[1], (bytes, bytearray, memoryview))]
    return [int(r[0]) for r in kept], [bytes(r[1]) for r in kept]


def has_ann_index(store: MemoryStore, index: str) -> bool:
    """True when INDEX has libSQL's ANN index `<index>_vector_idx` (LibSQLVector.hasVectorIndex). Raises StoreError."""
    if store.dialect != "sqlite":
        return False
    return bool(store.rows("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", [f"{index}_vector_idx"]))


def ann_rowids(store: MemoryStore, index: str, query: bytes, count: int) -> list[int] | None:
    """Return the rowids libSQL's ANN index gives for QUERY (little-endian float32 bytes), nearest first, at most
    COUNT (`vector_top_k`, as LibSQLVector's indexed query asks it); None when the store cannot answer it
    (plain SQLite without libSQL's vector functions, or no such index)."""
    from studio.errors import StoreError

    _quoted(index)
    try:
        rows = store.rows(f"SELECT id FROM vector_top_k('{index}_vector_idx', vector32(?), ?)", [query, int(count)])
    except StoreError:
        return None
    return [int(r[0]) for r in rows if r[0] is not None]

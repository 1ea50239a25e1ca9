"""Semantic recall's arithmetic, as @mastra/memory 1.31.0 and @mastra/libsql 1.23.1 do it (pure, no I/O).

`Memory.recall` with `semanticRecall` and a `vectorSearchString` chunks the text (`chunk_text`),
embeds each chunk, and asks the vector store for each embedding's `topK` nearest rows of its scope
(`{resource_id}` for scope "resource", the default, or `{thread_id}`). `LibSQLVector.query` scores a
row `1 - vector_distance_cos(embedding, query)`, keeps `score > -1`, orders by score, descending, and
returns the first `topK` (`vector_query`). Every hit becomes an `include` of its message with
`messageRange` messages before and after (`recall_includes`), merged into the last-messages page.

Scores are libSQL's: the distance is computed in float32 (dot product and both squared norms summed
in index order, in float32), `1 - dot / sqrt(norm1 * norm2)` in double rounded to float32, and the
score is `1 - distance` in double (`cosine_scores`). Mastra's ANN path (`vector_top_k` over topK × 10
candidates) returns the same rows as this exact ranking whenever the ANN finds the true neighbours
(the corpus oracle's `annEqualsExact`); the exact ranking is what is reproduced here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from studio.store.vectors import VectorRow

__all__ = ["DEFAULT_MESSAGE_RANGE", "DEFAULT_TOP_K", "SemanticConfig", "VectorHit", "chunk_text",
           "cosine_scores", "embedding_matrix", "hit_of", "query_vector", "rank", "recall_includes", "vector_query"]

#: Mastra's defaults when `semanticRecall: true` (DEFAULT_TOP_K, DEFAULT_MESSAGE_RANGE {before: 1, after: 1}).
DEFAULT_TOP_K = 4
DEFAULT_MESSAGE_RANGE = 1
#: Mastra's chunk size for embedded text: 4096 tokens of 4 characters (chunkText, CHARS_PER_TOKEN).
CHUNK_TOKENS = 4096
CHARS_PER_TOKEN = 4
#: JavaScript's `\s` (ECMAScript WhiteSpace and LineTerminator), which Python's `\s` does not equal.
_JS_SPACES = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")


@dataclass(frozen=True)
class SemanticConfig:
    """Memory's `semanticRecall` options: TOP_K (hits per query chunk), MESSAGE_RANGE (messages kept before
    and after each hit; an int or (before, after)), SCOPE "resource" (default) or "thread", and THRESHOLD
    (hits scoring below it are dropped; None keeps all)."""

    top_k: int = DEFAULT_TOP_K
    message_range: int | tuple[int, int] = DEFAULT_MESSAGE_RANGE
    scope: str = "resource"
    threshold: float | None = None

    def __post_init__(self) -> None:
        from studio.errors import EngineError

        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise EngineError(f"topK must be a whole number >= 1, not {self.top_k!r}")
        values = self.message_range if isinstance(self.message_range, tuple) else (self.message_range,)
        if not all(isinstance(v, int) and v >= 0 for v in values):
            raise EngineError(f"messageRange must be a whole number >= 0, not {self.message_range!r}")
        if self.scope not in ("resource", "thread"):
            raise EngineError(f"scope must be 'resource' or 'thread', not {self.scope!r}")

    @property
    def before(self) -> int:
        """Messages kept before each hit (withPreviousMessages)."""
        return self.message_range[0] if isinstance(self.message_range, tuple) else self.message_range

    @property
    def after(self) -> int:
        """Messages kept after each hit (withNextMessages)."""
        return self.message_range[1] if isinstance(self.message_range, tuple) else self.message_range

    def to_json(self) -> dict:
        """Return Mastra's shape {topK, messageRange, scope[, threshold]}."""
        rng = self.message_range if isinstance(self.message_range, int) else \
            {"before": self.before, "after": self.after}
        out: dict = {"topK": self.top_k, "messageRange": rng, "scope": self.scope}
        if self.threshold is not None:
            out["threshold"] = self.threshold
        return out


@dataclass(frozen=True)
class VectorHit:
    """One result of a vector query: ID (the vector's own id, `vector_id`), MESSAGE_ID and THREAD_ID (from
    its metadata), SCORE (libSQL's float32 cosine, as a float), TEXT (the embedded text), ROWID, ROLE (from
    its metadata, "" when absent)."""

    id: str
    message_id: str | None
    thread_id: str | None
    score: float
    text: str
    rowid: int
    role: str = ""

    def to_json(self) -> dict:
        """Return {id, message_id, thread_id, score, text}."""
        return {"id": self.id, "message_id": self.message_id, "thread_id": self.thread_id, "score": self.score,
                "text": self.text}


def chunk_text(text: str, token_size: int = CHUNK_TOKENS) -> list[str]:
    """Split TEXT as Memory.chunkText does: words (split on JavaScript whitespace) joined by one space into
    chunks of at most TOKEN_SIZE × 4 characters; a longer word is cut into pieces of that size.

    Characters are counted in UTF-16 code units in JavaScript; here in code points (equal for text
    without astral characters, and only chunk boundaries of texts over 16,384 characters differ).
    """
    size = token_size * CHARS_PER_TOKEN
    chunks: list[str] = []
    current = ""
    for word in _JS_SPACES.split(text):
        if len(word) > size:
            if current:
                chunks.append(current)
                current = ""
            chunks.extend(word[i:i + size] for i in range(0, len(word), size))
            continue
        spaced = " " + word if current else word
        if len(current) + len(spaced) > size:
            if current:
                chunks.append(current)
            current = word
        else:
            current += spaced
    if current:
        chunks.append(current)
    return chunks


def embedding_matrix(rows: Sequence[VectorRow] | Sequence[bytes], dimension: int) -> np.ndarray:
    """Return the rows' embeddings (VectorRows or stored blobs) as an (N, DIMENSION) float32 array
    (little-endian as stored).

    Raises EngineError when a stored embedding is not DIMENSION float32 values.
    """
    import numpy as np

    from studio.errors import EngineError

    blobs = [r if isinstance(r, bytes) else r.embedding for r in rows]
    width = dimension * 4
    bad = next((n for n, b in enumerate(blobs) if len(b) != width), None)
    if bad is not None:
        name = rows[bad].vector_id if not isinstance(rows[bad], bytes) else f"row {bad}"
        raise EngineError(f"Vector {name!r} holds {len(blobs[bad])} bytes, not {dimension} float32 values")
    if not blobs:
        return np.zeros((0, dimension), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dimension)


def query_vector(values: Sequence[float] | bytes) -> np.ndarray:
    """Return VALUES (the embedder's numbers, or a stored float32 blob) as float32, as `vector32('[…]')` reads
    them. Raises EngineError for an empty or non-finite vector (LibSQLVector.query refuses those)."""
    import numpy as np

    from studio.errors import EngineError

    if isinstance(values, (bytes, bytearray, memoryview)):
        q = np.frombuffer(bytes(values), dtype="<f4").astype(np.float32)
    else:
        q = np.asarray([float(v) for v in values], dtype=np.float64).astype(np.float32)
    if q.size == 0 or not np.isfinite(q).all():
        raise EngineError("The query vector must be a non-empty array of finite numbers")
    return q


def cosine_scores(matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Return `1 - vector_distance_cos(row, Q)` for every row of MATRIX, as libSQL computes it (float64 array).

    float32 sums in index order (vectorF32DistanceCos), the distance rounded to float32, the score
    `1 - distance` in double. A row or query of zero norm scores NaN (SQL NULL: never a hit).
    """
    import numpy as np

    n = matrix.shape[0]
    columns = np.ascontiguousarray(matrix.T)  # one contiguous array per dimension: the sums run down them
    dot = np.zeros(n, dtype=np.float32)
    norm1 = np.zeros(n, dtype=np.float32)
    norm2 = np.float32(0)
    scratch = np.empty(n, dtype=np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(columns.shape[0]):
            column = columns[i]
            np.multiply(column, q[i], out=scratch)
            dot += scratch
            np.multiply(column, column, out=scratch)
            norm1 += scratch
            norm2 = np.float32(norm2 + q[i] * q[i])
        distance = (1.0 - dot.astype(np.float64) / np.sqrt((norm1 * norm2).astype(np.float64))).astype(np.float32)
    return 1.0 - distance.astype(np.float64)


def rank(matrix: np.ndarray, q: np.ndarray, top_k: int, min_score: float = -1.0) -> list[tuple[int, float]]:
    """Return [(row position, score)] of the TOP_K rows of MATRIX scoring above MIN_SCORE, highest first, ties
    in row order (LibSQLVector.query's `score > ?`, `ORDER BY score DESC LIMIT topK`)."""
    import numpy as np

    if matrix.shape[0] == 0:
        return []
    scores = cosine_scores(matrix, q)
    keep = np.flatnonzero(scores > min_score)  # NaN compares False: a zero vector is never a hit
    if top_k < keep.size:  # only the best few need sorting: cut at the k-th score, keeping its ties
        kth = np.partition(-scores[keep], top_k - 1)[top_k - 1]
        keep = keep[-scores[keep] <= kth]
    order = keep[np.argsort(-scores[keep], kind="stable")][:top_k]
    return [(int(i), float(scores[i])) for i in order]


def hit_of(row: VectorRow, score: float) -> VectorHit:
    """The VectorHit of stored ROW scoring SCORE."""
    return VectorHit(row.vector_id, row.message_id, row.thread_id, score, row.text, row.rowid,
                     str(row.metadata.get("role") or ""))


def vector_query(rows: Sequence[VectorRow], matrix: np.ndarray, q: np.ndarray, top_k: int,
                 min_score: float = -1.0) -> list[VectorHit]:
    """Return LibSQLVector.query's results over ROWS (already filtered to the scope; MATRIX their embeddings).

    Scores above MIN_SCORE, highest first (ties in table order), the first TOP_K.
    """
    return [hit_of(rows[i], score) for i, score in rank(matrix, q, top_k, min_score)]


def recall_includes(hits: Sequence[VectorHit], config: SemanticConfig) -> list[dict]:
    """Return Memory.recall's `include` items for HITS: {id: message_id, thread_id, with_previous_messages,
    with_next_messages}, in hit order, hits below the config's threshold left out."""
    kept = hits if config.threshold is None else [h for h in hits if h.score >= config.threshold]
    return [{"id": h.message_id, "thread_id": h.thread_id, "with_previous_messages": config.before,
             "with_next_messages": config.after} for h in kept]

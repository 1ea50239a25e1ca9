"""Semantic recall: a store's vector memory, recall by meaning, and what a turn recalled (no Qt).

`recall_by_meaning` is Memory.recall with `semanticRecall` and a `vectorSearchString` (@mastra/memory
1.31.0 over LibSQLVector): the text is chunked and embedded by the caller's EMBED function, each
chunk's vector queries the index `memory_messages_<dim>` in the thread's or resource's scope, and the
hits with `messageRange` messages around them are merged into the last-messages page.
`recall_with_vector` does the same for a vector already stored (a turn's user message: the query the
agent used; "similar messages"), with no embedder. Vectors are read from the store's own tables or from
the vector store attached to it (`studio.app.vector_store`); messages always from the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.app.vector_store import vectors_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from studio.engine.semantic import SemanticConfig, VectorHit
    from studio.store.memory_store import MemoryStore
    from studio.store.vectors import VectorIndex, VectorRow

__all__ = ["KNOWN_DIMENSIONS", "VectorMemoryInfo", "embedded_messages", "embedder_mismatch", "load_vector_memory",
           "recall_by_meaning", "recall_with_vector", "similar_messages", "stored_vector", "turn_recall",
           "vector_memory_document"]

#: Output dimensions of common embedding models (by model id), to check against the store's indexes before
#: any call; a model not listed is checked on its first answer.
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536, "text-embedding-ada-002": 1536, "text-embedding-3-large": 3072,
    "nomic-embed-text": 768, "mxbai-embed-large": 1024, "all-minilm": 384, "bge-small-en-v1.5": 384,
    "bge-base-en-v1.5": 768, "bge-large-en-v1.5": 1024, "text-embedding-004": 768, "gemini-embedding-001": 3072,
}

#: The dimensions embedders are known by (the view's "which embedder" column).
DIMENSION_HINTS = {
    1536: "OpenAI text-embedding-3-small / ada-002", 3072: "OpenAI text-embedding-3-large / Gemini embedding-001",
    384: "fastembed (bge-small) / all-MiniLM", 768: "nomic-embed-text / bge-base / Google text-embedding-004",
    1024: "mxbai-embed-large / bge-large", 64: "the corpus's scripted hash64",
}


def _bad(text: str) -> Exception:
    from studio.app.failures import BadInput

    return BadInput(text)


def memory_indexes(store: MemoryStore, *, counted: bool = False) -> list[VectorIndex]:
    """The store's vector indexes that Memory writes (`memory_messages`, `memory_messages_<dim>`); their row
    counts only when COUNTED (a count reads the whole table)."""
    from studio.store.vectors import vector_indexes

    return [i for i in vector_indexes(vectors_of(store), counted=counted)
            if i.name == "memory_messages" or i.name.startswith("memory_messages_")]


def _scope_filter(store: MemoryStore, thread_id: str, resource_id: str | None, config: SemanticConfig) -> dict:
    from studio.store.history import get_thread_by_id

    thread = get_thread_by_id(store, thread_id)
    if thread is None:
        raise _bad(f"No thread {thread_id!r} in {store.location.display}")
    if config.scope == "resource":
        if not resource_id:
            raise _bad("Resource-scoped semantic recall needs a resource id (--resource), as Mastra's Memory.recall "
                       "does; or use --scope thread")
        return {"resource_id": resource_id}
    return {"thread_id": thread_id}


#: LibSQLVector's default vectorTopKOverFetchMultiplier: the ANN candidates a filtered query asks for per hit.
OVER_FETCH = 10


def _hits(store: MemoryStore, index: VectorIndex, vectors: Sequence, where: dict, top_k: int,
          *, ann: bool = True, below: int | None = None) -> tuple[list[VectorHit], str]:
    """Return (hits of every query vector in order, "ann" or "exact") as LibSQLVector.query finds them.

    With libSQL's ANN index (and ANN): `vector_top_k` gives topK × 10 candidates (topK × 2 without a filter),
    scored exactly, filtered, best topK kept; fewer than topK with a filter, or no ANN answer: every row of
    the scope scored (the brute-force query Mastra falls back to). Without ANN: always the exact ranking.
    BELOW: only rows inserted before that rowid (the index as it was; exact ranking).
    """
    from studio.engine.semantic import embedding_matrix, query_vector, vector_query
    from studio.store.vectors import ann_rowids, has_ann_index, read_vector_rows

    queries = [query_vector(v) for v in vectors]
    hits: list[VectorHit] = []
    paths = set()
    source = vectors_of(store)
    use_ann = ann and below is None and has_ann_index(source, index.name)
    scope = None
    for q in queries:
        if use_ann:
            rowids = ann_rowids(source, index.name, q.astype("<f4").tobytes(), top_k * (OVER_FETCH if where else 2))
            if rowids is not None:
                rank = {r: n for n, r in enumerate(rowids)}
                rows = sorted(read_vector_rows(source, index.name, where=where, rowids=rowids),
                              key=lambda r: rank[r.rowid])  # candidates in the ANN's order
                found = vector_query(rows, embedding_matrix(rows, index.dimension), q, top_k)
                if not where or len(found) >= top_k:
                    hits.extend(found)
                    paths.add("ann")
                    continue
        if scope is None:
            scope = _scope_matrix(store, index, where, below)
        hits.extend(_exact_hits(store, index, scope, q, top_k))
        paths.add("exact")
    return hits, "exact" if "exact" in paths else "ann"


def _scope_matrix(store: MemoryStore, index: VectorIndex, where: dict, below: int | None):
    from studio.engine.semantic import embedding_matrix
    from studio.store.vectors import read_embeddings

    rowids, blobs = read_embeddings(vectors_of(store), index.name, where=where, below=below)
    return rowids, embedding_matrix(blobs, index.dimension)


def _exact_hits(store: MemoryStore, index: VectorIndex, scope, q, top_k: int) -> list[VectorHit]:
    """Score every row of SCOPE ((rowids, matrix)); read the metadata of the TOP_K best only."""
    from studio.engine.semantic import hit_of, rank
    from studio.store.vectors import read_vector_rows

    rowids, matrix = scope
    best = [(rowids[i], score) for i, score in rank(matrix, q, top_k)]
    rows = {r.rowid: r for r in read_vector_rows(vectors_of(store), index.name, rowids=[r for r, _ in best])}
    return [hit_of(rows[r], score) for r, score in best if r in rows]


def _document(store: MemoryStore, thread_id: str, resource_id: str | None, found: tuple[list[VectorHit], str],
              config: SemanticConfig, per_page: int | bool | None, last_messages: int, index: str | None) -> dict:
    from studio.engine.semantic import recall_includes
    from studio.store.history import recall

    hits, path = found
    include = recall_includes(hits, config)
    result = recall(store, thread_id, resource_id=resource_id, per_page=per_page, include=include or None,
                    apply_include=True, last_messages=last_messages)
    return {"message_ids": result.message_ids, "total": result.total, "has_more": result.has_more,
            "index_name": index, "semantic_recall": config.to_json(), "vector_search": path,
            "vector_hits": [h.to_json() for h in hits]}


def recall_by_meaning(store: MemoryStore, thread_id: str, query: str, embed: Callable[[list[str]], list[list[float]]],
                      config: SemanticConfig, *, resource_id: str | None = None, per_page: int | bool | None = None,
                      last_messages: int = 10, model_id: str | None = None, exact: bool = False) -> dict:
    """Return `recall --vector-search --json`: {message_ids, total, has_more, index_name, semantic_recall,
    vector_hits: [{id, message_id, thread_id, score, text}]} as Memory.recall returns them.

    QUERY is chunked as Memory does and EMBED(chunks) must return one vector per chunk; hits of each
    chunk in order (Mastra pushes them chunk by chunk). PER_PAGE None: LAST_MESSAGES newest messages plus
    the hits' ranges; 0: only the hits and their ranges; False: every message. MODEL_ID (the embedder's
    model id) is checked against KNOWN_DIMENSIONS and the store's indexes before EMBED is called. The
    vectors are searched as LibSQLVector.query does (libSQL's ANN candidates, else every row: `vector_search`
    says which); EXACT scores every row of the scope instead (what Mastra gets when its ANN misses nothing).
    Raises BadInput (unknown thread, no resource for the resource scope, empty query, a dimension no
    index has, an embedder answer of the wrong shape) and what EMBED raises (ProviderError).
    """
    from studio.engine.semantic import chunk_text
    from studio.store.vectors import index_name_for

    where = _scope_filter(store, thread_id, resource_id, config)
    chunks = chunk_text(query)
    if not chunks:
        raise _bad("The vector search text is empty")
    indexes = {i.name: i for i in memory_indexes(store)}
    refused = embedder_mismatch(list(indexes.values()), model_id)
    if refused is not None:
        raise _bad(refused if indexes else f"{store.location.display} has no vector index (memory_messages…): "
                   "Memory never embedded a message here, so semantic recall finds nothing")
    vectors = embed(chunks)
    if not isinstance(vectors, list) or len(vectors) != len(chunks) or not all(vectors):
        raise _bad(f"The embedder answered {len(vectors) if isinstance(vectors, list) else 0} vectors for "
                   f"{len(chunks)} texts")
    dimension = len(vectors[0])
    index = indexes.get(index_name_for(dimension))
    if index is None or any(len(v) != dimension for v in vectors):
        raise _bad(f"The embedder made {dimension}-dimensional vectors but the store's vector indexes are "
                   f"{_described(indexes.values())}: a different embedder wrote them")
    found = _hits(store, index, vectors, where, config.top_k, ann=not exact)
    return _document(store, thread_id, resource_id, found, config, per_page, last_messages, index.name)


def _described(indexes) -> str:
    return ", ".join(f"{i.name} ({i.dimension} dimensions)" for i in indexes)


def stored_vector(store: MemoryStore, message_id: str) -> tuple[VectorIndex, VectorRow] | None:
    """Return (index, row) of MESSAGE_ID's first stored vector (its first chunk) in Memory's indexes, or None."""
    from studio.store.vectors import message_vectors

    for index in memory_indexes(store):
        rows = message_vectors(vectors_of(store), index.name, message_id)
        if rows:
            return index, rows[0]
    return None


def recall_with_vector(store: MemoryStore, thread_id: str, message_id: str, config: SemanticConfig, *,
                       resource_id: str | None = None, per_page: int | bool | None = None,
                       last_messages: int = 10, exact: bool = False) -> dict:
    """Return what `recall_by_meaning` returns for the stored vector(s) of MESSAGE_ID as the query, no embedder.

    A turn's user message was embedded from the same text the SemanticRecall processor queried with,
    so its stored vectors are that turn's query (every chunk, in order). Raises BadInput when the
    message has no stored vector.
    """
    from studio.store.vectors import message_vectors

    where = _scope_filter(store, thread_id, resource_id, config)
    for index in memory_indexes(store):
        rows = message_vectors(vectors_of(store), index.name, message_id)
        if rows:
            found = _hits(store, index, [r.embedding for r in rows], where, config.top_k, ann=not exact)
            return _document(store, thread_id, resource_id, found, config, per_page, last_messages, index.name)
    raise _bad(f"Message {message_id!r} has no stored vector")


def similar_messages(store: MemoryStore, message_id: str, *, top_k: int = 10,
                     where: dict | None = None) -> list[VectorHit]:
    """Return the TOP_K vectors nearest to MESSAGE_ID's stored vector (its own rows left out), best first,
    within WHERE ({resource_id} / {thread_id}; None: the whole index). [] when it has no vector."""
    from studio.store.vectors import message_vectors

    found = stored_vector(store, message_id)
    if found is None:
        return []
    index, row = found
    own = message_vectors(vectors_of(store), index.name, message_id)
    hits, _path = _hits(store, index, [row.embedding], dict(where or {}), top_k + len(own))
    return [h for h in hits if h.message_id != message_id][:top_k]


def embedded_messages(store: MemoryStore, thread_id: str) -> list[dict]:
    """Return THREAD_ID's stored vectors: [{index_name, id, message_id, role, chunk, chunks, text, created_at}]
    in message order (metadata created_at; a turn stores its reply's vector before the user message's), a
    message's chunks numbered from 0 in table order."""
    from studio.store.vectors import read_vector_rows

    out: list[dict] = []
    for index in memory_indexes(store):
        rows = read_vector_rows(vectors_of(store), index.name, where={"thread_id": thread_id})
        counts: dict[str | None, int] = {}
        for r in rows:
            counts[r.message_id] = counts.get(r.message_id, 0) + 1
        seen: dict[str | None, int] = {}
        for r in rows:
            n = seen.get(r.message_id, 0)
            seen[r.message_id] = n + 1
            out.append({"index_name": index.name, "id": r.vector_id, "message_id": r.message_id,
                        "role": r.metadata.get("role"), "chunk": n, "chunks": counts[r.message_id],
                        "text": r.text, "created_at": r.metadata.get("created_at")})
    out.sort(key=lambda e: (str(e["created_at"] or ""), e["chunk"]))  # stable: table order among equals
    return out


def vector_memory_document(store: MemoryStore) -> dict:
    """Return {indexes: [{index_name, dimension, count, metric, embedder_hint}]} of every vector index."""
    from studio.store.vectors import vector_indexes

    return {"indexes": [{**i.to_json(), "embedder_hint": DIMENSION_HINTS.get(i.dimension, "")}
                        for i in vector_indexes(vectors_of(store))]}


_ROLE_ORDER = {"system": 0, "user": 1, "assistant": 2, "tool": 3}


def turn_recall(store: MemoryStore, message_id: str, config: SemanticConfig, *, last_messages: int = 10) -> dict:
    """Return what the SemanticRecall processor recalled at the turn of user message MESSAGE_ID, offline.

    The processor embedded that message's text and queried the index as it stood before the turn (the
    turn's vectors, the reply's and the message's own, are written after it, so only rows inserted before
    the first of them count), then listed the hits'
    messages with `messageRange` neighbours as of the turn (created no later than the message) and added
    those not already in the context: the last LAST_MESSAGES messages and the message itself. Same-thread
    additions join the messages; other threads' (scope "resource") go into the system message
    `<remembered_from_other_conversation>`, ordered by createdAt, thread, role, id (sortMessagesForRecall).

    Returns {message_id, thread_id, resource_id, index_name, query_exact, vector_hits, range_ids (every
    message the hits and their ranges name, as of the turn, before those in the context are left out),
    window_ids, recalled_ids, other_thread_ids}. `query_exact` is False when the stored vector(s) may differ from the
    processor's query: a text stored in several chunks (the processor embeds it whole). Raises BadInput for
    an unknown message or one with no stored vector.
    """
    from studio.engine.semantic import recall_includes
    from studio.store.history import list_messages
    from studio.store.vectors import message_vectors, read_vector_rows

    found = store.select_messages("WHERE id = ?", [message_id])
    if not found:
        raise _bad(f"No message {message_id!r} in {store.location.display}")
    message = found[0]
    own: list[VectorRow] = []
    index = None
    for candidate in memory_indexes(store):
        own = message_vectors(vectors_of(store), candidate.name, message_id)
        if own:
            index = candidate
            break
    if index is None:
        raise _bad(f"Message {message_id!r} has no stored vector (it was not embedded)")
    created = message.created_at or ""
    # the turn writes its vectors after the answer (the reply's first, then the user message's): the index
    # the processor queried holds the rows written before the first vector of a message this new or newer
    turn_rows = [r.rowid for r in read_vector_rows(vectors_of(store), index.name,
                                                   where={"thread_id": message.thread_id})
                 if str(r.metadata.get("created_at") or "") >= created]
    cutoff = min([*turn_rows, *(r.rowid for r in own)])
    where = ({"resource_id": message.resource_id} if config.scope == "resource" and message.resource_id
             else {"thread_id": message.thread_id})
    hits, _path = _hits(store, index, [own[0].embedding], where, config.top_k, below=cutoff)
    include = recall_includes(hits, config)
    recalled = [m for m in list_messages(store, message.thread_id, resource_id=message.resource_id,
                                         include=include or None, per_page=0).messages
                if (m.created_at or "") <= created] if include else []
    before = store.select_messages('WHERE thread_id = ? AND "createdAt" < ? ORDER BY "createdAt" DESC LIMIT ?',
                                   [message.thread_id, created, last_messages]) if last_messages else []
    window = [m.id for m in reversed(before)] + [message.id]
    in_window = set(window)
    new = [m for m in recalled if m.id not in in_window]
    same = [m.id for m in new if not m.thread_id or m.thread_id == message.thread_id]
    others = sorted((m for m in new if m.thread_id and m.thread_id != message.thread_id),
                    key=lambda m: (m.created_at or "", m.thread_id or "", _ROLE_ORDER.get(m.role, 99), m.id))
    return {"message_id": message.id, "thread_id": message.thread_id, "resource_id": message.resource_id,
            "index_name": index.name, "query_exact": len(own) == 1,
            "vector_hits": [h.to_json() for h in hits], "range_ids": [m.id for m in recalled],
            "window_ids": window, "recalled_ids": same,
            "other_thread_ids": [m.id for m in others] if config.scope == "resource" else []}


def embedder_mismatch(indexes: Sequence[VectorIndex], model_id: str | None) -> str | None:
    """Return why MODEL_ID cannot query INDEXES before any call (no index, or a known dimension none has), or None.

    Memory queries `memory_messages_<dim>` for the embedder's dimension; a model in KNOWN_DIMENSIONS whose
    index is missing was not the one that embedded these messages.
    """
    from studio.store.vectors import index_name_for

    if not indexes:
        return "This store has no vector index (memory_messages…): Memory never embedded a message here."
    known = KNOWN_DIMENSIONS.get((model_id or "").split("/")[-1].split(":")[0])
    if known is not None and index_name_for(known) not in {i.name for i in indexes}:
        return (f"{model_id} makes {known}-dimensional vectors but the store's vector indexes are "
                f"{_described(indexes)}: a different embedder wrote them")
    return None


@dataclass(frozen=True)
class VectorMemoryInfo:
    """What the studio's Vectors tab shows of a thread: the store's INDEXES (vector_memory_document's), the
    thread's EMBEDDED rows (embedded_messages'), its RESOURCE_ID and the store's DISPLAY name."""

    thread_id: str
    resource_id: str | None
    indexes: list[dict]
    memory_indexes: list[VectorIndex]
    embedded: list[dict]
    display: str


def load_vector_memory(store: MemoryStore, thread_id: str) -> VectorMemoryInfo:
    """Read the Vectors tab's data for THREAD_ID (one load). Raises StoreError."""
    from studio.store.history import get_thread_by_id

    thread = get_thread_by_id(store, thread_id)
    return VectorMemoryInfo(thread_id, thread.resource_id if thread else None,
                            vector_memory_document(store)["indexes"], memory_indexes(store),
                            embedded_messages(store, thread_id), store.location.display)


def _message_texts(store: MemoryStore, ids: list[str]) -> dict[str, dict]:
    if not ids:
        return {}
    out = {}
    for m in store.select_messages(f"WHERE id IN ({', '.join('?' * len(ids))})", ids):
        content = m.content
        parts = content.get("parts") if isinstance(content, dict) else None
        text = " ".join(p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text"
                        and isinstance(p.get("text"), str)) if isinstance(parts, list) else str(content or "")
        out[m.id] = {"role": m.role, "text": text, "thread_id": m.thread_id}
    return out


def message_recall_view(store: MemoryStore, message_id: str, config: SemanticConfig, *, last_messages: int,
                        where: dict, similar_count: int = 8) -> dict:
    """Return what the Vectors tab shows for one embedded message (one load): {similar: [VectorHit] within
    WHERE, turn: turn_recall's document for a user message (else None), messages: {id: {role, text,
    thread_id}} of every message the turn names}."""
    similar = similar_messages(store, message_id, top_k=similar_count, where=where)
    rows = store.select_messages("WHERE id = ?", [message_id])
    turn = turn_recall(store, message_id, config, last_messages=last_messages) \
        if rows and rows[0].role == "user" else None
    ids = [] if turn is None else [h["message_id"] for h in turn["vector_hits"] if h["message_id"]] + \
        turn["recalled_ids"] + turn["other_thread_ids"]
    return {"similar": similar, "turn": turn, "messages": _message_texts(store, list(dict.fromkeys(ids)))}

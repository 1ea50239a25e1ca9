"""Which database the vector reads of a store go to: its own, or an attached vector store (no Qt).

Memory's `vector` may be another database than its `storage`. `attach_vector_store(store, target)` makes
the vector reads of `studio.app.semantic` (indexes, embedded messages, similar messages, recall by
meaning, a turn's recall) go to TARGET's LibSQLVector tables (`studio.store.vector_source.VectorSource`),
the messages still coming from STORE; TARGET None detaches (the vector store is closed). The
attachment belongs to the process that made it: every loader that reads vectors takes the target and
attaches it first, so the database worker and the helper process each hold what the last call asked
for (a helper that restarted or reopened its database attaches again on its next call).
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator

    from studio.store.memory_store import MemoryStore
    from studio.store.vector_source import VectorSource

__all__ = ["attach_vector_store", "attached_vector_store", "vector_store_attached", "vectors_of"]

#: {store: (the target as given, its open VectorSource)}, in this process.
_ATTACHED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def attach_vector_store(store: MemoryStore, target: str | None) -> None:
    """Make STORE's vector reads go to TARGET (a libSQL file or server; None or "": STORE's own tables).

    The same target again keeps its connection; another one, or None, closes the one attached.
    Raises StoreError when TARGET cannot be opened (nothing stays attached then).
    """
    current = _ATTACHED.get(store)
    target = target or None
    if current is not None and current[0] == target:
        return
    if current is not None:
        del _ATTACHED[store]
        current[1].close()
    if target is not None:
        from studio.store.vector_source import VectorSource

        _ATTACHED[store] = (target, VectorSource.open(target))


def attached_vector_store(store: MemoryStore) -> str | None:
    """Return the target attached to STORE in this process, or None."""
    current = _ATTACHED.get(store)
    return current[0] if current is not None else None


def vectors_of(store: MemoryStore) -> MemoryStore | VectorSource:
    """Return where STORE's vector reads go: the attached VectorSource, else STORE itself."""
    current = _ATTACHED.get(store)
    return current[1] if current is not None else store


@contextmanager
def vector_store_attached(store: MemoryStore, target: str | None) -> Iterator[MemoryStore]:
    """Attach TARGET to STORE for the block (one command), detached after it; yields STORE. Raises StoreError."""
    attach_vector_store(store, target)
    try:
        yield store
    finally:
        attach_vector_store(store, None)

"""What every load of the studio shares (no Qt): the store it runs against.

A load is a module-level function `fn(store, *args)` that the studio's TaskRunner runs on its
database worker, or in the helper process for big databases, inside one `store.snapshot()`;
it returns plain (picklable) data. The store is None while no database is open.
"""

from __future__ import annotations

from studio.errors import StoreError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore


def require_store(store: MemoryStore | None) -> MemoryStore:
    """Return STORE, or raise StoreError when no database is open."""
    if store is None:
        raise StoreError("No database is open")
    return store

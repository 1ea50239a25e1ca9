"""What a load or a write changed: `ChangeSet`, the currency of the application layer (no Qt).

Anki's operations return `OpChanges`; here every app-layer write returns the ChangeSet of what it
wrote (a write knows it: the thread, the OM record's lookup key, the messages it marked or
deleted), and every load says what it read afresh (a full listing: `ChangeSet.full_reload()`).
A face decides from it what to refresh; for now the studio still re-reads the whole listing
after a write, and the next step (a refresh proportional to the change) builds on this value.

Ids are the store's own: thread ids, OM lookup keys (`thread:<id>` / `resource:<id>`: the record
and all its generations), message ids.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["NO_CHANGES", "ChangeSet", "Written", "record_changes"]


def _ids(values) -> frozenset[str]:
    return frozenset(str(v) for v in values if v is not None)


@dataclass(frozen=True)
class ChangeSet:
    """Threads, OM records and messages a load or a write touched, created or deleted.

    THREADS / OM_RECORDS / MESSAGES: updated in place (a title, a cursor, a message marked
    observed; an OM record gets a new generation or an in-place update); the *_CREATED and
    *_DELETED sets: rows that appeared or went. EVERYTHING: anything may have changed (a full
    reload: another program committed, a database was opened). Combine with `|`.
    """

    threads: frozenset[str] = frozenset()
    threads_created: frozenset[str] = frozenset()
    threads_deleted: frozenset[str] = frozenset()
    om_records: frozenset[str] = frozenset()
    messages: frozenset[str] = frozenset()
    messages_created: frozenset[str] = frozenset()
    messages_deleted: frozenset[str] = frozenset()
    everything: bool = False

    @classmethod
    def of(cls, *, threads=(), threads_created=(), threads_deleted=(), om_records=(), messages=(),
           messages_created=(), messages_deleted=()) -> ChangeSet:
        """Return the ChangeSet of these ids (any iterables of ids; None entries are left out)."""
        return cls(_ids(threads), _ids(threads_created), _ids(threads_deleted), _ids(om_records), _ids(messages),
                   _ids(messages_created), _ids(messages_deleted))

    @classmethod
    def full_reload(cls) -> ChangeSet:
        """Return the ChangeSet of a full reload (anything may have changed)."""
        return cls(everything=True)

    def __or__(self, other: ChangeSet) -> ChangeSet:
        """Return what SELF and OTHER changed together."""
        if not isinstance(other, ChangeSet):
            return NotImplemented
        if self.everything or other.everything:
            return ChangeSet(everything=True)
        return ChangeSet(**{f.name: getattr(self, f.name) | getattr(other, f.name)
                            for f in fields(self) if f.name != "everything"})

    def __bool__(self) -> bool:
        """True when anything changed."""
        return self.everything or any(getattr(self, f.name) for f in fields(self) if f.name != "everything")


#: Nothing changed (a read-only step).
NO_CHANGES = ChangeSet()


@dataclass(frozen=True)
class Written:
    """What an app-layer write returns: the store's RESULT (the new OM row, activate's {"row", …}, a count…)
    and the ChangeSet of what it wrote."""

    result: Any
    changes: ChangeSet


def record_changes(lookup_key: str, *, threads=(), messages=()) -> ChangeSet:
    """Return the ChangeSet of a write to LOOKUP_KEY's OM record (a new generation or an in-place update).

    A thread-scope record's thread is touched too (its OM metadata, current task); THREADS and
    MESSAGES add what else the write changed (a resource scope's threads, messages it marked observed).
    """
    own = [lookup_key.split(":", 1)[1]] if lookup_key.startswith("thread:") else []
    return ChangeSet.of(om_records=[lookup_key], threads=[*own, *threads], messages=messages)

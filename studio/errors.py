"""Named exceptions of Memory Studio, all under one base (`StudioError`)."""


class StudioError(Exception):
    """Base of every error Memory Studio raises on purpose; the message is meant for the user."""


class StoreError(StudioError):
    """The database could not be opened or read (missing, not SQLite, locked, unreadable)."""


class StoreDamaged(StoreError):
    """A read met a damaged part of the database file (SQLite: "database disk image is malformed", or the
    driver failed on a stored value); reads that do not touch that part still work. Exit 2, as any StoreError."""


class SchemaError(StoreError):
    """The file is SQLite but not a Mastra memory database this studio understands."""


class StoreNotice(UserWarning):
    """Something the user should know about how a store was opened (issued with `warnings.warn`).

    The CLI prints it on stderr as `memory-studio: warning: …`; the studio shows it in the status bar.
    Example: an auth token written in a libSQL URL.
    """


class WriteRefused(StoreError):
    """A write to the user's database was refused and nothing was written.

    `reason` is one of WRITE_REFUSED_REASONS:
    "generation-changed" (the latest generation or its observations changed since they were read; for
    an undo: the rows it would restore changed since the write),
    "reflecting" (isReflecting is set: live, or stale and not cleared), "not-found" (no such thread,
    record or generation), "busy" (another process holds the write lock, or is observing or buffering
    this record), "conflict" (the new id already exists), "invalid" (bad arguments), "unchanged" (the
    write would copy the current state: a reflection identical to the current generation).
    """

    def __init__(self, reason: str, message: str):
        if reason not in WRITE_REFUSED_REASONS:
            raise ValueError(f"unknown WriteRefused reason {reason!r}")
        super().__init__(message)
        self.reason = reason


WRITE_REFUSED_REASONS = frozenset({"generation-changed", "reflecting", "not-found", "busy", "conflict", "invalid",
                                   "unchanged"})


class EngineError(StudioError):
    """The OM engine could not compute a figure from the stored data."""


class ProviderError(StudioError):
    """An LLM provider call failed (network, HTTP status, malformed answer)."""

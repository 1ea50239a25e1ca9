"""Named exceptions of Memory Studio, all under one base (`StudioError`)."""


class StudioError(Exception):
    """Base of every error Memory Studio raises on purpose; the message is meant for the user."""


class StoreError(StudioError):
    """The database could not be opened or read (missing, not SQLite, locked, unreadable)."""


class SchemaError(StoreError):
    """The file is SQLite but not a Mastra memory database this studio understands."""


class EngineError(StudioError):
    """The OM engine could not compute a figure from the stored data."""


class ProviderError(StudioError):
    """An LLM provider call failed (network, HTTP status, malformed answer)."""

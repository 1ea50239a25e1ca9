"""The write layer: every write to a user's memory.db (see `studio.store.writes` for the public API)."""

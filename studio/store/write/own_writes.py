"""The times of the studio's own unmarked writes, kept so the quiet period does not take them for the agent (no Qt).

Reflect, revert and repair rows carry the studio's mark (`studio.store.write.protocol`), whose
`committedAt` names the time the write stamped. Observe and activate update Mastra's own OM row
in place and carry no mark (`studio.store.write.observation` says why), and deleting or clearing
messages touches only the thread: without a record, the `updatedAt` they leave would read as "the
agent is active" to the next studio write within the quiet period. Each such write, once committed,
adds its time stamp here: `$XDG_DATA_HOME/memory-studio/own-writes.json` (default ~/.local/share/…),
{database: [epoch ms, …]}, stamps more than KEEP_MS from the newest (other databases': from now)
dropped, at most KEEP_PER_DATABASE per database and KEEP_DATABASES databases, replaced atomically.
The database is named by its real path, or by its server URL as shown (no password or token).
`read_activity` skips a time found here. A journal that cannot be read or written only means the
quiet period is waited out, as without it; it never blocks a write nor fails one (a journal that
cannot be saved is said with a StoreNotice warning).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from studio.store.write.row_backup import data_root, write_json_atomically

TYPE_CHECKING = False
if TYPE_CHECKING:
    from studio.store.target import Target

__all__ = ["KEEP_MS", "KEEP_PER_DATABASE", "journal_path", "own_write_times", "remember_write"]

#: How long a stamp is kept (ms): longer than any quiet period the studio offers.
KEEP_MS = 6 * 3600 * 1000
#: How many recent stamps are kept per database, and how many databases (the most recently written).
KEEP_PER_DATABASE, KEEP_DATABASES = 200, 100


def journal_path() -> str:
    """Return the journal's path: `$XDG_DATA_HOME/memory-studio/own-writes.json` (default ~/.local/share/…)."""
    return str(data_root() / "own-writes.json")


def _database(location: Target | None) -> str | None:
    """Name LOCATION (a store's or transaction's `location`): its real path, else its display URL (+ schema)."""
    if location is None:
        return None
    if location.path is not None:
        return os.path.realpath(os.fspath(location.path))
    if not location.display:
        return None
    return f"{location.display}#{location.schema}" if location.schema else str(location.display)


def _load() -> dict[str, list[int]]:
    try:
        with open(journal_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: [int(v) for v in vs if isinstance(v, int)] for k, vs in data.items() if isinstance(vs, list)}


def remember_write(location: Target | None, stamp_ms: int, now_ms: int | None = None) -> None:
    """Record that the studio wrote STAMP_MS (epoch ms, the time its write stamped) into LOCATION's database.

    Called after the commit of a write that carries no studio mark. Never raises: a journal that cannot
    be saved (disk full, read-only folder) is said with a StoreNotice warning.
    """
    database = _database(location)
    if database is None:
        return
    now = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        data = _load()
        mine = [t for t in data.pop(database, []) if abs(stamp_ms - t) < KEEP_MS and t != stamp_ms]
        data = {k: v for k, v in data.items() if any(abs(now - t) < KEEP_MS for t in v)}
        data = dict(list(data.items())[-(KEEP_DATABASES - 1):])
        data[database] = [*mine, int(stamp_ms)][-KEEP_PER_DATABASE:]   # last: the most recently written
        write_json_atomically(Path(journal_path()), data)
    except OSError as exc:
        # said, not raised: the write is done; only the next quiet check may take it for the agent's
        import warnings

        from studio.errors import StoreNotice

        warnings.warn(StoreNotice(f"The write is done, but the studio could not note it in {journal_path()} "
                                  f"({exc.strerror or exc}): a write within the quiet period may take it for "
                                  "the agent's and wait or refuse (--force skips that check)."), stacklevel=2)


def own_write_times(location: Target | None) -> set[int]:
    """Return the times (epoch ms) the studio recorded for LOCATION's database (empty when none or unreadable)."""
    database = _database(location)
    if database is None:
        return set()
    return set(_load().get(database, []))

"""Writes to a user's memory.db, each exactly as Mastra makes it, each ONE checked transaction (no Qt).

Public API (implemented in `studio.store.write`):

- `commit_reflection(path, *, lookup_key, expected_record_id, observations, observation_tokens, ...) -> dict`
  a new OM generation as Mastra's manual reflection writes it (ObservationalMemory.reflect);
- `revert_to_generation(path, *, lookup_key, generation_count, expected_record_id, count_observations, ...)`
  undo: generation latest+1 with generation N's observations, marked `metadata.studio`;
- `clone_thread(path, source_thread_id, *, ...) -> dict`  Memory.cloneThread;
- `delete_messages(path, ids) -> int`  Memory.deleteMessages; `clear_thread(path, thread_id) -> int`;
  `delete_thread(path, thread_id) -> dict`  Memory.deleteThread (reminder thread, OM records, vectors);
  `update_thread(path, thread_id, *, title, metadata) -> dict`  Memory.updateThread (metadata merged);
  `update_working_memory(path, *, thread_id, scope, text) -> dict`  Memory.updateWorkingMemory;
- `commit_observation(path, window, ObserverOutput(...))` a synchronous observation as Mastra's
  observe() writes it, of a window the engine read (`studio.engine.observe_window.observation_window`;
  resource scope: `resource_observation_window` / `commit_resource_observation`);
  `activate_buffered(path, *, thread_id, lookup_key, stamp_estimates)` buffered chunks activated as
  Mastra's activate() does (thread scope);
- `WriteSession`  one per window / CLI run: routes the row backup every write saves before its COMMIT
  (`studio.store.write.row_backup`; files too), copies a file whole only when asked (`full_backup`);
- the OM write protocol (`studio.store.write.protocol`): quiet period (`read_activity`,
  `store_activity`, `wait_for_quiet`), the self-identifying mark (`studio_mark`), overtaking writes
  (`find_overtaking_writes`, `watch_for_overtaking`) and `repair_overtaken_writes` (a new generation
  carrying what overtook a studio write forward);
- PostgreSQL stores (`postgresql://` URLs): the same functions, each one READ WRITE transaction on
  its own connection (`studio.store.write.backends.pg`: FOR UPDATE on the current OM row, a 9 s
  lock wait, rows written as @mastra/pg writes them, twins included), saving a JSON row backup of
  every row it changes before COMMIT (`studio.store.write.row_backup`); libSQL servers the same
  with the file's SQL over one write stream (`studio.store.write.backends.libsql_remote`);
  `undo_write(url)` restores the last write's rows from it (refused when they changed since);
- `WriteRefused` (reason: generation-changed, reflecting, not-found, busy, conflict, invalid).

Every function opens its own read-write libSQL connection for the one write and closes it, never
changes the journal mode, starts with BEGIN IMMEDIATE (another process's lock waited for in Python), re-checks its
preconditions inside the transaction, and leaves the main file and -wal byte-identical when it
refuses or fails (see `studio.store.write.backends.sqlite`; the backend is picked by
`studio.store.write.transaction.write_transaction`).

Mastra's token estimates are engine logic (`studio.engine.tokens`): a write never computes one
itself. It receives the count (`observation_tokens`), or the estimator when the text is only known
inside its transaction (`count_observations`, `stamp_estimates`, a window's rules).
"""

from studio.errors import WRITE_REFUSED_REASONS, WriteRefused
from studio.store.write.activation import activate_buffered
from studio.store.write.file_backup import backup_database
from studio.store.write.observation import ObservationWindow, ObserverOutput, commit_observation
from studio.store.write.observation_resource import ResourceObservationWindow, commit_resource_observation
from studio.store.write.protocol import (
    DEFAULT_QUIET_MS,
    OvertakingWrite,
    find_overtaking_writes,
    store_activity,
    studio_mark,
    unrepaired,
)
from studio.store.write.reflection import STUDIO_METADATA_KEY, commit_reflection, revert_to_generation
from studio.store.write.repair import repair_overtaken_writes
from studio.store.write.session import DESTRUCTIVE_WRITES, WriteSession
from studio.store.write.threads import clear_thread, clone_thread, delete_messages, delete_thread, update_thread
from studio.store.write.undo import undo_write
from studio.store.write.working_memory import update_working_memory

__all__ = [
    "DEFAULT_QUIET_MS",
    "DESTRUCTIVE_WRITES",
    "STUDIO_METADATA_KEY",
    "WRITE_REFUSED_REASONS",
    "ObservationWindow",
    "ObserverOutput",
    "OvertakingWrite",
    "ResourceObservationWindow",
    "WriteRefused",
    "WriteSession",
    "activate_buffered",
    "backup_database",
    "clear_thread",
    "clone_thread",
    "commit_observation",
    "commit_reflection",
    "commit_resource_observation",
    "delete_messages",
    "delete_thread",
    "find_overtaking_writes",
    "repair_overtaken_writes",
    "revert_to_generation",
    "store_activity",
    "studio_mark",
    "undo_write",
    "unrepaired",
    "update_thread",
    "update_working_memory",
]

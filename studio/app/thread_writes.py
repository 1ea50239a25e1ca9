"""The history writes both faces make (no Qt): clone a thread, delete messages, clear a thread.

`clone_thread` is the `clone` command's and Thread ▸ Clone Thread…'s; `delete_messages` and
`clear_thread` are the studio's Delete Message… and Clear Thread's Messages…; `delete_thread` is
`memory-studio delete-thread` and Thread ▸ Delete Thread…. Each goes through a
`WriteSession` (each write saves the rows it changes before its COMMIT, then one transaction, as
Mastra's Memory.cloneThread / deleteMessages write) and returns what it changed
(`studio.app.changes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from studio.app.changes import ChangeSet, Written


@dataclass(frozen=True)
class ClonedThread:
    """A thread cloned as Mastra's cloneThread does: the new thread, its messages, the backup and what changed.

    THREAD: {id, resourceId, title, metadata, createdAt, updatedAt}; MESSAGE_IDS: the new messages
    (createdAt order) and SOURCE_MESSAGE_IDS the ids they copy (same order); OM_RECORD_ID: the
    copied OM record, or None; BACKUP: the session's backup of the store (a file, or a server
    store's row backup), or None.
    """

    thread: dict
    message_ids: list[str]
    source_message_ids: list[str | None]
    om_record_id: str | None
    backup: Path | None
    changes: ChangeSet

    def to_json(self) -> dict:
        """The `clone --json` document: {"thread": {id, resource_id, title, metadata}, "message_ids",
        "source_message_ids", "om_record_id", "backup"}."""
        t = self.thread
        return {"thread": {"id": t["id"], "resource_id": t["resourceId"], "title": t["title"],
                           "metadata": t["metadata"]},
                "message_ids": self.message_ids, "source_message_ids": self.source_message_ids,
                "om_record_id": self.om_record_id, "backup": str(self.backup) if self.backup is not None else None}


def clone_thread(path: str, thread_id: str, *, session=None, new_thread_id: str | None = None,
                 title: str | None = None, message_limit: int | None = None) -> ClonedThread:
    """Clone THREAD_ID in PATH as Memory.cloneThread does, its rows backed up through the session.

    SESSION: the WriteSession (a new one when None). NEW_THREAD_ID (default a new UUID), TITLE
    (default "Clone of <title>"), MESSAGE_LIMIT (the newest N messages; None: all) as Mastra's
    options. Raises WriteRefused ("not-found", "conflict": the id is taken, "invalid", "busy") before
    the backup of a file, so a refused clone leaves no backup behind; StoreError.
    """
    if session is None:
        from studio.store.writes import WriteSession

        session = WriteSession()
    result = session.clone_thread(path, thread_id, new_thread_id=new_thread_id, title=title,
                                  message_limit=message_limit)
    thread = result["thread"]
    back = {new: old for old, new in result.get("messageIdMap", {}).items()}
    ids = [m["id"] for m in result["messages"]]
    copied = result.get("omRecordId")
    # the copied record is the new thread's (thread scope), or, cloned into another resource, that resource's
    keys = [f"thread:{thread['id']}", f"resource:{thread['resourceId']}"] if copied else []
    changes = ChangeSet.of(threads_created=[thread["id"]], messages_created=ids, om_records=keys)
    return ClonedThread(thread, ids, [back.get(i) for i in ids], copied, session.backup_for(path), changes)


def delete_messages(path: str, message_ids: list[str], *, session) -> Written:
    """Delete MESSAGE_IDS as Mastra's Memory.deleteMessages does (after SESSION's backup).

    Returns how many rows went and what changed. Raises WriteRefused / StoreError (nothing written then).
    """
    deleted = session.delete_messages(path, message_ids)
    return Written(deleted, ChangeSet.of(messages_deleted=message_ids))


def clear_thread(path: str, thread_id: str, *, session) -> Written:
    """Delete every message of THREAD_ID (the thread stays) after SESSION's backup.

    Returns how many rows went and what changed (the thread: its messages' ids are not read first).
    Raises WriteRefused / StoreError (nothing written then).
    """
    deleted = session.clear_thread(path, thread_id)
    return Written(deleted, ChangeSet.of(threads=[thread_id]))


def delete_thread(path: str, thread_id: str, *, session=None) -> Written:
    """Delete THREAD_ID as Mastra's Memory.deleteThread does (its owned reminder thread, messages, row, thread-scope
    OM records and vectors in the same store), after SESSION's backup (a new session when None).

    Returns the rows deleted ({"thread_ids", "messages", "threads", "om_records", "vectors"}) and what changed.
    Raises WriteRefused ("not-found", "invalid", "busy") / StoreError (nothing written then).
    """
    if session is None:
        from studio.store.writes import WriteSession

        session = WriteSession()
    done = session.delete_thread(path, thread_id)
    gone = done["thread_ids"]
    return Written(done, ChangeSet.of(threads_deleted=gone, om_records=[f"thread:{t}" for t in gone]))


def update_thread(path: str, thread_id: str, *, title: str | None = None, metadata: dict | None = None,
                  session=None) -> Written:
    """Set THREAD_ID's title and merge METADATA into its metadata as Mastra's Memory.updateThread does (after
    SESSION's backup; a new session when None). Returns the thread after ({"id", "resourceId", "title",
    "metadata", "updatedAt"}) and what changed. Raises WriteRefused / StoreError (nothing written then).
    """
    if session is None:
        from studio.store.writes import WriteSession

        session = WriteSession()
    thread = session.update_thread(path, thread_id, title=title, metadata=metadata)
    return Written(thread, ChangeSet.of(threads=[thread_id]))


def update_working_memory(path: str, thread_id: str, *, scope: str, text: str, session=None) -> Written:
    """Write TEXT as THREAD_ID's working memory in SCOPE ("resource": its resource's row; "thread": its
    metadata.workingMemory) as Mastra's Memory.updateWorkingMemory does, after SESSION's backup (a new session
    when None). Returns {"scope", "thread_id", "resource_id", "created_resource", "updatedAt"} and what changed.
    Raises WriteRefused / StoreError (nothing written then).
    """
    if session is None:
        from studio.store.writes import WriteSession

        session = WriteSession()
    done = session.update_working_memory(path, thread_id=thread_id, scope=scope, text=text)
    return Written(done, ChangeSet.of(threads=[thread_id]))

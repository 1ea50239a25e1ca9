"""One write on a MongoDB store (`@mastra/mongodb`), with the documents it touches saved locally first.

The MongoDB backend of `studio.store.write.transaction.write_transaction`. The write functions ask it for
documents by intent (`studio.store.write.common`: the current generation of a lookup key, a thread by id, the
documents whose field equals a value) and hand it Mastra's values; what MongoDB needs lives here:

* **A replica set or mongos** (`hello` answers a `setName` or `msg: "isdbgrid"`: @mastra/mongodb's
  `supportsTransactions`): one multi-document transaction (read concern snapshot, write concern majority) in
  one session; every read and write of the write goes through it; the row backup is saved before
  `commitTransaction`; a write conflict refuses the write ("busy"), nothing written.
* **A standalone server** (no transactions; Mastra itself then writes document by document): ordered steps.
  Before each step the row backup is rewritten with every document touched so far and the one about to
  change (its image before and the image the step leaves); each step is a compare-and-set — its filter is the
  whole document as read (`_id` and every field), so a document another program changed since refuses the
  step. A refused step puts back what the earlier steps did (their own compare-and-set on the images they
  left), deletes the backup and refuses the write ("generation-changed"). `atomic` is False: the
  confirmations say so.

Values are stored as the JS driver stores Mastra's: an ISO time of a date field as a BSON Date, integral
numbers within 32 bits as int32 and every other number as a double (`js_number`), booleans for OM flags,
embedded documents as they are. Every document the write inserts, updates or deletes is journaled as
canonical Extended JSON (`canonical`: every BSON type and the field order kept), so an undo puts back the
exact bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from studio.common.jscompat import js_items
from studio.errors import StoreError, WriteRefused
from studio.store import schema as sc
from studio.store.backends.mongodb import MongoBackend, describe_error, find_documents, iso_to_bson_date
from studio.store.records import OM_BOOL_COLUMNS
from studio.store.target import Target
from studio.store.write.tx import Jsonb

__all__ = ["DATE_FIELDS", "MongoWriteTx", "canonical", "from_canonical", "js_number", "mongo_write_transaction"]

#: The fields @mastra/mongodb stores as BSON Dates (a value given as ISO text is written as a Date).
DATE_FIELDS = {"createdAt", "updatedAt", "lastObservedAt", "lastReflectionAt", "lastBufferedAtTime"}
_INT32 = 2 ** 31
#: Documents one bulk command (insertMany / deleteMany) carries in a transaction.
BULK = 1000


def js_number(value: Any) -> Any:
    """Return VALUE with every number as the JS driver stores a JavaScript number: an integral value within
    32 bits as int32 (a Python int), any other as a double (a float); recursively through documents and arrays,
    each document's fields in JavaScript's property order (array-index keys such as "10" first, ascending)."""
    if value is None or value.__class__ in (str, bool):
        return value
    if isinstance(value, dict):
        return {k: js_number(v) for k, v in js_items(value)}
    if isinstance(value, list):
        return [js_number(v) for v in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and -_INT32 <= value < _INT32 else value
    if isinstance(value, int):
        return int(value) if -_INT32 <= value < _INT32 else float(value)
    return value


def canonical(doc: dict | None) -> dict | None:
    """Return DOC as canonical Extended JSON (a dict in the document's field order), as the row backup keeps it."""
    if doc is None:
        return None
    from bson import json_util

    return json.loads(json_util.dumps(doc, json_options=json_util.CANONICAL_JSON_OPTIONS))


def from_canonical(image: dict) -> dict:
    """Return the BSON document of a canonical Extended JSON IMAGE (`canonical`'s inverse: types and order kept)."""
    from bson import json_util

    return json_util.loads(json.dumps(image), json_options=json_util.JSONOptions(
        json_mode=json_util.JSONMode.CANONICAL, tz_aware=True, document_class=dict)) if image else image


def as_sent(doc: dict):
    """DOC as raw BSON with its fields in DOC's order, `_id` included where DOC has it (pymongo would move `_id`
    first; the JS driver appends a new `_id` last, and the server decides where it stays)."""
    import bson
    from bson.raw_bson import RawBSONDocument

    outer = bson.encode({"d": doc})
    # the outer document: int32 size, type byte 0x03, "d\0", then the inner document, then a closing 0
    return RawBSONDocument(outer[7:-1])


def same(a: dict | None, b: dict | None) -> bool:
    """True when two canonical images are the same document (field order and types included)."""
    return json.dumps(a) == json.dumps(b)


class MongoWriteTx:
    """The open MongoDB write handed to a write function (studio.store.write.tx.WriteTx's role on MongoDB).

    Reads return BSON documents as stored (`_id` kept, Dates as aware datetimes). Writes raise WriteRefused
    ("generation-changed" when a compare-and-set step finds the document changed, "busy" on a transaction's
    write conflict) and StoreError.
    """

    dialect = "mongodb"
    #: Documents one bulk command carries (insertMany, deleteMany, a find by `$in`).
    bulk = BULK

    def __init__(self, backend: MongoBackend, *, label: str):
        self.backend = backend
        self.location: Target = backend.location
        self.schema: sc.Schema = backend.schema
        #: True on a replica set / mongos (one transaction); False on a standalone server (ordered steps).
        self.atomic: bool = backend.snapshots
        self.label = label
        self.session = None
        #: [(collection, id)] in the order first touched; images by key
        self._order: list[tuple[str, str]] = []
        self._before: dict[tuple[str, str], dict | None] = {}
        self._after: dict[tuple[str, str], dict | None] = {}
        #: the standalone write's backup file (rewritten before each step)
        self.backup_path: Path | None = None

    # -- reads ----------------------------------------------------------------------------------

    def error(self, exc: BaseException) -> StoreError:
        """The StoreError of a pymongo error EXC in this write: WriteRefused("busy") for a write conflict."""
        import pymongo

        if isinstance(exc, pymongo.errors.OperationFailure) and (
                exc.has_error_label("TransientTransactionError") or exc.code == 112):  # WriteConflict
            return WriteRefused("busy", f"Another program wrote to {self.location.display} during this write "
                                        "(a write conflict); nothing was written. Try again.")
        return StoreError(f"Writing {self.location.display} failed: {describe_error(exc)}")

    def _run(self, call):
        import pymongo

        try:
            return call()
        except pymongo.errors.PyMongoError as exc:
            raise self.error(exc) from exc

    def find(self, collection: str, filter: dict, sort: list[tuple[str, int]] | None = None, *,
             limit: int = 0) -> list[dict]:
        """The documents of COLLECTION matching FILTER (SORTed, at most LIMIT; 0: all), as stored, in the write."""
        return self._run(lambda: find_documents(self.backend.db[collection], filter, sort, limit=limit,
                                                session=self.session))

    def find_one(self, collection: str, filter: dict, sort: list[tuple[str, int]] | None = None) -> dict | None:
        """The first document `find` gives, or None."""
        found = self.find(collection, filter, sort, limit=1)
        return found[0] if found else None

    def decoded(self, collection: str, filter: dict, sort: list[tuple[str, int]] | None = None, *,
                limit: int = 0) -> list[dict]:
        """`find`'s documents as the studio reads Mastra's values (`to_mastra`: Dates as ISO text, no `_id`)."""
        from studio.store.backends.mongodb import to_mastra

        out = []
        for doc in self.find(collection, filter, sort, limit=limit):
            doc = dict(doc)
            doc.pop("_id", None)
            out.append(to_mastra(doc))
        return out

    # -- values as the JS driver stores Mastra's --------------------------------------------------

    def bind(self, collection: str, values: dict[str, Any]) -> dict[str, Any]:
        """VALUES as @mastra/mongodb stores them: ISO text of a date field as a Date, OM flags as booleans,
        `Jsonb` text parsed, numbers as the JS driver writes them (`js_number`)."""
        out = {}
        for key, value in values.items():
            if isinstance(value, Jsonb):
                value = json.loads(value.text)
            if key in DATE_FIELDS and isinstance(value, str):
                value = iso_to_bson_date(value)
            elif collection == sc.OBSERVATIONAL_MEMORY and key in OM_BOOL_COLUMNS and value is not None:
                value = bool(value)
            out[key] = js_number(value)
        return out

    # -- the journal and the steps ------------------------------------------------------------------

    def _key(self, collection: str, doc: dict) -> tuple[str, str]:
        return (collection, doc["id"])

    def _note(self, key: tuple[str, str], before: dict | None, after: dict | None) -> None:
        if key not in self._before:
            self._order.append(key)
            self._before[key] = canonical(before)
        self._after[key] = canonical(after)

    def journal(self) -> list[dict]:
        """[{table, id, before, after}] of every document this write changed (canonical images; None: absent)."""
        return [{"table": t, "id": i, "before": self._before[(t, i)], "after": self._after[(t, i)]}
                for t, i in self._order]

    def _step(self, key: tuple[str, str], before: dict | None, after: dict | None, run) -> None:
        """Journal KEY (BEFORE → AFTER), rewrite the backup first on a standalone server, then RUN (True: done)."""
        self._note(key, before, after)
        if not self.atomic:
            self._save_backup()
        if not self._run(run):
            what = f"{key[0]} document {key[1]!r}"
            self._put_back(key)
            raise WriteRefused("generation-changed", f"Another program changed {what} while the studio was writing "
                                                     "(a standalone server has no transactions); what the studio had "
                                                     "written was put back and nothing is left changed. Try again.")

    @staticmethod
    def _cas(doc: dict) -> dict:
        """The compare-and-set filter of DOC as read: its `_id` and every field with its stored value."""
        return {"$and": [{"_id": doc["_id"]}, *({k: v} for k, v in doc.items() if k != "_id")]}

    def insert(self, collection: str, doc: dict) -> None:
        """insertOne(DOC) (given in Mastra's field order and values; an `_id` is added first); journaled."""
        from bson import ObjectId

        doc = {**self.bind(collection, doc), "_id": ObjectId()}   # the JS driver adds `_id` to what it inserts
        coll = self.backend.db[collection]
        self._step(self._key(collection, doc), None, doc,
                   lambda: coll.insert_one(as_sent(doc), session=self.session).acknowledged)

    def insert_many(self, collection: str, docs: list[dict]) -> None:
        """insertMany(DOCS) (each in Mastra's field order, an `_id` appended as the JS driver does), journaled: BULK
        documents a command in the transaction; standalone, one step (backup rewritten first) a document."""
        from bson import ObjectId

        coll = self.backend.db[collection]
        for start in range(0, len(docs), BULK):
            batch = [{**self.bind(collection, d), "_id": ObjectId()} for d in docs[start:start + BULK]]
            for doc in batch:
                self._note(self._key(collection, doc), None, doc)
            if not self.atomic:   # the backup names the whole batch first (new ids: no compare-and-set needed)
                self._save_backup()
            self._run(lambda batch=batch: coll.insert_many([as_sent(d) for d in batch], session=self.session))

    def upsert(self, collection: str, row_id: str, values: dict[str, Any]) -> None:
        """updateOne({id: ROW_ID}, {$set: VALUES}, {upsert: true}) of a document read as absent (the server makes
        it: `_id`, `id`, then VALUES); journaled with the document read back. A document another program made
        in between is refused ("generation-changed"; on a standalone server that one step is left as it is)."""
        values = self.bind(collection, values)
        coll = self.backend.db[collection]
        key = (collection, row_id)
        self._note(key, None, None)   # backed up as "absent before" first: an undo deletes what the upsert made
        if not self.atomic:
            self._save_backup()
        result = self._run(lambda: coll.update_one({"id": row_id}, {"$set": values}, upsert=True,
                                                   session=self.session))
        if result.upserted_id is None:
            self._order.remove(key)
            self._put_back(key)
            raise WriteRefused("generation-changed", f"Another program made {collection} document {row_id!r} while "
                                                     "the studio was writing it; nothing was written. Try again.")
        self._after[key] = canonical(self.find_one(collection, {"id": row_id}))
        if not self.atomic:
            self._save_backup()

    def set_fields(self, collection: str, doc: dict, values: dict[str, Any]) -> None:
        """updateOne({id}, {$set: VALUES}) on DOC as read (`bind` applied); journaled; compare-and-set standalone."""
        values = self.bind(collection, values)
        after = {**doc, **values}
        coll = self.backend.db[collection]
        where = {"_id": doc["_id"]} if self.atomic else self._cas(doc)
        self._step(self._key(collection, doc), doc, after,
                   lambda: coll.update_one(where, {"$set": values}, session=self.session).matched_count == 1)

    def delete(self, collection: str, doc: dict) -> None:
        """deleteOne of DOC as read; journaled; compare-and-set on a standalone server."""
        coll = self.backend.db[collection]
        where = {"_id": doc["_id"]} if self.atomic else self._cas(doc)
        self._step(self._key(collection, doc), doc, None,
                   lambda: coll.delete_one(where, session=self.session).deleted_count == 1)

    def delete_many(self, collection: str, docs: list[dict]) -> None:
        """deleteMany of DOCS as read, journaled, BULK documents a command: in the transaction by `{_id: {$in}}` (a
        document gone meanwhile refuses: "generation-changed"); standalone, the backup naming the batch rewritten
        first and the filter an `$or` of each document's compare-and-set: a document changed meanwhile stays, the
        documents of the write deleted so far are put back and the write refused."""
        coll = self.backend.db[collection]
        for start in range(0, len(docs), BULK):
            batch = docs[start:start + BULK]
            for doc in batch:
                self._note(self._key(collection, doc), doc, None)
            if self.atomic:
                where = {"_id": {"$in": [d["_id"] for d in batch]}}
            else:
                self._save_backup()
                where = {"$or": [self._cas(d) for d in batch]}
            gone = self._run(lambda where=where: coll.delete_many(where, session=self.session))
            if gone.deleted_count != len(batch):
                if not self.atomic:   # the documents that stayed were changed by another program: not ours
                    kept = {self._key(collection, d) for d in batch
                            if coll.find_one({"_id": d["_id"]}, {"_id": 1}) is not None}
                    self._put_back(kept)
                    raise WriteRefused("generation-changed", f"Another program changed {len(kept)} {collection} "
                                                             "document(s) while the studio was deleting them (a "
                                                             "standalone server has no transactions); what the studio "
                                                             "had written was put back. Try again.")
                raise WriteRefused("generation-changed", f"{len(batch) - gone.deleted_count} {collection} document(s) "
                                                         "went while the studio was deleting them; nothing was "
                                                         "written. Try again.")

    def touch_threads(self, thread_ids: list[str], now: str) -> None:
        """Set the threads' updatedAt to NOW (ISO) as MongoDBStore.deleteMessages does (`updateMany {$set}`)."""
        if thread_ids:
            for doc in self.find(sc.THREADS, {"id": {"$in": list(thread_ids)}}):
                self.set_fields(sc.THREADS, doc, {"updatedAt": now})

    def replace(self, collection: str, row_id: str, current: dict | None, image: dict | None) -> None:
        """Put document ROW_ID of COLLECTION back to IMAGE (canonical; None: delete it) from CURRENT (as read)."""
        coll = self.backend.db[collection]
        doc = from_canonical(image) if image is not None else None
        key = (collection, row_id)
        if current is None and doc is not None:
            self._step(key, None, doc, lambda: coll.insert_one(as_sent(doc), session=self.session).acknowledged)
        elif current is not None and doc is None:
            self.delete(collection, current)
        elif current is not None:
            where = {"_id": current["_id"]} if self.atomic else self._cas(current)
            if doc.get("_id") != current["_id"]:   # another _id: delete and insert the image
                self.delete(collection, current)
                self._step(key, None, doc, lambda: coll.insert_one(as_sent(doc), session=self.session).acknowledged)
                return
            self._step(key, current, doc,
                       lambda: coll.replace_one(where, as_sent(doc), session=self.session).matched_count == 1)

    def _put_back(self, failed: tuple[str, str] | set[tuple[str, str]]) -> None:
        """Undo the steps done (standalone), newest first, but FAILED (the refused step's key, or keys); delete the
        backup. Each put-back is itself a compare-and-set on the image the step left: a document deleted is put
        back only where no document has its `_id`, an inserted one deleted only as inserted."""
        if self.atomic:
            return
        failed = failed if isinstance(failed, set) else {failed}
        for key in reversed(self._order):
            if key in failed:
                continue
            coll = self.backend.db[key[0]]
            before, after = self._before[key], self._after[key]
            with suppress(Exception):
                if after is None:
                    image = from_canonical(before)
                    if coll.find_one({"_id": image["_id"]}, {"_id": 1}) is None:
                        coll.insert_one(as_sent(image))
                elif before is None:
                    coll.delete_one(self._cas(from_canonical(after)))
                else:
                    coll.replace_one(self._cas(from_canonical(after)), as_sent(from_canonical(before)))
        if self.backup_path is not None:
            self.backup_path.unlink(missing_ok=True)
            self.backup_path = None

    def _save_backup(self) -> None:
        """Write (first step) or rewrite (later steps) the standalone write's row backup."""
        from studio.store.write.row_backup import current_backup_sink, save_row_backup, write_json_atomically

        journal = self.journal()
        if self.backup_path is None:
            sink = current_backup_sink()
            self.backup_path = save_row_backup(self.location, journal, self.schema, label=self.label,
                                               folder=sink.folder if sink is not None else None,
                                               extra=sink.extra if sink is not None else None)
            return
        document = json.loads(self.backup_path.read_text(encoding="utf-8"))
        document["rows"] = journal
        document["inserted"] = [[r["table"], r["id"]] for r in journal if r["before"] is None]
        write_json_atomically(self.backup_path, document)


def _commit(tx: MongoWriteTx, session, backup: Path | None) -> None:
    """commitTransaction; a connection lost meanwhile raises ServerUnreachable(outcome="unknown"): the commit may
    have landed, so the row backup BACKUP is kept and `undo` tells later (it reads the documents again)."""
    import pymongo

    try:
        session.commit_transaction()
    except pymongo.errors.ConnectionFailure as exc:
        from studio.errors import ServerUnreachable

        raise ServerUnreachable(f"The connection to {tx.location.display} was lost while the write was being "
                                f"committed ({describe_error(exc)}): it may or may not be written. Its backup is "
                                "kept; `memory-studio undo` tells which.", outcome="unknown",
                                backup=str(backup) if backup else None) from exc
    except pymongo.errors.PyMongoError as exc:
        raise tx.error(exc) from exc


@contextmanager
def mongo_write_transaction(location: Target, *, label: str = "write") -> Iterator[MongoWriteTx]:
    """Open the MongoDB target LOCATION for one write; yield a MongoWriteTx.

    A replica set / mongos: one transaction, committed when the block ends normally after the row backup
    (`row_backup_before_commit`, named with LABEL) is saved, aborted when it raises. A standalone server: each
    step is written when the write function asks for it, its backup rewritten first; when the block raises,
    the steps done are put back (compare-and-set) and the backup deleted. Raises StoreError (unreachable server,
    refused login), SchemaError (no Mastra collections), WriteRefused ("busy": a write conflict;
    "generation-changed": a document changed under a standalone step); nothing is written then.
    """
    from studio.store.write.row_backup import current_backup_sink, row_backup_before_commit

    backend = MongoBackend.open(location)
    try:
        tx = MongoWriteTx(backend, label=label)
        if not tx.atomic:
            try:
                yield tx
            except BaseException:
                if tx.backup_path is not None:
                    tx._put_back(("", ""))
                raise
            sink = current_backup_sink()
            if tx.backup_path is not None and sink is not None:
                sink.made.append(tx.backup_path)
            return
        from pymongo.read_concern import ReadConcern
        from pymongo.write_concern import WriteConcern

        session = tx._run(lambda: backend.client.start_session())
        try:
            session.start_transaction(read_concern=ReadConcern("snapshot"), write_concern=WriteConcern("majority"))
            tx.session = session
            try:
                yield tx
                journal = tx.journal()
                with row_backup_before_commit(location, journal, tx.schema, label=label) as backup:
                    _commit(tx, session, backup)
            except BaseException:
                if session.in_transaction:
                    with suppress(Exception):
                        session.abort_transaction()
                raise
        finally:
            session.end_session()
    finally:
        backend.close()

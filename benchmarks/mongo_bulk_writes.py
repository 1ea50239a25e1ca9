"""Commands and seconds of a clone and a clear of a 2,000-message thread on MongoDB (the studio's bulk writes).

    python benchmarks/mongo_bulk_writes.py 'mongodb://127.0.0.1:PORT/DB?replicaSet=rs0' [--messages 2000]

DB must hold a Mastra memory (e.g. the corpus's `support` loaded with `mongo-load.mjs`). The script adds a thread
`bench-bulk` of N messages (copies of the database's first message, one millisecond apart: Mastra's document
shape), then clones it (`clone_thread`, every message) and clears the clone (`clear_thread`), counting the
commands pymongo sends (command monitoring: finds, inserts, deletes, updates, the transaction's commit) and the
wall time of each write. The added threads are deleted at the end. On a replica set each write is one
transaction with bulk commands of 1,000 documents; on a standalone server, one compare-and-set step a document.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import timedelta

from pymongo import MongoClient, monitoring


class _Counter(monitoring.CommandListener):
    def __init__(self):
        self.counts: dict[str, int] = {}

    def started(self, event):
        self.counts[event.command_name] = self.counts.get(event.command_name, 0) + 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark on the URL given; print one line per write (commands by name, total, seconds)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args(argv)
    os.environ.setdefault("XDG_DATA_HOME", tempfile.mkdtemp(prefix="mongo-bench-"))   # the row backups go there
    counter = _Counter()
    monitoring.register(counter)
    from studio.store.target import parse_target
    from studio.store.writes import WriteSession

    db_name = parse_target(args.url).schema
    with MongoClient(args.url, tz_aware=True) as client:
        db = client[db_name]
        model = db.mastra_messages.find_one({}, sort=[("createdAt", 1)])
        thread = db.mastra_threads.find_one({"id": model["thread_id"]})
        db.mastra_threads.insert_one({**{k: v for k, v in thread.items() if k != "_id"}, "id": "bench-bulk",
                                      "title": "bulk benchmark"})
        db.mastra_messages.insert_many([{**{k: v for k, v in model.items() if k != "_id"}, "id": f"bench-{i}",
                                         "thread_id": "bench-bulk",
                                         "createdAt": model["createdAt"] + timedelta(milliseconds=i)}
                                        for i in range(args.messages)])
    session = WriteSession()
    try:
        for label, write in (("clone", lambda: session.clone_thread(args.url, "bench-bulk",
                                                                     new_thread_id="bench-bulk-clone")),
                             ("clear", lambda: session.clear_thread(args.url, "bench-bulk-clone"))):
            counter.counts.clear()
            started = time.perf_counter()
            write()
            seconds = time.perf_counter() - started
            counts = {k: v for k, v in sorted(counter.counts.items()) if k not in ("hello", "ismaster", "endSessions")}
            print(f"{label} of {args.messages} messages: {sum(counts.values())} commands {counts}, {seconds:.2f} s")
    finally:
        with MongoClient(args.url) as client:
            db = client[db_name]
            db.mastra_messages.delete_many({"thread_id": {"$in": ["bench-bulk", "bench-bulk-clone"]}})
            db.mastra_threads.delete_many({"id": {"$in": ["bench-bulk", "bench-bulk-clone"]}})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Edit Thread writes what real Mastra's Memory.updateThread writes (@mastra/memory 1.31.0 over @mastra/libsql
1.23.1): the title (None keeps it, "" is a title), metadata merged key by key into the stored object (a key
replaced or added, never removed; JavaScript's key order, integer-like keys first), updatedAt now. Every other
row of the file stays as it was, and real Mastra runs another turn on the thread (continue.mjs)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from studio.app.thread_writes import update_thread
from studio.store.writes import WriteSession
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, run_node

CASES = [
    ("support", "support-meta", {"title": "Renamed & <b>plain</b>",
                                 "metadata": {"priority": 3, "category": None, "nested": {"a": [1, "2"]}, "10": "x"}}),
    ("support", "support-1", {"title": ""}),
    ("resource", "res-a", {"metadata": {"topic": "Zürich café", "2": True}}),
    ("history", "hist-1-branch", {"metadata": {"clone": {"sourceThreadId": "elsewhere"}}}),
]


@pytest.mark.parametrize(("fixture", "thread_id", "args"), CASES)
def test_update_thread_equals_mastra(tmp_path, mastra_corpus, fixture, thread_id, args):
    base = copy_fixture(fixture, tmp_path / "base")
    theirs, ours = tmp_path / "mastra.db", tmp_path / "ours.db"
    for dest in (theirs, ours):
        shutil.copyfile(base, dest)
    before = dump_tables(base)
    mastra = run_node(mastra_corpus, "studio-update-thread.mjs", theirs, thread_id, json.dumps(args))["thread"]
    (tmp_path / "backups").mkdir()
    written = update_thread(str(ours), thread_id, title=args.get("title"), metadata=args.get("metadata"),
                            session=WriteSession(backup_dir=tmp_path / "backups"))

    theirs_rows, our_rows = dump_tables(theirs), dump_tables(ours)
    t_theirs, t_ours = (rows["mastra_threads"].pop(thread_id) for rows in (theirs_rows, our_rows))
    assert our_rows == theirs_rows   # nothing else changed, in either
    assert {k: v for k, v in t_ours.items() if k != "updatedAt"} == {k: v for k, v in t_theirs.items()
                                                                      if k != "updatedAt"}
    iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
    assert iso.match(t_ours["updatedAt"]) and iso.match(t_theirs["updatedAt"])
    assert t_ours["updatedAt"] > before["mastra_threads"][thread_id]["updatedAt"]
    assert written.result["metadata"] == mastra["metadata"] and written.result["title"] == mastra["title"]
    assert list(written.result["metadata"]) != [] or not args.get("metadata")
    # Mastra carries on with the thread we edited: one more agent turn on our copy
    report = run_node(mastra_corpus, "continue.mjs", ours, thread_id, "1")
    assert report["ok"] is True, report

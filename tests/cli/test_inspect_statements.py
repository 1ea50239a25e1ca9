"""`inspect` reads one batch per kind of row: as many statements for 3N threads as for N (issue 13).

Built from first principles: a fixture written by real Mastra (N threads) and the same file with
two more copies of every thread, its messages, its resource and its OM generations under new ids
(3N threads). A copy lives in its own resource, so every original thread sees exactly the rows it
saw before; its status must not change, and a thread-scope copy's status equals its original's.
"""

from __future__ import annotations

import sqlite3

import pytest

from benchmarks.query_count import counting_statements, inspect_path
from tests.conftest import copy_fixture

FIXTURES_WITH_OM = ["support", "resource", "collab", "buffered"]


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def add_copies(path, copies: int) -> None:
    """Add COPIES copies of every thread (with its messages, resource and OM rows), ids suffixed `~cK`."""
    renamed = {
        "mastra_threads": {"id": "id || :s", "resourceId": '"resourceId" || :s'},
        "mastra_messages": {"id": "id || :s", "thread_id": "thread_id || :s", "resourceId": '"resourceId" || :s'},
        "mastra_resources": {"id": "id || :s"},
        "mastra_observational_memory": {
            "id": "id || :s", "threadId": '"threadId" || :s', "resourceId": '"resourceId" || :s',
            "lookupKey": "CASE WHEN \"lookupKey\" LIKE 'thread:%' THEN 'thread:' || \"threadId\" || :s "
                         "ELSE 'resource:' || \"resourceId\" || :s END"},
    }
    db = sqlite3.connect(path)
    try:
        db.execute("SELECT count(*) FROM sqlite_master")   # a read: the close then checkpoints the -wal away
        for k in range(1, copies + 1):
            for table, exprs in renamed.items():
                cols = _columns(db, table)
                if not cols:
                    continue
                select = ", ".join(exprs.get(c, f'"{c}"') for c in cols)
                names = ", ".join(f'"{c}"' for c in cols)
                db.execute(f"INSERT INTO {table} ({names}) SELECT {select} FROM {table} "
                           "WHERE id NOT LIKE '%~c%'", {"s": f"~c{k}"})
        db.commit()
    finally:
        db.close()


def _inspect_counted(path) -> tuple[dict, int]:
    with counting_statements() as count:
        doc = inspect_path(str(path))
    return doc, count.statements


@pytest.mark.parametrize("name", FIXTURES_WITH_OM)
def test_inspect_statements_do_not_grow_with_threads(name, tmp_path):
    one = copy_fixture(name, tmp_path / "one")
    three = copy_fixture(name, tmp_path / "three")
    add_copies(three, 2)
    add_copies(one, 0)   # the same file state as THREE (its -wal checkpointed away): the same open, the same load
    doc1, statements1 = _inspect_counted(one)
    doc3, statements3 = _inspect_counted(three)
    assert len(doc3["threads"]) == 3 * len(doc1["threads"]) > 0
    assert len(doc3["observational_memory"]) == 3 * len(doc1["observational_memory"]) > 0
    assert statements3 == statements1
    # every original lookup key reports what it reported alone
    by_key3 = {om["lookup_key"]: om for om in doc3["observational_memory"]}
    for om in doc1["observational_memory"]:
        assert by_key3[om["lookup_key"]]["status"] == om["status"]
        # a thread-scope copy sees the same rows as its original: the same status, field by field
        if om["scope"] == "thread":
            for k in (1, 2):
                copy = by_key3[om["lookup_key"] + f"~c{k}"]
                assert list(copy["status"].values()) == list(om["status"].values())

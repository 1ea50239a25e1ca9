"""clone_thread writes what real Mastra's Memory.cloneThread writes (ids and times aside); Mastra continues on it."""

from __future__ import annotations

import json

import libsql
import pytest

from studio.store import open_store
from studio.store.write.xxhash import h32_to_string
from studio.store.writes import clone_thread
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, run_node

NEW_ID = "studio-clone-1"
TIME_COLUMNS = {"createdAt", "updatedAt"}


def _ids(path, thread_id):
    with open_store(path) as store:
        return [(m.id, m.created_at) for m in store.list_messages(thread_id)]


# (fixture, source thread, Mastra's cloneThread arguments, OM record copied?, run continue.mjs on our clone)
CASES = [
    ("support", "support-1", {}, True, True),
    ("support", "support-3", {"title": "Branch", "metadata": {"branch": True, "n": 2.5, "clone": "replaced"},
                              "options": {"messageLimit": 3}}, True, False),
    ("support", "support-5", {"resourceId": "user-zed", "options": {"messageFilter": {"range": (3, 10)}}}, True, False),
    # resource-scope OM copied to the new resource, its <thread id="xxh32"> tags rewritten
    ("resource", "res-a", {"resourceId": "user-new", "hashed_tags": True}, True, True),
    ("resource", "res-c", {"title": ""}, False, False),        # same resource: its OM is shared, not copied
    ("buffered", "long-run", {"options": {"messageLimit": 10}}, True, False),
    ("collab", "doc_42", {"options": {"messageFilter": {"pick": (0, 2, 5)}}}, True, False),
    ("tools", "tools-1", {"options": {"messageLimit": 0}}, True, False),
    ("history", "hist-1-branch", {}, False, True),              # a clone of a clone, no OM
]


def _resolve(args: dict, path, thread_id) -> dict:
    """Turn the placeholders (message positions) into real dates / ids of the source thread."""
    args = json.loads(json.dumps(args))
    flt = args.get("options", {}).get("messageFilter")
    if flt:
        msgs = _ids(path, thread_id)
        if "range" in flt:
            lo, hi = flt.pop("range")
            flt["startDate"], flt["endDate"] = msgs[lo][1], msgs[hi][1]
        if "pick" in flt:
            flt["messageIds"] = [msgs[i][0] for i in flt.pop("pick")]
    return args


def _our_kwargs(args: dict) -> dict:
    options = args.get("options", {})
    flt = options.get("messageFilter", {})
    return {"title": args.get("title"), "resource_id": args.get("resourceId"), "metadata": args.get("metadata"),
            "message_limit": options.get("messageLimit"), "start_date": flt.get("startDate"),
            "end_date": flt.get("endDate"), "message_ids": flt.get("messageIds")}


def _normalised_clone(before: dict, after: dict, source_thread: str) -> dict:
    """Return the rows a clone added, new message ids replaced by the source ids they were copied from."""
    added = {t: [r for k, r in rows.items() if k not in before.get(t, {})] for t, rows in after.items()}
    changed = [(t, k) for t, rows in before.items() for k, r in rows.items() if after[t].get(k) != r]
    source_msgs = [m for m in before["mastra_messages"].values() if m["thread_id"] == source_thread]
    by_content = {}
    for m in source_msgs:
        by_content.setdefault((m["createdAt"], m["role"], m["content"]), []).append(m["id"])
    id_map = {}
    for m in added["mastra_messages"]:
        (src,) = by_content[(m["createdAt"], m["role"], m["content"])]  # unique in the fixtures
        id_map[m["id"]] = src
    messages = sorted(({**m, "id": id_map[m["id"]]} for m in added["mastra_messages"]), key=lambda m: m["id"])
    om_rows = []
    for r in added.get("mastra_observational_memory", []):
        r = {k: v for k, v in r.items() if k not in TIME_COLUMNS | {"id"}}
        for col in ("observedMessageIds", "bufferedObservationChunks"):
            if r.get(col):
                text = r[col]
                for new, src in id_map.items():
                    text = text.replace(new, f"src:{src}")
                r[col] = text
        om_rows.append(r)
    threads = [{k: v for k, v in t.items() if k not in TIME_COLUMNS} for t in added["mastra_threads"]]
    for t in threads:
        meta = json.loads(t["metadata"][len("jsonb:"):])
        meta["clone"].pop("clonedAt")
        t["metadata"] = meta
    other = {t: rows for t, rows in added.items() if t not in ("mastra_messages", "mastra_observational_memory",
                                                               "mastra_threads") and rows}
    return {"threads": threads, "messages": messages, "om": om_rows, "other": other, "changed": changed}


def _hash_thread_tags(path, thread_id):
    """Give the resource's OM log a `<thread id="h32(thread)">` block, as Mastra writes obscured ids."""
    tag = f'<thread id="{h32_to_string(thread_id.encode())}">'
    conn = libsql.connect(f"file:{path}")
    conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ? || char(10) || '
                 '"activeObservations" WHERE "lookupKey" = (SELECT \'resource:\' || "resourceId" FROM mastra_threads '
                 'WHERE id = ?)', (f"{tag}\n* 🔴 (10:00) Tagged observation\n</thread>", thread_id))
    conn.commit()
    conn.close()


@pytest.mark.parametrize(("name", "source", "args", "copies_om", "cont"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_clone_matches_mastra(mastra_corpus, tmp_path, name, source, args, copies_om, cont):
    a, b = copy_fixture(name, tmp_path / "a"), copy_fixture(name, tmp_path / "b")
    args = dict(args)
    hashed = args.pop("hashed_tags", False)
    if hashed:
        _hash_thread_tags(a, source)
        _hash_thread_tags(b, source)
    args = _resolve(args, a, source)
    before = dump_tables(a)

    mastra = run_node(mastra_corpus, "clone.mjs", a, source, NEW_ID, json.dumps(args))
    ours = clone_thread(b, source, new_thread_id=NEW_ID, **_our_kwargs(args))

    expected, got = _normalised_clone(before, dump_tables(a), source), _normalised_clone(before, dump_tables(b), source)
    assert got == expected
    assert len(expected["om"]) == (1 if copies_om else 0)
    assert (ours["omRecordId"] is not None) == copies_om
    if hashed:
        (row,) = got["om"]
        assert f'<thread id="{h32_to_string(NEW_ID.encode())}">' in row["activeObservations"]
        assert f'<thread id="{h32_to_string(source.encode())}">' not in row["activeObservations"]
    assert expected["messages"] or args.get("options", {}).get("messageFilter")
    # what the call returns matches what Mastra's returns
    assert {k: ours["thread"][k] for k in ("id", "resourceId", "title")} == \
           {k: mastra["thread"][k] for k in ("id", "resourceId", "title")}

    def strip(meta: dict) -> dict:
        return {**meta, "clone": {k: v for k, v in meta["clone"].items() if k != "clonedAt"}}

    assert strip(ours["thread"]["metadata"]) == strip(mastra["thread"]["metadata"])
    assert [(m["role"], m["createdAt"], m["content"]) for m in ours["messages"]] == \
           [(m["role"], m["createdAt"], m["content"]) for m in mastra["messages"]]
    assert set(ours["messageIdMap"].values()) == {m["id"] for m in ours["messages"]}

    if cont:
        report = run_node(mastra_corpus, "continue.mjs", b, NEW_ID, "1")
        assert report["ok"] is True, report
        assert report["before"]["messages"] == len(ours["messages"])
        if ours["omRecordId"]:
            assert report["before"]["recordId"] == ours["omRecordId"]
            assert report["contextHasActiveObservations"] is True

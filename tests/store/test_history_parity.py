"""listThreads and recall give what Mastra gave on every fixture: same ids, same order, same total and hasMore.

Expected values: the fixture oracles (`oracle.mjs`: Mastra's listThreads and Memory.recall), and
`data/history_extra.json`, written by running `data/history_extra.mjs` with real Mastra (paging
edges, explicit orderBy, exclusive date bounds, the storage's include, rejected filters). Every
case runs through the Python API and through the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import libsql
import pytest

from studio.cli import main
from studio.common.metadata_filter import ValidationError
from studio.store import open_store
from studio.store.history import list_messages, list_threads, recall
from tests.conftest import FIXTURE_NAMES, load_oracle

EXTRA = json.loads((Path(__file__).parent / "data" / "history_extra.json").read_text(encoding="utf-8"))


def _decode(value):
    """Undo history_extra.mjs's encoding of Infinity ({"$number": "Infinity"})."""
    if isinstance(value, dict):
        if set(value) == {"$number"}:
            return float(value["$number"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _thread_cases(name):
    return [(rid, case) for rid, res in load_oracle(name)["resources"].items() for case in res["listThreads"]]


def _recall_cases(name):
    return [(tid, case) for tid, t in load_oracle(name)["threads"].items() for case in t["recall"]]


def _api_threads(store, args):
    return list_threads(store, filter=args.get("filter"), order_by=args.get("orderBy"), page=args.get("page", 0),
                        per_page=args.get("perPage"))


def _api_recall(store, thread_id, args):
    return recall(store, thread_id, page=args.get("page"), per_page=args.get("perPage"),
                  order_by=args.get("orderBy"), filter=args.get("filter"), include=args.get("include"))


def _cli_json(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def threads_argv(path, args):
    """The `threads` command line for a listThreads call's ARGS."""
    argv = ["threads", str(path), "--json"]
    flt = args.get("filter") or {}
    if "resourceId" in flt:
        argv += ["--resource", flt["resourceId"]]
    if "metadata" in flt:
        argv += ["--metadata", json.dumps(flt["metadata"])]
    if args.get("orderBy"):
        argv += ["--order-by", args["orderBy"]["field"], "--direction", args["orderBy"]["direction"]]
    if args.get("perPage") is False:
        argv.append("--all")
    elif "perPage" in args:
        argv += ["--per-page", str(args["perPage"])]
    if "page" in args:
        argv += ["--page", str(args["page"])]
    return argv


def recall_argv(path, thread_id, args):
    """The `recall` command line for a Memory.recall call's ARGS."""
    argv = ["recall", str(path), "--thread", thread_id, "--json"]
    if args.get("perPage") is False:
        argv.append("--all")
    elif "perPage" in args:
        argv += ["--per-page", str(args["perPage"])]
    if "page" in args:
        argv += ["--page", str(args["page"])]
    flt = args.get("filter") or {}
    rng = flt.get("dateRange") or {}
    if "start" in rng:
        argv += ["--from", rng["start"]]
    if "end" in rng:
        argv += ["--to", rng["end"]]
    if "metadata" in flt:
        argv += ["--metadata", json.dumps(flt["metadata"])]
    for inc in args.get("include") or []:
        argv += ["--include", f"{inc['id']}:{inc.get('withPreviousMessages', 0)}:{inc.get('withNextMessages', 0)}"]
    return argv


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_list_threads_equals_oracle(fixture_db, capsys, name):
    path = fixture_db(name)
    cases = _thread_cases(name)
    assert cases
    with open_store(path) as store:
        for _rid, case in cases:
            got = _api_threads(store, case["args"])
            want = (case["threadIds"], case["total"], case["hasMore"])
            assert (got.thread_ids, got.total, got.has_more) == want, case
    for _rid, case in cases:
        doc = _cli_json(capsys, threads_argv(path, case["args"]))
        assert doc == {"thread_ids": case["threadIds"], "total": case["total"], "has_more": case["hasMore"]}, case


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_recall_equals_oracle(fixture_db, capsys, name):
    path = fixture_db(name)
    cases = _recall_cases(name)
    assert cases
    with open_store(path) as store:
        for thread_id, case in cases:
            got = _api_recall(store, thread_id, case["args"])
            assert got.message_ids == case["messageIds"], (thread_id, case["args"])
            if "total" in case:
                assert got.total == case["total"], (thread_id, case["args"])
            if "hasMore" in case:
                assert got.has_more == case["hasMore"], (thread_id, case["args"])
    for thread_id, case in cases:
        doc = _cli_json(capsys, recall_argv(path, thread_id, case["args"]))
        assert set(doc) == {"message_ids", "total", "has_more"}
        assert doc["message_ids"] == case["messageIds"], (thread_id, case["args"])
        if "total" in case:
            assert doc["total"] == case["total"]
        if "hasMore" in case:
            assert doc["has_more"] == case["hasMore"]


def _outcome(fn, *args, **kwargs):
    """FN(*ARGS, **KWARGS)'s page as the oracle records it (ids, total, hasMore), or its ValidationError."""
    try:
        page = fn(*args, **kwargs)
    except ValidationError as exc:
        return {"error": str(exc)}
    ids = page.thread_ids if hasattr(page, "thread_ids") else page.message_ids
    return {"ids": ids, "total": page.total, "hasMore": page.has_more}


def _expected(case):
    if "error" in case:
        return {"error": True}
    return {"ids": case.get("threadIds", case.get("messageIds")), "total": case["total"], "hasMore": case["hasMore"]}


def _ids_in_extra(name) -> tuple[set[str], set[str]]:
    """Return (thread ids, message ids) that EXTRA's answers for fixture NAME name."""
    threads = ({t for case in EXTRA[name]["listThreads"] for t in case.get("threadIds", [])}
               | set(EXTRA[name]["threads"]))
    messages = {m for cases in EXTRA[name]["threads"].values() for case in cases for m in case.get("messageIds", [])}
    return threads, messages


@pytest.mark.parametrize("name", sorted(set(EXTRA) - {"reminders"}))
def test_extra_data_was_written_from_these_fixtures(name):
    """history_extra.json answers for the fixtures now in ../shared: the same threads, the messages Mastra lists."""
    oracle = load_oracle(name)["threads"]
    threads, messages = _ids_in_extra(name)
    known = {m["id"] for t in oracle.values() for m in t["messages"]}
    assert threads == set(oracle) and messages <= known, (
        f"tests/store/data/history_extra.json was written from other {name} fixtures than ../shared holds now: "
        "regenerate it with tests/store/data/history_extra.mjs (see its header)")


@pytest.mark.parametrize("name", sorted(set(EXTRA) - {"reminders"}))
def test_more_cases_equal_mastra(fixture_db, name):
    """Paging edges, orderBy, exclusive dates, storage include and rejected filters, as real Mastra answered."""
    path = fixture_db(name)
    seen_kinds = set()
    with open_store(path) as store:
        for case in EXTRA[name]["listThreads"]:
            args = _decode(case["args"])
            got = _outcome(_api_threads, store, args)
            got = {"error": True} if "error" in got else got
            assert got == _expected(case), args
        for thread_id, cases in EXTRA[name]["threads"].items():
            for case in cases:
                args = _decode(case["args"])
                seen_kinds.add(case["kind"])
                if case["kind"] == "recall":
                    got = _outcome(_api_recall, store, thread_id, args)
                else:
                    got = _outcome(list_messages, store, thread_id, page=args.get("page", 0),
                                   per_page=args.get("perPage"), order_by=args.get("orderBy"),
                                   filter=args.get("filter"), include=args.get("include"))
                got = {"error": True} if "error" in got else got
                assert got == _expected(case), (thread_id, case["kind"], args)
    assert seen_kinds == {"recall", "listMessages"}


def test_recall_applies_include_like_storage_when_asked(fixture_db):
    """apply_include gives the storage's include result (recall's own paging, newest first, then chronological)."""
    path = fixture_db("support")
    with open_store(path) as store:
        plain = recall(store, "support-meta", per_page=1, include=[{"id": "meta-msg-3", "with_previous_messages": 1,
                                                                    "with_next_messages": 1}])
        applied = recall(store, "support-meta", per_page=1, apply_include=True,
                         include=[{"id": "meta-msg-3", "with_previous_messages": 1, "with_next_messages": 1}])
        storage = list_messages(store, "support-meta", per_page=1, order_by={"field": "createdAt", "direction": "DESC"},
                                include=[{"id": "meta-msg-3", "withPreviousMessages": 1, "withNextMessages": 1}])
    assert plain.message_ids == ["meta-msg-5"]
    assert applied.message_ids == list(reversed(storage.message_ids)) == ["meta-msg-2", "meta-msg-3", "meta-msg-4",
                                                                          "meta-msg-5"]
    assert (applied.total, applied.has_more) == (storage.total, storage.has_more) == (6, True)


def test_system_messages_and_reminders_are_left_out_but_counted(fixture_db):
    """Rows history_extra.mjs inserted before asking real Mastra: a system message and three system reminders."""
    path = fixture_db("support")
    conn = libsql.connect(str(path))
    for m in EXTRA["reminders"]["inserted"]:
        conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                     "VALUES (?, 'support-meta', ?, ?, 'v2', ?, 'user-carol')",
                     (m["id"], m["content"], m["role"], m["createdAt"]))
    conn.commit()
    conn.close()
    with open_store(path) as store:
        for case in EXTRA["reminders"]["threads"]["support-meta"]:
            got = _api_recall(store, "support-meta", case["args"])
            assert (got.message_ids, got.total, got.has_more) == (case["messageIds"], case["total"], case["hasMore"])
        shown = recall(store, "support-meta", per_page=False, include_system_reminders=True)
        assert [m.id for m in shown.messages if m.id.startswith("rem-")] == ["rem-1", "rem-2", "rem-3"]
        assert "sys-1" not in shown.message_ids             # MessageList drops stored system messages

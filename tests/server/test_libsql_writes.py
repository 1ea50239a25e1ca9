"""Writes on a libSQL server (sqld) equal real Mastra's writes (`@mastra/libsql` LibSQLStore on the same server
kind), row by row; Mastra carries on from them; undo restores every row exactly; refused writes write nothing.

Expected values come from real Mastra on a copy of the same database (`copy.mjs --store libsql-remote`: schema
and every row with its rowid) served by a second sqld: `mastra-reflect.mjs` (ObservationalMemory.reflect),
`clone.mjs` (Memory.cloneThread) and the test helper `studio-delete-server.mjs` (Memory.deleteMessages), all
with `--store libsql-remote`. Server A gets Mastra's write, server B ours (two extra sqld for the whole
module); every row both added or changed must be equal (ids and write times aside, times equal in NULL-ness),
and `continue.mjs --store libsql-remote` runs real agent turns on B.
"""

from __future__ import annotations

import json
import operator
import time

import httpx
import pytest

from studio.cli import main
from studio.engine.observe_window import observation_window
from studio.engine.observer import parse_answer as parse_observer_answer
from studio.engine.tokens import count_observations, stamp_estimates
from studio.errors import WriteRefused
from studio.store import open_store
from studio.store.write.activation import activate_buffered
from studio.store.write.observation import commit_observation
from studio.store.writes import WriteSession, commit_reflection, undo_write
from tests.interop.answers import answer_for, parse_answer
from tests.interop.conftest import run_node
from tests.interop.test_observe_interop import _answer, _end_marker, _ordered, _strip
from tests.server.pg_rows import TIME_COLUMNS, changes, same_row
from tests.server.sqld import dump, pipeline

OM = "mastra_observational_memory"


@pytest.fixture(scope="module")
def servers(sqld_corpus) -> tuple[str, str]:
    """Two scratch sqld (A: Mastra's writes, B: ours), started once; `start` of a running one just prints its URL."""
    return sqld_corpus.start("writes-a"), sqld_corpus.start("writes-b")


def _copy(sqld_corpus, scenario: str, url: str) -> str:
    """Replace URL's database by a copy of SCENARIO's (Mastra's copy.mjs: schema and rows with rowids)."""
    run_node(sqld_corpus.corpus, "copy.mjs", sqld_corpus.target(scenario), url, "--store", "libsql-remote")
    return url


def _node(sqld_corpus, script: str, url: str, *args: str) -> dict:
    return run_node(sqld_corpus.corpus, script, url, *args, "--store", "libsql-remote", "--url", url)


def rows(url: str) -> dict[str, dict[str, dict]]:
    """Return {table: {id: {column: typed Hrana value as JSON text}}} of every mastra_* table with an id at URL."""
    tables = [r[0]["value"] for r in pipeline(url, ["SELECT name FROM sqlite_master WHERE type = 'table' AND name "
                                                    "LIKE 'mastra%' ORDER BY name"])[0]["rows"]]
    out = {}
    for table, result in zip(tables, pipeline(url, [f'SELECT * FROM "{t}"' for t in tables]), strict=True):
        names = [c["name"] for c in result["cols"]]
        if "id" not in names:
            continue
        out[table] = {}
        for row in result["rows"]:
            values = {n: (None if v["type"] == "null" else json.dumps(v, sort_keys=True))
                      for n, v in zip(names, row, strict=True)}
            out[table][row[names.index("id")]["value"]] = values
    return out


def _text(value: str | None):
    return None if value is None else json.loads(value).get("value")


def _json_cell(url: str, table: str, row_id: str, column: str):
    """COLUMN of TABLE's row ROW_ID at URL decoded as JSON (a JSONB blob through the server's json())."""
    result = pipeline(url, [f'SELECT json("{column}") FROM "{table}" WHERE id = \'{row_id}\''])[0]
    return json.loads(result["rows"][0][0]["value"])


def _answer_file(tmp_path, text: str):
    path = tmp_path / "answer.txt"
    path.write_text(text, encoding="utf-8")
    return path


REFLECT_CASES = [("support", "support-1", {}), ("resource", "res-a", {"with_response": False})]


@pytest.mark.parametrize(("scenario", "thread_id", "options"), REFLECT_CASES, ids=[c[1] for c in REFLECT_CASES])
def test_reflection_on_sqld_equals_mastra_continues_and_undo_restores(sqld_corpus, servers, tmp_path, monkeypatch,
                                                                      capsys, scenario, thread_id, options):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, scenario, u) for u in servers)
    before = rows(a)
    assert rows(b) == before and before[OM]
    exact_before = dump(b)[1]
    answer = answer_for(scenario, **options)
    assert _node(sqld_corpus, "mastra-reflect.mjs", a, thread_id, str(_answer_file(tmp_path, answer)))["reflected"]

    with open_store(b) as store:
        key = store.lookup_key_for_thread(store.get_thread(thread_id))
        current = store.om_current(key)
    parsed = parse_answer(answer)
    session = WriteSession()
    ours = session.commit_reflection(b, lookup_key=key, expected_record_id=current.id,
                                     expected_active_observations=current.active_observations,
                                     observations=parsed["observations"],
                                     observation_tokens=count_observations(parsed["observations"]),
                                     current_task=parsed["current_task"],
                                     suggested_response=parsed["suggested_response"], thread_id=thread_id)
    added_a, changed_a, removed_a = changes(before, rows(a))
    after_b = rows(b)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert removed_a == removed_b == []
    assert list(added_a) == list(added_b) == [OM]
    (row_a,), (row_b,) = added_a[OM], added_b[OM]
    assert _text(row_b["id"]) == ours["id"]
    assert same_row(row_a, row_b) == []          # every column, typed (JSONB blob vs text too), times by NULL-ness
    assert set(changed_b) == set(changed_a)
    for cell in changed_a:
        if cell[2] not in TIME_COLUMNS:
            assert changed_b[cell] == changed_a[cell], cell
    # the row backup: the rows the write touched, in the session's (default) data folder
    backup_path = session.backup_for(b)
    assert str(tmp_path / "data" / "memory-studio" / "backups") in str(backup_path)
    backup = json.loads(backup_path.read_text(encoding="utf-8"))
    assert backup["identity"] == {"libsql": b}
    assert {(r["table"], r["id"]) for r in backup["rows"]} == {(t, k) for t, k, _ in changed_b} | {(OM, ours["id"])}

    # undo restores every row of every table exactly (the server's own typed values), then nothing is left
    assert main(["undo", b, "--yes", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["operation"], doc["deleted"], doc["reinserted"]) == ("reflect", 1, 0)
    assert dump(b)[1] == exact_before
    assert main(["undo", b, "--yes", "--json"]) == 2

    # the reflection again, and Mastra's agent carries on from it
    ours = commit_reflection(b, lookup_key=key, expected_record_id=current.id, observations=parsed["observations"],
                             observation_tokens=count_observations(parsed["observations"]),
                             current_task=parsed["current_task"], suggested_response=parsed["suggested_response"],
                             thread_id=thread_id)
    report = _node(sqld_corpus, "continue.mjs", b, thread_id, "1")
    assert report["ok"] is True, report
    assert report["before"]["recordId"] == ours["id"]
    assert report["before"]["generationCount"] == ours["generationCount"]
    assert report["contextHasActiveObservations"] is True


CLONE_CASES = [
    ("support", "support-3", {"title": "Branch", "metadata": {"branch": True}, "options": {"messageLimit": 3}}, False),
    ("resource", "res-a", {"resourceId": "user-new"}, True),   # resource OM copied, thread tags rewritten
]


@pytest.mark.parametrize(("scenario", "source", "args", "run_continue"), CLONE_CASES, ids=[c[1] for c in CLONE_CASES])
def test_clone_on_sqld_equals_mastra_clone(sqld_corpus, servers, tmp_path, monkeypatch, scenario, source, args,
                                           run_continue):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, scenario, u) for u in servers)
    before = rows(a)
    _node(sqld_corpus, "clone.mjs", a, source, "studio-clone-1", json.dumps(args))
    options = args.get("options", {})
    session = WriteSession()
    result = session.clone_thread(b, source, new_thread_id="studio-clone-1", title=args.get("title"),
                                  resource_id=args.get("resourceId"), metadata=args.get("metadata"),
                                  message_limit=options.get("messageLimit"))
    added_a, changed_a, removed_a = changes(before, rows(a))
    added_b, changed_b, removed_b = changes(before, rows(b))
    assert removed_a == removed_b == [] and changed_a == changed_b == {}
    assert sorted(added_a) == sorted(added_b)
    key = operator.itemgetter("createdAt", "content")   # Mastra's new ids are random
    msgs_a, msgs_b = sorted(added_a["mastra_messages"], key=key), sorted(added_b["mastra_messages"], key=key)
    assert len(msgs_a) == len(msgs_b) == len(result["messages"]) > 0
    for ma, mb in zip(msgs_a, msgs_b, strict=True):
        assert {k: v for k, v in ma.items() if k != "id"} == {k: v for k, v in mb.items() if k != "id"}
    (ta,), (tb,) = added_a["mastra_threads"], added_b["mastra_threads"]
    type_a, type_b = (json.loads(t["metadata"])["type"] for t in (ta, tb))
    assert type_a == type_b                            # stored the same way (JSONB blob or text)
    meta_a, meta_b = (_json_cell(u, "mastra_threads", "studio-clone-1", "metadata") for u in (a, b))
    ta.pop("metadata"), tb.pop("metadata")
    meta_a["clone"].pop("clonedAt"), meta_b["clone"].pop("clonedAt")
    assert meta_a == meta_b and same_row(ta, tb) == []
    if OM in added_a:
        (oa,), (ob,) = added_a[OM], added_b[OM]
        assert same_row(oa, ob, skip={"observedMessageIds", "bufferedObservationChunks"}) == []
    else:
        assert OM not in added_b
    backup = json.loads(session.backup_for(b).read_text(encoding="utf-8"))
    assert all(r["before"] is None for r in backup["rows"])       # a clone only inserts
    assert len(backup["inserted"]) == sum(len(v) for v in added_b.values())
    if run_continue:
        report = _node(sqld_corpus, "continue.mjs", b, "studio-clone-1", "1")
        assert report["ok"] is True, report


def test_delete_and_clear_on_sqld_equal_mastra_and_undo_puts_them_back(sqld_corpus, servers, tmp_path, monkeypatch,
                                                                     capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, "history", u) for u in servers)
    before, exact_before = rows(a), dump(b)[1]
    with open_store(b) as store:
        thread_ids = [t.id for t in store.list_threads()]
        msgs = store.list_messages(thread_ids[0])
        count = store.message_count(thread_ids[1])
    ids = [msgs[0].id, msgs[2].id, "no-such-message"]
    _node(sqld_corpus, "studio-delete-server.mjs", a, json.dumps(ids))
    session = WriteSession()
    assert session.delete_messages(b, ids) == 2
    added_a, changed_a, removed_a = changes(before, rows(a))
    added_b, changed_b, removed_b = changes(before, rows(b))
    assert added_a == added_b == {}
    assert sorted(removed_a) == sorted(removed_b) == sorted(("mastra_messages", i) for i in ids[:2])
    assert set(changed_a) == set(changed_b) == {("mastra_threads", thread_ids[0], "updatedAt")}
    after_delete = dump(b)[1]

    assert count > 0 and session.clear_thread(b, thread_ids[1]) == count
    with open_store(b) as store:
        assert store.message_count(thread_ids[1]) == 0 and store.get_thread(thread_ids[1]) is not None
    assert main(["undo", b, "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reinserted"] == count
    assert dump(b)[1] == after_delete                # rows back with their rowids: insertion order kept
    assert main(["undo", b, "--yes", "--json"]) == 0
    assert dump(b)[1] == exact_before


def _reflect_cli(url: str, *extra: str) -> int:
    return main(["reflect", url, "--thread", "support-1", "--strategy", "rule-based", "--yes", "--json", "--watch",
                 "0", *extra])


def test_refused_writes_on_sqld_leave_every_row_unchanged(sqld_corpus, servers, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    backups = tmp_path / "data" / "memory-studio" / "backups"
    b = _copy(sqld_corpus, "support", servers[1])
    with open_store(b) as store:
        key = store.lookup_key_for_thread(store.get_thread("support-1"))
        current = store.om_current(key)
    before = dump(b)[1]

    # 1. another writer holds the server's write lock: the write waits at most its bound, then is refused
    holder = HeldTransaction(b, ["BEGIN IMMEDIATE", "UPDATE mastra_threads SET title = title WHERE id = 'none'"])
    try:
        started = time.monotonic()
        with pytest.raises(WriteRefused) as refused:
            commit_reflection(b, lookup_key=key, expected_record_id=current.id, observations="* a line",
                              observation_tokens=3, busy_timeout_ms=1_000)
        waited = time.monotonic() - started
    finally:
        holder.close()
    assert refused.value.reason == "busy" and "wrote nothing" in str(refused.value)
    assert 0.9 <= waited < 5            # it waited for the lock, and gave up before sqld's own 5 s hand-over
    assert dump(b)[1] == before
    assert not backups.exists() or list(backups.iterdir()) == []

    # 2. the agent is active: the thread was written a moment ago (inside the 30 s quiet period) — exit 3
    pipeline(b, ["UPDATE mastra_threads SET \"updatedAt\" = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
                 "WHERE id = 'support-1'"])
    active = dump(b)[1]
    assert _reflect_cli(b) == 3
    out = capsys.readouterr()
    assert "agent is active" in out.err and json.loads(out.out)["refused"] == "agent-active"
    assert dump(b)[1] == active
    assert not backups.exists() or list(backups.iterdir()) == []

    # 3. the agent is observing (isObserving set just now, as Mastra's setObservingFlag leaves it): --force refused
    pipeline(b, [f"UPDATE {OM} SET \"isObserving\" = 1, \"updatedAt\" = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
                 f"WHERE id = '{current.id}'"])
    flagged = dump(b)[1]
    assert _reflect_cli(b, "--force") == 3
    assert "isObserving" in capsys.readouterr().err
    assert dump(b)[1] == flagged

    # the same write goes through once the flag is gone and the user forces it past the quiet period
    pipeline(b, [f"UPDATE {OM} SET \"isObserving\" = 0 WHERE id = '{current.id}'"])
    assert _reflect_cli(b, "--force") == 0
    assert len(list(backups.iterdir())) == 1


class HeldTransaction:
    """Another writer: a Hrana stream of plain httpx holding a transaction open until `close`."""

    def __init__(self, url: str, sqls: list[str]):
        self.url = url
        body = httpx.post(url + "/v2/pipeline", json={"baton": None, "requests": [
            {"type": "execute", "stmt": {"sql": q}} for q in sqls]}, timeout=30).json()
        assert all(r["type"] == "ok" for r in body["results"]), body
        self.baton = body["baton"]

    def close(self) -> None:
        """ROLLBACK and close the stream (quiet if sqld already took the lock back)."""
        httpx.post(self.url + "/v2/pipeline", json={"baton": self.baton, "requests": [
            {"type": "execute", "stmt": {"sql": "ROLLBACK"}}, {"type": "close"}]}, timeout=30)


def _same_changes(before: dict, a: str, b: str) -> dict:
    """Assert servers A (Mastra) and B (ours) changed the same cells to the same typed values; return B's changes."""
    added_a, changed_a, removed_a = changes(before, rows(a))
    added_b, changed_b, removed_b = changes(before, rows(b))
    assert added_a == added_b == {} and removed_a == removed_b == []
    assert set(changed_b) == set(changed_a)
    for cell, value in changed_a.items():
        if cell[2] in TIME_COLUMNS:
            assert (value is None) == (changed_b[cell] is None), cell
        elif cell[0] == "mastra_messages" and cell[2] == "content":   # cycle ids and durations aside
            assert _ordered(_strip(json.loads(_text(changed_b[cell])))) == \
                _ordered(_strip(json.loads(_text(value)))), cell   # key order too
        else:
            assert changed_b[cell] == value, cell
    return changed_b


def test_observation_on_sqld_equals_mastra_and_undo_restores(sqld_corpus, servers, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, "support", u) for u in servers)
    before, exact_before = rows(a), dump(b)[1]
    text, _ = _answer(task=True, response=True, title="Observed title here")
    window = observation_window(b, "support-1")
    mastra = _node(sqld_corpus, "mastra-observe.mjs", a, "support-1", str(_answer_file(tmp_path, text)))
    assert mastra["observed"] is True and window.message_ids == mastra["window"]["ids"]
    assert window.tokens == mastra["gate"]["observeCheck"]["unobservedTokens"]
    output = parse_observer_answer(window, text)   # as `observe --answer-file` reads it: the record's extractors
    row = commit_observation(b, window, output, force=mastra["forced"] is not None)
    assert row["activeObservations"] == mastra["row"]["activeObservations"]
    changed = _same_changes(before, a, b)
    assert {c[2] for c in changed if c[0] == OM} >= {"activeObservations", "lastObservedAt"}
    assert any(c[0] == "mastra_messages" for c in changed)      # the markers landed
    # support runs with observation.threadTitle on: Mastra's end marker lists the title after the hints
    marked = {cell: _text(v) for cell, v in changed.items() if cell[0] == "mastra_messages" and cell[2] == "content"}
    assert list(_end_marker(marked, "support-1")["extractedValues"]) == ["current-task", "suggested-response",
                                                                         "thread-title"]
    undo_write(b)
    assert dump(b)[1] == exact_before


def test_activation_on_sqld_equals_mastra_and_mastra_continues(sqld_corpus, servers, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, "buffered", u) for u in servers)
    before = rows(a)
    mastra = _node(sqld_corpus, "mastra-activate.mjs", a, "long-run")
    assert mastra["activated"] is True
    ours = activate_buffered(b, thread_id="long-run", lookup_key="thread:long-run", stamp_estimates=stamp_estimates)
    assert ours["activated_cycle_ids"] == mastra["chunks"]["activatedCycleIds"]
    assert ours["chunks_after"] == mastra["chunks"]["after"]
    changed = _same_changes(before, a, b)
    assert {c[2] for c in changed if c[0] == OM} >= set(mastra["changedColumns"])
    report = _node(sqld_corpus, "continue.mjs", b, "long-run", "1")
    assert report["ok"] is True, report


def test_delete_thread_on_sqld_equals_mastra_and_undo_puts_it_back(sqld_corpus, servers, tmp_path, monkeypatch,
                                                                  capsys):
    """Memory.deleteThread (with its LibSQLVector on the server) on support-1: the same rows go as in Mastra's
    own call; undo restores the exact rows, rowids included."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, "support", u) for u in servers)
    before, exact_before = rows(a), dump(b)[1]
    _node(sqld_corpus, "studio-memory-delete-thread-server.mjs", a, "support-1")
    done = WriteSession().delete_thread(b, "support-1")
    added_a, changed_a, removed_a = changes(before, rows(a))
    added_b, changed_b, removed_b = changes(before, rows(b))
    assert added_a == added_b == {} and changed_a == changed_b == {}
    assert sorted(removed_a) == sorted(removed_b) and ("mastra_threads", "support-1") in removed_b
    assert done["messages"] == sum(1 for t, _ in removed_b if t == "mastra_messages") > 0
    assert done["om_records"] == sum(1 for t, _ in removed_b if t == "mastra_observational_memory") > 0
    assert main(["undo", b, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert dump(b)[1] == exact_before
    # the restored server takes the write again, the same rows go, and Mastra runs a real turn in what is left
    assert WriteSession().delete_thread(b, "support-1") == done
    assert changes(before, rows(b)) == (added_b, changed_b, removed_b)
    _carries_on(sqld_corpus, b, "support-2")


def _carries_on(sqld_corpus, url: str, thread_id: str) -> None:
    """Real Mastra runs one more agent turn on THREAD_ID at URL (continue.mjs): no error, and its messages are
    stored."""
    report = _node(sqld_corpus, "continue.mjs", url, thread_id, "1")
    assert report["ok"] is True, report
    assert report["after"]["messages"] > report["before"]["messages"], report


def test_update_thread_on_sqld_equals_mastra(sqld_corpus, servers, tmp_path, monkeypatch, capsys):
    """Memory.updateThread on a libSQL server: the same title and metadata (JSONB bytes included) as Mastra's own
    call, updatedAt now; undo restores the exact row."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, "support", u) for u in servers)
    before, exact_before = rows(a), dump(b)[1]
    args = {"title": "", "metadata": {"priority": 3, "nested": {"a": [1, "2"]}, "10": None}}
    _node(sqld_corpus, "studio-update-thread.mjs", a, "support-meta", json.dumps(args))
    WriteSession().update_thread(b, "support-meta", **args)
    added_a, changed_a, removed_a = changes(before, rows(a))
    added_b, changed_b, removed_b = changes(before, rows(b))
    assert added_a == added_b == {} and not removed_a and not removed_b
    assert set(changed_a) == set(changed_b) == {("mastra_threads", "support-meta", c)
                                                for c in ("title", "metadata", "updatedAt")}
    ta, tb = rows(a)["mastra_threads"]["support-meta"], rows(b)["mastra_threads"]["support-meta"]
    assert (ta["title"], ta["metadata"]) == (tb["title"], tb["metadata"])
    assert main(["undo", b, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert dump(b)[1] == exact_before
    # written again on the restored row: the same title and metadata bytes; Mastra carries on with the thread
    WriteSession().update_thread(b, "support-meta", **args)
    again = rows(b)
    assert set(changes(before, again)[1]) == set(changed_b)
    tc = again["mastra_threads"]["support-meta"]
    assert (tc["title"], tc["metadata"]) == (ta["title"], ta["metadata"])
    _carries_on(sqld_corpus, b, "support-meta")


@pytest.mark.parametrize(("scope", "thread_id"), [("resource", "support-1"), ("thread", "support-meta")])
def test_working_memory_on_sqld_equals_mastra(sqld_corpus, servers, tmp_path, monkeypatch, capsys, scope, thread_id):
    """Memory.updateWorkingMemory on a libSQL server in each scope: the same rows as Mastra's own call (times
    aside); undo restores the exact rows."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = (_copy(sqld_corpus, "support", u) for u in servers)
    before, exact_before = rows(a), dump(b)[1]
    text = "# Notes\n- Zoë likes teal"
    _node(sqld_corpus, "studio-working-memory.mjs", a, thread_id, scope, json.dumps(text))
    WriteSession().update_working_memory(b, thread_id=thread_id, scope=scope, text=text)
    after_a, after_b = rows(a), rows(b)
    added_a, changed_a, removed_a = changes(before, after_a)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert sorted(added_a) == sorted(added_b) and set(changed_a) == set(changed_b) and not removed_a and not removed_b
    assert added_b or changed_b
    def strip(rows: dict, table: str) -> dict:
        return {k: {c: v for c, v in r.items() if c not in {"createdAt", "updatedAt"}}
                for k, r in rows.get(table, {}).items()}

    for table in ("mastra_resources", "mastra_threads"):
        assert strip(after_a, table) == strip(after_b, table)
    assert main(["undo", b, "--yes", "--json"]) == 0
    capsys.readouterr()
    assert dump(b)[1] == exact_before
    # written again on the restored server: Mastra's rows again; Mastra carries on with that working memory
    WriteSession().update_working_memory(b, thread_id=thread_id, scope=scope, text=text)
    again = rows(b)
    for table in ("mastra_resources", "mastra_threads"):
        assert strip(again, table) == strip(after_a, table)
    _carries_on(sqld_corpus, b, thread_id)

"""Observation and activation writes on PostgreSQL equal real @mastra/pg's (mastra-observe / mastra-activate
`--store pg` on a copy), every changed cell, twins included (write times, cycle ids and durations aside);
Mastra continues on ours; an undo of one restores every row exactly.
"""

from __future__ import annotations

import json

import pytest

from studio.app.observation import parse_multi_thread_answer
from studio.engine.observe_window import observation_window, resource_observation_window
from studio.engine.observer import parse_answer
from studio.engine.tokens import stamp_estimates
from studio.store.write.activation import activate_buffered
from studio.store.write.observation import commit_observation
from studio.store.write.observation_resource import commit_resource_observation
from studio.store.writes import undo_write
from tests.interop.test_observe_interop import RESOURCE_ANSWER, _answer, _end_marker, _ordered, _strip
from tests.server.pg_rows import TIME_COLUMNS, changes, copy_pair, copy_schema, dump_schema, node_pg

OM = "mastra_observational_memory"


def _thread_ids(oracle: dict) -> list[str]:
    """The thread-scope threads of a scenario, as Mastra's oracle lists its OM records."""
    return [t for key, om in oracle["om"].items() if key.startswith("thread:") for t in om.get("status") or {}]


def _same_changes(pg_corpus, before: dict, a: str, b: str) -> dict:
    """Assert copies A (Mastra) and B (ours) changed the same cells to the same values; return B's changes."""
    added_a, changed_a, removed_a = changes(before, dump_schema(pg_corpus.url, a))
    after_b = dump_schema(pg_corpus.url, b)
    added_b, changed_b, removed_b = changes(before, after_b)
    assert added_a == added_b == {} and removed_a == removed_b == []
    assert set(changed_b) == set(changed_a)
    for cell, value in changed_a.items():
        if cell[2] in TIME_COLUMNS:
            assert (value is None) == (changed_b[cell] is None), cell
        elif cell[0] == "mastra_messages" and cell[2] == "content":
            assert _ordered(_strip(json.loads(changed_b[cell]))) == _ordered(_strip(json.loads(value))), cell
        else:
            assert changed_b[cell] == value, cell
    for table, key, col in changed_b:   # every time we wrote has its twin at the same instant
        if col in ("updatedAt", "lastObservedAt") and after_b[table][key][col] is not None:
            assert after_b[table][key][col + "Z"] == after_b[table][key][col] + "+00", (table, key, col)
    return changed_b


OBSERVE_CASES = [
    ("support", "support-1", {"task": True, "response": True, "title": "Observed title here"}),
    ("collab", "doc_42", {"task": True, "response": False, "title": "ab"}),
]


@pytest.mark.parametrize(("scenario", "thread_id", "shape"), OBSERVE_CASES, ids=[c[1] for c in OBSERVE_CASES])
def test_observation_on_postgresql_equals_mastra(pg_corpus, tmp_path, monkeypatch, scenario, thread_id, shape):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = f"wobs_{scenario}_a", f"wobs_{scenario}_b"
    target, before = copy_pair(pg_corpus, scenario, a, b)
    text, _ = _answer(**shape)
    answer = tmp_path / "answer.txt"
    answer.write_text(text, encoding="utf-8")
    window = observation_window(target, thread_id)
    mastra = node_pg(pg_corpus, "mastra-observe.mjs", a, thread_id, answer)
    assert mastra["observed"] is True and window.message_ids == mastra["window"]["ids"]
    assert window.tokens == mastra["gate"]["observeCheck"]["unobservedTokens"]
    output = parse_answer(window, text)   # as `observe --answer-file` reads it: the record's own extractors
    row = commit_observation(target, window, output, force=mastra["forced"] is not None)
    assert row["activeObservations"] == mastra["row"]["activeObservations"]
    changed = _same_changes(pg_corpus, before, a, b)
    assert {c[2] for c in changed if c[0] == OM} >= {"activeObservations", "lastObservedAt", "lastObservedAtZ"}
    assert any(c[0] == "mastra_messages" for c in changed)      # the markers landed
    # the thread-title extractor's value is in the end marker exactly when the record has threadTitle on
    title_on = bool(window.record.config.get("observation", {}).get("threadTitle"))
    marker = _end_marker({c: v for c, v in changed.items() if c[0] == "mastra_messages" and c[2] == "content"},
                         thread_id)
    assert ("thread-title" in (marker.get("extractedValues") or {})) == title_on
    if scenario == "collab":                                    # undo restores every row exactly
        undo_write(target)
        assert dump_schema(pg_corpus.url, b) == before
        return
    report = node_pg(pg_corpus, "continue.mjs", b, thread_id, "1")
    assert report["ok"] is True, report


def test_resource_observation_on_postgresql_equals_mastra(pg_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = "wobs_res_a", "wobs_res_b"
    target, before = copy_pair(pg_corpus, "resource", a, b)
    answer = tmp_path / "answer.txt"
    answer.write_text(RESOURCE_ANSWER, encoding="utf-8")
    window = resource_observation_window(target, "res-a")
    mastra = node_pg(pg_corpus, "mastra-observe.mjs", a, "res-a", answer)
    assert mastra["observed"] is True and mastra["scope"] == "resource"
    assert window.window_ids == mastra["window"]["ids"]
    outputs = parse_multi_thread_answer(RESOURCE_ANSWER, window.record.config)   # the record's extractors
    row = commit_resource_observation(target, window, outputs, force=mastra["forced"] is not None)
    assert row["activeObservations"] == mastra["row"]["activeObservations"]
    _same_changes(pg_corpus, before, a, b)
    report = node_pg(pg_corpus, "continue.mjs", b, "res-a", "1")
    assert report["ok"] is True, report


def test_activation_on_postgresql_equals_mastra(pg_corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    a, b = "wact_a", "wact_b"
    target, before = copy_pair(pg_corpus, "buffered", a, b)
    mastra = node_pg(pg_corpus, "mastra-activate.mjs", a, "long-run")
    assert mastra["activated"] is True
    ours = activate_buffered(target, thread_id="long-run", lookup_key="thread:long-run",
                             stamp_estimates=stamp_estimates)
    assert ours["activated_cycle_ids"] == mastra["chunks"]["activatedCycleIds"]
    assert ours["chunks_after"] == mastra["chunks"]["after"]
    changed = _same_changes(pg_corpus, before, a, b)
    assert {c[2] for c in changed if c[0] == OM} >= set(mastra["changedColumns"])
    report = node_pg(pg_corpus, "continue.mjs", b, "long-run", "1")
    assert report["ok"] is True, report


def test_observation_commits_when_window_messages_tie_in_created_at(pg_corpus, tmp_path, monkeypatch):
    """Two window messages with the same createdAt: the write's in-transaction check must read them in the
    order the window was read (PostgreSQL: createdAt, then id). Built so PostgreSQL's index order of the tie
    (the updated row's new tuple last) is the reverse of id order: without the id tie-break the check saw
    the ids in another order and refused the write ("Messages of thread … changed"), as it once did in CI
    on a corpus whose messages happened to tie."""
    import psycopg

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    target = copy_schema(pg_corpus, "support", "wobs_tie")
    # a thread whose unobserved window holds at least two messages (the corpus is generated at test time)
    windows = [observation_window(target, t) for t in sorted(_thread_ids(pg_corpus.oracles["support"]))]
    first = next((w for w in windows if len(w.message_ids) >= 2), None)
    assert first is not None, "no support thread has two unobserved messages to tie"
    thread_id = first.thread_id
    a, b = first.message_ids[-2:]
    smaller, other = sorted((a, b))
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute("SET search_path = wobs_tie")
        cols = {r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE "
                                           "table_schema = 'wobs_tie' AND table_name = 'mastra_messages'")}
        twin = ', "createdAtZ" = o."createdAtZ"' if "createdAtZ" in cols else ""
        conn.execute(f'UPDATE mastra_messages AS s SET "createdAt" = o."createdAt"{twin} FROM mastra_messages AS o '
                     "WHERE s.id = %s AND o.id = %s", (smaller, other))
    window = observation_window(target, thread_id)
    assert window.message_ids[-2:] == [smaller, other]   # the tie in id order, as the store reads it
    _text, output = _answer(task=False, response=False, title="ab")
    row = commit_observation(target, window, output, force=True)
    assert row["lastObservedAt"] is not None

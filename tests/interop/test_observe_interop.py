"""Our observation and activation writes equal real Mastra's, column by column; Mastra continues on them.

Observation: copy A gets a synchronous observation from real Mastra (`mastra-observe.mjs`, its
Observer answering a fixed text, `--force auto` as the script's default); copy B gets
`commit_observation` with the same answer as the studio reads it (`parse_answer`, the path of
`observe --answer-file`: the record's own extractors, so `<thread-title>` is one where the record
has `observation.threadTitle` on), forced when Mastra had to force. Activation: copy A gets
`mastra-activate.mjs`, copy B `activate_buffered`. Every changed cell must be equal, key order
of the message JSON included, ids, write times, cycle ids and durations aside; then
`continue.mjs` runs a real agent turn on B.
Refusals (live busy flag, quiet period, changed record) leave both files byte-identical.
"""

from __future__ import annotations

import json
import time

import libsql
import pytest

from studio.app.observation import parse_multi_thread_answer
from studio.engine.observe_window import observation_window
from studio.engine.observer import parse_answer
from studio.engine.tokens import stamp_estimates
from studio.errors import WriteRefused
from studio.store.write.activation import activate_buffered
from studio.store.write.observation import ObserverOutput, commit_observation
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, file_state, run_node
from tests.observe_cases import observable_copy

TIME_COLUMNS = {"updatedAt"}
#: Marker fields that are write times or per-run ids.
VOLATILE = {"cycleId", "startedAt", "completedAt", "timestamp", "durationMs", "activatedAt"}

OBSERVATIONS = ("Date: Dec 1, 2026\n"
                "* 🔴 (09:00) Studio observe interop: the user's key fact \"quoted\" & <kept> ünï 🎉\n"
                "* 🟡 (09:05) A medium detail.\n  * -> a sub-detail of it")


def _answer(task: bool, response: bool, title: str | None, first_title: str | None = None,
            json_values: dict | None = None) -> tuple[str, ObserverOutput]:
    """Return (an Observer answer, its sections as read with Mastra's default extractors).

    FIRST_TITLE: an earlier `<thread-title>` section (a thread-title extractor reads the last one,
    the plain section reader the first); JSON_VALUES: an `<extracted-values>` block before the tags
    (its values win over the tags and come first in extractedValues; not reflected in the sections
    returned here).
    """
    parts = ["<observations>", OBSERVATIONS, "</observations>"]
    if json_values is not None:
        parts += [f"<extracted-values>{json.dumps(json_values)}</extracted-values>"]
    if first_title is not None:
        parts += [f"<thread-title>{first_title}</thread-title>"]
    if task:
        parts += ["<current-task>", "- Primary: observe interop task", "</current-task>"]
    if response:
        parts += ["<suggested-response>", "Continue the observed conversation.", "</suggested-response>"]
    if title is not None:
        parts += [f"<thread-title>{title}</thread-title>"]
    return "\n".join(parts) + "\n", ObserverOutput(
        observations=OBSERVATIONS, current_task="- Primary: observe interop task" if task else None,
        suggested_response="Continue the observed conversation." if response else None,
        thread_title=first_title if first_title is not None else title)


def _ordered(value):
    """VALUE with every dict turned into its list of (key, value) pairs: equality then checks key order too."""
    if isinstance(value, dict):
        return [(k, _ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _changes(before: dict, after: dict) -> dict:
    """Return {(table, id, column): new value} of every changed cell; no row may be added or removed."""
    changed = {}
    for table, rows in after.items():
        assert set(rows) == set(before.get(table, {})), table
        for key, row in rows.items():
            old = before[table][key]
            changed.update({(table, key, col): val for col, val in row.items() if old.get(col) != val})
    return changed


def _comparable(cell, value):
    table, _, column = cell
    if column in TIME_COLUMNS:
        return None
    if table == "mastra_messages" and column == "content":
        return _ordered(_strip(json.loads(value)))
    return value


def _assert_same_changes(before, a, b):
    changed_a, changed_b = _changes(before, dump_tables(a)), _changes(before, dump_tables(b))
    assert set(changed_b) == set(changed_a)
    for cell in changed_a:
        assert _comparable(cell, changed_b[cell]) == _comparable(cell, changed_a[cell]), cell
    return changed_a, changed_b


OBSERVE_CASES = [
    ("support", "support-1", {"task": True, "response": True, "title": "Observed title here"}),   # title changes
    ("support", "support-2", {"task": False, "response": True, "title": None}),   # sections missing: keys deleted
    ("collab", "doc_42", {"task": True, "response": False, "title": "ab"}),       # title too short: kept
    ("support", "support-3", {"task": False, "response": False, "title": None}),  # no extracted values at all
    ("tools", "tools-1", {"task": True, "response": True, "title": "Tools observed"}),
    # two titles: the thread-title extractor (threadTitle on) reads the last, the plain section reader the first
    ("support", "support-4",
     {"task": True, "response": False, "title": "Last title wins", "first_title": "First title"}),
    ("collab", "room_7", {"task": False, "response": True, "title": "Last title", "first_title": "First title read"}),
    # <extracted-values> JSON: its values win, untrimmed, and come first in extractedValues
    ("support", "support-5", {"task": True, "response": True, "title": None,
                              "json_values": {"thread-title": "  JSON title  ", "suggested-response": "From JSON"}}),
]


def _end_marker(changed: dict, thread_id: str, observations: str = OBSERVATIONS) -> dict:
    """Return the data of the `data-om-observation-end` part the write appended for THREAD_ID (with OBSERVATIONS)."""
    ends = [p["data"] for cell, value in changed.items() if cell[0] == "mastra_messages"
            for p in json.loads(value)["parts"] if p.get("type") == "data-om-observation-end"
            and p["data"].get("threadId") == thread_id and p["data"].get("observations") == observations]
    assert len(ends) == 1, ends
    return ends[0]


def _thread_title_on(path) -> bool:
    """Whether the record config Mastra stored has `observation.threadTitle` on (raw rows, not the studio)."""
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        configs = [json.loads(r[0]) for r in conn.execute("SELECT config FROM mastra_observational_memory").fetchall()]
    finally:
        conn.close()
    flags = {bool((c.get("observation") or {}).get("threadTitle")) for c in configs}
    assert len(flags) == 1, "the scenario's records disagree about observation.threadTitle"
    return flags.pop()


@pytest.mark.parametrize(("name", "thread_id", "shape"), OBSERVE_CASES, ids=[f"{c[0]}-{c[1]}" for c in OBSERVE_CASES])
def test_observation_matches_mastra_and_mastra_continues(mastra_corpus, tmp_path, name, thread_id, shape):
    text, output = _answer(**shape)
    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(text, encoding="utf-8")
    a, b = copy_fixture(name, tmp_path / "a"), copy_fixture(name, tmp_path / "b")
    before = dump_tables(a)

    window = observation_window(b, thread_id)
    mastra = run_node(mastra_corpus, "mastra-observe.mjs", a, thread_id, answer_file)
    assert mastra["observed"] is True
    # the same window and gate as Mastra's observe()
    assert window.message_ids == mastra["window"]["ids"]
    assert window.tokens == mastra["gate"]["observeCheck"]["unobservedTokens"]
    assert window.pending_message_tokens == mastra["gate"]["observeCheck"]["pendingMessageTokens"]
    assert window.threshold == mastra["gate"]["threshold"]
    assert window.meets == mastra["gate"]["observeCheck"]["meets"] == (mastra["forced"] is None)

    parsed = parse_answer(window, text)   # what `observe --answer-file` commits
    title_on = _thread_title_on(a)
    if shape.get("json_values") is None:   # the sections as stated in _answer; with threadTitle on the last title
        assert (parsed.observations, parsed.current_task, parsed.suggested_response, parsed.thread_title) == (
            output.observations, output.current_task, output.suggested_response,
            shape["title"] if title_on else output.thread_title)
    row = commit_observation(b, window, parsed, force=mastra["forced"] is not None)
    assert row["activeObservations"] == mastra["row"]["activeObservations"]
    assert row["activeObservations"].endswith(OBSERVATIONS)
    changed_a, changed_b = _assert_same_changes(before, a, b)
    assert {c[2] for c in changed_b if c[0] == "mastra_observational_memory"} == set(mastra["changedColumns"])
    assert any(c[0] == "mastra_messages" for c in changed_b)  # the markers landed (every case has an assistant reply)
    # Mastra's end marker carries the thread-title extractor's value exactly when the record has threadTitle on
    # and the answer a title (the comparison above already holds ours to it, key order included)
    values = _end_marker(changed_a, thread_id).get("extractedValues") or {}
    titled = shape["title"] is not None or "thread-title" in (shape.get("json_values") or {})
    assert ("thread-title" in values) == (title_on and titled), values
    assert _ordered(_end_marker(changed_b, thread_id).get("extractedValues")) == _ordered(
        _end_marker(changed_a, thread_id).get("extractedValues"))

    report = run_node(mastra_corpus, "continue.mjs", b, thread_id, "1")
    assert report["ok"] is True, report


@pytest.mark.parametrize("boundary", ["stored", "zero"])
def test_activation_matches_mastra_and_mastra_continues(mastra_corpus, tmp_path, boundary):
    # "zero": no buffering boundary stored (lastBufferedAtTokens 0), so Mastra's activate() counts no
    # window and caches no token estimate on the marker's message (the old rule stamped them anyway)
    a, b = copy_fixture("buffered", tmp_path / "a"), copy_fixture("buffered", tmp_path / "b")
    if boundary == "zero":
        for path in (a, b):
            _set(path, "UPDATE mastra_observational_memory SET lastBufferedAtTokens = 0 "
                       "WHERE lookupKey = 'thread:long-run' AND bufferedObservationChunks IS NOT NULL")
    before = dump_tables(a)
    mastra = run_node(mastra_corpus, "mastra-activate.mjs", a, "long-run")
    assert mastra["activated"] is True
    ours = activate_buffered(b, thread_id="long-run", lookup_key="thread:long-run", stamp_estimates=stamp_estimates)
    assert ours["activated_cycle_ids"] == mastra["chunks"]["activatedCycleIds"]
    assert ours["activated_message_ids"] == mastra["chunks"]["activatedMessageIds"]
    assert ours["chunks_after"] == mastra["chunks"]["after"]
    _, changed_b = _assert_same_changes(before, a, b)
    assert {c[2] for c in changed_b if c[0] == "mastra_observational_memory"} == set(mastra["changedColumns"])
    report = run_node(mastra_corpus, "continue.mjs", b, "long-run", "1")
    assert report["ok"] is True, report


def _set(path, sql, params=()):
    conn = libsql.connect(f"file:{path}")
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


@pytest.mark.parametrize("case", ["busy-flag", "quiet-period", "record-changed"])
def test_refusals_leave_the_file_byte_identical(tmp_path, case):
    """First principles: each refusal is raised inside the write transaction; nothing may be written.
    The window is at observe()'s threshold (tests/observe_cases.py), so only the refusal can stop the write."""
    path, thread_id = observable_copy("support", tmp_path / "db")
    window = observation_window(path, thread_id)
    assert window.meets
    idle_ms = 0
    if case == "busy-flag":  # a live isObserving: set and updated just now
        _set(path, 'UPDATE mastra_observational_memory SET "isObserving" = 1, "updatedAt" = ? WHERE id = ?',
             (_now_iso(), window.record.id))
        window = observation_window(path, thread_id)
    elif case == "quiet-period":  # the thread was written a moment ago by someone else
        _set(path, 'UPDATE mastra_threads SET "updatedAt" = ? WHERE id = ?', (_now_iso(), thread_id))
        window = observation_window(path, thread_id)
        idle_ms = 30_000
    else:  # Mastra observed in between: the row moved on
        _set(path, 'UPDATE mastra_observational_memory SET "activeObservations" = "activeObservations" || ? '
                   'WHERE id = ?', ("\n* 🔴 (10:00) appended by another process", window.record.id))
    state = file_state(path)
    _, output = _answer(True, True, "Another title")
    with pytest.raises(WriteRefused) as err:
        commit_observation(path, window, output, idle_ms=idle_ms)
    reasons = {"busy-flag": "busy", "quiet-period": "busy", "record-changed": "generation-changed"}
    assert err.value.reason == reasons[case]
    assert file_state(path) == state


def test_activation_refused_while_buffering_leaves_file_identical(tmp_path):
    path = copy_fixture("buffered", tmp_path / "db")
    _set(path, 'UPDATE mastra_observational_memory SET "isBufferingObservation" = 1, "updatedAt" = ? '
               'WHERE "lookupKey" = ?', (_now_iso(), "thread:long-run"))
    state = file_state(path)
    with pytest.raises(WriteRefused) as err:
        activate_buffered(path, thread_id="long-run", lookup_key="thread:long-run", stamp_estimates=stamp_estimates)
    assert err.value.reason == "busy"
    assert file_state(path) == state


RESOURCE_ANSWER = """<observations>
<thread id="res-a">
Date: Dec 1, 2026
* 🔴 (09:00) Studio resource fact for res-a "quoted"
<current-task>
- Primary: res-a task
</current-task>
<thread-title>Res A observed</thread-title>
</thread>
<thread id="res-b">
<thread-title>First res-b title</thread-title>
Date: Dec 1, 2026
* 🟡 (09:05) Studio resource fact for res-b
<suggested-response>
Say hi to res-b.
</suggested-response>
<thread-title>Res B last title</thread-title>
</thread>
<thread id="res-c">
Nov 30 has no date line: appended, not merged
* 🟢 (09:07) Studio resource fact for res-c
</thread>
</observations>
"""
#: RESOURCE_ANSWER as Mastra's parseMultiThreadObserverOutput reads it with the resource record's extractors
#: (threadTitle on: current-task, suggested-response, thread-title): each extractor's value is its LAST section in
#: the block (res-b's second title), and extractedValues list them in extractor order.
RESOURCE_OUTPUTS = {
    "res-a": ObserverOutput('Date: Dec 1, 2026\n* 🔴 (09:00) Studio resource fact for res-a "quoted"',
                            current_task="- Primary: res-a task", thread_title="Res A observed",
                            extracted={"current-task": "- Primary: res-a task", "thread-title": "Res A observed"}),
    "res-b": ObserverOutput("Date: Dec 1, 2026\n* 🟡 (09:05) Studio resource fact for res-b",
                            suggested_response="Say hi to res-b.", thread_title="Res B last title",
                            extracted={"suggested-response": "Say hi to res-b.", "thread-title": "Res B last title"}),
    "res-c": ObserverOutput("Nov 30 has no date line: appended, not merged\n"
                            "* 🟢 (09:07) Studio resource fact for res-c", extracted={}),
}


@pytest.mark.parametrize("thread_id", ["res-a", "res-b", "res-c"])
def test_resource_observation_matches_mastra_and_mastra_continues(mastra_corpus, tmp_path, thread_id):
    from studio.engine.observe_window import resource_observation_window
    from studio.store.write.observation_resource import commit_resource_observation

    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(RESOURCE_ANSWER, encoding="utf-8")
    a, b = copy_fixture("resource", tmp_path / "a"), copy_fixture("resource", tmp_path / "b")
    before = dump_tables(a)
    window = resource_observation_window(b, thread_id)
    mastra = run_node(mastra_corpus, "mastra-observe.mjs", a, thread_id, answer_file)
    assert mastra["observed"] is True and mastra["scope"] == "resource"
    assert window.window_ids == mastra["window"]["ids"]
    assert window.tokens == mastra["gate"]["observeCheck"]["unobservedTokens"]
    assert window.meets == mastra["gate"]["observeCheck"]["meets"] == (mastra["forced"] is None)
    assert sorted(t for t, _, _ in window.threads) == sorted(t["id"] for t in mastra["threads"])
    # our reading of the answer (Mastra's parseMultiThreadObserverOutput rules) gives the sections Mastra wrote
    assert _thread_title_on(a), "the resource scenario is expected to run with observation.threadTitle on"
    parsed = parse_multi_thread_answer(RESOURCE_ANSWER, window.record.config)
    assert parsed == RESOURCE_OUTPUTS
    assert {t: list(o.extracted) for t, o in parsed.items()} == {
        t: list(o.extracted) for t, o in RESOURCE_OUTPUTS.items()}   # key order too
    row = commit_resource_observation(b, window, parsed, force=mastra["forced"] is not None)
    assert row["activeObservations"] == mastra["row"]["activeObservations"]
    assert row["observedMessageIds"] == mastra["row"]["observedMessageIds"]
    changed_a, changed_b = _assert_same_changes(before, a, b)
    assert {c[2] for c in changed_b if c[0] == "mastra_observational_memory"} == set(mastra["changedColumns"])
    # every observed thread's end marker: Mastra's extractedValues (with 'thread-title' where its block had one)
    for tid, _, _ in window.threads:
        values = _end_marker(changed_a, tid, RESOURCE_OUTPUTS[tid].observations).get("extractedValues") or {}
        assert list(values) == list(RESOURCE_OUTPUTS[tid].extracted), (tid, values)
    report = run_node(mastra_corpus, "continue.mjs", b, thread_id, "1")
    assert report["ok"] is True, report

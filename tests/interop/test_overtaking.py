"""Studio commits while real Mastra runs turns on the same thread: every overtaking write is found and repaired.

`continue.mjs` runs real agent turns on support-1 (its scripted Observer and Reflector observe and
reflect along the way; each turn reads the OM record at its start and writes onto that record's
id later). Meanwhile the studio commits reflections and reverts of the same record with the quiet
period switched off (quiet_ms=0: the worst case the protocol must survive), and after each commit
watches the record as the write protocol does: `find_overtaking_writes` on the whole history, and
`repair_overtaken_writes` for whatever overtook a studio generation. The figures are printed
(pytest -s) and asserted from first principles:

* at least MIN_COMMITS studio commits landed while a continue.mjs process was running;
* no fork and no observation line left unrepaired: every line Mastra wrote onto a superseded row
  (or into a forked row) is in the repair generation that follows it;
* no message lost (every turn's question is stored exactly once), no generation row lost (every
  row id seen is still there, generation numbers have no gap);
* real Mastra keeps working on the result (`continue.mjs` ok, and its first prompt holds the
  current generation's first line), and the file passes PRAGMA integrity_check.
"""

from __future__ import annotations

import json
import subprocess
import time

import libsql

from studio.engine.tokens import count_observations
from studio.errors import StoreError, WriteRefused
from studio.store import open_store
from studio.store.write.protocol import find_overtaking_writes, studio_mark, unrepaired
from studio.store.write.repair import repair_overtaken_writes
from studio.store.writes import commit_reflection, revert_to_generation
from tests.conftest import copy_fixture
from tests.interop.conftest import run_node

THREAD = "support-1"
KEY = f"thread:{THREAD}"
MIN_COMMITS = 300
TURNS_PER_RUN = 120
KEEP_LINES = 24  # our "reflection" keeps the newest lines of the log, so it stays short and valid


def _history(path):
    with open_store(path) as store:
        return store.om_history(KEY)


def _reflection_of(text: str, k: int) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("--- message boundary")]
    return "\n".join([f"* 🔴 (09:00) Studio commit {k}: kept the newest {KEEP_LINES} lines.", *lines[-KEEP_LINES:]])


class Tally:
    """What the loop saw: commits (while Mastra ran), refusals by reason, findings, repairs."""

    def __init__(self):
        self.commits = self.commits_while_running = self.reverts = 0
        self.refusals: dict[str, int] = {}
        self.repairs = 0
        self.findings: dict[str, int] = {}
        self.carried_lines = 0
        self.row_ids: set[str] = set()

    def refused(self, reason: str) -> None:
        self.refusals[reason] = self.refusals.get(reason, 0) + 1


def _repair(path, tally: Tally, history=None) -> list:
    """The protocol's watch step: find what overtook a studio generation and repair it (retried when busy).

    Returns the history as last read (newest generation first) once nothing is left unrepaired.
    """
    for _ in range(50):
        history = history if history is not None else _history(path)
        tally.row_ids |= {r.id for r in history}
        found = unrepaired(find_overtaking_writes(history))
        if not found:
            return history
        history = None
        try:
            row = repair_overtaken_writes(path, lookup_key=KEY, busy_timeout_ms=500,
                                          count_observations=count_observations)
        except WriteRefused as exc:
            tally.refused(f"repair-{exc.reason}")
            time.sleep(0.01)
            continue
        if row is None:
            continue
        tally.repairs += 1
        text = row["activeObservations"]
        mark = json.loads(row["metadata"])["studio"]
        repaired_ids = {r["recordId"] for r in mark["repairs"]}
        for f in found:
            tally.findings[f.kind] = tally.findings.get(f.kind, 0) + 1
            # what the overtaking write left is carried forward by this repair (or was repaired meanwhile)
            if f.record_id in repaired_ids:
                missing = [ln for ln in f.added_lines if not ln.startswith("Date:") and ln.strip() not in
                           {t.strip() for t in text.splitlines()}]
                assert missing == [], (f, text)
                tally.carried_lines += len(f.added_lines)
    raise AssertionError("the repair did not settle in 50 tries")


def _commit(path, history, k: int, tally: Tally, running: bool) -> None:
    current = history[0]
    try:
        if k % 5 == 4 and len(history) > 1:
            target = history[min(len(history) - 1, 1)]
            revert_to_generation(path, lookup_key=KEY, generation_count=target.generation_count,
                                 expected_record_id=current.id, busy_timeout_ms=500,
                                 count_observations=count_observations)
            tally.reverts += 1
        else:
            commit_reflection(path, lookup_key=KEY, expected_record_id=current.id,
                              expected_active_observations=current.active_observations,
                              observations=_reflection_of(current.active_observations, k),
                              current_task="- Primary: keep going", suggested_response="Continue.",
                              studio_metadata={"kind": "reflection", "strategy": "test"}, busy_timeout_ms=500,
                              observation_tokens=count_observations(_reflection_of(current.active_observations, k)))
    except WriteRefused as exc:
        assert exc.reason in ("generation-changed", "busy", "reflecting", "invalid"), exc
        tally.refused(exc.reason)
        return
    tally.commits += 1
    tally.commits_while_running += running


def _user_questions(path) -> list[str]:
    with open_store(path) as store:
        return [m.text for m in store.list_messages(THREAD) if m.role == "user"]


def test_studio_commits_overtaken_by_running_turns_are_all_repaired(mastra_corpus, tmp_path):
    path = copy_fixture("support", tmp_path)
    questions_before = _user_questions(path)
    tally = Tally()
    tally.row_ids |= {r.id for r in _history(path)}
    runs, k = 0, 0
    started = time.monotonic()
    failed_starts = 0
    while tally.commits_while_running < MIN_COMMITS:
        assert time.monotonic() - started < 600, vars(tally)
        out = (tmp_path / f"continue-{runs}-{failed_starts}.json").open("w+")
        asked_before = len(_user_questions(path))
        proc = subprocess.Popen(["node", "continue.mjs", str(path), THREAD, str(TURNS_PER_RUN)], cwd=mastra_corpus,
                                stdout=out, stderr=subprocess.PIPE, text=True)
        try:
            while proc.poll() is None:
                try:
                    _commit(path, _repair(path, tally), k, tally, True)
                except StoreError as exc:  # e.g. the file is being checkpointed: try again
                    tally.refused(f"store: {exc}"[:60])
                k += 1
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        text = out.read()
        if not text.strip() and "SQLITE_BUSY" in err and len(_user_questions(path)) == asked_before:
            # A new agent process whose first statement met a lock while the studio wrote (libsql's client
            # opens with `SELECT 1` before Mastra sets its busy_timeout) dies before its first turn: it
            # wrote nothing, so it is started again; a run that wrote anything and failed is a failure.
            failed_starts += 1
            assert failed_starts <= 5, err[:3000]
            continue
        runs += 1
        assert text.strip(), (proc.returncode, err[:3000], vars(tally))
        report = json.loads(text)
        assert report["ok"] is True, (report, err[-3000:])
        # the watch window after the last commit: the agent has stopped, whatever it left is repaired now
        _repair(path, tally)

    history = _history(path)
    findings = find_overtaking_writes(history)
    forks = [f for f in findings if f.kind == "fork"]
    stranded = [f for f in findings if f.kind == "superseded-row-written"]
    print(f"\nruns {runs} x {TURNS_PER_RUN} turns ({failed_starts} agent starts refused by a lock); "
          f"studio commits {tally.commits} "
          f"({tally.commits_while_running} while Mastra ran, {tally.reverts} reverts); refusals {tally.refusals}; "
          f"overtaking writes found {tally.findings}, repaired by {tally.repairs} repair generations carrying "
          f"{tally.carried_lines} lines; forks in the history {len(forks)} (unrepaired "
          f"{sum(not f.repaired for f in forks)}), superseded rows written {len(stranded)} (unrepaired "
          f"{sum(not f.repaired for f in stranded)}); rows {len(history)}")

    assert tally.commits_while_running >= MIN_COMMITS
    assert unrepaired(findings) == []
    assert sum(not f.repaired for f in forks) == 0 and sum(not f.repaired for f in stranded) == 0
    # nothing lost: every question of every turn landed once, every row seen is still there, no gap
    assert _user_questions(path) == questions_before + [f"Follow-up {i}: what did we decide earlier?"
                                                       for _ in range(runs) for i in range(TURNS_PER_RUN)]
    ids = {r.id for r in history}
    assert tally.row_ids <= ids
    generations = {r.generation_count for r in history}
    assert generations == set(range(max(generations) + 1))
    # the studio's record of its writes: exactly its commits and repairs, although Mastra copied the
    # `metadata.studio` of studio rows into the generations it made from them
    copied = sum(1 for r in history if "studio" in (r.columns.get("metadata") or {}) and studio_mark(r) is None)
    print(f"rows carrying a studio mark Mastra copied: {copied}")
    assert sum(1 for r in history if studio_mark(r) is not None) == tally.commits + tally.repairs
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    # real Mastra reads the result: it continues from the generation the studio left current
    report = run_node(mastra_corpus, "continue.mjs", path, THREAD, "2")
    assert report["ok"] is True
    assert report["before"]["recordId"] == history[0].id
    assert report["contextHasActiveObservations"] is True

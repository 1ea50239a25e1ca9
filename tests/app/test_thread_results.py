"""Per-thread results and their cross-session cache (issue 21: the health scan costs what a status costs,
reopening an unchanged store is instant).

* `compute_thread_results` + `store_findings` find what the doctor finds and compute what the
  thread list's status batches compute, on every fixture and on a small benchmark database;
* a second session reuses every cached result; a message edited in place to a text of the same
  length, or the file replaced by another, makes exactly the threads whose rows differ computed
  again, and what is shown then equals a fresh computation of the new rows;
* a corrupt or unwritable cache is ignored: the same results, no error.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import libsql
import pytest

from studio.app import thread_results as tr
from studio.app.result_cache import ResultCache, status_from_json, status_to_json
from studio.app.statuses import iter_thread_statuses
from studio.store import open_store

DATA = Path(__file__).resolve().parents[1] / "engine" / "data"
sys.path.insert(0, str(DATA))

import make_doctor_baseline as baseline  # noqa: E402  (the fixtures, copies and clock of the scan's baseline)

NOW_MS = baseline.NOW_MS
NAMES = [*baseline.fixture_paths(), "bench"]


def _copy(name: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    return baseline.bench_db(dest) if name == "bench" else baseline.private_copy(baseline.fixture_paths()[name], dest)


def _shown(results: dict[str, tr.ThreadResult]) -> dict[str, tuple]:
    """What the studio shows of each thread: its status, message count and findings (canonical)."""
    return {t: (None if r.status is None else status_to_json(r.status), r.messages, baseline.canonical(r.findings))
            for t, r in results.items()}


def _fresh(path: Path) -> dict[str, tuple]:
    with open_store(path) as store:
        return _shown(tr.compute_thread_results(store, [t.id for t in store.list_threads()], now_ms=NOW_MS))


def _cached(path: Path, cache_dir: Path, computed: list[str]) -> dict[str, tuple]:
    """Results through the cache in CACHE_DIR (a new session: a new store and cache object); COMPUTED
    receives the ids computed afresh."""
    real = tr.compute_thread_results

    def spy(store, ids, **kw):
        computed.extend(ids)
        return real(store, ids, **kw)

    tr.compute_thread_results = spy
    try:
        with open_store(path) as store, store.snapshot():
            ids = [t.id for t in store.list_threads()]
            return _shown(tr.thread_results(store, ids, ResultCache.for_store(store, cache_dir), now_ms=NOW_MS))
    finally:
        tr.compute_thread_results = real


@pytest.mark.parametrize("name", NAMES)
def test_thread_results_are_the_doctors_findings_and_the_status_batches_statuses(name, tmp_path):
    path = _copy(name, tmp_path)
    expected, _checked = baseline.doctor_findings(path)
    with open_store(path) as store:
        threads = store.list_threads()
        results = tr.compute_thread_results(store, [t.id for t in threads], now_ms=NOW_MS)
        statuses = {s.thread_id: s for s in iter_thread_statuses(store, threads, on_error=lambda _t, _e: None)}
        counts = store.message_counts()
        wide = tr.store_findings(store, now_ms=NOW_MS)
    assert sorted(baseline.canonical(wide) + [x for r in results.values() for x in baseline.canonical(r.findings)]) \
        == expected
    assert {t: r.status for t, r in results.items() if r.status is not None} == statuses
    assert {t: r.messages for t, r in results.items()} == {t.id: counts.get(t.id, 0) for t in threads}
    for status in statuses.values():   # what the cache stores of a status is the whole status
        assert status_from_json(json.loads(json.dumps(status_to_json(status)))) == status


def test_a_second_session_reuses_every_result(tmp_path):
    path = _copy("support", tmp_path / "db")
    first: list[str] = []
    shown = _cached(path, tmp_path / "cache", first)
    assert shown == _fresh(path) and sorted(first) == sorted(shown)
    again: list[str] = []
    assert _cached(path, tmp_path / "cache", again) == shown
    assert again == []


def _edit_same_length(path: Path) -> str:
    """Change one character of one message's stored content in place (same length); return its thread id."""
    conn = libsql.connect(str(path))
    try:
        mid, thread_id, content = conn.execute(
            "SELECT id, thread_id, content FROM mastra_messages WHERE content LIKE '%\"text\":\"%' "
            "ORDER BY id LIMIT 1").fetchone()
        at = content.index('"text":"') + len('"text":"')
        edited = content[:at] + ("Q" if content[at] != "Q" else "R") + content[at + 1:]
        assert len(edited) == len(content) and edited != content
        conn.execute("UPDATE mastra_messages SET content = ? WHERE id = ?", (edited, mid))
        conn.commit()
    finally:
        conn.close()
    return thread_id


def test_a_message_edited_in_place_to_the_same_length_is_computed_again(tmp_path):
    path = _copy("support", tmp_path / "db")
    _cached(path, tmp_path / "cache", [])
    with open_store(path) as store:
        before = tr.thread_digests(store, [t.id for t in store.list_threads()])
    thread_id = _edit_same_length(path)
    with open_store(path) as store:
        after = tr.thread_digests(store, list(before))
    assert {t for t in before if before[t] != after[t]} == {thread_id}   # the digest alone tells the edited thread
    computed: list[str] = []
    assert _cached(path, tmp_path / "cache", computed) == _fresh(path)
    assert computed == [thread_id]


def test_a_replaced_file_is_computed_again_where_its_rows_differ(tmp_path):
    path = _copy("support", tmp_path / "db")
    other = _copy("support", tmp_path / "other")
    thread_id = _edit_same_length(other)
    _cached(path, tmp_path / "cache", [])
    stat = os.stat(path)
    os.replace(other, path)   # another file at the same path, its size and mtime made the old file's
    for ext in ("-wal", "-shm"):
        if os.path.exists(f"{other}{ext}"):
            os.replace(f"{other}{ext}", f"{path}{ext}")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    computed: list[str] = []
    assert _cached(path, tmp_path / "cache", computed) == _fresh(path)
    assert computed == [thread_id]


def _head(file: Path) -> dict:
    """The JSON line a cache file begins with (its entries; the findings texts follow it)."""
    return json.loads(file.read_bytes().partition(b"\n")[0])


def _undecodable(head: dict) -> bytes:
    """A cache file of HEAD's entries whose findings texts are shaped as lists ("[", "]") but are not JSON."""
    texts = bytearray(b" " * head["texts"])
    for e in head["threads"].values():
        start, length = e["findings"]
        texts[start:start + length] = b"[" + b"x" * (length - 2) + b"]" if length > 2 else b"[]"
    return json.dumps(head).encode("utf-8") + b"\n" + bytes(texts)


def test_a_corrupt_cache_is_ignored_and_replaced(tmp_path):
    path = _copy("support", tmp_path / "db")
    _cached(path, tmp_path / "cache", [])
    [file] = (tmp_path / "cache").iterdir()
    head = _head(file)
    good = file.read_bytes()
    for garbage in (b"\x00\xff not json", b'{"version": [1, "0.1.0"], "threads": {"x": 1}}', b"[]",
                    json.dumps({**head, "threads": {
                        t: {"digest": "d", "stamp": None, "status": {"nonsense": 1}, "messages": "many",
                            "findings": 3} for t in head["threads"]}}).encode(),
                    good[:-1],   # cut short: the last thread's findings text misses its last character
                    json.dumps({**head, "threads": {   # findings past the texts, and not a list
                        t: {**e, "findings": [e["findings"][0] + 1, e["findings"][1]] if i % 2 else [0, 1]}
                        for i, (t, e) in enumerate(head["threads"].items())}}).encode() + good[good.index(b"\n"):],
                    _undecodable(head)):
        file.write_bytes(garbage)
        file.with_name(f"{file.name}.journal").unlink(missing_ok=True)   # a previous round's lines: valid entries
        computed: list[str] = []
        assert _cached(path, tmp_path / "cache", computed) == _fresh(path)
        assert computed   # nothing usable was reused
    again: list[str] = []
    _cached(path, tmp_path / "cache", again)
    assert again == []   # the last run wrote a good cache


def test_an_unwritable_cache_is_ignored(tmp_path):
    path = _copy("support", tmp_path / "db")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    computed: list[str] = []
    assert _cached(path, blocker / "cache", computed) == _fresh(path)
    again: list[str] = []
    assert _cached(path, blocker / "cache", again) == _fresh(path)
    assert sorted(again) == sorted(computed)


def test_the_cache_lives_under_the_user_cache_folder_not_beside_the_data(tmp_path, monkeypatch):
    path = _copy("support", tmp_path / "db")
    monkeypatch.setenv("MEMORY_STUDIO_CACHE_DIR", str(tmp_path / "user-cache"))
    before = sorted(p.name for p in path.parent.iterdir())
    with open_store(path) as store:
        cache = ResultCache.for_store(store)
        tr.thread_results(store, [t.id for t in store.list_threads()], cache)
    assert cache.file.parent == tmp_path / "user-cache" / "thread-results" and cache.file.exists()
    assert sorted(p.name for p in path.parent.iterdir()) == before
    shutil.rmtree(tmp_path / "user-cache")


def test_a_live_refresh_journals_its_few_results_and_the_next_session_reads_them(tmp_path):
    """A live refresh's save appends its thread's entry to the journal (the cache file's bytes untouched: its cost
    is the change's, not the store's); a new session applies the journal and reuses every result, equal to a fresh
    computation; a line cut short by a crash is skipped (that thread computed again); a save of more than
    JOURNAL_MAX_ENTRIES entries rewrites the file and removes the journal."""
    from studio.app import result_cache

    path = _copy("support", tmp_path / "db")
    cache_dir = tmp_path / "cache"
    _cached(path, cache_dir, [])
    [file] = cache_dir.iterdir()
    written = file.read_bytes()
    thread_id = _edit_same_length(path)
    with open_store(path) as store, store.snapshot():   # a live refresh: the changed thread, computed and saved
        cache = ResultCache.for_store(store, cache_dir)
        tr.thread_results(store, [thread_id], cache, now_ms=NOW_MS, reuse=False)
    assert file.read_bytes() == written and cache.journal.exists()
    assert list(json.loads(cache.journal.read_text(encoding="utf-8"))["threads"]) == [thread_id]
    computed: list[str] = []
    assert _cached(path, cache_dir, computed) == _fresh(path)
    assert computed == []   # the journaled entry and the file's others: every result reused

    with cache.journal.open("ab") as out:   # a save cut short: half a line after the good one
        out.write(b'{"version": [2, "x"], "threads": {"' + thread_id.encode())
    computed = []
    assert _cached(path, cache_dir, computed) == _fresh(path)
    assert computed == []

    cache.journal.write_bytes(cache.journal.read_bytes().splitlines()[0][:40] + b"\n")   # only a cut line
    computed = []
    assert _cached(path, cache_dir, computed) == _fresh(path)
    assert computed == [thread_id]

    many = result_cache.JOURNAL_MAX_ENTRIES + 1
    with open_store(path) as store:
        cache = ResultCache.for_store(store, cache_dir)
        status = next(e for e in cache._load().values() if e.get("status"))["status"]
        cache.put({f"t{i}": {"status": status_from_json(status), "messages": i, "findings": [], "digest": f"d{i}"}
                   for i in range(many)}, None)
        cache.save()
    assert not cache.journal.exists()
    assert all(f"t{i}" in _head(file)["threads"] for i in range(many))


def test_each_message_is_counted_once_and_the_window_checks_find_what_the_doctor_finds(tmp_path, monkeypatch):
    """The statuses count each unobserved message once; the window checks reuse those counts (the doctor's
    own run counts them itself). On a store with a message Mastra cannot count, so that support-3 has no
    status and the doctor's uncountable-message finding must come from the window check's own count."""
    from studio.engine import tokens
    from tests.uncountable_db import MESSAGE_ID, THREAD, make_uncountable_db

    path = make_uncountable_db(tmp_path)
    expected, _checked = baseline.doctor_findings(path)
    counted: list[str] = []
    real = tokens._Counter.count_message

    def spy(self, message, for_status=False):
        counted.append(message.get("id"))
        return real(self, message, for_status)

    monkeypatch.setattr(tokens._Counter, "count_message", spy)
    with open_store(path) as store, store.snapshot():
        results = tr.compute_thread_results(store, [t.id for t in store.list_threads()], now_ms=NOW_MS)
        wide = tr.store_findings(store, now_ms=NOW_MS)
    found = [x for r in results.values() for x in r.findings]
    assert sorted(baseline.canonical(wide) + baseline.canonical(found)) == expected
    assert results[THREAD].status is None and results[THREAD].uncountable
    assert [f["message_ids"] for f in found if f["check"] == "uncountable-message"] == [[MESSAGE_ID]]
    again = sorted({m for m in counted if counted.count(m) > 1 and m != MESSAGE_ID})
    assert counted and not again, f"{len(again)} messages counted twice, e.g. {again[:3]}"



def test_statuses_from_the_checks_rows_equal_the_status_batches_where_order_and_cursor_meet(tmp_path):
    """The statuses of `compute_thread_results` take each thread's unobserved messages from the rows the
    checks read (each row flagged, in the same statement, with the comparison `list_messages(since=…)` makes).
    On support-5, whose cursor is 2026-12-04T20:13:13.380Z and whose last 11 of 24 messages are at or after
    it: its last message moved exactly to the cursor (in), the two before it tied just before the cursor
    (out), its first one given an empty createdAt (out), its second one a blob createdAt (SQLite compares a
    blob greater than any text: in, and last in storage order): 11 - 2 + 1 = 10 flagged. The statuses equal
    the status batches' (which read their messages themselves), the flags `messages_since_many`'s messages,
    and a thread's digest is the same read with or without the flags."""
    from studio.engine.unobserved import storage_cursor

    path = _copy("support", tmp_path)
    conn = libsql.connect(str(path))
    ids = [r[0] for r in conn.execute("SELECT id FROM mastra_messages WHERE thread_id = 'support-5' "
                                      'ORDER BY "createdAt", rowid').fetchall()]
    assert len(ids) == 24
    at = "2026-12-04T20:13:13.380Z"
    for message_id, created in ((ids[-1], at), (ids[-2], "2026-12-04T20:13:13.379Z"),
                                (ids[-3], "2026-12-04T20:13:13.379Z"), (ids[0], "")):
        conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = ?', (created, message_id))
    conn.execute('UPDATE mastra_messages SET "createdAt" = CAST("createdAt" AS BLOB) WHERE id = ?', (ids[1],))
    conn.commit()
    conn.close()
    with open_store(path) as store, store.snapshot():
        threads = store.list_threads()
        results = tr.compute_thread_results(store, [t.id for t in threads], now_ms=NOW_MS)
        statuses = {s.thread_id: s for s in iter_thread_statuses(store, threads, on_error=lambda _t, _e: None)}
        cursors = {k.split(":", 1)[1]: storage_cursor(r.last_observed_at)
                   for k, r in store.om_current_all().items() if r.scope == "thread"}
        flagged = store.message_rows(sorted(cursors), cursors)
        messages = store.messages_since_many(cursors.items())
        digests = tr.thread_digests(store, [t.id for t in threads])
    assert cursors["support-5"] == at
    assert sum(1 for r in flagged if r[1] == "support-5" and r[-1]) == 10
    assert {(t, c): [r[0] for r in flagged if r[1] == t and r[-1]] for t, c in cursors.items()} \
        == {pair: [m.id for m in found] for pair, found in messages.items()}
    assert {t: r.status for t, r in results.items() if r.status is not None} == statuses
    assert {t: r.digest for t, r in results.items()} == digests


@pytest.mark.parametrize("name", ["support", "resource", "buffered", "collab", "sample"])
def test_what_the_cache_writes_of_a_status_is_dataclasses_asdict(name, tmp_path):
    """`status_to_json` is made field by field; it is `dataclasses.asdict` of the status, settings (threshold
    ranges included) and flags included, on fixtures with thread and resource scope, shared budgets and
    buffered chunks."""
    import dataclasses

    with open_store(_copy(name, tmp_path)) as store:
        statuses = list(iter_thread_statuses(store, store.list_threads(), on_error=lambda _t, _e: None))
    assert statuses
    from studio.common.om_settings import ThresholdRange
    from studio.store.flags import FlagState

    ranged = dataclasses.replace(statuses[0], settings=dataclasses.replace(   # a shared budget (no fixture has one)
        statuses[0].settings, message_tokens=ThresholdRange(30000, 70000), reflection_tokens=ThresholdRange(1, 2)),
        flags=[FlagState("isObserving", True, True, 3_600_001), FlagState("isReflecting", False)])
    for status in [*statuses, ranged]:
        assert status_to_json(status) == dataclasses.asdict(status)


def test_json_valids_verdict_read_with_the_rows_is_the_doctors(tmp_path):
    """On SQLite an open reads json_valid's verdict on each message in the statement that reads the rows: a
    content cut short is malformed-json, as the doctor (which asks for those ids in a statement of its own)
    finds it; a blob content is not text, so json_valid is not asked, in either."""
    path = _copy("support", tmp_path)
    conn = libsql.connect(str(path))
    first, second = [r[0] for r in conn.execute("SELECT id FROM mastra_messages WHERE thread_id = 'support-4' "
                                                'ORDER BY "createdAt", rowid LIMIT 2').fetchall()]
    conn.execute("UPDATE mastra_messages SET content = ? WHERE id = ?", ('{"format":2,"parts":[', first))
    conn.execute("UPDATE mastra_messages SET content = CAST(content AS BLOB) WHERE id = ?", (second,))
    conn.commit()
    conn.close()
    expected, _checked = baseline.doctor_findings(path)
    with open_store(path) as store, store.snapshot():
        results = tr.compute_thread_results(store, [t.id for t in store.list_threads()], now_ms=NOW_MS)
        wide = tr.store_findings(store, now_ms=NOW_MS)
    found = [x for r in results.values() for x in r.findings]
    assert sorted(baseline.canonical(wide) + baseline.canonical(found)) == expected
    assert [f["message_ids"] for f in found if f["check"] == "malformed-json"] == [[first]]


def test_current_records_taken_from_the_histories_are_om_current_manys(tmp_path):
    """An open takes each key's current record from the histories it reads for the checks when the newest
    generationCount is an integer above every other; a tie at the top (a generation copied under another id)
    or a generationCount that is not an integer is read with `om_current_many`, which the status batches use."""
    path = _copy("support", tmp_path)
    conn = libsql.connect(str(path))
    columns = [r[1] for r in conn.execute("PRAGMA table_info(mastra_observational_memory)").fetchall()]
    listed = ", ".join(f'"{c}"' for c in columns)
    copied = ", ".join("id || '-twin'" if c == "id" else f'"{c}"' for c in columns)
    top = conn.execute("SELECT id FROM mastra_observational_memory WHERE \"lookupKey\" = 'thread:support-1' "
                       'ORDER BY "generationCount" DESC LIMIT 1').fetchone()[0]
    conn.execute(f"INSERT INTO mastra_observational_memory ({listed}) SELECT {copied} FROM mastra_observational_memory "
                 "WHERE id = ?", (top,))
    conn.execute("UPDATE mastra_observational_memory SET \"generationCount\" = 'seven' WHERE id = (SELECT id FROM "
                 "mastra_observational_memory WHERE \"lookupKey\" = 'thread:support-3' ORDER BY \"generationCount\" "
                 "LIMIT 1)")   # text: SQLite's MAX takes it over every integer
    conn.commit()
    conn.close()
    with open_store(path) as store:
        by_id = {t.id: t for t in store.list_threads()}
        histories = tr._chunk_histories(store, list(by_id), by_id)
        asked: list[str] = []
        real = store.om_current_many
        store.om_current_many = lambda keys: real(asked.extend(keys) or keys)
        current = tr._current_records(store, histories)
        assert sorted(asked) == ["thread:support-1", "thread:support-3"]
        assert current == real(histories)
        assert current["thread:support-3"].columns["generationCount"] == "seven"

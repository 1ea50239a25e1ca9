"""Pages of a file's messages (listMessages in both directions, recall's newest pages) equal real Mastra's where
the times tie, where text order is not time order, and past the end (issue 28's one-sort pages).

MemoryLibSQL.listMessages reads a page in `createdAt` order (ties as SQLite's index gives them: ascending
insertion order, or descending for DESC), MessageList sorts it by time ascending, then the page is sorted in
the asked direction (both stable); Memory.recall reads the newest page, reverses it and sorts it again. The
studio sorts a page once where no time is NaN (`studio.store.history._js_sorted`), and by the stored text
where every time is in `toISOString()`'s form. A copy of the `history` fixture gets, on one thread, runs of
three equal canonical times, on another the same instants written with and without an offset (text order is
then not time order, and equal instants in two spellings are ties the sort must keep in their read order), and
on a third times that are not dates (NaN for JavaScript: "equal" to every time, sorted by the comparison);
Mastra itself (the benchmark's warm worker, `benchmarks/vs_mastra_worker.mjs`) answers each call.
"""

from __future__ import annotations

import libsql

from benchmarks.vs_mastra import StudioSide, _canonical, mastra_worker


def _set_times(path, thread_id: str, times: list[str]) -> None:
    """Give THREAD_ID's messages (in their stored order) the createdAt TIMES, one each."""
    conn = libsql.connect(str(path))
    ids = [r[0] for r in conn.execute('SELECT id FROM mastra_messages WHERE thread_id = ? ORDER BY "createdAt", rowid',
                                      (thread_id,)).fetchall()]
    assert len(ids) == len(times)
    for message_id, created in zip(ids, times, strict=True):
        conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = ?', (created, message_id))
    conn.commit()
    conn.close()


def _tied(count: int) -> list[str]:
    """Canonical times in runs of three equal ones, the runs in reverse storage order (the newest run first)."""
    return [f"2026-03-01T10:00:{59 - i // 3:02d}.000Z" for i in range(count)]


def _two_spellings(count: int) -> list[str]:
    """Instants a second apart, each written twice (with Z and as the same instant at +01:00), alternating which
    comes first, and some of them one hour apart in text only: text order is not time order."""
    out = []
    for i in range(count):
        second = i // 2
        z = f"2026-03-01T10:00:{second:02d}.000Z"
        shifted = f"2026-03-01T11:00:{second:02d}.000+01:00"
        out.append(z if (i + second) % 2 else shifted)
    return out


def test_pages_where_times_tie_or_are_spelled_two_ways_equal_mastra(fixture_db):
    path = fixture_db("history")
    conn = libsql.connect(str(path))
    counts = dict(conn.execute("SELECT thread_id, COUNT(*) FROM mastra_messages WHERE thread_id IN "
                               "('hist-1', 'hist-1-branch', 'hist-2') GROUP BY thread_id").fetchall())
    conn.close()
    assert counts["hist-1"] >= 9 and counts["hist-1-branch"] >= 8 and counts["hist-2"] == 5
    _set_times(path, "hist-1", _tied(counts["hist-1"]))
    _set_times(path, "hist-1-branch", _two_spellings(counts["hist-1-branch"]))
    _set_times(path, "hist-2", ["2026-03-01T10:00:03.000Z", "not a date", "2026-03-01T10:00:01.000Z",
                                "2026-03-01T09:00:00.000-01:00", "2026-03-01T10:00:02.000Z"])
    mastra = mastra_worker(f"file:{path}")
    studio = StudioSide(str(path))
    try:
        calls = []
        for thread_id, count in counts.items():
            for direction in ("ASC", "DESC"):
                calls += [("listMessages", {"threadId": thread_id, "perPage": size, "page": p,
                                            "orderBy": {"field": "createdAt", "direction": direction}})
                          for size in (2, 4, 5) for p in range(count // size + 2)]    # the last ones past the end
            calls += [("listMessages", {"threadId": thread_id, "perPage": False, "page": 0})]
            calls += [("recall", {"threadId": thread_id, "perPage": size, "page": p})   # newest first: walked down
                      for size in (2, 3, 5) for p in range(count // size + 2)]
            calls += [("recall", {"threadId": thread_id, "perPage": False})]
        for op, args in calls:
            theirs, ours = mastra.ask(op, 1, args)["out"], studio.run(op, 1, args)["out"]
            assert _canonical(ours) == _canonical(theirs), (op, args)
        # the cases are the ones meant: hist-1's times come in runs of three, and hist-1-branch's time order is
        # not its text order
        conn = libsql.connect(str(path))
        runs = conn.execute('SELECT COUNT(*) FROM mastra_messages WHERE thread_id = ? GROUP BY "createdAt"',
                            ("hist-1",)).fetchall()
        assert sorted(n for n, in runs)[-(counts["hist-1"] // 3):] == [3] * (counts["hist-1"] // 3)
        by_text = [r[0] for r in conn.execute('SELECT id FROM mastra_messages WHERE thread_id = ? '
                                              'ORDER BY "createdAt", rowid', ("hist-1-branch",)).fetchall()]
        conn.close()
        by_time = studio.run("listMessages", 1, {"threadId": "hist-1-branch", "perPage": False, "page": 0})["out"]
        assert by_time["ids"] != by_text and sorted(by_time["ids"]) == sorted(by_text)
    finally:
        mastra.close()
        studio.store.close()

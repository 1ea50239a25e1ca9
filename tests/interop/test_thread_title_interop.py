"""An observation's `<thread-title>` renames the thread exactly when real Mastra's does (@mastra/memory 1.31.0,
`resolveThreadTitleUpdate`): the trimmed candidate needs 3 UTF-16 code units (JavaScript's `.length`), must differ
from the stored title trimmed, and a title pinned by the user (`metadata.titlePinned === true`) stays.

Copy A gets Mastra's synchronous observation (`mastra-observe.mjs`, its Observer answering a fixed text), copy B
ours (`commit_observation`, the path of `observe --answer-file`); both copies are first given the same stored title
or pin. Every changed cell must be equal (the title, the `data-om-thread-update` marker or its absence, its
`oldTitle` trimmed as Mastra's), and the title must be the one each case states from Mastra's rule.
"""

from __future__ import annotations

import json

import libsql
import pytest

from studio.engine.observe_window import observation_window
from studio.engine.observer import parse_answer
from studio.store.write.observation import commit_observation
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, run_node
from tests.interop.test_observe_interop import _answer, _assert_same_changes

# (thread, stored title or None to keep it, pin the title, the answer's <thread-title>, the title after)
CASES = [
    # two emoji: 4 UTF-16 units, a title for Mastra (2 code points: none for a count of characters)
    ("support-1", None, False, "😀😀", "😀😀"),
    # "a" and one emoji: 3 units, a title
    ("support-2", None, False, "a😀", "a😀"),
    # the stored title has spaces around it: equal once trimmed, so Mastra keeps the stored title as it is
    ("support-3", "  Budget review  ", False, "Budget review", "  Budget review  "),
    # pinned by the user (session.thread.rename()): the extracted title never replaces it
    ("support-4", "My own name", True, "An extracted title", "My own name"),
    # a new title over a stored one with spaces: set, and the marker's oldTitle is the stored title trimmed
    ("support-5", "\u00a0Marathon training ", False, "Marathon plan", "Marathon plan"),
]


def _prepare(path, thread_id: str, title: str | None, pinned: bool) -> None:
    """Give THREAD_ID in PATH the stored TITLE (None: keep) and `metadata.titlePinned = true` when PINNED."""
    conn = libsql.connect(str(path))
    if title is not None:
        conn.execute("UPDATE mastra_threads SET title = ? WHERE id = ?", (title, thread_id))
    if pinned:   # Mastra stores thread metadata as JSONB: keep the blob form
        conn.execute("UPDATE mastra_threads SET metadata = jsonb_set(metadata, '$.titlePinned', json('true')) "
                     "WHERE id = ?", (thread_id,))
    conn.commit()
    conn.close()


@pytest.mark.parametrize(("thread_id", "stored", "pinned", "candidate", "expected"), CASES, ids=[c[0] for c in CASES])
def test_thread_title_follows_mastra(mastra_corpus, tmp_path, thread_id, stored, pinned, candidate, expected):
    text, _ = _answer(True, True, candidate)
    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(text, encoding="utf-8")
    a, b = copy_fixture("support", tmp_path / "a"), copy_fixture("support", tmp_path / "b")
    for path in (a, b):
        _prepare(path, thread_id, stored, pinned)
    before = dump_tables(a)
    old_title = before["mastra_threads"][thread_id]["title"]

    window = observation_window(b, thread_id)
    mastra = run_node(mastra_corpus, "mastra-observe.mjs", a, thread_id, answer_file)
    assert mastra["observed"] is True
    parsed = parse_answer(window, text)
    assert parsed.thread_title == candidate   # support has observation.threadTitle on
    commit_observation(b, window, parsed, force=mastra["forced"] is not None)
    changed_a, _ = _assert_same_changes(before, a, b)

    after = dump_tables(b)["mastra_threads"][thread_id]
    assert after["title"] == expected == dump_tables(a)["mastra_threads"][thread_id]["title"]
    renamed = expected != old_title
    assert (("mastra_threads", thread_id, "title") in changed_a) is renamed
    updates = [p["data"] for cell, value in changed_a.items() if cell[0] == "mastra_messages"   # this write's parts
               for p in json.loads(value)["parts"][len(json.loads(before[cell[0]][cell[1]][cell[2]])["parts"]):]
               if p.get("type") == "data-om-thread-update"]
    assert [(u["oldTitle"], u["newTitle"]) for u in updates] == ([(old_title.strip(), expected)] if renamed else [])
    if pinned:
        assert json.loads(after["metadata"].removeprefix("jsonb:"))["titlePinned"] is True

"""prompt-leak: Mastra's own instructions stored as memory, found by phrase hashes (mastra #22195).

The leaked texts are Mastra's own phrases, read from @mastra/memory's dist at test time
(tests/mastra_prompts.py): the repository holds only their hashes. Each case plants them where a
model echoing its instructions leaves them: a thread's currentTask / suggestedResponse (thread
scope and resource scope), a buffered chunk, the log.
"""

from __future__ import annotations

import json

from studio.engine.doctor.prompt_leak import PHRASE_HASHES, REMINDER_TAG, find_leaks
from studio.store import open_store
from tests.engine.doctor_db import new_findings, om_rows, run, thread_metadata
from tests.mastra_prompts import prompt_phrases


def set_om_metadata(conn, path, thread_id: str, **values: str) -> None:
    """Set THREAD_ID's metadata.mastra.om keys VALUES, keeping every other key (written as JSON text)."""
    meta = thread_metadata(path, thread_id)
    meta.setdefault("mastra", {}).setdefault("om", {}).update(values)
    conn.execute("UPDATE mastra_threads SET metadata = ? WHERE id = ?", (json.dumps(meta), thread_id))


def threads_of(path, resource_id: str) -> list[str]:
    """Return the ids of RESOURCE_ID's threads in the file at PATH, sorted."""
    with open_store(path) as store:
        return sorted(t.id for t in store.list_threads() if t.resource_id == resource_id)


def observer_task_echo() -> str:
    """Return what an Observer that echoed its task prompt stores as the current task (Mastra's sentences)."""
    p = prompt_phrases()
    return f"{p[0]}. {p[2]}. {p[1]}."


def test_every_phrase_hash_is_a_phrase_of_mastras_prompts_and_each_is_found():
    phrases = prompt_phrases()           # raises when a hash matches no text of Mastra's dist
    assert len(phrases) == len(PHRASE_HASHES) == 10
    for i, phrase in enumerate(phrases):
        assert [leak.phrase for leak in find_leaks(f"* 🔴 (10:00) {phrase.upper()}!")] == [i]
        # the phrase cut by one word is no longer a leak
        assert find_leaks(" ".join(phrase.split()[1:])) == []


def test_ordinary_observations_with_the_anchor_words_are_no_leak():
    texts = ["* 🔴 (09:12) User wants to extract new invoices from the billing export above",
             "* 🟡 (09:13) Agent will add a reminder; the following block is the user's memory of Paris",
             "* 🟢 (09:14) User prefers summarization of meetings, naturally in French, with continuity notes"]
    assert [find_leaks(t) for t in texts] == [[], [], []]
    assert [leak.phrase for leak in find_leaks("x <System-Reminder> y")] == [None]
    assert find_leaks("x <System-Reminder> y")[0].excerpt == REMINDER_TAG


def test_prompt_leak_in_the_thread_scope_current_task_suggested_response_and_log(fixture_db):
    path = fixture_db("support")
    p = prompt_phrases()

    def edit(conn):
        set_om_metadata(conn, path, "support-3", currentTask=observer_task_echo(), suggestedResponse=p[4] + ".")
        row = om_rows(conn, "thread:support-3")[-1]
        conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ? WHERE id = ?',
                     (row["activeObservations"] + f"\n* 🟡 (20:43) <system-reminder>{p[4]}</system-reminder>",
                      row["id"]))

    found = new_findings(path, edit, stdlib=True)
    assert [(f["check"], f["thread_id"], f["severity"]) for f in found] == [("prompt-leak", "support-3", "error")] * 2
    sources = {src: [leak["phrase"] for leak in leaks]
               for f in found for src, leaks in f["evidence"]["sources"].items()}
    assert sources == {"activeObservations": [None, 4], "thread.metadata.mastra.om.currentTask": [0, 1, 2],
                       "thread.metadata.mastra.om.suggestedResponse": [4]}


def test_prompt_leak_in_resource_scope_lands_on_the_thread_holding_it(fixture_db):
    path = fixture_db("resource")

    def edit(conn):
        threads = [r[0] for r in conn.execute("SELECT id FROM mastra_threads WHERE \"resourceId\" = 'user-erin' "
                                              "ORDER BY id").fetchall()]
        edit.thread = threads[-1]
        set_om_metadata(conn, path, edit.thread, currentTask=observer_task_echo())

    found = new_findings(path, edit, stdlib=True)
    assert [(f["check"], f["thread_id"], f["lookup_key"]) for f in found] == \
        [("prompt-leak", edit.thread, "resource:user-erin")]
    assert list(found[0]["evidence"]["sources"]) == ["thread.metadata.mastra.om.currentTask"]
    # the doctor on one thread reports the leak on that thread only
    others = [r for r in threads_of(path, "user-erin") if r != edit.thread]
    assert others
    assert [f["thread_id"] for f in run(path, thread_id=edit.thread) if f["check"] == "prompt-leak"] == [edit.thread]
    assert [f for f in run(path, thread_id=others[0]) if f["check"] == "prompt-leak"] == []


def test_prompt_leak_in_a_buffered_chunk(fixture_db):
    path = fixture_db("buffered")
    p = prompt_phrases()

    def edit(conn):
        row = om_rows(conn, "thread:long-run")[-1]
        chunks = json.loads(row["bufferedObservationChunks"])
        chunks[-1] = {**chunks[-1], "currentTask": observer_task_echo(), "suggestedContinuation": p[9]}
        conn.execute('UPDATE mastra_observational_memory SET "bufferedObservationChunks" = ? WHERE id = ?',
                     (json.dumps(chunks), row["id"]))
        edit.index = len(chunks) - 1

    found = new_findings(path, edit, stdlib=True)
    assert [(f["check"], f["thread_id"]) for f in found] == [("prompt-leak", "long-run")]
    i = edit.index
    assert {src: [leak["phrase"] for leak in leaks] for src, leaks in found[0]["evidence"]["sources"].items()} == \
        {f"bufferedObservationChunks[{i}].currentTask": [0, 1, 2],
         f"bufferedObservationChunks[{i}].suggestedContinuation": [9]}

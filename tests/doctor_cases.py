"""Labelled case files for the doctor's precision and recall (issue 26 item 4).

Each case is a copy of a real Mastra fixture, edited the way Mastra (or the bug a check comes from)
leaves rows, with the findings it must produce as labels. `score(build_all(dest))` counts, per
check, what the doctor found that is labelled (true positives), found and not labelled (false
positives) and labelled and not found (false negatives). Units: one (check, place) pair, place being
the thread (or the lookup key when the finding has no thread); `lost-high-priority` counts lines:
(check, lookup key, line).

Labels come from first principles and from the raw rows, never from the doctor:
* in every case, the fixture's own truth: a thread whose messages share a createdAt has a tie
  (mastra_facts.timestamp_ties, recomputed after the edit), and every 🔴 line that no later
  generation holds word for word was dropped (mastra_facts.dropped_high_priority, read before the edit:
  gen.mjs's scripted Reflector keeps a line verbatim or drops it, never rewords it);
* the case's own labels: what the edit planted (a reworded line is not a loss, a repeated "yes"
  after another user message is no duplicate, Mastra's own reflect-after-observe is no superseded write).

Edits go through Python's sqlite3 module (JSON written as text, which Mastra reads too): a libsql
connection closed after edits once crashed its process (SIGSEGV in the native close), sqlite3's cannot.
Metadata is read through the studio's store (JSONB included) before the edit opens the file.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from studio.engine.doctor import run_doctor
from studio.engine.doctor.model import CHECKS
from studio.store import open_store
from studio.store.records import iso_to_ms, ms_to_iso
from tests import mastra_facts as facts
from tests.conftest import copy_fixture
from tests.engine.doctor_db import insert_message, insert_om, messages, om_rows, reflect_row, text_content
from tests.mastra_prompts import prompt_phrases

#: The clock of every run (stale flags depend on it): 2026-12-10T00:00:00Z, after every fixture's writes.
NOW_MS = 1_796_860_800_000
Label = tuple


@dataclass
class Case:
    """One labelled case file: fixture NAME edited by EDIT(conn, path) -> the labels the edit adds."""

    name: str
    fixture: str
    edit: Callable[[sqlite3.Connection, Path], set[Label]] | None = None


def _meta(path: Path, thread_id: str) -> dict:
    with open_store(path) as store:
        return next(t.metadata for t in store.list_threads() if t.id == thread_id) or {}


def _set_om(conn, path: Path, thread_id: str, **values) -> None:
    meta = _meta(path, thread_id)
    meta.setdefault("mastra", {}).setdefault("om", {}).update(values)
    conn.execute("UPDATE mastra_threads SET metadata = ? WHERE id = ?", (json.dumps(meta), thread_id))


def _set_log(conn, row: dict, text: str) -> None:
    conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ? WHERE id = ?', (text, row["id"]))
    row["activeObservations"] = text


def _after(conn, key: str, ms: int) -> str:
    return ms_to_iso(iso_to_ms(om_rows(conn, key)[-1]["lastObservedAt"]) + ms)


def _echo() -> str:
    p = prompt_phrases()
    return f"{p[0]}. {p[2]}. {p[1]}."


# --- prompt-leak -------------------------------------------------------------------------------------------

def leak_current_task(conn, path):
    _set_om(conn, path, "support-3", currentTask=_echo())
    return {("prompt-leak", "support-3")}


def leak_suggested_response(conn, path):
    _set_om(conn, path, "support-2", suggestedResponse=prompt_phrases()[4] + " and respond.")
    return {("prompt-leak", "support-2")}


def leak_in_log(conn, path):
    row = om_rows(conn, "thread:support-4")[-1]
    _set_log(conn, row, row["activeObservations"] + f"\n* 🟡 (20:43) <system-reminder>{prompt_phrases()[7]}")
    return {("prompt-leak", "support-4")}


def leak_resource_scope(conn, path):
    _set_om(conn, path, "res-b", currentTask=_echo())
    return {("prompt-leak", "res-b")}


def leak_buffered_chunk(conn, path):
    row = om_rows(conn, "thread:long-run")[-1]
    chunks = json.loads(row["bufferedObservationChunks"])
    chunks[-1] = {**chunks[-1], "currentTask": _echo()}
    conn.execute('UPDATE mastra_observational_memory SET "bufferedObservationChunks" = ? WHERE id = ?',
                 (json.dumps(chunks), row["id"]))
    return {("prompt-leak", "long-run")}


def leak_chunk_observations(conn, path):
    row = om_rows(conn, "thread:long-run")[-1]
    chunks = json.loads(row["bufferedObservationChunks"])
    chunks[0] = {**chunks[0], "observations": chunks[0]["observations"] + f"\n* 🟡 (20:50) {prompt_phrases()[5]}."}
    conn.execute('UPDATE mastra_observational_memory SET "bufferedObservationChunks" = ? WHERE id = ?',
                 (json.dumps(chunks), row["id"]))
    return {("prompt-leak", "long-run")}


def no_leak_anchor_words(conn, path):
    _set_om(conn, path, "support-3", currentTask="Extract new invoices from the export above; add a reminder.",
            suggestedResponse="Naturally, continue with the summarization of the meeting.")
    return set()


# --- duplicate-messages ------------------------------------------------------------------------------------

def _stamped(text: str, at: int) -> dict:
    return {"format": 2, "parts": [{"type": "text", "text": text, "createdAt": at,
                                    "providerMetadata": {"mastra": {"createdAt": at}}}]}


def duplicate_850_ms(conn, path):
    last = messages(conn, "support-4")[-1]
    at = iso_to_ms(last["createdAt"]) + 60_000
    for delay in (0, 850):
        insert_message(conn, "support-4", last["resourceId"], "user",
                       _stamped("Send me the March invoice?", at + delay), ms_to_iso(at + delay))
    return {("duplicate-messages", "support-4")}


def duplicate_per_step(conn, path):
    original = [m for m in messages(conn, "support-2") if m["role"] == "user"][-1]
    for _ in range(2):
        insert_message(conn, "support-2", original["resourceId"], "user", original["content"], original["createdAt"])
    return {("duplicate-messages", "support-2")}


def user_repeats_words(conn, path):
    last = messages(conn, "support-4")[-1]
    at = iso_to_ms(last["createdAt"]) + 60_000
    for i, (role, text) in enumerate([("user", "yes"), ("assistant", "Shall I book it?"), ("user", "Which room?"),
                                      ("assistant", "Room 12B."), ("user", "yes"), ("assistant", "Booked.")]):
        insert_message(conn, "support-4", last["resourceId"], role, text_content(text), ms_to_iso(at + 8000 * i))
    return set()


def same_answer_minutes_apart(conn, path):
    last = messages(conn, "support-5")[-1]
    at = iso_to_ms(last["createdAt"]) + 60_000
    for i, (role, text) in enumerate([("user", "Status?"), ("assistant", "Still running."),
                                      ("user", "Status?"), ("assistant", "Still running.")]):
        insert_message(conn, "support-5", last["resourceId"], role, text_content(text), ms_to_iso(at + 120_000 * i))
    return set()


def same_message_minutes_later(conn, path):
    last = messages(conn, "support-4")[-1]
    at = iso_to_ms(last["createdAt"]) + 60_000
    for delay in (0, 70_000):   # past the 60 s window: the user asked again, Mastra did not save twice
        insert_message(conn, "support-4", last["resourceId"], "user",
                       _stamped("Is the refund through?", at + delay), ms_to_iso(at + delay))
    return set()


# --- lost-high-priority ------------------------------------------------------------------------------------

def _reflect(conn, key: str, added: list[str], kept_after: list[str]) -> dict:
    rows = om_rows(conn, key)
    lines = rows[-1]["activeObservations"].splitlines()
    _set_log(conn, rows[-1], "\n".join([*lines, *added]))
    insert_om(conn, reflect_row(rows[-1], "\n".join([*lines, *kept_after])))
    return rows[-1]


def lost(thread_id: str, dropped: str, *kept: str) -> Callable[[sqlite3.Connection, Path], set[Label]]:
    """Return the edit of a reflection of THREAD_ID's log that holds DROPPED and KEPT and keeps only KEPT:
    DROPPED is a lost 🔴 line, however alike KEPT reads (same template, other name, other number)."""
    def edit(conn, path):
        _reflect(conn, f"thread:{thread_id}", [dropped, *kept], list(kept))
        return {("lost-high-priority", f"thread:{thread_id}", dropped)}
    return edit


def not_lost(thread_id: str, added: list[str], kept_after: list[str]) -> Callable[[sqlite3.Connection, Path],
                                                                                  set[Label]]:
    """Return the edit of a reflection of THREAD_ID's log that holds ADDED and writes them again as KEPT_AFTER
    (reworded, merged, condensed): no line is lost."""
    def edit(conn, path):
        _reflect(conn, f"thread:{thread_id}", added, kept_after)
        return set()
    return edit


# --- superseded-write --------------------------------------------------------------------------------------

def overtaking_write(conn, path):
    gen1, gen2 = om_rows(conn, "thread:support-1")[1:3]
    late = iso_to_ms(gen2["createdAt"]) + 5000
    cursor = ms_to_iso(iso_to_ms(gen2["lastObservedAt"]) + 4000)
    text = (gen1["activeObservations"]
            + f"\n\n--- message boundary ({cursor}) ---\n\n* 🟡 (20:45) User asked for a refund.")
    conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ?, "lastObservedAt" = ?, '
                 '"updatedAt" = ? WHERE id = ?', (text, cursor, ms_to_iso(late), gen1["id"]))
    return {("superseded-write", "support-1")}


def reflect_after_observe(conn, path):
    # Mastra's own: the observed row keeps the newer cursor, the reflection the previous one, and the old row
    # is touched only 2 ms after the reflection was inserted (what mastra-observe.mjs --reflect leaves).
    row = om_rows(conn, "thread:support-1")[-1]
    cursor = ms_to_iso(iso_to_ms(row["lastObservedAt"]) + 3000)
    observed = row["activeObservations"] + f"\n\n--- message boundary ({cursor}) ---\n\n* 🟡 (20:50) User thanked."
    new = reflect_row({**row, "activeObservations": observed}, row["activeObservations"])
    insert_om(conn, new)
    conn.execute('UPDATE mastra_observational_memory SET "activeObservations" = ?, "lastObservedAt" = ?, '
                 '"updatedAt" = ? WHERE id = ?',
                 (observed, cursor, ms_to_iso(iso_to_ms(new["createdAt"]) + 2), row["id"]))
    return set()


# --- repeats and the other checks --------------------------------------------------------------------------

def degenerate_loop(conn, path):
    block = "\n".join(f"* 🟡 (10:0{i}) Tool call retried with the same arguments, step {i}" for i in range(8))
    row = om_rows(conn, "thread:support-2")[-1]
    text = row["activeObservations"] + "\n" + "\n".join([block] * 30)
    for _ in range(14):
        row = reflect_row(row, text)
        insert_om(conn, row)
    return {("degenerate-repetition", "support-2"), ("reflection-not-compressing", "support-2")}


def empty_generation(conn, path):
    row = om_rows(conn, "thread:support-5")[-1]
    insert_om(conn, reflect_row(row, ""))
    return {("empty-generation", "support-5")} | {
        ("lost-high-priority", "thread:support-5", ln.strip()) for ln in row["activeObservations"].splitlines()
        if facts.HIGH_PRIORITY_LINE.match(ln)}


def stale_flag(conn, path):
    row = om_rows(conn, "thread:support-1")[-1]
    conn.execute('UPDATE mastra_observational_memory SET "isReflecting" = 1 WHERE id = ?', (row["id"],))
    return {("stale-flag", "support-1")}


def duplicate_generation(conn, path):
    row = om_rows(conn, "thread:support-4")[0]
    insert_om(conn, {**row, "id": row["id"][:-4] + "dup0"})
    return {("duplicate-generation", "support-4")}


def orphan_record(conn, path):
    conn.execute("DELETE FROM mastra_messages WHERE thread_id = 'support-5'")
    conn.execute("DELETE FROM mastra_threads WHERE id = 'support-5'")
    return {("orphan-record", "support-5")}


def ties(conn, path):
    first, second = messages(conn, "hist-2")[:2]
    conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = ?', (first["createdAt"], second["id"]))
    return set()   # the tie itself is labelled from the raw rows


def stale_updated_at(conn, path):
    updated = conn.execute("SELECT \"updatedAt\" FROM mastra_threads WHERE id = 'support-2'").fetchall()[0][0]
    insert_message(conn, "support-2", "user-alice", "user", text_content("Any update?"),
                   ms_to_iso(iso_to_ms(updated) + 120_000))
    conn.execute("UPDATE mastra_threads SET \"updatedAt\" = ? WHERE id = 'support-2'", (updated,))
    return {("stale-thread-updatedat", "support-2")}


def status_and_context(conn, path):
    insert_message(conn, "support-3", "user-bob", "assistant", {"format": 2, "parts": [
        {"type": "data-om-status", "data": {"windows": {"active": {"messages": {"tokens": 812}}}}}]},
        _after(conn, "thread:support-3", 5000))
    insert_message(conn, "support-3", "user-bob", "user",
                   text_content("<client-context>page=/billing</client-context>"),
                   _after(conn, "thread:support-3", 6000))
    return {("status-only-message", "support-3"), ("context-message-persisted", "support-3")}


def orphan_tool_result(conn, path):
    insert_message(conn, "tools-1", "user-tools", "assistant", {"format": 2, "parts": [
        {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "call_404",
                                                       "toolName": "lookup", "result": "ok"}}]},
        _after(conn, "thread:tools-1", 95_000))
    return {("orphan-tool-result", "tools-1")}


def oversized_tool_result(conn, path):
    rows = [{"sku": f"SKU-{i:05d}", "name": f"Replacement filter cartridge model {i}", "stock": i % 17}
            for i in range(300)]
    insert_message(conn, "tools-1", "user-tools", "assistant", {"format": 2, "parts": [
        {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "call_9",
                                                       "toolName": "searchCatalog", "args": {"q": "filter"},
                                                       "result": rows}}]}, _after(conn, "thread:tools-1", -2000))
    return {("oversized-tool-result", "tools-1")}


def message_over_threshold(conn, path):
    text = " ".join(f"Clause {i}: the tenant shall keep the premises in good repair." for i in range(400))
    at = _after(conn, "thread:support-3", 60_000)
    insert_message(conn, "support-3", "user-bob", "user", text_content(text), at)
    return {("message-over-threshold", "support-3")}


def malformed_json(conn, path):
    row = om_rows(conn, "thread:support-2")[-1]
    conn.execute('UPDATE mastra_observational_memory SET "observedMessageIds" = ? WHERE id = ?', ('["a"', row["id"]))
    return {("malformed-json", "support-2")}


def duplicate_chunk(conn, path):
    row = om_rows(conn, "thread:long-run")[-1]
    chunks = json.loads(row["bufferedObservationChunks"])
    chunks.append({**chunks[0], "id": chunks[0]["id"] + "-again"})
    conn.execute('UPDATE mastra_observational_memory SET "bufferedObservationChunks" = ? WHERE id = ?',
                 (json.dumps(chunks), row["id"]))
    return {("duplicate-buffered-chunk", "long-run")}


def foreign_ids(conn, path):
    source = [m["id"] for m in messages(conn, "support-1")[:3]]
    row = om_rows(conn, "thread:support-2")[-1]
    ids = json.loads(row["observedMessageIds"] or "[]") + source
    conn.execute('UPDATE mastra_observational_memory SET "observedMessageIds" = ? WHERE id = ?',
                 (json.dumps(ids), row["id"]))
    return {("foreign-observed-ids", "support-2")}


CASES = [Case(f"fixture {name}", name) for name in ("support", "buffered", "resource", "collab", "tools", "history",
                                                     "live/support")] + [
    Case("prompt leak: current task", "support", leak_current_task),
    Case("prompt leak: suggested response", "support", leak_suggested_response),
    Case("prompt leak: log", "support", leak_in_log),
    Case("prompt leak: resource scope", "resource", leak_resource_scope),
    Case("prompt leak: buffered chunk", "buffered", leak_buffered_chunk),
    Case("prompt leak: chunk observations", "buffered", leak_chunk_observations),
    Case("no prompt leak: anchor words", "support", no_leak_anchor_words),
    Case("duplicate 850 ms, part times", "support", duplicate_850_ms),
    Case("duplicate per agent step", "support", duplicate_per_step),
    Case("no duplicate: user repeats", "support", user_repeats_words),
    Case("no duplicate: minutes apart", "support", same_answer_minutes_apart),
    Case("no duplicate: asked again after 70 s", "support", same_message_minutes_later),
    Case("lost: template, other topic", "support", lost(
        "support-5", "* 🔴 (09:30) User asked about beekeeping hives: What are the risks I am not seeing?",
        "* 🔴 (09:32) User asked about home network VLANs: What are the risks I am not seeing?")),
    Case("lost: other name", "support", lost(
        "support-4", "* 🔴 (09:30) User's manager is Priya Raman; escalations go to her.",
        "* 🔴 (09:31) User's manager is Tomas Berg; escalations go to him.")),
    Case("lost: other number", "support", lost(
        "support-3", "* 🔴 (09:30) The budget for the migration is $48,000 for Q1.",
        "* 🔴 (09:31) The budget for the hiring plan is $12,500 for Q1.")),
    Case("lost: no trace", "support", lost(
        "support-5", "* 🔴 (09:31) User is allergic to penicillin; never suggest it.")),
    Case("not lost: reworded", "support", not_lost(
        "support-5", ["* 🔴 (09:30) User's daughter Emma starts kindergarten on September 3 at Lindenhof school."],
        ["* 🔴 (09:30) Emma (the user's daughter) begins kindergarten Sept 3, Lindenhof school."])),
    Case("not lost: merged", "support", not_lost(
        "support-4", ["* 🔴 (09:30) User's flight to Oslo leaves March 14.",
                      "* 🔴 (09:31) User booked the Grand Hotel in Oslo."],
        ["* 🔴 (09:31) User flies to Oslo on March 14 and booked the Grand Hotel there."])),
    Case("not lost: condensed", "support", not_lost(
        "support-3", ["* 🔴 (09:30) User said the production database runs PostgreSQL 16.2 on a Hetzner server in "
                      "Falkenstein."],
        ["* 🔴 (09:30) Production DB: PostgreSQL 16.2, Hetzner, Falkenstein."])),
    Case("superseded: overtaking write", "support", overtaking_write),
    Case("not superseded: reflect after observe", "support", reflect_after_observe),
    Case("degenerate loop", "support", degenerate_loop),
    Case("empty generation", "support", empty_generation),
    Case("stale flag", "support", stale_flag),
    Case("duplicate generation", "support", duplicate_generation),
    Case("orphan record", "support", orphan_record),
    Case("timestamp tie", "history", ties),
    Case("stale thread updatedAt", "support", stale_updated_at),
    Case("status-only and context messages", "support", status_and_context),
    Case("orphan tool result", "tools", orphan_tool_result),
    Case("oversized tool result", "tools", oversized_tool_result),
    Case("message over threshold", "support", message_over_threshold),
    Case("malformed JSON", "support", malformed_json),
    Case("duplicate buffered chunk", "buffered", duplicate_chunk),
    Case("foreign observed ids", "support", foreign_ids),
]


def fixture_truth(path: Path) -> set[Label]:
    """Return what Mastra left in the file at PATH, from its raw rows: its ties and its dropped 🔴 lines."""
    dropped = {("lost-high-priority", key, line) for key in facts.lookup_keys(path)
               for _gen, line in facts.dropped_high_priority(path, key)}
    return dropped | {("timestamp-ties", thread_id) for thread_id in facts.timestamp_ties(path)}


def build(case: Case, dest: Path) -> tuple[Path, set[Label], set[Label]]:
    """Copy CASE's fixture into DEST (a fresh folder), apply its edit with sqlite3.

    Returns (path, labels, fixture truth before the edit). An unedited case is labelled with the
    fixture's truth; an edited one with what the edit planted plus the ties it made.
    """
    if dest.exists():
        shutil.rmtree(dest)
    path = copy_fixture(case.fixture, dest)
    before = fixture_truth(path)
    if case.edit is None:
        return path, before, set()
    conn = sqlite3.connect(str(path))
    try:
        labels = case.edit(conn, path)
        conn.commit()
    finally:
        conn.close()
    ties = {("timestamp-ties", thread_id) for thread_id in facts.timestamp_ties(path)}
    return path, labels | ties, before


def found(path: Path) -> set[Label]:
    """Return the doctor's findings on PATH as labels (at NOW_MS)."""
    with open_store(path) as store:
        findings = run_doctor(store, now_ms=NOW_MS).to_json()["findings"]
    out: set[Label] = set()
    for f in findings:
        if f["check"] == "lost-high-priority":
            out |= {(f["check"], f["lookup_key"], ln["line"].strip()) for ln in f["evidence"]["lines"]}
        else:
            out.add((f["check"], f["thread_id"] or f["lookup_key"] or f["resource_id"]))
    return out


def score(results: list[tuple[set[Label], set[Label]]]) -> dict[str, tuple[int, int, int]]:
    """Return {check: (true positives, false positives, false negatives)} over (labels, found) pairs."""
    out = {check: [0, 0, 0] for check in CHECKS}
    for labels, got in results:
        for label in got & labels:
            out[label[0]][0] += 1
        for label in got - labels:
            out[label[0]][1] += 1
        for label in labels - got:
            out[label[0]][2] += 1
    return {check: (tp, fp, fn) for check, (tp, fp, fn) in out.items()}


def run_cases(dest: Path) -> list[tuple[str, set[Label], set[Label]]]:
    """Build and check every case under DEST; return [(case name, labels, found)].

    An edited case is scored on what its edit changed: the fixture's own truth (counted once, in the
    fixture's unedited case) is left out of both its labels and its findings.
    """
    out = []
    for i, case in enumerate(CASES):
        path, labels, before = build(case, dest / f"case{i:02d}")
        out.append((case.name, labels - before, found(path) - before))
    return out


def table(results: list[tuple[str, set[Label], set[Label]]]) -> str:
    """Return the precision / recall table (Markdown) of RESULTS, a row per check with a label or a finding."""
    counts = score([(labels, got) for _name, labels, got in results])
    rows = ["| check | labelled | found | precision | recall |", "|---|---|---|---|---|"]
    for check, (tp, fp, fn) in counts.items():
        if tp + fp + fn == 0:
            continue
        precision = f"{tp / (tp + fp):.2f}" if tp + fp else "—"
        recall = f"{tp / (tp + fn):.2f} ({tp} of {tp + fn})" if tp + fn else "—"
        rows.append(f"| `{check}` | {tp + fn} | {tp + fp} | {precision} | {recall} |")
    return "\n".join(rows)

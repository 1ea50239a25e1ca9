"""The message checks' shortcuts (issue 21) decide what their rules decide.

* context-message-persisted looks at a user message only when its stored JSON holds `<c`, `<C` or a
  `\\u00` escape; the rule (its text starts with `<client-context`, any case) is applied to the others.
* duplicate-messages rejects two contents that differ in their first characters before scanning them
  for `"createdAt"`: `same_content` must stay the rule written out below, on contents of every shape.
* the window checks, given the statuses' counts, apply Mastra's window rule only to the messages whose
  place in it can change a finding: on a store holding every kind of window finding they find what
  the doctor's own run (no counts: every message placed) finds.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import libsql

from studio.app import thread_results as tr
from studio.engine.doctor.message_checks import check_parts, same_content
from studio.engine.doctor.messages import StoredMessage
from studio.store import open_store
from studio.store.memory_store import MESSAGE_COLUMNS
from studio.store.records import Thread, iso_to_ms, ms_to_iso
from tests.engine.doctor_db import insert_message, om_rows, text_content

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
import make_doctor_baseline as baseline  # the fixtures' copies, clock and canonical findings

THREAD = Thread("t", "r", "", None, None, None)


def _stored(raw: str, role: str = "user", message_id: str = "m") -> StoredMessage:
    row = {"id": message_id, "thread_id": "t", "role": role, "content": raw, "createdAt": "2026-01-01T00:00:00.000Z"}
    return StoredMessage(tuple(row.get(c) for c in MESSAGE_COLUMNS))   # a `store.message_rows` row


def test_a_context_message_is_found_however_its_json_writes_the_bracket():
    opening = "<client-context>page=/billing</client-context> hi"
    found = {
        # JSON.stringify's own writing, and writers that escape HTML characters (\u003c, either case)
        json.dumps({"format": 2, "parts": [{"type": "text", "text": opening}]}): True,
        json.dumps({"format": 2, "parts": [{"type": "text", "text": opening}]}).replace("<", "\\u003c"): True,
        json.dumps({"format": 2, "parts": [{"type": "text", "text": opening}]}).replace("<", "\\u003C"): True,
        json.dumps({"format": 2, "parts": [{"type": "text", "text": "  \n" + opening.upper()}]}): True,
        json.dumps("<Client-Context>x</Client-Context>"): True,   # a content that is a JSON string
        "<client-context>not JSON at all": True,   # the stored text is its own text
        json.dumps({"format": 2, "parts": [{"type": "text", "text": "see <client-context> later"}]}): False,
        json.dumps({"format": 2, "parts": [{"type": "text", "text": "<code> and client-context"}]}): False,
        json.dumps({"format": 2, "parts": [{"type": "text", "text": "plain words"}]}): False,
    }
    for raw, expected in found.items():
        got = [f.check for f in check_parts(THREAD, [_stored(raw)], 30_000)]
        assert ("context-message-persisted" in got) is expected, raw
        # an assistant message is never one
        assert "context-message-persisted" not in [f.check for f in check_parts(THREAD, [_stored(raw, "assistant")],
                                                                                30_000)]


#: A numeric "createdAt" field, as Mastra stamps a part (the rule's own words: epoch ms, maybe a fraction).
PART_TIME = re.compile(r'"createdAt":\s*-?\d+(?:\.\d+)?')


def _rule(a: str, b: str) -> bool:
    """The same content: byte for byte, or both holding "createdAt" and equal once the numeric ones are left out."""
    return a == b or ('"createdAt"' in a and '"createdAt"' in b and PART_TIME.sub("", a) == PART_TIME.sub("", b))


def test_same_content_is_the_rule_on_contents_of_every_shape():
    rng = random.Random(2125)

    def content() -> str:
        pad = "x" * rng.choice((0, 5, 60, 117, 118, 119, 130, 300))   # "createdAt" before, at and after 128
        text = rng.choice(("hello", "hellO", "yes", pad + "tail"))
        parts = [{"type": "text", "text": text, "createdAt": rng.choice((1767225600000, 1767225600850, 5))}]
        if rng.random() < 0.3:
            parts.insert(0, {"type": "step-start", "createdAt": rng.choice((1, 2))})
        doc = {"format": 2, "parts": parts} if rng.random() < 0.8 else {"format": 2, "pad": pad, "parts": parts}
        raw = json.dumps(doc, separators=(",", ":"))
        return raw if rng.random() < 0.9 else raw.replace('"createdAt"', '"created"')

    pairs = 0
    for _ in range(20000):
        a, b = content(), content()
        assert same_content(_stored(a), _stored(b)) is _rule(a, b), (a, b)
        pairs += _rule(a, b) and a != b
    assert pairs > 100, "too few pairs equal without their times: the comparison says little"


def test_the_window_checks_with_the_statuses_counts_find_what_the_doctors_own_run_finds(tmp_path):
    path = baseline.private_copy(baseline.fixture_paths()["tools"], tmp_path)
    conn = libsql.connect(str(path))
    try:
        cursor = om_rows(conn, "thread:tools-1")[-1]["lastObservedAt"]

        def after(ms: int) -> str:   # MS after the observation cursor: unobserved
            return ms_to_iso(iso_to_ms(cursor) + ms)

        big = " ".join(f"Clause {i}: the tenant shall keep the premises in good repair." for i in range(3000))
        insert_message(conn, "tools-1", "user-tools", "user", text_content(big), after(60_000))   # over threshold
        insert_message(conn, "tools-1", "user-tools", "assistant", {"format": 2, "parts": [   # a result, call observed
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "call_3",
                                                           "toolName": "bookRoom", "args": {"room": "12B"},
                                                           "result": {"booked": True}}}]}, after(90_000))
        insert_message(conn, "tools-1", "user-tools", "user", text_content("small and counted"), after(95_000))
        conn.commit()
    finally:
        conn.close()
    expected, _checked = baseline.doctor_findings(path)
    with open_store(path) as store, store.snapshot():
        results = tr.compute_thread_results(store, [t.id for t in store.list_threads()], now_ms=baseline.NOW_MS)
        wide = tr.store_findings(store, now_ms=baseline.NOW_MS)
    found = [x for r in results.values() for x in r.findings]
    assert sorted(baseline.canonical(wide) + baseline.canonical(found)) == expected
    assert {"message-over-threshold", "orphan-tool-result"} <= {f["check"] for f in found}

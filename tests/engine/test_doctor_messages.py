"""Doctor checks on messages, threads and the schema: each fires on a fixture copy edited the way Mastra
(or the bug a check comes from) leaves it, and nowhere else."""

from __future__ import annotations

import base64
import json

from studio.engine import tokens
from studio.store.records import iso_to_ms, ms_to_iso
from tests.engine.doctor_db import insert_message, messages, new_findings, om_rows, text_content


def where(found: list[dict]) -> list[tuple]:
    return sorted((f["check"], f["thread_id"], tuple(f["message_ids"])) for f in found)


def after_cursor(conn, key: str, ms: int) -> str:
    return ms_to_iso(iso_to_ms(om_rows(conn, key)[-1]["lastObservedAt"]) + ms)


def test_message_over_threshold_fires_on_one_unobserved_message_bigger_than_the_window(fixture_db):
    path = fixture_db("support")
    made = {}

    def edit(conn):   # mastra #16523: a pasted document, saved as one user message, never observed
        text = " ".join(f"Clause {i}: the tenant shall keep the premises in good repair." for i in range(400))
        made["id"] = insert_message(conn, "support-3", "user-bob", "user", text_content(text),
                                    after_cursor(conn, "thread:support-3", 60_000))
        made["tokens"] = tokens.count_message_for_status(
            {"id": made["id"], "role": "user", "content": text_content(text)})
        conn.execute("UPDATE mastra_threads SET \"updatedAt\" = ? WHERE id = 'support-3'",
                     (after_cursor(conn, "thread:support-3", 60_000),))

    found = new_findings(path, edit)
    assert made["tokens"] >= 2500   # support's observation.messageTokens
    assert where(found) == [("message-over-threshold", "support-3", (made["id"],))]
    assert found[0]["evidence"] == {"tokens": made["tokens"], "threshold": 2500,
                                    "created_at": found[0]["evidence"]["created_at"]}


def test_message_over_threshold_is_silent_once_the_message_is_observed(fixture_db):
    path = fixture_db("support")

    def edit(conn):   # the same message, but before the observation cursor: already observed
        text = " ".join(f"Clause {i}: the tenant shall keep the premises in good repair." for i in range(400))
        insert_message(conn, "support-3", "user-bob", "user", text_content(text),
                       after_cursor(conn, "thread:support-3", -1))

    assert [f for f in new_findings(path, edit) if f["check"] == "message-over-threshold"] == []


def test_oversized_tool_result_and_inline_base64(fixture_db):
    path = fixture_db("tools")
    made = {}

    def edit(conn):
        before = after_cursor(conn, "thread:tools-1", -2000)   # observed already: only the size matters
        rows = [{"sku": f"SKU-{i:05d}", "name": f"Replacement filter cartridge model {i}", "stock": i % 17}
                for i in range(300)]
        made["tool"] = insert_message(conn, "tools-1", "user-tools", "assistant", {"format": 2, "parts": [
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "call_9",
                                                           "toolName": "searchCatalog", "args": {"q": "filter"},
                                                           "result": rows}}]}, before)
        blob = base64.b64encode(bytes(range(256)) * 400).decode()   # 102,400 bytes -> 136,536 base64 chars
        made["file"] = insert_message(conn, "tools-1", "user-tools", "user", {"format": 2, "parts": [
            {"type": "text", "text": "Here is the scan."},
            {"type": "file", "mimeType": "application/pdf", "data": blob}]},
            after_cursor(conn, "thread:tools-1", -1000))
        made["tokens"] = tokens.estimate_text(json.dumps(rows, ensure_ascii=False))

    found = new_findings(path, edit)
    assert made["tokens"] >= 0.5 * 1500   # half of tools' observation.messageTokens
    assert set(where(found)) == {("oversized-tool-result", "tools-1", (made["file"],)),
                                 ("oversized-tool-result", "tools-1", (made["tool"],))}


def test_duplicate_messages_saved_once_per_agent_step(fixture_db):
    path = fixture_db("support")
    made = {}

    def edit(conn):   # mastra #13089: the same user message saved again with new ids, same createdAt
        original = [m for m in messages(conn, "support-2") if m["role"] == "user"][-1]
        made["ids"] = [original["id"]] + [
            insert_message(conn, "support-2", original["resourceId"], "user", original["content"],
                           original["createdAt"]) for _ in range(2)]

    found = new_findings(path, edit)
    dup = [f for f in found if f["check"] == "duplicate-messages"]
    assert [sorted(f["message_ids"]) for f in dup] == [sorted(made["ids"])]
    # Same createdAt: the thread now also has a timestamp tie (support-2 had none).
    assert sorted(f["check"] for f in found) == ["duplicate-messages", "timestamp-ties"]
    ties = next(f for f in found if f["check"] == "timestamp-ties")
    assert sorted(ties["message_ids"]) == sorted(made["ids"])


def test_timestamp_ties_fire_on_messages_sharing_a_millisecond(fixture_db):
    path = fixture_db("history")
    made = {}

    def edit(conn):
        first, second = messages(conn, "hist-2")[:2]   # the history fixture has no tie in hist-2
        conn.execute('UPDATE mastra_messages SET "createdAt" = ? WHERE id = ?', (first["createdAt"], second["id"]))
        made["ids"] = sorted([first["id"], second["id"]])

    found = new_findings(path, edit)
    assert [(f["check"], sorted(f["message_ids"])) for f in found] == [("timestamp-ties", made["ids"])]


def test_stale_thread_updated_at(fixture_db):
    path = fixture_db("support")

    made = {}

    def edit(conn):   # #17932: a message saved two minutes later, the thread's updatedAt not bumped
        updated = conn.execute("SELECT \"updatedAt\" FROM mastra_threads WHERE id = 'support-2'").fetchall()[0][0]
        made["id"] = insert_message(conn, "support-2", "user-alice", "user", text_content("Any update?"),
                                    ms_to_iso(iso_to_ms(updated) + 120_000))
        conn.execute("UPDATE mastra_threads SET \"updatedAt\" = ? WHERE id = 'support-2'", (updated,))

    found = new_findings(path, edit)
    assert [(f["check"], f["thread_id"], f["message_ids"]) for f in found] == \
        [("stale-thread-updatedat", "support-2", [made["id"]])]
    assert found[0]["evidence"]["behind_ms"] == 120_000


def test_status_only_and_context_messages(fixture_db):
    path = fixture_db("support")
    made = {}

    def edit(conn):
        at = after_cursor(conn, "thread:support-3", 5000)
        # #18869: a data-om-status snapshot persisted as a standalone assistant message.
        made["status"] = insert_message(conn, "support-3", "user-bob", "assistant", {"format": 2, "parts": [
            {"type": "data-om-status", "data": {"windows": {"active": {"messages": {"tokens": 812}}}}}]}, at)
        # #19730: a `context` message of one run stored as a durable user message.
        made["context"] = insert_message(conn, "support-3", "user-bob", "user", text_content(
            "<client-context>page=/billing; timezone=Europe/Zurich</client-context>"),
            after_cursor(conn, "thread:support-3", 6000))

    found = new_findings(path, edit)
    assert set(where(found)) == {("context-message-persisted", "support-3", (made["context"],)),
                                 ("status-only-message", "support-3", (made["status"],))}


def test_orphan_tool_result_client_tool_pattern(fixture_db):
    path = fixture_db("tools")
    made = {}

    def edit(conn):
        # #15244: the call (tools-msg-5, observed) and its client-side result in a later, unobserved message.
        made["result"] = insert_message(conn, "tools-1", "user-tools", "assistant", {"format": 2, "parts": [
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "call_3",
                                                           "toolName": "bookRoom", "args": {"room": "12B", "nights": 2},
                                                           "result": {"booked": True}}}]},
            after_cursor(conn, "thread:tools-1", 90_000))
        # A result part with no arguments and no call anywhere.
        made["stray"] = insert_message(conn, "tools-1", "user-tools", "assistant", {"format": 2, "parts": [
            {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "call_404",
                                                           "toolName": "lookup", "result": "ok"}}]},
            after_cursor(conn, "thread:tools-1", 95_000))

    found = new_findings(path, edit)
    assert set(where(found)) == {("orphan-tool-result", "tools-1", ("tools-msg-5", made["result"])),
                                 ("orphan-tool-result", "tools-1", (made["stray"],))}


def test_malformed_json_in_config_content_and_metadata(fixture_db):
    path = fixture_db("support")
    made = {}

    def edit(conn):
        row = om_rows(conn, "thread:support-2")[-1]
        conn.execute('UPDATE mastra_observational_memory SET "observedMessageIds" = ? WHERE id = ?',
                     ('["a", "b"', row["id"]))
        made["msg"] = messages(conn, "support-4")[0]["id"]
        conn.execute("UPDATE mastra_messages SET content = ? WHERE id = ?", ('{"format":2,"parts":[', made["msg"]))
        conn.execute("UPDATE mastra_threads SET metadata = ? WHERE id = 'support-5'", ("{not json",))

    found = new_findings(path, edit)
    got = sorted((f["thread_id"], f["evidence"]["table"], f["evidence"]["column"]) for f in found
                 if f["check"] == "malformed-json")
    assert got == [("support-2", "mastra_observational_memory", "observedMessageIds"),
                   ("support-4", "mastra_messages", "content"), ("support-5", "mastra_threads", "metadata")]
    assert {f["check"] for f in found} == {"malformed-json"}


def test_schema_drift_for_an_older_and_a_newer_mastra(fixture_db):
    path = fixture_db("support")

    def edit(conn):   # @mastra/memory 1.5.0 had no OM metadata column; a newer one may add columns
        conn.execute('ALTER TABLE mastra_observational_memory DROP COLUMN "metadata"')
        conn.execute('ALTER TABLE mastra_threads ADD COLUMN "archivedBy" TEXT')

    found = new_findings(path, edit)
    got = sorted((f["evidence"]["table"], tuple(f["evidence"]["missing"]), tuple(f["evidence"]["unknown"]))
                 for f in found)
    assert got == [("mastra_observational_memory", ("metadata",), ()), ("mastra_threads", (), ("archivedBy",))]
    assert {f["check"] for f in found} == {"schema-drift"}


def stamped(content: dict, at_ms: int) -> dict:
    """Return CONTENT with each part stamped at AT_MS as Mastra's message list stamps parts (createdAt, epoch ms,
    also under providerMetadata.mastra)."""
    return {**content, "parts": [{**p, "createdAt": at_ms, "providerMetadata": {"mastra": {"createdAt": at_ms}}}
                                 for p in content["parts"]]}


def test_duplicate_messages_finds_a_message_saved_twice_850_ms_apart_with_its_own_part_times(fixture_db):
    path = fixture_db("support")
    made = {}

    def edit(conn):   # #13089 with part times: the stored JSON of the two copies differs in those numbers only
        original = [m for m in messages(conn, "support-4") if m["role"] == "user"][-1]
        at = iso_to_ms(original["createdAt"]) + 60_000
        first = insert_message(conn, "support-4", original["resourceId"], "user",
                               stamped(text_content("Can you send me the invoice for March?"), at), ms_to_iso(at))
        again = insert_message(conn, "support-4", original["resourceId"], "user",
                               stamped(text_content("Can you send me the invoice for March?"), at + 850),
                               ms_to_iso(at + 850))
        made["ids"] = [first, again]

    found = new_findings(path, edit, stdlib=True)
    assert [(f["check"], f["message_ids"]) for f in found] == [("duplicate-messages", made["ids"])]
    assert found[0]["evidence"]["span_ms"] == 850
    assert "stored 2× within 850 ms" in found[0]["summary"]


def test_a_user_repeating_words_after_another_user_message_is_no_duplicate(fixture_db):
    path = fixture_db("support")

    def edit(conn):   # "yes", something else, "yes" again: three user turns (each answered), 40 s in all
        original = messages(conn, "support-4")[-1]
        at = iso_to_ms(original["createdAt"]) + 60_000
        for i, (role, text) in enumerate([("user", "yes"), ("assistant", "Shall I book it?"),
                                          ("user", "Wait, which room is it?"), ("assistant", "Room 12B."),
                                          ("user", "yes"), ("assistant", "Booked.")]):
            insert_message(conn, "support-4", original["resourceId"], role, text_content(text),
                           ms_to_iso(at + 8_000 * i))

    assert [f for f in new_findings(path, edit, stdlib=True) if f["check"] == "duplicate-messages"] == []

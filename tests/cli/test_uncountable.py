"""A message Mastra's token count throws on: every command says so for that thread or message and keeps the rest.

The database is the support fixture with one message added to support-3 (tests/uncountable_db.py: a file
part whose URL's file name has a bad % escape; Mastra's countMessage throws URIError on it, which
tests/fuzz/test_fuzz_parity.py checks with real Mastra). The figures of everything before that message, and
of every other thread, are the unmodified fixture's.
"""

from __future__ import annotations

import json

import pytest

from studio.engine.tokens import count_message
from studio.errors import UncountableMessage
from studio.main import main
from studio.store import open_store
from studio.store.records import iso_to_ms
from tests.conftest import copy_fixture
from tests.uncountable_db import MESSAGE_ID, THREAD, make_uncountable_db, uncountable_message

SENTENCE_START = f"Mastra cannot count the tokens of message {MESSAGE_ID}: its attachment URL's file name has a bad %"


@pytest.fixture
def dbs(tmp_path):
    """(the database with the uncountable message, the unmodified support fixture)."""
    return make_uncountable_db(tmp_path / "u"), copy_fixture("support", tmp_path / "o")


def _json(capsys, *argv) -> tuple[int, dict, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_our_count_raises_uncountable_message_naming_the_message():
    with pytest.raises(UncountableMessage) as caught:
        count_message(uncountable_message())
    assert caught.value.message_id == MESSAGE_ID and caught.value.mastra_error == "URIError: URI malformed"
    assert str(caught.value).startswith(SENTENCE_START)


def test_inspect_says_it_for_that_thread_and_keeps_every_other_figure(dbs, capsys):
    bad, good = dbs
    code, doc, _ = _json(capsys, "inspect", str(bad), "--json")
    _, ref, _ = _json(capsys, "inspect", str(good), "--json")
    assert code == 0
    statuses = {tid: s for r in doc["observational_memory"] for tid, s in r["status"].items()}
    expected = {tid: s for r in ref["observational_memory"] for tid, s in r["status"].items()}
    assert statuses[THREAD] == {"uncountable": {
        "message_id": MESSAGE_ID, "reason": "its attachment URL's file name has a bad % escape",
        "mastra_error": "URIError: URI malformed", "sentence": statuses[THREAD]["uncountable"]["sentence"]}}
    assert statuses[THREAD]["uncountable"]["sentence"].startswith(SENTENCE_START)
    assert {t: s for t, s in statuses.items() if t != THREAD} == {t: s for t, s in expected.items() if t != THREAD}
    assert main(["inspect", str(bad)]) == 0
    text = capsys.readouterr().out
    assert f"    {THREAD}: ⚠ pending messages unknown — {SENTENCE_START}" in text


def test_tokens_says_it_for_that_message_and_counts_the_others(dbs, capsys):
    bad, good = dbs
    code, doc, err = _json(capsys, "tokens", str(bad), THREAD)
    _, ref, _ = _json(capsys, "tokens", str(good), THREAD)
    assert code == 0
    assert doc["per_message"].pop(MESSAGE_ID) is None
    assert doc["per_message"] == ref["per_message"]
    assert doc["all_messages"] is None and ref["all_messages"] > 0
    assert [n["message_id"] for n in doc["uncountable"]] == [MESSAGE_ID]
    assert f"memory-studio: warning: {SENTENCE_START}" in err


def _cut_ms(path) -> int:
    with open_store(path) as store:
        return iso_to_ms(next(m.created_at for m in store.list_messages(THREAD) if m.id == MESSAGE_ID))


def test_timeline_shows_the_points_before_the_message_and_says_why(dbs, capsys):
    bad, good = dbs
    code, doc, err = _json(capsys, "timeline", str(bad), "--thread", THREAD)
    _, ref, _ = _json(capsys, "timeline", str(good), "--thread", THREAD)
    assert code == 0
    cut = _cut_ms(bad)
    before = [p for p in ref["points"] if iso_to_ms(p["at"]) < cut]
    assert doc["points"] == before and 0 < len(before) < len(ref["points"])
    assert doc["events"] == [e for e in ref["events"] if iso_to_ms(e["at"]) < cut]
    assert doc["uncountable"]["message_id"] == MESSAGE_ID
    assert "the timeline stops before the message Mastra cannot count" in err and SENTENCE_START in err


def test_whatif_says_no_replay_exists(dbs, capsys):
    bad, _ = dbs
    assert main(["whatif", str(bad), "--thread", THREAD, "--message-tokens", "4000"]) == 2
    err = capsys.readouterr().err
    assert f"No what-if replay exists for thread {THREAD}: {SENTENCE_START}" in err


def test_context_shows_the_earlier_turns_and_says_why_not_later_ones(dbs, capsys):
    bad, good = dbs
    for turn in (1, 3, 6):  # turns that end before the message: what the unmodified thread shows
        code, doc, _ = _json(capsys, "context", str(bad), "--thread", THREAD, "--turn", str(turn), "--json")
        _, ref, _ = _json(capsys, "context", str(good), "--thread", THREAD, "--turn", str(turn), "--json")
        assert code == 0
        assert doc["uncountable"].startswith(SENTENCE_START) and ref["uncountable"] is None
        ignored = ("turns", "uncountable")
        assert {k: v for k, v in doc.items() if k not in ignored} == {k: v for k, v in ref.items() if k not in ignored}
    code, doc, _ = _json(capsys, "context", str(bad), "--thread", THREAD, "--turn", "7", "--json")
    assert code == 0 and doc["turn"] == 7 and doc["status_pending_tokens"] is None
    assert main(["context", str(bad), "--thread", THREAD, "--turn", "7"]) == 0
    assert f"⚠ No turn after turn 7 can be shown: {SENTENCE_START}" in capsys.readouterr().out
    assert main(["context", str(bad), "--thread", THREAD, "--turn", "8"]) == 2
    err = capsys.readouterr().err
    assert f"Turn 8 cannot be shown: {SENTENCE_START}" in err and "turns 1 to 7" in err


def test_doctor_reports_uncountable_message_as_an_error(dbs, capsys):
    bad, good = dbs
    code, doc, _ = _json(capsys, "doctor", str(bad), "--json")
    _, ref, _ = _json(capsys, "doctor", str(good), "--json")
    found = [f for f in doc["findings"] if f["check"] == "uncountable-message"]
    assert len(found) == 1
    assert found[0]["severity"] == "error" and found[0]["thread_id"] == THREAD
    assert found[0]["message_ids"] == [MESSAGE_ID] and found[0]["summary"].startswith(SENTENCE_START)
    assert not [f for f in ref["findings"] if f["check"] == "uncountable-message"]
    assert code == 0   # findings are the report, not a failure (as every other check)

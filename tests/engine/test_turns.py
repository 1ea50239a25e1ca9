"""`<turn>` speaker tags: decoding, tolerance of odd input, anomalies, and collab.db's participants.

collab.db was written by real Mastra (gen.mjs) with four speakers, one of them
`{id: 'u_o"brien', name: "Siobhán O'Brien & <Co>"}` escaped as the docs' helper does; doc_42 has
14 tagged turns (speakers in rotation: 4, 4, 3, 3), room_7 three. Token sums come from Mastra's
own per-message estimates in collab.oracle.json.
"""

from __future__ import annotations

import json

import pytest

from studio.cli import main
from studio.engine.speakers import analyze_messages, speakers_json, thread_speakers
from studio.engine.turns import decode_entities, has_turn_tag, parse_turns
from studio.store import open_store
from studio.store.records import Message
from tests.conftest import load_oracle

OBRIEN_ID = 'u_o"brien'
OBRIEN = "Siobhán O'Brien & <Co>"


def tag(author_id, name, role, body):
    def esc(v: str) -> str:
        return v.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")

    return (f'<turn author_id="{esc(author_id)}" author_name="{esc(name)}" functional_role="{esc(role)}">\n'
            f'{body}\n</turn>')


def msg(i, role, text):
    return Message(id=f"m{i}", thread_id="t", role=role, created_at=f"2026-01-01T00:00:{i:02d}.000Z",
                   content={"format": 2, "parts": [{"type": "text", "text": text}]})


def test_entities_decode_once():
    assert decode_entities("a &amp; b &quot;c&quot; &lt;d&gt; &apos;e&#39; &#x4E2D;") == "a & b \"c\" <d> 'e' 中"
    assert decode_entities("&amp;lt;") == "&lt;"               # decoded once, not twice
    assert decode_entities("&copy; &nbsp; & &unknown; &#0; &#xD800;") == "&copy; &nbsp; & &unknown; &#0; &#xD800;"


def test_a_tag_written_by_the_docs_helper_round_trips():
    p = parse_turns(tag(OBRIEN_ID, OBRIEN, "approver", "Approved <b>now</b> & then"))
    assert p.problems == []
    [t] = p.turns
    assert (t.author_id, t.author_name, t.functional_role) == (OBRIEN_ID, OBRIEN, "approver")
    assert t.body == "Approved <b>now</b> & then" and t.terminated
    assert p.display_text() == "Approved <b>now</b> & then"


@pytest.mark.parametrize("text", [
    "<turn functional_role='editor' author_name='Bob' author_id='u_bob'>hi</turn>",
    '<turn author_name=Bob functional_role=editor author_id=u_bob>hi</turn>',
    '<TURN  author_id = "u_bob"\n   author_name="Bob" functional_role="editor" >hi</Turn >',
])
def test_attribute_order_quotes_case_and_spacing_are_tolerated(text):
    p = parse_turns(text)
    assert [(t.author_id, t.author_name, t.functional_role, t.body) for t in p.turns] == [
        ("u_bob", "Bob", "editor", "hi")]
    assert p.problems == []


@pytest.mark.parametrize("text,problem", [
    ('<turn author_id="a" author_name="A">no role</turn>', "lacks functional_role"),
    ("<turn>bare</turn>", "lacks author_id, author_name, functional_role"),
    ('<turn author_id="a" author_name="A" functional_role="r">never closed', "not closed"),
    ('<turn author_id="a" author_name="A" functional_role="r"\nno bracket\n</turn>', "no closing '>'"),
    ('<turn author_id="a" author_name="A functional_role="r">x</turn>', "lacks functional_role"),
    ('<turn author_id="a" author_name="A\nbody', "no closing quote"),
    ('<turn author_id="a" author_id="b" author_name="A" functional_role="r">x</turn>', "repeats the attribute"),
    ('text </turn> more', "closes no <turn>"),
    ("<turn", "no closing '>'"),
    ('<turn author_id="a" author_name="A" functional_role="r"', "no closing '>'"),
])
def test_malformed_input_is_reported_not_raised(text, problem):
    p = parse_turns(text)
    assert any(problem in x for x in p.problems), p.problems


def test_unterminated_turn_stops_at_the_next_turn():
    p = parse_turns(tag("a", "A", "r", "one").replace("</turn>", "") + tag("b", "B", "r", "two"))
    assert [(t.author_id, t.body, t.terminated) for t in p.turns] == [("a", "one", False), ("b", "two", True)]


def test_text_outside_turns_and_no_tags():
    p = parse_turns("before " + tag("a", "A", "r", "x") + " after")
    assert p.outside == "before  after" and p.turns[0].body == "x"
    assert not has_turn_tag("a <turnstile> is not a turn") and parse_turns("<turnstile>").turns == []
    assert parse_turns(None).turns == [] and parse_turns("").outside == ""


def test_anomalies_across_a_thread():
    messages = [
        msg(1, "user", tag("u1", "Ann", "editor", "hello")),
        msg(2, "assistant", "Sure. " + tag("u1", "Ann", "editor", "quoted")),
        msg(3, "user", tag("u1", "Annie", "reviewer", "again")),
        msg(4, "user", "no tag at all"),
        msg(5, "user", '<turn author_id="u2" author_name="Bo" functional_role="r">open'),
        msg(6, "user", tag("u2", "Bo", "r", "a") + tag("u3", "Cy", "r", "b")),
        msg(7, "system", tag("u9", "Sys", "r", "ignored")),
    ]
    report = analyze_messages(messages, count_tokens=None)
    assert [(s.key, s.author_name, s.names, s.roles, s.messages) for s in report.speakers] == [
        ("u1", "Ann", ["Ann", "Annie"], ["editor", "reviewer"], 2), ("u2", "Bo", ["Bo"], ["r"], 2)]
    assert report.untagged_messages == 1
    kinds = {(a.kind, a.message_id) for a in report.anomalies}
    assert kinds == {("tag_in_non_user_message", "m2"), ("several_names", "m3"), ("several_roles", "m3"),
                     ("unterminated_tag", "m5"), ("several_speakers_in_message", "m6")}
    names = next(a for a in report.anomalies if a.kind == "several_names")
    assert names.text == "author_id u1 appears under 2 names: Ann, Annie"
    assert report.by_message == {"m1": "u1", "m3": "u1", "m5": "u2", "m6": "u2"}


def _oracle_tokens(thread_id, message_ids):
    per = load_oracle("collab")["tokens"][thread_id]["perMessage"]
    return sum(per[i] for i in message_ids)


@pytest.mark.parametrize("thread_id,expected", [
    ("doc_42", [("u_alice", "Alice", "editor", 4), ("u_bob", "Bob", "reviewer", 4),
                (OBRIEN_ID, OBRIEN, "approver", 3), ("u_李", "李小龍", "editor", 3)]),
    ("room_7", [("u_bob", "Bob", "reviewer", 1), (OBRIEN_ID, OBRIEN, "approver", 1), ("u_李", "李小龍", "editor", 1)]),
])
def test_collab_participants(fixture_db, capsys, thread_id, expected):
    path = fixture_db("collab")
    with open_store(path) as store:
        report = thread_speakers(store, thread_id)
    assert [(s.author_id, s.author_name, s.functional_role, s.messages) for s in report.speakers] == expected
    assert report.untagged_messages == 0 and report.anomalies == []
    for s in report.speakers:
        mine = [mid for mid, key in report.by_message.items() if key == s.key]
        assert s.tokens == _oracle_tokens(thread_id, mine) > 0

    assert main(["speakers", str(path), "--thread", thread_id, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == speakers_json(report)
    assert set(doc) == {"speakers", "untagged_messages"}
    assert all(set(s) == {"author_id", "author_name", "functional_role", "messages", "tokens"} for s in doc["speakers"])
    assert [s["author_name"] for s in doc["speakers"]] == [e[1] for e in expected]

"""Metadata filter validation, rule by rule and key by key, for listThreads and recall (API and CLI).

The rules are Mastra's (docs "Message history" + @mastra/core validateStorageMetadataFilter):
keys start with a letter or underscore, hold only letters, digits and underscores, are at most 128
characters and are not __proto__ / constructor / prototype; values are string, finite number,
boolean or null. A bad filter is an error (exit 2 on the CLI), never a silent empty result.
"""

from __future__ import annotations

import json

import pytest

from studio.cli import main
from studio.common.metadata_filter import (
    ValidationError,
    key_problem,
    message_metadata_matches,
    parse_key_value,
    parse_key_values,
    parse_metadata_json,
    validate_metadata_filter,
)
from studio.store import open_store
from studio.store.history import list_threads, recall

GOOD_KEYS = ["a", "Z", "_", "_private", "category", "camelCase", "snake_case_2", "x1", "A_B_9", "k" * 128,
             "_" * 128, "__proto", "proto__", "constructor_", "Prototype", "CONSTRUCTOR"]
BAD_KEYS = {
    "": "empty",
    "1abc": "start",
    "9": "start",
    "-x": "start",
    " lead": "start",
    "bad-key": "only letters",
    "dot.ted": "only letters",
    "spa ce": "only letters",
    "trail ": "only letters",
    "new\nline": "only letters",
    "$where": "start",
    "a$": "only letters",
    "ünïcode": "start",
    "café": "only letters",
    "名前": "start",
    "k" * 129: "129 characters",
    "_" * 200: "200 characters",
    "__proto__": "reserved",
    "constructor": "reserved",
    "prototype": "reserved",
}
GOOD_VALUES = ["text", "", 0, -3, 2, 3.5, -0.25, 1e300, True, False, None]
BAD_VALUES = [{"a": 1}, [1], [], {}, float("nan"), float("inf"), float("-inf"), (1, 2), b"bytes"]


@pytest.mark.parametrize("key", GOOD_KEYS)
def test_good_keys_pass(key):
    assert key_problem(key) is None
    assert validate_metadata_filter({key: "v"}) == {key: "v"}


@pytest.mark.parametrize("key,why", sorted(BAD_KEYS.items()))
def test_bad_keys_fail_with_the_rule(key, why):
    with pytest.raises(ValidationError) as err:
        validate_metadata_filter({key: "v"})
    assert why in str(err.value)
    # Also when a good key comes first: every key is checked.
    with pytest.raises(ValidationError):
        validate_metadata_filter({"ok": 1, key: "v"})


@pytest.mark.parametrize("value", GOOD_VALUES, ids=repr)
def test_scalar_values_pass(value):
    assert validate_metadata_filter({"k": value}) == {"k": value}


@pytest.mark.parametrize("value", BAD_VALUES, ids=repr)
def test_non_scalar_or_non_finite_values_fail(value):
    with pytest.raises(ValidationError) as err:
        validate_metadata_filter({"k": value})
    assert '"k"' in str(err.value)


@pytest.mark.parametrize("value", [[], ["a"], "text", 3, True])
def test_the_filter_must_be_an_object(value):
    with pytest.raises(ValidationError, match="JSON object"):
        validate_metadata_filter(value)


def test_empty_filter_means_no_filter():
    assert validate_metadata_filter(None) is None
    assert validate_metadata_filter({}) is None


def test_metadata_json_text():
    assert parse_metadata_json('{"category": "billing", "escalated": true, "archivedAt": null, "priority": 2}') == {
        "category": "billing", "escalated": True, "archivedAt": None, "priority": 2}
    for text in ("{", "NaN", '{"p": NaN}', '{"p": Infinity}', "[1]", '"text"', '{"a-b": 1}', '{"a": [1]}'):
        with pytest.raises(ValidationError):
            parse_metadata_json(text)


def test_key_value_conditions_as_typed_in_the_studio():
    assert parse_key_value("category=billing") == ("category", "billing")
    assert parse_key_value(" priority = 2 ") == ("priority", 2)
    assert parse_key_value("ratio=3.5") == ("ratio", 3.5)
    assert parse_key_value("escalated=true") == ("escalated", True)
    assert parse_key_value("archivedAt=null") == ("archivedAt", None)
    assert parse_key_value('code="2"') == ("code", "2")
    assert parse_key_value("note=a=b") == ("note", "a=b")
    assert parse_key_values('category=billing, note="x, y"; escalated=false') == {
        "category": "billing", "note": "x, y", "escalated": False}
    assert parse_key_values("  ") is None
    for text in ("category", "bad-key=1", "__proto__=1", 'obj={"a": 1}', "list=[1]"):
        with pytest.raises(ValidationError):
            parse_key_values(text)


def test_in_memory_match_follows_strict_equality():
    content = {"metadata": {"category": "billing", "escalated": True, "priority": 2, "archivedAt": None, "n": 1}}
    assert message_metadata_matches(content, {"category": "billing", "priority": 2.0})
    assert message_metadata_matches(content, {"archivedAt": None})
    assert not message_metadata_matches(content, {"missing": None})        # a missing key never matches
    assert not message_metadata_matches(content, {"escalated": 1})         # true is not 1
    assert not message_metadata_matches(content, {"n": True})              # 1 is not true
    assert not message_metadata_matches(content, {"priority": "2"})        # 2 is not "2"
    assert not message_metadata_matches({"metadata": None}, {"a": None})
    assert message_metadata_matches(json.dumps(content), {"category": "billing"})


@pytest.mark.parametrize("key,why", [*sorted(BAD_KEYS.items())[:8], ("__proto__", "reserved")])
def test_bad_filters_are_errors_in_both_calls_and_the_cli(fixture_db, capsys, key, why):
    path = fixture_db("support")
    with open_store(path) as store:
        with pytest.raises(ValidationError):
            list_threads(store, filter={"metadata": {key: 1}})
        with pytest.raises(ValidationError):
            recall(store, "support-meta", filter={"metadata": {key: 1}})
    text = json.dumps({key: 1})
    for argv in (["threads", str(path), "--metadata", text, "--json"],
                 ["recall", str(path), "--thread", "support-meta", "--metadata", text, "--json"]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and "metadata filter" in err


@pytest.mark.parametrize("value", ['{"a": 1}', "[1]", "NaN", "Infinity"])
def test_bad_values_exit_2_on_the_cli(fixture_db, capsys, value):
    path = fixture_db("support")
    assert main(["recall", str(path), "--thread", "support-meta", "--metadata", f'{{"k": {value}}}', "--json"]) == 2
    assert main(["threads", str(path), "--metadata", f'{{"k": {value}}}', "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("memory-studio:") == 2


def test_null_rules_differ_between_messages_and_threads(fixture_db):
    """Messages: null matches only an explicit null. Threads: Mastra's libSQL listThreads uses IS NULL, so a
    thread without the key matches too (support-2 has no archivedAt; Mastra's oracle lists it)."""
    path = fixture_db("support")
    with open_store(path) as store:
        msgs = recall(store, "support-meta", per_page=False, filter={"metadata": {"archivedAt": None}})
        assert msgs.message_ids == ["meta-msg-0", "meta-msg-5"]   # meta-msg-1/3/4 lack the key
        threads = list_threads(store, filter={"resource_id": "user-alice", "metadata": {"archivedAt": None}},
                               per_page=False)
        assert threads.thread_ids == ["support-2", "support-1"]

"""studio.engine.tokens reproduces Mastra's token estimates exactly.

The oracle values come from each fixture's `<name>.oracle.json` (see ../mastra-corpus/oracle.mjs):
`tokens.<thread>.perMessage.<id>` = `new TokenCounter().countMessages([m])`,
`tokens.<thread>.allMessages` = `countMessages(allMessagesOfThread)` and
`om.<lookupKey>.history[]` = `countString` / `countObservations` of each generation's observations.
Every other expected number below was produced by running the real packages under Node:
@mastra/memory 1.31.0's TokenCounter and the tokenx 1.3.0 heuristic it bundles.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import socket
import struct
from pathlib import Path

import libsql
import pytest

from studio.engine import tokens, tokenx
from studio.engine.exact_counts import ENCODINGS, tiktoken_encoding
from studio.engine.tokens import (
    count_message,
    count_message_for_status,
    count_messages,
    count_messages_for_status,
    count_observations,
    count_string,
    estimate_key,
    estimate_text,
    exact_message_tokens,
    exact_tokens,
    image_dimensions,
    js_json_stringify,
    model_visible_text,
)
from tests.conftest import FIXTURE_NAMES, load_oracle

ORACLES = {name: load_oracle(name) for name in FIXTURE_NAMES}
MESSAGE_CASES = [
    (name, thread_id, message_id)
    for name, oracle in ORACLES.items()
    for thread_id, counts in oracle["tokens"].items()
    for message_id in counts["perMessage"]
]
THREAD_CASES = [(name, thread_id) for name, oracle in ORACLES.items() for thread_id in oracle["tokens"]]
HISTORY_CASES = [
    (name, key, index)
    for name, oracle in ORACLES.items()
    for key, om in oracle["om"].items()
    for index in range(len(om["history"]))
]


def thread_messages(db_path: Path, thread_id: str) -> list[dict]:
    """Messages of THREAD_ID as `memory.recall({threadId, perPage: false})` returns them (oldest first)."""
    conn = libsql.connect(f"file:{db_path}?mode=ro")
    try:
        rows = conn.execute(
            'SELECT id, thread_id, content, role, type, "createdAt", "resourceId" FROM mastra_messages '
            'WHERE thread_id = ? ORDER BY "createdAt" ASC, rowid ASC',
            (thread_id,),
        ).fetchall()
    finally:
        conn.close()
    return [
        {"id": mid, "role": role, "content": json.loads(content), "createdAt": created, "threadId": tid,
         "resourceId": resource, "type": type_}
        for mid, tid, content, role, type_, created, resource in rows
    ]


def observations_of(db_path: Path, record_id: str) -> str:
    conn = libsql.connect(f"file:{db_path}?mode=ro")
    try:
        row = conn.execute(
            'SELECT "activeObservations" FROM mastra_observational_memory WHERE id = ?', (record_id,)
        ).fetchone()
    finally:
        conn.close()
    assert row is not None, record_id
    return row[0]


# ------------------------------------------------------------------------------- oracle parity

def test_every_fixture_is_covered():
    assert {c[0] for c in THREAD_CASES} == set(FIXTURE_NAMES)
    per_fixture = {name: sum(1 for c in MESSAGE_CASES if c[0] == name) for name in FIXTURE_NAMES}
    assert all(count > 0 for count in per_fixture.values()), per_fixture
    assert len(MESSAGE_CASES) + len(THREAD_CASES) + 2 * len(HISTORY_CASES) >= 500


@pytest.mark.parametrize(("name", "thread_id", "message_id"), MESSAGE_CASES,
                         ids=[f"{n}:{t}:{m}" for n, t, m in MESSAGE_CASES])
def test_count_of_each_message_matches_mastra(fixture_db, name, thread_id, message_id):
    expected = ORACLES[name]["tokens"][thread_id]["perMessage"][message_id]
    [message] = [m for m in thread_messages(fixture_db(name), thread_id) if m["id"] == message_id]
    pristine = copy.deepcopy(message)
    assert count_messages([message]) == expected
    assert message == pristine  # nothing is written back unless stamp=True
    assert count_message(message) + tokens.TOKENS_PER_CONVERSATION == expected
    assert count_messages_for_status([message]) == expected  # no attachments probed remotely here


@pytest.mark.parametrize(("name", "thread_id"), THREAD_CASES, ids=[f"{n}:{t}" for n, t in THREAD_CASES])
def test_count_of_whole_thread_matches_mastra(fixture_db, name, thread_id):
    expected = ORACLES[name]["tokens"][thread_id]
    messages = thread_messages(fixture_db(name), thread_id)
    assert [m["id"] for m in messages] == [m["id"] for m in ORACLES[name]["threads"][thread_id]["messages"]]
    assert count_messages(messages) == expected["allMessages"]
    # The oracle counted each message first (Mastra stamps its estimates into the objects), then
    # the whole list: replay that sequence too.
    stamped = copy.deepcopy(messages)
    assert [count_messages([m], stamp=True) for m in stamped] == [expected["perMessage"][m["id"]] for m in messages]
    assert count_messages(stamped) == expected["allMessages"]
    assert count_messages_for_status(messages) == expected["allMessages"]


@pytest.mark.parametrize(("name", "key", "index"), HISTORY_CASES, ids=[f"{n}:{k}:{i}" for n, k, i in HISTORY_CASES])
def test_observation_counts_match_mastra(fixture_db, name, key, index):
    entry = ORACLES[name]["om"][key]["history"][index]
    text = observations_of(fixture_db(name), entry["id"])
    assert tokenx.utf16_len(text) == entry["chars"]
    assert count_string(text) == entry["countString"]
    assert count_observations(text) == entry["countObservations"]


# ------------------------------------------------------------------------------- tokenx heuristic

# (text, tokens) from tokenx 1.3.0 `estimateTokenCount`, via Mastra 1.31.0's `TokenCounter.countString`.
TOKENX_CASES = [
    ("", 0),
    ("hello", 1),
    ("hello world", 2),
    ("h\u00e9llo w\u00f6rld", 4),  # accented Latin: 3 chars/token
    ("\U0001F600", 1),  # one emoji = 2 UTF-16 units: short segment
    ("\U0001F600\U0001F600", 1),  # 4 units, no rule letter: ceil(4 / 6)
    ("hi\U0001F600", 1),
    ("\U0001F326\ufe0f weather", 3),
    ("\U0001F44D\U0001F3FD" * 3, 2),  # 12 UTF-16 units
    ("\U0001F1E9\U0001F1EA\U0001F1EB\U0001F1F7", 2),
    ("\u6771\u4eac", 2),  # CJK: one token per character
    ("\u6771\u4eac\u306f\u6674\u308c\u3067\u3059", 7),
    ("\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4", 7),  # Hangul counts as CJK
    ("\u65e5\u672c\U0001F600", 3),  # CJK segments count code points, not UTF-16 units
    ("12345", 1),
    ("3.14159", 3),  # "." splits the number: 3 + "." + 14159
    ("1,234,567.89", 7),
    ("12345678901234567890", 1),
    ("!", 1),
    ("!!!", 1),
    ("!!!!!!!", 4),  # punctuation run: ceil(7 / 2)
    ("...", 1),
    ("?!?!?!", 3),
    ("-----", 3),
    ("a", 1),
    ("abc", 1),
    ("abcd", 1),
    ("abcdefg", 2),
    ("abcdefghijklm", 3),
    ("Stra\u00dfe", 2),  # German rule: 3 chars/token
    ("Gr\u00fc\u00dfe aus M\u00fcnchen", 6),
    ("\u1e9eTRASSE", 3),
    ("za\u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144", 6),  # Polish/Czech rule: 3.5
    ("na\u00efve caf\u00e9 r\u00e9sum\u00e9", 6),
    ("\u00c9COLE", 2),  # the language classes are case-insensitive
    ("\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0420\u0443\u0441\u0441\u043a\u0438\u0439", 4),
    ('"quoted"', 2),  # quotes are not tokenx punctuation
    ("it's", 1),
    ("tab\tand\nnewline\r\n", 4),
    ("non\u00a0breaking\u3000space", 4),  # JS \s includes NBSP and the ideographic space
    ("zero\u200bwidth", 2),  # ZWSP is not JS whitespace
    ("BOM\ufefftext", 2),  # U+FEFF is JS whitespace (not Python's)
    ("https://example.com/path?q=1&x=2", 16),
    ("def f(x):\n    return x ** 2  # square", 11),
    ('{"a": [1, 2, 3]}', 10),
    ("Z\u00fcrich: 7\u00b0C overcast. \u6771\u4eac: 15\u00b0C \u6674\u308c.", 14),
    ("\u0301\u0301\u0301\u0301", 1),  # combining marks
    ("\U00020000\U00020000", 1),  # astral CJK is outside tokenx's BMP class
    ("\uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48", 9),  # fullwidth forms count as CJK
]


@pytest.mark.parametrize(("text", "expected"), TOKENX_CASES, ids=[ascii(t)[:40] for t, _ in TOKENX_CASES])
def test_tokenx_heuristic_matches_tokenx(text, expected):
    assert estimate_text(text) == expected
    assert count_string(text) == expected
    assert count_observations(text) == expected


def test_utf16_lengths():
    utf16_len = tokenx.utf16_len
    assert utf16_len("abc") == 3
    assert utf16_len("\U0001F600") == 2
    assert utf16_len("\u00e9\U0001F600\u6771") == 4


# ---------------------------------------------------------------------------- message counting

PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKMSAwIG9iajw8L1R5cGUvQ2F0YWxvZz4+ZW5kb2JqCnRyYWlsZXI8PC9Sb290IDEgMCBSPj4KJSVFT0YK"
TEXT = "Cached estimates are reused only when version, source and key all match."


def png_header(width: int, height: int) -> str:
    raw = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height)
    return base64.b64encode(raw + b"\x08\x06\x00\x00\x00" + b"\x00" * 8).decode()


def cached(kind: str, payload: str, tokens_: float, v: int = 7, source: str = "v7:tokenx") -> dict:
    return {"v": v, "source": source, "key": estimate_key(kind, payload), "tokens": tokens_}


def msg(parts=None, role="assistant", content=None) -> dict:
    return {"id": "m", "role": role, "content": {"format": 2, "parts": parts} if parts is not None else content,
            "createdAt": "2026-01-01T00:00:00.000Z", "threadId": "t", "resourceId": "r"}


def tool(state: str, **invocation) -> dict:
    return {"type": "tool-invocation", "toolInvocation": {"state": state, "toolCallId": "c1", **invocation}}


def with_estimate(part: dict, estimate: dict) -> dict:
    return {**part, "providerMetadata": {"mastra": {"tokenEstimate": estimate}}}


TEXT_PART = {"type": "text", "text": TEXT}
SYNTHETIC = {
    "text_plain": msg([TEXT_PART]),
    "cache_valid_reused": msg([with_estimate(TEXT_PART, cached("text", TEXT, 999))]),
    "cache_old_version_ignored": msg([with_estimate(TEXT_PART, cached("text", TEXT, 999, v=6))]),
    "cache_other_source_ignored": msg([with_estimate(TEXT_PART, cached("text", TEXT, 999, source="v7:tiktoken"))]),
    "cache_wrong_key_ignored": msg([with_estimate(TEXT_PART, cached("text", TEXT + "!", 999))]),
    "cache_keyed_map_reused": msg([with_estimate(TEXT_PART, {
        "x": cached("text", "other", 1), estimate_key("text", TEXT): cached("text", TEXT, 500.4)})]),
    # the shortcut for text parts (tokens._stored_text_estimate) must reuse exactly what the full path reuses
    "cache_tokens_bool_ignored": msg([with_estimate(TEXT_PART, cached("text", TEXT, True))]),
    "cache_tokens_text_ignored": msg([with_estimate(TEXT_PART, cached("text", TEXT, "999"))]),
    "cache_tokens_beyond_safe_integer_reused": msg([with_estimate(TEXT_PART, cached("text", TEXT, 2 ** 60))]),
    "cache_tokens_float_reused": msg([with_estimate(TEXT_PART, cached("text", TEXT, 12.25))]),
    "cache_version_text_ignored": msg([with_estimate(TEXT_PART, cached("text", TEXT, 999, v="7"))]),
    "cache_version_float_reused": msg([with_estimate(TEXT_PART, cached("text", TEXT, 999, v=7.0))]),
    "cache_keyed_map_bad_entry_ignored": msg([with_estimate(TEXT_PART, {
        estimate_key("text", TEXT): cached("text", TEXT, 500, v=6)})]),
    "cache_repeated_text_parts": msg([with_estimate(TEXT_PART, cached("text", TEXT, 999)), TEXT_PART,
                                      with_estimate(TEXT_PART, {estimate_key("text", TEXT): cached("text", TEXT, 7)})]),
    "content_string_cached": msg(content={"format": 2, "content": TEXT, "metadata": {
        "mastra": {"tokenEstimate": cached("content-content", TEXT, 321)}}}),
    "plain_string_content": msg(content=TEXT),
    "image_1x1_png_file": msg([{"type": "file", "mimeType": "image/png", "data": PNG_1X1,
                                "filename": "photo.png"}], "user"),
    "image_800x600_data_url": msg([{"type": "image",
                                    "image": "data:image/png;base64," + png_header(800, 600)}], "user"),
    "image_4000x3000": msg([{"type": "image", "image": png_header(4000, 3000), "mimeType": "image/png"}], "user"),
    "image_url_not_probed": msg([{"type": "file", "data": "https://example.invalid/cat.jpg"}], "user"),
    "pdf_base64": msg([{"type": "file", "mimeType": "application/pdf", "data": PDF,
                        "filename": "floorplan.pdf"}], "user"),
    "pdf_url_descriptor": msg([{"type": "file", "mimeType": "application/pdf",
                                "data": "https://example.invalid/docs/Q3%20report.pdf"}], "user"),
    "client_estimate_wins": msg([with_estimate(
        {"type": "file", "mimeType": "application/pdf", "data": "ref:blob/123"},
        {"v": 0, "source": "client", "key": "client", "tokens": 4321})], "user"),
    "tool_call_json_args": msg([tool("call", toolName="getWeather", args={"city": "Z\u00fcrich", "days": 3})]),
    "tool_call_string_args": msg([tool("call", toolName="bookRoom", args='{"room":"12B","nights":2}')]),
    "tool_result_object": msg([tool("result", toolName="getWeather", args={"city": "\u6771\u4eac"},
                                    result={"tempC": 15, "sky": "\u6674\u308c", "hourly": [1.5, 2, -0.0, 1e21]})]),
    "tool_result_empty": msg([tool("result", toolName="noop", args={}, result="   ")]),
    "tool_result_model_output": msg([{**tool("result", toolName="search", args={"q": "x"}, result={"huge": "x" * 5000}),
                                      "providerMetadata": {"mastra": {"modelOutput": "3 hits, see summary"}}}]),
    "tool_result_encrypted_stripped": msg([tool("result", toolName="think", args={},
                                                result={"encryptedContent": "Q" * 2000, "ok": True})]),
    "tool_output_error": msg([tool("output-error", toolName="pay", args={"amount": 5}, errorText="card declined")]),
    "tool_output_denied": msg([tool("output-denied", toolName="deleteAll", args={},
                                    approval={"id": "a", "approved": False})]),
    "tool_approval_responded": msg([tool("approval-responded", toolName="deploy", args={"env": "prod"},
                                         approval={"id": "a", "approved": True, "reason": "Looks safe, ship it"})]),
    "tool_result_multimodal": msg([tool("result", toolName="screenshot", args={}, result={"type": "content", "value": [
        {"type": "text", "text": "Here is the page"},
        {"type": "image-data", "data": png_header(1600, 1200), "mediaType": "image/png"}]})]),
    "reasoning_and_data_free": msg([{"type": "reasoning", "reasoning": "long thought " * 50, "details": []},
                                    {"type": "data-om-status", "data": {"x": 1}}, {"type": "text", "text": "ok"}]),
    "generic_step_start": msg([{"type": "step-start"}, {"type": "source-url", "sourceId": "s1",
                                                        "url": "https://mastra.ai/docs", "title": "Docs"}]),
    "empty_parts": msg([]),
}

MODELS = [None, "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "google/gemini-2.5-pro"]
# `countMessages([m])` per model in MODELS order, from Mastra 1.31.0 (`new TokenCounter({model})`);
# countMessagesAsync gave the same numbers offline and countMessage the same minus 24. Recomputed by real
# Mastra in tests/interop/test_expected_data_interop.py; regenerate with tests/interop/regenerate.py.
SYNTHETIC_EXPECTED = {
    "text_plain": (46, 46, 46, 46),
    "cache_valid_reused": (1029, 1029, 1029, 1029),
    "cache_old_version_ignored": (46, 46, 46, 46),
    "cache_other_source_ignored": (46, 46, 46, 46),
    "cache_wrong_key_ignored": (46, 46, 46, 46),
    "cache_keyed_map_reused": (530, 530, 530, 530),
    "cache_tokens_bool_ignored": (46, 46, 46, 46),
    "cache_tokens_text_ignored": (46, 46, 46, 46),
    "cache_tokens_beyond_safe_integer_reused": (1152921504606847000,) * 4,
    "cache_tokens_float_reused": (42, 42, 42, 42),
    "cache_version_text_ignored": (46, 46, 46, 46),
    "cache_version_float_reused": (1029, 1029, 1029, 1029),
    "cache_keyed_map_bad_entry_ignored": (46, 46, 46, 46),
    "cache_repeated_text_parts": (1052, 1052, 1052, 1052),
    "content_string_cached": (351, 351, 351, 351),
    "plain_string_content": (46, 46, 46, 46),
    "image_1x1_png_file": (114, 2862, 30, 287),
    "image_800x600_data_url": (794, 25530, 669, 545),
    "image_4000x3000": (794, 25530, 2488, 6221),
    "image_url_not_probed": (114, 2862, 1629, 287),
    "pdf_base64": (529, 529, 1529, 287),
    "pdf_url_descriptor": (50, 50, 50, 50),
    "client_estimate_wins": (4350, 4350, 4350, 4350),
    "tool_call_json_args": (31, 31, 31, 31),
    "tool_call_string_args": (42, 42, 42, 42),
    "tool_result_object": (50, 50, 50, 50),
    "tool_result_empty": (28, 28, 28, 28),
    "tool_result_model_output": (34, 34, 34, 34),
    "tool_result_encrypted_stripped": (35, 35, 35, 35),
    "tool_output_error": (32, 32, 32, 32),
    "tool_output_denied": (34, 34, 34, 34),
    "tool_approval_responded": (33, 33, 33, 33),
    "tool_result_multimodal": (782, 25518, 2476, 1565),
    "reasoning_and_data_free": (31, 31, 31, 31),
    "generic_step_start": (65, 65, 65, 65),
    "empty_parts": (30, 30, 30, 30),
}


@pytest.mark.parametrize("case", sorted(SYNTHETIC))
@pytest.mark.parametrize("model", MODELS, ids=[m or "default" for m in MODELS])
def test_synthetic_message_matches_mastra(case, model):
    expected = SYNTHETIC_EXPECTED[case][MODELS.index(model)]
    message = copy.deepcopy(SYNTHETIC[case])
    assert count_messages([message], model=model) == expected
    assert count_message(message, model=model) == expected - 24
    assert count_messages_for_status([message], model=model) == expected
    assert count_message_for_status(message, model=model) == expected - 24
    assert message == SYNTHETIC[case]


def test_list_overhead_is_added_once_and_not_for_empty_lists():
    one = count_message(SYNTHETIC["text_plain"])
    assert count_messages([]) == 0
    assert count_messages_for_status([]) == 0
    assert count_messages([SYNTHETIC["text_plain"]] * 3) == 24 + 3 * one


def test_stamp_writes_mastra_cache_entries():
    message = copy.deepcopy(SYNTHETIC["text_plain"])
    count_messages([message], stamp=True)
    entry = message["content"]["parts"][0]["providerMetadata"]["mastra"]["tokenEstimate"]
    assert entry == {"v": 7, "source": "v7:tokenx", "key": estimate_key("text", TEXT), "tokens": count_string(TEXT)}
    # Mastra's own stamp for this text (sha256 of the UTF-8 payload).
    assert entry["key"] == "text:" + hashlib.sha256(TEXT.encode()).hexdigest()


def cached_provider_message() -> dict:
    """A 4000x3000 PNG whose part carries a valid cached `attachment-provider` estimate (1234) for openai/gpt-4o."""
    part = {"type": "image", "image": png_header(4000, 3000), "mimeType": "image/png"}
    remote = ('{"strategy":"provider-endpoint","provider":"openai","modelId":"gpt-4o","type":"image",'
              '"detail":"auto","mediaResolution":null,"mimeType":"image/png","filename":null,"source":"binary",'
              '"sizeBytes":37,"assetUrl":null,'
              '"assetHash":"3e34e3194790f59121725fe0f591d3357f3d09f152d32f08070a7b3de31d65a4"}')
    part["providerMetadata"] = {"mastra": {"tokenEstimate": {
        "v": 7, "source": "v7:tokenx", "key": estimate_key("attachment-provider", remote), "tokens": 1234}}}
    return msg([part], "user")


LOCAL_FALLBACK_IMAGE_KEY = "image-like-file:da9af35b36251dde8c9fc443658bfce1319ccbb413c3ed7b4d48ad940e20ca55"
LOCAL_FALLBACK_KEY = "attachment-provider:a9a9f25c28b10a7339e63c2bfe5ee063fcafca043466b979affad4a6c162263a"


def local_fallback_message() -> dict:
    """The image-URL message with the two entries countMessagesAsync stamps offline, the fallback one set to 777."""
    message = copy.deepcopy(SYNTHETIC["image_url_not_probed"])
    message["content"]["parts"][0]["providerMetadata"] = {"mastra": {"tokenEstimate": {
        LOCAL_FALLBACK_IMAGE_KEY: {"v": 7, "source": "v7:tokenx", "key": LOCAL_FALLBACK_IMAGE_KEY, "tokens": 1600},
        LOCAL_FALLBACK_KEY: {"v": 7, "source": "v7:tokenx", "key": LOCAL_FALLBACK_KEY, "tokens": 777}}}}
    return message


#: (model, message) whose sync and async (status) counts differ through cached provider entries.
ASYNC_CASES = {
    "cached_provider_gpt4o": ("openai/gpt-4o", cached_provider_message()),
    "cached_provider_no_model": (None, cached_provider_message()),
    "local_fallback_claude": ("anthropic/claude-sonnet-4-5", local_fallback_message()),
}
#: (countMessages, countMessagesAsync) of each ASYNC_CASES message, Mastra 1.31.0 `new TokenCounter({model})`,
#: offline; recomputed in tests/interop/test_expected_data_interop.py (tests/interop/regenerate.py).
ASYNC_EXPECTED = {
    "cached_provider_gpt4o": (794, 1263),   # async honours the provider entry: 1234 + 24 + 3.8 + role, rounded
    "cached_provider_no_model": (794, 794),  # no provider model: no provider cache
    "local_fallback_claude": (1629, 806),
}


@pytest.mark.parametrize("case", sorted(ASYNC_CASES))
def test_status_count_reuses_cached_provider_entries_like_mastra(case):
    model, message = copy.deepcopy(ASYNC_CASES[case])
    assert (count_messages([message], model=model), count_messages_for_status([message], model=model)) == \
        ASYNC_EXPECTED[case]


def test_status_count_stamps_the_local_fallback_like_mastra():
    # Mastra 1.31.0, model anthropic/claude-sonnet-4-5, offline: countMessagesAsync stamped these two
    # entries on the part (its local estimate, also under the provider `local-fallback` key).
    message = copy.deepcopy(SYNTHETIC["image_url_not_probed"])
    count_messages_for_status([message], model="anthropic/claude-sonnet-4-5", stamp=True)
    stamped = message["content"]["parts"][0]["providerMetadata"]["mastra"]["tokenEstimate"]
    assert stamped == {k: {"v": 7, "source": "v7:tokenx", "key": k, "tokens": 1600}
                       for k in (LOCAL_FALLBACK_IMAGE_KEY, LOCAL_FALLBACK_KEY)}
    stamped[LOCAL_FALLBACK_KEY]["tokens"] = 777
    assert message == local_fallback_message()


# ------------------------------------------------------------------------------- JS semantics

def test_json_stringify_matches_javascript():
    value = {"b": 1, "10": [1.0, -0.0, 1e21, 1e-7, 0.000001, 2**60, 5e-324, True, None],
             "2": "\u6771\u4eac \U0001F600 \"q\" \\ \n\x01\ud800", "a": {}, "01": []}
    # JSON.stringify output from node for the same object.
    assert js_json_stringify(value) == (
        '{"2":"\u6771\u4eac \U0001F600 \\"q\\" \\\\ \\n\\u0001\\ud800","10":[1,0,1e+21,1e-7,0.000001,'
        '1152921504606847000,5e-324,true,null],"b":1,"a":{},"01":[]}'
    )
    pretty = '{\n  "a": [\n    1,\n    {\n      "b": []\n    }\n  ],\n  "c": {}\n}'
    assert js_json_stringify({"a": [1, {"b": []}], "c": {}}, 2) == pretty


def test_image_dimensions_from_headers():
    assert image_dimensions(base64.b64decode(PNG_1X1)) == (1, 1)
    assert image_dimensions(base64.b64decode(png_header(800, 600))) == (800, 600)
    assert image_dimensions(b"GIF89a" + struct.pack("<HH", 320, 200) + b"\x00" * 4) == (320, 200)
    jpeg = (b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
            + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 480, 640) + b"\x00" * 10)
    assert image_dimensions(jpeg) == (640, 480)
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\x00" * 4 + (1023).to_bytes(3, "little") + (767).to_bytes(3, "little")
    assert image_dimensions(b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x) == (1024, 768)
    assert image_dimensions(b"not an image at all") is None
    assert image_dimensions(base64.b64decode(png_header(0, 5))) is None


# ------------------------------------------------------------------------------ exact o200k counts

def test_exact_tokens_work_offline(monkeypatch, tmp_path):
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))

    def no_network(*args, **kwargs):
        raise AssertionError("exact token counting tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    tiktoken_encoding.cache_clear()
    try:
        assert exact_tokens("hello world") == 2
        assert exact_tokens("") == 0
        assert exact_tokens("<|endoftext|>") > 1  # special-token text is counted as plain text
        assert exact_tokens("hello world", encoding="o200k_base") == 2
        with pytest.raises(ValueError):
            exact_tokens("hello", encoding="no_such_encoding")
    finally:
        tiktoken_encoding.cache_clear()


def test_the_bundled_encoding_is_tiktokens_own_definition(monkeypatch):
    """Pattern and special tokens equal the installed tiktoken's o200k_base (its ranks are what we bundle)."""
    import tiktoken_ext.openai_public as openai_public

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})  # no download: ranks aside
    spec = openai_public.o200k_base()
    pattern, special_tokens, _sha256 = ENCODINGS["o200k_base"]
    assert (spec["name"], spec["pat_str"], spec["special_tokens"]) == ("o200k_base", pattern, special_tokens)
    enc = tiktoken_encoding("o200k_base")
    assert enc.name == "o200k_base" and enc.n_vocab == 200019
    assert enc.encode("<|endoftext|>", allowed_special="all") == [199999]


def test_exact_message_tokens_count_model_visible_text():
    message = msg([
        {"type": "reasoning", "reasoning": "think", "details": [{"type": "text", "text": "plan it"}]},
        tool("result", toolName="getWeather", args={"city": "Paris"}, result={"tempC": 7}),
        {"type": "data-om-status", "data": {"hidden": True}},
        {"type": "file", "mimeType": "image/png", "data": PNG_1X1},
        {"type": "text", "text": "hello world"},
    ])
    text = model_visible_text(message)
    assert text == 'assistant\nplan it\ngetWeather\n{"city":"Paris"}\n{"tempC":7}\nhello world'
    assert exact_message_tokens(message) == exact_tokens(text)
    assert model_visible_text(msg(content="plain")) == "assistant\nplain"


def test_estimate_keys_are_remembered_within_their_budget(monkeypatch):
    import hashlib

    from studio.engine import estimate_cache

    monkeypatch.setattr(estimate_cache, "_KEY_MEMO_BUDGET", 10)
    estimate_cache.forget_estimate_keys()
    try:
        for text in ("abcdef", "abcdef", "ghijkl", "é" * 3):
            assert estimate_key("text", text) == "text:" + hashlib.sha256(text.encode()).hexdigest()
        # "abcdef" (6 chars) then "ghijkl" overflowed 10 chars: the memo was emptied, then took "ghijkl" and "ééé"
        remembered = estimate_cache._KEY_MEMO
        assert remembered == {"text": {"ghijkl": estimate_key("text", "ghijkl"), "ééé": estimate_key("text", "ééé")}}
    finally:
        estimate_cache.forget_estimate_keys()

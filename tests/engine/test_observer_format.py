"""format_messages_for_observer / format_other_threads_context against real Mastra output.

Expected strings live in data/observer_format_expected.json; its `_header` says how they
were produced (@mastra/memory 1.31.0's formatMessagesForObserver, run under Node in UTC) and how to
regenerate them (tests/interop/regenerate.py); tests/interop/test_expected_data_interop.py recomputes
them with real Mastra on every run.
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import libsql
import pytest

from studio.engine.observer_format import (
    estimate_token_count,
    format_messages_for_observer,
    format_other_threads_context,
)
from tests.conftest import FIXTURE_NAMES

EXPECTED = json.loads((Path(__file__).parent / "data" / "observer_format_expected.json").read_text(encoding="utf-8"))
FIXTURE_THREADS = [(name, thread) for name in FIXTURE_NAMES for thread in EXPECTED["fixtures"][name]["threads"]]
FIXTURE_RESOURCES = [(name, res) for name in FIXTURE_NAMES for res in EXPECTED["fixtures"][name]["resources"]]
SYNTHETIC = {case["name"]: case for case in EXPECTED["synthetic"]}
SYNTHETIC_CONTEXT = {case["name"]: case for case in EXPECTED["syntheticContext"]}


def load_messages(db_path: Path) -> dict[str, list[dict]]:
    """Read every thread's messages (oldest first) as MastraDBMessage-shaped dicts."""
    conn = libsql.connect(f"file:{db_path}?mode=ro")
    try:
        rows = conn.execute(
            'SELECT id, thread_id, content, role, type, "createdAt", "resourceId" '
            'FROM mastra_messages ORDER BY "createdAt" ASC'
        ).fetchall()
    finally:
        conn.close()
    by_thread: dict[str, list[dict]] = {}
    for msg_id, thread_id, content, role, type_, created_at, resource_id in rows:
        try:
            parsed = json.loads(content)
        except (TypeError, ValueError):
            parsed = content
        by_thread.setdefault(thread_id, []).append(
            {"id": msg_id, "role": role, "content": parsed, "createdAt": created_at,
             "threadId": thread_id, "resourceId": resource_id, "type": type_}
        )
    return by_thread


@pytest.fixture
def fixture_messages(fixture_db):
    cache: dict[str, dict[str, list[dict]]] = {}

    def get(name: str) -> dict[str, list[dict]]:
        if name not in cache:
            cache[name] = load_messages(fixture_db(name))
        return cache[name]

    return get


def test_expected_file_header():
    header = EXPECTED["_header"]
    assert "@mastra/memory 1.31.0" in header["description"]
    assert "maxPartLength: 500" in header["description"]
    assert header["timeZone"] == "UTC"
    assert "tests.interop.regenerate" in header["command"]   # regenerable: tests/interop/regenerate.py
    assert (Path(__file__).parents[1] / "interop" / "scripts" / "studio-observer-format.mjs").is_file()


@pytest.mark.parametrize(("name", "thread_id"), FIXTURE_THREADS, ids=[f"{n}:{t}" for n, t in FIXTURE_THREADS])
def test_fixture_thread_matches_mastra(fixture_messages, name, thread_id):
    expected = EXPECTED["fixtures"][name]["threads"][thread_id]
    messages = fixture_messages(name)[thread_id]
    assert [m["id"] for m in messages] == expected["messageIds"]
    assert format_messages_for_observer(messages, max_part_length=500) == expected["maxPartLength500"]
    assert format_messages_for_observer(messages) == expected["full"]


@pytest.mark.parametrize(("name", "resource_id"), FIXTURE_RESOURCES, ids=[f"{n}:{r}" for n, r in FIXTURE_RESOURCES])
def test_fixture_other_threads_context_matches_mastra(fixture_messages, name, resource_id):
    expected = EXPECTED["fixtures"][name]["resources"][resource_id]
    messages = fixture_messages(name)
    by_thread = {thread_id: messages.get(thread_id, []) for thread_id in expected["threadOrder"]}
    for current, block in expected["otherThreadsContext"].items():
        assert format_other_threads_context(by_thread, current) == block, current


def test_tools_fixture_hard_cases(fixture_messages):
    text = format_messages_for_observer(fixture_messages("tools")["tools-1"], max_part_length=500)
    assert "Tool Call getWeather: city: \"東京\"" in text
    assert "File: [Image #1: photo.png]\nFile: [File #1: floorplan.pdf]" in text
    assert "Reasoning (8:01 AM): Need two tool calls." in text
    assert "... [truncated 766 characters]" in text


@pytest.mark.parametrize("case", sorted(SYNTHETIC))
@pytest.mark.parametrize("variant", ["maxPartLength500", "full"])
def test_synthetic_case_matches_mastra(case, variant):
    data = SYNTHETIC[case]
    limit = 500 if variant == "maxPartLength500" else None
    assert format_messages_for_observer(data["messages"], max_part_length=limit) == data[variant]


@pytest.mark.parametrize("case", sorted(SYNTHETIC_CONTEXT))
def test_synthetic_other_threads_context_matches_mastra(case):
    data = SYNTHETIC_CONTEXT[case]
    by_thread = dict(data["threads"])
    for current, block in data["expected"].items():
        assert format_other_threads_context(by_thread, current) == block, current


def test_empty_inputs():
    assert format_messages_for_observer([]) == ""
    assert format_other_threads_context({}, "t") is None
    assert format_other_threads_context({"t": [{"id": "m", "role": "user", "content": "x"}]}, "t") is None


def test_time_zone_argument():
    msg = {"id": "m", "role": "user", "createdAt": "2026-05-05T23:30:00.000Z", "content": "hi"}
    assert format_messages_for_observer([msg]) == "May 5 2026:\nUser (11:30 PM): hi"
    assert format_messages_for_observer([msg], tz=UTC) == "May 5 2026:\nUser (11:30 PM): hi"
    assert format_messages_for_observer([msg], tz="Asia/Tokyo") == "May 6 2026:\nUser (8:30 AM): hi"


@pytest.mark.parametrize(("text", "tokens"), EXPECTED["tokenx"], ids=range(len(EXPECTED["tokenx"])))
def test_estimate_token_count_matches_tokenx(text, tokens):
    assert estimate_token_count(text) == tokens

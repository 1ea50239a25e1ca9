"""Facts of a fixture as Mastra reported them in its `<name>.oracle.json` (written by the corpus's oracle.mjs).

The studio tests take their expected generation numbers, token figures and titles from here (or from
the raw rows, tests/mastra_facts.py), never as literals of one corpus run, so that a regenerated
fixture does not make them wrong. Generation lists come from the oracle's `om.<lookupKey>.history`
(newest first), status figures from `om.<lookupKey>.status.<thread>` (Mastra's getStatus).
"""

from __future__ import annotations

from tests.conftest import load_oracle


def lookup_key_of(fixture: str, thread_id: str) -> str:
    """Return the OM lookupKey whose status lists THREAD_ID in FIXTURE's oracle; KeyError when none does."""
    for key, om in load_oracle(fixture)["om"].items():
        if thread_id in om["status"]:
            return key
    raise KeyError(f"{fixture}'s oracle has no OM status for thread {thread_id}")


def status(fixture: str, thread_id: str) -> dict:
    """Return Mastra's getStatus of THREAD_ID in FIXTURE (pendingTokens, threshold, generationCount, …)."""
    return load_oracle(fixture)["om"][lookup_key_of(fixture, thread_id)]["status"][thread_id]


def generations(fixture: str, lookup_key: str) -> list[int]:
    """Return the generationCount of each OM row of LOOKUP_KEY in FIXTURE, newest first."""
    return [row["generationCount"] for row in load_oracle(fixture)["om"][lookup_key]["history"]]


def current_generation(fixture: str, lookup_key: str) -> int:
    """Return the generationCount of LOOKUP_KEY's current (newest) OM row in FIXTURE."""
    return generations(fixture, lookup_key)[0]


def history_tokens(fixture: str, lookup_key: str) -> dict[int, int]:
    """Return {generationCount: stored observationTokenCount} of LOOKUP_KEY's OM rows in FIXTURE."""
    return {row["generationCount"]: row["observationTokenCount"]
            for row in load_oracle(fixture)["om"][lookup_key]["history"]}


def threads(fixture: str) -> dict[str, dict]:
    """Return {thread id: thread as Mastra's listThreads gave it (title, resourceId, metadata, dates)} of FIXTURE."""
    return {t["id"]: t for resource in load_oracle(fixture)["resources"].values() for t in resource["threads"]}


def title(fixture: str, thread_id: str) -> str:
    """Return THREAD_ID's title in FIXTURE, as Mastra stored it."""
    return threads(fixture)[thread_id]["title"]

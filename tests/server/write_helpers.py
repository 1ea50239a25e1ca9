"""Test helpers shared by the server write tests (PostgreSQL, MongoDB): commit a reflection the way a user does."""

from __future__ import annotations

from studio.engine.tokens import count_observations
from studio.store import open_store
from studio.store.writes import WriteSession
from tests.interop.answers import parse_answer


def commit_answer(target: str, thread_id: str, answer: str, session: WriteSession | None = None) -> dict:
    """Commit the Reflector ANSWER (`<observations>…` text, tests.interop.answers) as THREAD_ID's next generation
    on TARGET (any store), based on its current generation as read now; return the new row as the write returns
    it. SESSION (default a new WriteSession) routes the row backup."""
    with open_store(target) as store:
        lookup_key = store.lookup_key_for_thread(store.get_thread(thread_id))
        current = store.om_current(lookup_key)
    parsed = parse_answer(answer)
    return (session or WriteSession()).commit_reflection(
        target, lookup_key=lookup_key, expected_record_id=current.id,
        expected_active_observations=current.active_observations, observations=parsed["observations"],
        observation_tokens=count_observations(parsed["observations"]), current_task=parsed["current_task"],
        suggested_response=parsed["suggested_response"], thread_id=thread_id)

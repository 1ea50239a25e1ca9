"""How both faces report a message Mastra cannot count (`UncountableMessage`), in one place (no Qt).

`uncountable_note(exc)` is the JSON shape every document uses ({"message_id", "reason", "mastra_error",
"sentence"}); `uncountable_sentence(exc)` the one sentence shown to the user (the error's own text);
`UNCOUNTABLE_MARK` the sign the thread list and the Overview put beside such a thread.
"""

from __future__ import annotations

from studio.errors import UncountableMessage

__all__ = ["UNCOUNTABLE_MARK", "UncountableMessage", "uncountable_note", "uncountable_sentence"]

#: What the thread list and the Overview show beside a thread holding a message Mastra cannot count.
UNCOUNTABLE_MARK = "⚠"


def uncountable_sentence(exc: UncountableMessage) -> str:
    """Return the sentence for the user: which message Mastra cannot count, why, and what Mastra raises."""
    return exc.sentence()


def uncountable_note(exc: UncountableMessage) -> dict:
    """Return EXC as the JSON documents carry it: {"message_id", "reason", "mastra_error", "sentence"}."""
    return exc.to_json()

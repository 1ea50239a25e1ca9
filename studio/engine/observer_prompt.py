"""Build the Observer's prompts from our own texts in resources/prompts/ (no Mastra prose).

The system prompt (`observer_system.md`) explains the log format and asks for Mastra's answer
format: `<observations>` (required), `<current-task>`, `<suggested-response>`, optional
`<thread-title>`, which `studio.engine.observer_parse` reads as Mastra does. The task prompt
(`observer_task.md`) carries the messages rendered as Mastra's `formatMessagesForObserver`
renders them (`studio.engine.observer_format`); like Mastra's observer prompt it then adds the
prior current task / suggested response (`observer_prior.md`) and, in resource scope, the other
conversations' unobserved excerpts (`observer_others.md`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from functools import lru_cache

from studio.engine.observer_format import format_messages_for_observer
from studio.errors import EngineError
from studio.paths import RESOURCES

PROMPTS = RESOURCES / "prompts"


@dataclass(frozen=True)
class ObserverPrompt:
    """The two texts sent to the model: SYSTEM instructions and the user PROMPT."""

    system: str
    prompt: str


@lru_cache(maxsize=None)
def _read(name: str) -> str:
    path = PROMPTS / name
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise EngineError(f"The Observer prompt {path} is missing or unreadable: {exc.strerror or exc}") from exc


def system_prompt() -> str:
    """Return the Observer's system instructions."""
    return _read("observer_system.md")


def build_observer_prompt(messages: list[dict], *, prior_current_task: str | None = None,
                          prior_suggested_response: str | None = None, other_threads: str | None = None,
                          tz: tzinfo | str | None = None, max_part_length: int | None = None) -> ObserverPrompt:
    """Return the ObserverPrompt for MESSAGES (MastraDBMessage dicts, oldest first).

    OTHER_THREADS: the `<other-conversation>` blocks of resource scope (`format_other_threads_context`);
    TZ / MAX_PART_LENGTH as `format_messages_for_observer`. Raises EngineError when there is nothing
    to observe or a prompt file is missing.
    """
    transcript = format_messages_for_observer(messages, max_part_length, tz=tz).strip()
    if not transcript:
        raise EngineError("There are no messages to observe")
    parts = [_read("observer_task.md").replace("{{messages}}", transcript)]
    prior = []
    if prior_current_task and prior_current_task.strip():
        prior.append(f"<current-task>\n{prior_current_task.strip()}\n</current-task>")
    if prior_suggested_response and prior_suggested_response.strip():
        prior.append(f"<suggested-response>\n{prior_suggested_response.strip()}\n</suggested-response>")
    if prior:
        parts.append(_read("observer_prior.md").replace("{{prior}}", "\n\n".join(prior)))
    if other_threads and other_threads.strip():
        parts.append(_read("observer_others.md").replace("{{others}}", other_threads.strip()))
    return ObserverPrompt(system_prompt(), "\n\n".join(parts))

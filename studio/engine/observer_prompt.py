"""Build the Observer's prompts from our own texts in resources/prompts/ (no Mastra prose).

The system prompt (`observer_system.md`) explains the log format and asks for Mastra's answer
format: `<observations>` (required), `<current-task>`, `<suggested-response>`, optional
`<thread-title>`, which `studio.engine.observer_parse` reads as Mastra does. The task prompt
(`observer_task.md`) carries the messages rendered as Mastra's `formatMessagesForObserver`
renders them (`studio.engine.observer_format`); like Mastra's observer prompt it then adds the
prior current task / suggested response (`observer_prior.md`) and, in resource scope, the other
conversations' unobserved excerpts (`observer_others.md`). Like Mastra's task prompt, the log
already kept comes first (`observer_previous.md`), cut to its newest lines within
`previous_tokens` (Mastra's `observation.previousObserverTokens`, 2,000 by default).

Resource scope (`build_multi_thread_prompt`, as Mastra's multi-thread Observer call): the
messages of every picked thread, each in a `<thread id="T">` block (`observer_task_threads.md`),
the prior hints per thread (`observer_prior_threads.md`), and the answer asked per thread,
which `studio.engine.observer_parse.parse_multi_thread_output` reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from functools import cache

from studio.engine import tokens
from studio.engine.observer_format import format_messages_for_observer
from studio.errors import EngineError
from studio.paths import RESOURCES

PROMPTS = RESOURCES / "prompts"
#: Mastra's default `observation.previousObserverTokens`: how much of the kept log the Observer sees.
PREVIOUS_OBSERVER_TOKENS = 2000


@dataclass(frozen=True)
class ObserverPrompt:
    """The two texts sent to the model: SYSTEM instructions and the user PROMPT."""

    system: str
    prompt: str


@cache
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
                          tz: tzinfo | str | None = None, max_part_length: int | None = None,
                          previous: str | None = None,
                          previous_tokens: int = PREVIOUS_OBSERVER_TOKENS) -> ObserverPrompt:
    """Return the ObserverPrompt for MESSAGES (MastraDBMessage dicts, oldest first).

    OTHER_THREADS: the `<other-conversation>` blocks of resource scope (`format_other_threads_context`);
    TZ / MAX_PART_LENGTH as `format_messages_for_observer`; PREVIOUS: the log already kept (its
    newest lines within PREVIOUS_TOKENS tokens are shown). Raises EngineError when there is nothing
    to observe or a prompt file is missing.
    """
    transcript = format_messages_for_observer(messages, max_part_length, tz=tz).strip()
    if not transcript:
        raise EngineError("There are no messages to observe")
    parts = _previous_part(previous, previous_tokens)
    parts.append(_read("observer_task.md").replace("{{messages}}", transcript))
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


def tail_within(log: str, budget: int) -> tuple[str, bool]:
    """Return (the newest whole lines of LOG whose Mastra estimate fits BUDGET tokens, whether lines were cut).

    A budget of 0 or less keeps the whole log (Mastra's previousObserverTokens: false / 0 = no cut).
    """
    log = (log or "").strip()
    if budget <= 0 or tokens.count_observations(log) <= budget:
        return log, False
    kept: list[str] = []
    for line in reversed(log.split("\n")):
        if kept and tokens.count_observations("\n".join([line, *kept])) > budget:
            break
        kept.insert(0, line)
    return "\n".join(kept).strip(), True


def _previous_part(previous: str | None, budget: int) -> list[str]:
    if not previous or not previous.strip():
        return []
    shown, _cut = tail_within(previous, budget)
    return [_read("observer_previous.md").replace("{{previous}}", shown)] if shown else []


def build_multi_thread_prompt(threads: list[tuple[str, list[dict]]], *, prior: dict[str, tuple[str | None, str | None]]
                              | None = None, previous: str | None = None,
                              previous_tokens: int = PREVIOUS_OBSERVER_TOKENS, tz: tzinfo | str | None = None,
                              max_part_length: int | None = None) -> ObserverPrompt:
    """Return the resource-scope ObserverPrompt for THREADS ([(thread id, its messages oldest first)], in order).

    PRIOR: {thread id: (current task, suggested response)} before these messages; PREVIOUS and
    PREVIOUS_TOKENS as in `build_observer_prompt`. A thread whose messages render to nothing is
    left out, as Mastra's buildMultiThreadObserverHistoryMessage leaves it out. Raises EngineError
    when no thread has anything to observe.
    """
    blocks = []
    for thread_id, messages in threads:
        transcript = format_messages_for_observer(messages, max_part_length, tz=tz).strip()
        if transcript:
            blocks.append(f'<thread id="{thread_id}">\n{transcript}\n</thread>')
    if not blocks:
        raise EngineError("There are no messages to observe")
    parts = _previous_part(previous, previous_tokens)
    parts.append(_read("observer_task_threads.md").replace("{{count}}", str(len(blocks)))
                 .replace("{{threads}}", "\n\n".join(blocks)))
    lines = []
    for thread_id, _ in threads:
        task, response = (prior or {}).get(thread_id, (None, None))
        entry = [f"- thread {thread_id}"]
        if task and task.strip():
            entry.append(f"  - current task: {task.strip()}")
        if response and response.strip():
            entry.append(f"  - suggested response: {response.strip()}")
        if len(entry) > 1:
            lines.append("\n".join(entry))
    if lines:
        parts.append(_read("observer_prior_threads.md").replace("{{prior}}", "\n".join(lines)))
    return ObserverPrompt(system_prompt(), "\n\n".join(parts))

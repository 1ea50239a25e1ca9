"""Build the Reflector's prompts from our own texts in resources/prompts/.

The system prompt (`reflector_system.md`) explains the log format and asks for Mastra's answer
format: `<observations>` (required), `<current-task>`, `<suggested-response>`, optional
`<thread-title>`. The task prompt (`reflector_task.md`) carries the log, its size and the target;
like Mastra's buildReflectorPrompt it then adds the prior current task / suggested response
(`reflector_prior.md`) and, from level 1 on, the compression guidance of that level
(`reflector_compression.md`, Mastra's levels 0-4). Retrieval-mode `<observation-group>` wrappers
are removed from the log first, as Mastra does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from studio.engine.reflector_parse import strip_observation_groups
from studio.errors import EngineError
from studio.paths import PROMPTS

#: Mastra's MAX_COMPRESSION_LEVEL.
MAX_COMPRESSION_LEVEL = 4


@dataclass(frozen=True)
class ReflectorPrompt:
    """The two texts sent to the model: SYSTEM instructions and the user PROMPT (for one LEVEL)."""

    system: str
    prompt: str
    level: int


@cache
def _read(name: str, folder: Path = PROMPTS) -> str:
    path = folder / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EngineError(f"The Reflector prompt {path} is missing or unreadable: {exc.strerror or exc}") from exc


@cache
def compression_guidance() -> dict[int, str]:
    """Return {level: guidance text} for levels 1-4 (level 0 adds none), from reflector_compression.md."""
    text = _read("reflector_compression.md")
    out: dict[int, str] = {}
    for match in re.finditer(r"^## level (\d)\s*\n(.*?)(?=^## level \d\s*$|\Z)", text, re.MULTILINE | re.DOTALL):
        out[int(match.group(1))] = match.group(2).strip()
    missing = [lvl for lvl in range(1, MAX_COMPRESSION_LEVEL + 1) if lvl not in out]
    if missing:
        raise EngineError(f"reflector_compression.md lacks level(s) {missing}")
    return out


def system_prompt() -> str:
    """Return the Reflector's system instructions."""
    return _read("reflector_system.md").strip()


def build_prompt(observations: str, *, level: int, input_tokens: int, target_tokens: int,
                 prior_current_task: str | None = None, prior_suggested_response: str | None = None) -> ReflectorPrompt:
    """Return the ReflectorPrompt for OBSERVATIONS at compression LEVEL (0-4).

    INPUT_TOKENS / TARGET_TOKENS (tokens, Mastra's estimate) are stated to the model; the prior
    hints are shown as carry-forward values like Mastra's "Prior Extracted Values".
    """
    if not 0 <= level <= MAX_COMPRESSION_LEVEL:
        raise EngineError(f"Compression level must be 0-{MAX_COMPRESSION_LEVEL}, not {level}")
    task = (_read("reflector_task.md").strip()
            .replace("{{input_tokens}}", f"{input_tokens:,}")
            .replace("{{target_tokens}}", f"{target_tokens:,}"))
    # the log goes in last so that braces or placeholders inside it are never touched
    task = task.replace("{{observations}}", strip_observation_groups(observations).strip())
    parts = [task]
    prior = []
    if prior_current_task and prior_current_task.strip():
        prior.append(f"<current-task>\n{prior_current_task.strip()}\n</current-task>")
    if prior_suggested_response and prior_suggested_response.strip():
        prior.append(f"<suggested-response>\n{prior_suggested_response.strip()}\n</suggested-response>")
    if prior:
        parts.append(_read("reflector_prior.md").strip().replace("{{prior}}", "\n\n".join(prior)))
    if level:
        parts.append(compression_guidance()[level])
    return ReflectorPrompt(system_prompt(), "\n\n".join(parts), level)

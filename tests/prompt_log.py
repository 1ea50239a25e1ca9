"""The prompt log of the corpus's scripted model (MC_PROMPT_LOG, ../shared/mastra-corpus/README.md), read back.

`generate` runs `gen.mjs --only SCENARIO --seed 1` with the log on; `logged_view` takes one main-agent
call apart into the `model_view` shape: the observation block is what follows Mastra's
`<observations>` system message up to the `<current-task>` / `<suggested-response>` sections (the
log joins system messages with a newline), and a user message wrapped in `<system-reminder>` is
Mastra's continuation reminder, compared by kind only. `locate` ties a call to its stored turn by
the last user message's text (the corpus's facts make it unique).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

HINT_START = "<system-reminder>"


def generate(corpus: Path, out: Path, scenario: str) -> tuple[Path, list[dict]]:
    """Run gen.mjs for SCENARIO into OUT with a prompt log; return (the .db, the main agent's calls in order)."""
    from tests.interop.conftest import run_node

    log = out / f"{scenario}.prompts.jsonl"
    old = os.environ.get("MC_PROMPT_LOG")
    os.environ["MC_PROMPT_LOG"] = str(log)
    try:
        run_node(corpus, "gen.mjs", str(out), "--only", scenario, "--seed", "1", clock=True)
    finally:
        if old is None:
            os.environ.pop("MC_PROMPT_LOG", None)
        else:
            os.environ["MC_PROMPT_LOG"] = old
    return out / f"{scenario}.db", main_calls(log)


def main_calls(log: Path) -> list[dict]:
    """Return the main agent's calls of prompt log LOG, in order."""
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c for c in calls if c["kind"] == "main"]


def logged_view(call: dict) -> dict:
    """Return {observations, current_task, suggested_response, messages} of one logged main-agent call."""
    system = call["system"]
    observations = task = suggestion = None
    start = system.find("\n<observations>\n")
    if start >= 0:
        rest = system[start + len("\n<observations>\n"):]
        m = re.search(r"\n<suggested-response>\n(.*)\n</suggested-response>$", rest, re.S)
        if m:
            suggestion, rest = m.group(1), rest[:m.start()]
        m = re.search(r"\n<current-task>\n(.*)\n</current-task>$", rest, re.S)
        if m:
            task, rest = m.group(1), rest[:m.start()]
        observations = rest
    messages = [{"role": m["role"], "kind": "continuation-hint"} if m["text"].startswith(HINT_START)
                else {"role": m["role"], "text": m["text"]} for m in call["messages"]]
    return {"observations": observations, "current_task": task, "suggested_response": suggestion,
            "messages": messages}


def studio_view(model_view: dict) -> dict:
    """Return a `model_view` document reduced to what the prompt log shows (texts, roles, kinds)."""
    return {"observations": model_view["observations"]["text"],
            "current_task": model_view["current_task"]["text"],
            "suggested_response": model_view["suggested_response"]["text"],
            "messages": [{k: m[k] for k in ("role", "text", "kind") if k in m} for m in model_view["messages"]]}


def text_of(content) -> str:
    """Return a stored message's text parts joined by newlines (how the log writes a message)."""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text") or "" for p in content.get("parts") or [] if p.get("type") == "text")


def last_user_text(call: dict) -> str:
    """Return the text of the call's last user message (the turn's input)."""
    return [m for m in call["messages"] if m["role"] == "user"][-1]["text"]

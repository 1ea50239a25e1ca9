"""The prompt log of the corpus's scripted model (MC_PROMPT_LOG, ../shared/mastra-corpus/README.md), read back.

`generate` runs `gen.mjs --only SCENARIO --seed 1` with the log on; `logged_view` takes one main-agent
call apart into the `model_view` shape: the observation block is what follows Mastra's
`<observations>` system message up to the `<current-task>` / `<suggested-response>` sections (the
log joins system messages with a newline), and a user message wrapped in `<system-reminder>` is
Mastra's continuation reminder, compared by kind only. `locate` ties a call to its stored turn by
the last user message's text (the corpus's facts make it unique).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

HINT_START = "<system-reminder>"


@contextlib.contextmanager
def prompt_log(log: Path):
    """Set MC_PROMPT_LOG to LOG (a new, empty file: the model appends) for the node runs inside the block."""
    log.unlink(missing_ok=True)
    old = os.environ.get("MC_PROMPT_LOG")
    os.environ["MC_PROMPT_LOG"] = str(log)
    try:
        yield log
    finally:
        if old is None:
            os.environ.pop("MC_PROMPT_LOG", None)
        else:
            os.environ["MC_PROMPT_LOG"] = old


def generate(corpus: Path, out: Path, scenario: str, seed: int = 1, scale: int = 1) -> tuple[Path, list[dict]]:
    """Run gen.mjs for SCENARIO (SEED, SCALE) into OUT with a prompt log; return (the .db, the main agent's calls in
    order)."""
    from tests.interop.conftest import run_node

    with prompt_log(out / f"{scenario}.prompts.jsonl") as log:
        run_node(corpus, "gen.mjs", str(out), "--only", scenario, "--seed", str(seed), "--scale", str(scale),
                 clock=True)
    return out / f"{scenario}.db", main_calls(log)


def generate_working_memory(corpus: Path, out: Path) -> tuple[Path, list[dict]]:
    """Run tests/interop/scripts/studio-wm-prompts.mjs into OUT/wm.db with a prompt log; return (db, main calls)."""
    from tests.interop.conftest import run_node

    with prompt_log(out / "wm.prompts.jsonl") as log:
        run_node(corpus, "studio-wm-prompts.mjs", str(out / "wm.db"), clock=True)
    return out / "wm.db", main_calls(log)


@dataclass
class Comparison:
    """Every logged turn against the studio's model view of it (`compare`); keys are (thread id, turn)."""

    count: int = 0
    diffs: dict = field(default_factory=dict)          # turn -> keys that differ (a latest working memory aside)
    reflected: set = field(default_factory=set)        # turns whose step 0 ran a reflection
    exactness: dict = field(default_factory=dict)      # turn -> the working memory's "exact" | "latest"
    saw_other_value: set = field(default_factory=set)  # turns whose logged working memory is not the stored one
    unsure: set = field(default_factory=set)           # turns whose block says a section may hold later lines


def compare(store, calls: list[dict], last_messages: int | None = None) -> Comparison:
    """Compare each logged main-agent call of CALLS with `context`'s model view of its turn in STORE (open).

    A task or suggestion whose source the view says is unknown must be None and is not compared; a
    working memory the view marks `latest` is not compared (it is the newest value, which the turn
    may not have seen) and is recorded in `saw_other_value` when it differs.
    """
    from studio.app.trace import context_document, without_om
    from studio.engine.context import thread_turns
    from studio.engine.events import REFLECTION
    from studio.engine.timeline import build_timeline

    out = Comparison(count=len(calls))
    users: dict[str, list] = {}
    for thread in store.list_threads():
        for m in store.list_messages(thread.id):
            if m.role == "user":
                users.setdefault(text_of(m.content), []).append(m)
    timelines = {}
    for call in calls:
        [message] = users[last_user_text(call)]
        tid = message.thread_id
        if without_om(store, tid):
            turn = [m.id for m in store.list_messages(tid) if m.role == "user"].index(message.id) + 1
        else:
            tl = timelines.get(tid) or timelines.setdefault(tid, build_timeline(store, tid))
            turn = [tl.messages[i].id for _, i in thread_turns(tl, tid)].index(message.id) + 1
        doc = context_document(store, tid, turn, last_messages=last_messages)
        view = doc["model_view"]
        if any(e["type"] == REFLECTION for e in doc.get("events", [])):
            out.reflected.add((tid, turn))
        want, got = logged_view(call), studio_view(view)
        for key in ("current_task", "suggested_response"):
            if (view[key]["source"] or {}).get("kind") == "unknown":
                assert got[key] is None
                want[key] = None
        out.exactness[(tid, turn)] = view["working_memory"]["exactness"]
        if (view["observations"]["source"] or {}).get("sections_unsure"):
            out.unsure.add((tid, turn))
        if want["working_memory"] != got["working_memory"]:
            out.saw_other_value.add((tid, turn))
            if view["working_memory"]["exactness"] == "latest":
                want["working_memory"] = got["working_memory"]
        diff = [k for k in want if want[k] != got[k]]
        if diff:
            out.diffs[(tid, turn)] = diff
    return out


def main_calls(log: Path) -> list[dict]:
    """Return the main agent's calls of prompt log LOG, in order."""
    calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [c for c in calls if c["kind"] == "main"]


def logged_view(call: dict) -> dict:
    """Return {working_memory, observations, current_task, suggested_response, messages} of one logged main call.

    working_memory: the text between Mastra's `<working_memory_data>` tags (None when absent or `null`).
    """
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
    wm = re.search(r"\n<working_memory_data>\n(.*?)\n</working_memory_data>\n", system, re.S)
    working_memory = wm.group(1) if wm and wm.group(1) != "null" else None
    messages = [{"role": m["role"], "kind": "continuation-hint"} if m["text"].startswith(HINT_START)
                else {"role": m["role"], "text": m["text"]} for m in call["messages"]]
    return {"working_memory": working_memory, "observations": observations, "current_task": task,
            "suggested_response": suggestion, "messages": messages}


def studio_view(model_view: dict) -> dict:
    """Return a `model_view` document reduced to what the prompt log shows (texts, roles, kinds)."""
    return {"working_memory": model_view["working_memory"]["text"],
            "observations": model_view["observations"]["text"],
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

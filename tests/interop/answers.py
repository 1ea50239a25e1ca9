"""Reflector answers for the interop tests, read with the engine's parser (as `reflect` reads a model's answer).

Each answer has a distinctive first observation line, so `continue.mjs` can tell whether Mastra
put our observations in front of the model.
"""

from __future__ import annotations

from studio.engine.reflector_parse import parse_reflector_output


def parse_answer(text: str) -> dict:
    """Return {observations, current_task, suggested_response, thread_title} of a Reflector answer."""
    parsed = parse_reflector_output(text)
    assert not parsed.degenerate and not parsed.empty
    return {"observations": parsed.observations, "current_task": parsed.current_task,
            "suggested_response": parsed.suggested_response, "thread_title": parsed.thread_title}


def answer_for(name: str, *, with_task: bool = True, with_response: bool = True) -> str:
    """Return a Reflector answer for fixture NAME (observations always; the other sections on request)."""
    parts = [
        "Here is the condensed memory.",
        "<observations>",
        f"* 🔴 (09:00) Studio interop {name}: the user's key fact, \"quoted\" & <kept> ünï 🎉",
        "Date: Dec 1, 2026",
        "* 🟡 (09:05) A medium detail that still matters.",
        "  * -> a sub-detail of it",
        "* ✅ (09:10) A completed item.",
        "</observations>",
        "",
    ]
    if with_task:
        parts += ["<current-task>", f"- Primary: interop task for {name}", "</current-task>", ""]
    if with_response:
        parts += ["<suggested-response>", f"Continue the {name} conversation.", "</suggested-response>", ""]
    parts += ["<thread-title>A title reflection does not write</thread-title>"]
    return "\n".join(parts) + "\n"

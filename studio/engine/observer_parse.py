"""Read an Observer answer the way Mastra does (@mastra/memory 1.31.0, observer-agent.ts `parseObserverOutput`).

`parse_observer_output(text, slugs)` mirrors `parseObserverOutput` with the inline extractors
SLUGS (Mastra's defaults: current-task and suggested-response, plus thread-title when the
`threadTitle` option is on):

1. Degenerate output (`detect_degenerate_repetition`, shared with the Reflector) gives no
   observations and `degenerate=True`.
2. Extracted values: an `<extracted-values>{json}</extracted-values>` block wins, else the LAST
   `<slug>…</slug>` anywhere (a JSON-looking value that parses to a string is unquoted); those
   sections are cut out of the answer. Values are trimmed; empty ones count as absent.
3. Observations: every `<observations>…</observations>` block whose tags start a line (case
   insensitive), trimmed, empty blocks dropped, joined with a newline; without such a block, only
   the answer's list lines (`- `, `* `, `1. `, indented ones too), trimmed; nothing else.
4. A slug that is not an active extractor is read from its first section whose tags start a line
   (`<thread-title>`'s closing tag may follow on the same line).
5. Lines over 10,000 UTF-16 code units are cut there with ` … [truncated]`. Unlike the
   Reflector's, anchor ids are kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from studio.common.jscompat import JS_LINE_START, JS_SPACE, js_trim
from studio.common.om_settings import observer_extractors
from studio.engine.reflector_parse import (
    detect_degenerate_repetition,
    sanitize_observation_lines,
    string_extractor_value,
)

#: JavaScript's `i` flag without `u` (ASCII case folding of the tag names only).
_I = re.IGNORECASE | re.ASCII

#: Mastra's default Observer extractors (continuation hints on, thread titles off).
DEFAULT_SLUGS = ("current-task", "suggested-response")


def observer_slugs(config: dict | None) -> tuple[str, ...]:
    """Return the inline extractor slugs of a record's stored CONFIG (`om_settings.observer_extractors`):
    thread-title is one when the record has `observation.threadTitle` on."""
    return tuple(spec.slug for spec in observer_extractors(config))
_OBSERVATIONS = re.compile(rf"{JS_LINE_START}[ \t]*<observations>([\s\S]*?){JS_LINE_START}[ \t]*</observations>", _I)
_EXTRACTED = re.compile(r"<extracted-values>([\s\S]*?)</extracted-values>", _I)
_EXTRACTED_STRIP = re.compile(rf"[ \t]*<extracted-values>[\s\S]*?</extracted-values>{JS_SPACE}*", _I)
_LIST_LINE = re.compile(rf"{JS_SPACE}*[-*]{JS_SPACE}|{JS_SPACE}*[0-9]+\.{JS_SPACE}")  # used with .match
_SECTION_FIRST = {
    "current-task": re.compile(
        rf"{JS_LINE_START}[ \t]*<current-task>([\s\S]*?){JS_LINE_START}[ \t]*</current-task>", _I),
    "suggested-response": re.compile(
        rf"{JS_LINE_START}[ \t]*<suggested-response>([\s\S]*?){JS_LINE_START}[ \t]*</suggested-response>", _I),
    "thread-title": re.compile(rf"{JS_LINE_START}[ \t]*<thread-title>([\s\S]*?)</thread-title>", _I),
}


@dataclass
class ParsedObservation:
    """One parsed Observer answer.

    `observations` are the new lines ('' when degenerate or none); `current_task`,
    `suggested_response`, `thread_title` are None when the answer has none; `extracted` holds
    every inline extractor's value by slug.
    """

    observations: str
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    degenerate: bool = False
    extracted: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Return True when the answer held no observation lines (and was not degenerate)."""
        return not self.degenerate and not js_trim(self.observations)

    def to_json(self) -> dict:
        """Return {observations, currentTask, suggestedContinuation, threadTitle, degenerate} as Mastra names them."""
        return {"observations": self.observations, "currentTask": self.current_task,
                "suggestedContinuation": self.suggested_response, "threadTitle": self.thread_title,
                "degenerate": self.degenerate}


def _extracted_values(text: str, slugs: tuple[str, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    for block in _EXTRACTED.findall(text):
        try:
            obj = json.loads(js_trim(block))
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        for slug in slugs:
            value = obj.get(slug)
            if isinstance(value, str) and value != "":
                values[slug] = value
    for slug in slugs:
        if slug in values:
            continue
        matches = re.findall(rf"<{re.escape(slug)}>([\s\S]*?)</{re.escape(slug)}>", text, _I)
        raw = js_trim(matches[-1]) if matches else ""
        if raw and (value := string_extractor_value(raw)) is not None:
            values[slug] = value
    return values


def _strip_sections(text: str, slugs: tuple[str, ...]) -> str:
    out = _EXTRACTED_STRIP.sub("", text)
    for slug in slugs:
        out = re.sub(rf"[ \t]*<{re.escape(slug)}>[\s\S]*?</{re.escape(slug)}>{JS_SPACE}*", "", out, flags=_I)
    return out


def _string(values: dict[str, str], slug: str) -> str | None:
    value = values.get(slug)
    return js_trim(value) if isinstance(value, str) and js_trim(value) else None


def parse_observer_output(output: str, slugs: tuple[str, ...] = DEFAULT_SLUGS) -> ParsedObservation:
    """Parse an Observer answer into a ParsedObservation (never raises; see the module docstring)."""
    output = output or ""
    if detect_degenerate_repetition(output):
        return ParsedObservation(observations="", degenerate=True)
    values = _extracted_values(output, slugs)
    stripped = _strip_sections(output, slugs)
    blocks = _OBSERVATIONS.findall(stripped)
    if blocks:
        observations = "\n".join(t for t in (js_trim(b) for b in blocks) if t)
    else:
        observations = js_trim("\n".join(line for line in stripped.split("\n") if _LIST_LINE.match(line)))
    observations, _cut = sanitize_observation_lines(observations)
    sections = {}
    for slug, pattern in _SECTION_FIRST.items():
        m = pattern.search(stripped)
        sections[slug] = js_trim(m.group(1)) if m and js_trim(m.group(1)) else None
    return ParsedObservation(
        observations=observations,
        current_task=sections["current-task"] or _string(values, "current-task"),
        suggested_response=sections["suggested-response"] or _string(values, "suggested-response"),
        thread_title=sections["thread-title"] or _string(values, "thread-title"),
        extracted=values,
    )


_THREAD_BLOCK = re.compile(rf'<thread{JS_SPACE}+id="([^"]+)">([\s\S]*?)</thread>', _I)
_OBSERVATIONS_FIRST = _OBSERVATIONS


def parse_multi_thread_output(output: str, slugs: tuple[str, ...] = DEFAULT_SLUGS
                              ) -> tuple[dict[str, ParsedObservation], bool]:
    """Parse a resource-scope Observer answer as Mastra's parseMultiThreadObserverOutput does.

    Returns ({thread id: ParsedObservation}, degenerate). Degenerate output gives ({}, True).
    The first `<observations>` block whose tags start a line is read (else the whole answer);
    each `<thread id="T">…</thread>` block gives T's observations: its text without the
    extractor sections and the first `<current-task>`, `<suggested-response>`, `<thread-title>`,
    trimmed, overlong lines cut. The hints: an active extractor's value (SLUGS: the last section,
    or `<extracted-values>`), else that first section. An empty block is skipped, as Mastra skips it.
    """
    output = output or ""
    if detect_degenerate_repetition(output):
        return {}, True
    m = _OBSERVATIONS_FIRST.search(output)
    content = m.group(1) if m else output
    threads: dict[str, ParsedObservation] = {}
    for thread_id, body in _THREAD_BLOCK.findall(content):
        if not thread_id or not body:
            continue
        values = _extracted_values(body, slugs)
        observations = _strip_sections(body, slugs)
        found = {}
        for slug in ("current-task", "suggested-response", "thread-title"):
            sm = re.search(rf"<{slug}>([\s\S]*?)</{slug}>", body, _I)
            if sm and sm.group(1):
                found[slug] = js_trim(sm.group(1))
                observations = re.sub(rf"<{slug}>[\s\S]*?</{slug}>", "", observations, count=1, flags=_I)
        observations, _cut = sanitize_observation_lines(js_trim(observations))
        # callMultiThread: an active extractor's value (its LAST section) wins over the first section
        threads[thread_id] = ParsedObservation(
            observations=observations,
            current_task=_string(values, "current-task") or found.get("current-task"),
            suggested_response=_string(values, "suggested-response") or found.get("suggested-response"),
            thread_title=_string(values, "thread-title") or found.get("thread-title"),
            extracted=values)
    return threads, False

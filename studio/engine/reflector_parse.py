"""Read a Reflector answer the way Mastra does (@mastra/memory 1.31.0, reflector-agent.ts).

`parse_reflector_output(text)` mirrors `parseReflectorOutput` with Mastra's default reflection
extractors (current-task, suggested-response):

1. Degenerate output (a model stuck repeating itself, `detect_degenerate_repetition`) gives no
   observations and `degenerate=True`.
2. The continuation hints: an `<extracted-values>{json}</extracted-values>` block wins, else the
   LAST `<current-task>…</current-task>` / `<suggested-response>…</suggested-response>` anywhere,
   trimmed (a JSON-looking value that parses to a string is unquoted, as Mastra's extractor does).
   Those sections are then cut out of the answer.
3. Observations: every `<observations>…</observations>` block whose tags start a line (case
   insensitive), trimmed and joined with a newline; without such a block, the answer's list lines
   (`- `, `* `, `1. `), else the whole trimmed answer.
4. Ephemeral anchor ids (`[O12]`, `[O3-N2]`) at line starts are removed, and lines over 10,000
   UTF-16 code units are cut there with ` … [truncated]` (Mastra's sanitizeObservationLines).

`<thread-title>` is read too (last match), but Mastra's reflection does not store it: its
reflection extractors are only current-task and suggested-response.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from studio.common.jscompat import (
    JS_LINE_START,
    JS_SPACE,
    JS_SPACE_NOT_NEWLINE,
    JS_WHITESPACE_CHARS,
    from_utf16,
    js_trim,
    safe_slice,
    to_utf16,
    utf16_len,
)

#: Mastra's MAX_OBSERVATION_LINE_CHARS (UTF-16 code units).
MAX_OBSERVATION_LINE_CHARS = 10_000
#: Mastra's MIN_DUPLICATE_LINE_CHARS for the duplicate-line degenerate check.
MIN_DUPLICATE_LINE_CHARS = 24
TRUNCATION_MARK = " … [truncated]"
#: JavaScript's `i` flag without `u`: tag names fold ASCII case only (Python would also match U+017F to "s").
_I = re.IGNORECASE | re.ASCII
REFLECTION_SLUGS = ("current-task", "suggested-response")

_OBSERVATIONS = re.compile(rf"{JS_LINE_START}[ \t]*<observations>([\s\S]*?){JS_LINE_START}[ \t]*</observations>", _I)
_EXTRACTED = re.compile(r"<extracted-values>([\s\S]*?)</extracted-values>", _I)
_EXTRACTED_STRIP = re.compile(rf"[ \t]*<extracted-values>[\s\S]*?</extracted-values>{JS_SPACE}*", _I)
_LIST_LINE = re.compile(rf"{JS_SPACE}*[-*]{JS_SPACE}|{JS_SPACE}*[0-9]+\.{JS_SPACE}")  # used with .match
_ANCHOR = re.compile(rf"(^|\n)({JS_SPACE_NOT_NEWLINE}*)\[(O[0-9]+(?:-N[0-9]+)?)\]{JS_SPACE_NOT_NEWLINE}*")
_JSON_LIKE = re.compile(r'^(?:[\[{"-]|[0-9]|true\b|false\b|null\b)')


@dataclass
class ParsedReflection:
    """One parsed Reflector answer.

    `observations` is the new log ('' when degenerate or empty); `current_task`,
    `suggested_response`, `thread_title` are None when the answer has none; `truncated_lines`
    counts lines cut at 10,000 code units.
    """

    observations: str
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    degenerate: bool = False
    truncated_lines: int = 0

    @property
    def empty(self) -> bool:
        """Return True when the answer held no observations (and was not degenerate)."""
        return not self.degenerate and not js_trim(self.observations)


def detect_degenerate_repetition(text: str) -> bool:
    """Return True for output stuck in a loop, as Mastra's detectDegenerateRepetition decides.

    Texts under 2,000 UTF-16 code units never are. Otherwise: more than 40% of ~50 sampled
    200-unit windows repeat an earlier window; or one line over 50,000 units; or, among at least
    20 lines of 24+ characters (trimmed), more than half are exact repeats.
    """
    if not text:
        return False
    units = to_utf16(text)
    if len(units) < 2000:
        return False
    window, step = 200, max(1, len(units) // 50)
    seen: dict[str, int] = {}
    duplicates = total = 0
    for i in range(0, len(units) - window + 1, step):
        chunk = units[i:i + window]
        total += 1
        count = seen.get(chunk, 0) + 1
        seen[chunk] = count
        if count > 1:
            duplicates += 1
    if total > 5 and duplicates / total > 0.4:
        return True
    lines = units.split("\n")
    if any(len(line) > 50_000 for line in lines):
        return True
    seen_lines: dict[str, int] = {}
    dup_lines = counted = 0
    for line in lines:
        trimmed = js_trim(line)
        if len(trimmed) < MIN_DUPLICATE_LINE_CHARS:
            continue
        counted += 1
        count = seen_lines.get(trimmed, 0) + 1
        seen_lines[trimmed] = count
        if count > 1:
            dup_lines += 1
    return counted >= 20 and dup_lines / counted > 0.5


def sanitize_observation_lines(observations: str) -> tuple[str, int]:
    """Cut lines longer than 10,000 UTF-16 code units (+ ' … [truncated]'); return (text, lines cut)."""
    if not observations:
        return observations, 0
    lines = observations.split("\n")
    cut = 0
    for i, line in enumerate(lines):
        if utf16_len(line) > MAX_OBSERVATION_LINE_CHARS:
            lines[i] = from_utf16(safe_slice(to_utf16(line), MAX_OBSERVATION_LINE_CHARS)) + TRUNCATION_MARK
            cut += 1
    return ("\n".join(lines) if cut else observations), cut


def strip_anchor_ids(observations: str) -> str:
    """Remove `[O12]` / `[O3-N2]` anchors at line starts (Mastra's stripEphemeralAnchorIds)."""
    return _ANCHOR.sub(lambda m: m.group(1) + m.group(2), observations) if observations else observations


def has_observation_groups(observations: str) -> bool:
    """Return True when a log holds retrieval-mode `<observation-group …>` wrappers."""
    return bool(observations) and "<observation-group" in observations


_GROUP_OPEN, _GROUP_CLOSE = "<observation-group", "</observation-group>"


def _scan_group_tags(text: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]]]:
    """Mastra's scanObservationGroupTags: ([(start, end, content)] of whole groups, [(start, end)] of openings
    left unclosed at a line start). An opening needs whitespace (JavaScript's \\s) right after its name;
    the first closing tag after it closes it, unless another opening at a line start comes first."""
    tags: list[tuple[int, int, str]] = []
    incomplete: list[tuple[int, int]] = []
    cursor = close_floor = 0
    while cursor < len(text):
        start = text.find(_GROUP_OPEN, cursor)
        if start == -1:
            break
        attributes = start + len(_GROUP_OPEN)
        if attributes >= len(text) or text[attributes] not in JS_WHITESPACE_CHARS:
            cursor = attributes
            continue
        open_end = text.find(">", attributes)
        if open_end == -1:
            break
        close = text.find(_GROUP_CLOSE, max(open_end + 1, close_floor))
        if close == -1:
            if start == 0 or text[start - 1] == "\n":
                incomplete.append((start, open_end + 1))
            close_floor, cursor = len(text), open_end + 1
            continue
        nested = text.find(_GROUP_OPEN, open_end + 1)
        if nested != -1 and nested < close and text[nested - 1] == "\n":
            incomplete.append((start, open_end + 1))
            close_floor, cursor = close, nested
            continue
        tags.append((start, close + len(_GROUP_CLOSE), text[open_end + 1:close]))
        close_floor = close
        cursor = close + len(_GROUP_CLOSE)
    return tags, incomplete


def strip_observation_groups(observations: str) -> str:
    """Return the log without `<observation-group>` wrappers, as Mastra's stripObservationGroups does.

    Each whole group becomes its trimmed content, an unclosed opening at a line start is dropped
    (other text is kept as it is), then runs of 3+ newlines become 2 and the result is trimmed
    (JavaScript's trim). Empty text is returned as it is.
    """
    if not observations:
        return observations
    tags, incomplete = _scan_group_tags(observations)
    parts: list[str] = []
    cursor = opening = 0

    def skip_openings_before(limit: float) -> None:
        nonlocal cursor, opening
        while opening < len(incomplete) and incomplete[opening][0] < limit:
            start, end = incomplete[opening]
            opening += 1
            if start < cursor:
                continue
            parts.append(observations[cursor:start])
            cursor = end

    for start, end, content in tags:
        skip_openings_before(start)
        parts.extend((observations[cursor:start], js_trim(content)))
        cursor = end
    skip_openings_before(float("inf"))
    parts.append(observations[cursor:])
    return js_trim(re.sub(r"\n{3,}", "\n\n", "".join(parts)))


def string_extractor_value(raw: str) -> str | None:
    """Return RAW (an extractor's tag text) as Mastra's parseExtractorValue reads a z.string() extractor's value.

    Trimmed (JavaScript's trim); a JSON string is unquoted; None for empty text or an empty JSON string.
    """
    trimmed = js_trim(raw)
    if not trimmed:
        return None
    if _JSON_LIKE.match(trimmed):
        try:
            parsed = json.loads(trimmed)
        except ValueError:
            parsed = None
        if isinstance(parsed, str):
            return parsed or None
    return trimmed


def _tag_value(text: str, slug: str) -> str | None:
    matches = re.findall(rf"<{re.escape(slug)}>([\s\S]*?)</{re.escape(slug)}>", text, _I)
    return string_extractor_value(matches[-1]) if matches else None


def _extracted_values(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for block in _EXTRACTED.findall(text):
        trimmed = js_trim(block)
        if not trimmed or trimmed.startswith("Write only the extracted values JSON object here."):
            continue
        try:
            obj = json.loads(trimmed)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        for slug in REFLECTION_SLUGS:
            value = obj.get(slug)
            if isinstance(value, str) and value != "":
                values[slug] = value
    for slug in REFLECTION_SLUGS:
        if slug not in values:
            value = _tag_value(text, slug)
            if value:
                values[slug] = value
    return values


def _strip_sections(text: str) -> str:
    out = _EXTRACTED_STRIP.sub("", text)
    for slug in REFLECTION_SLUGS:
        out = re.sub(rf"[ \t]*<{re.escape(slug)}>[\s\S]*?</{re.escape(slug)}>{JS_SPACE}*", "", out, flags=_I)
    return out


def _list_items(content: str) -> str:
    return js_trim("\n".join(line for line in content.split("\n") if _LIST_LINE.match(line)))


def parse_reflector_output(output: str) -> ParsedReflection:
    """Parse a Reflector answer into a ParsedReflection (never raises; see module docstring)."""
    output = output or ""
    if detect_degenerate_repetition(output):
        return ParsedReflection(observations="", degenerate=True)
    values = _extracted_values(output)
    stripped = _strip_sections(output)
    blocks = _OBSERVATIONS.findall(stripped)
    if blocks:
        observations = "\n".join(t for t in (js_trim(b) for b in blocks) if t)
    else:
        observations = _list_items(stripped) or js_trim(stripped)
    observations, cut = sanitize_observation_lines(strip_anchor_ids(observations))
    return ParsedReflection(
        observations=observations,
        current_task=values.get("current-task"),
        suggested_response=values.get("suggested-response"),
        thread_title=_tag_value(output, "thread-title"),
        truncated_lines=cut,
    )

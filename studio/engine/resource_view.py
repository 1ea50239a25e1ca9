"""Resource scope: the observation log and the message window as they were at a turn (read-only, no Qt).

In resource scope (@mastra/memory 1.31.0) one record serves every thread of a resource and the
multi-thread Observer writes one `<thread id="…">` section per observed thread. A later cycle
does not append its own Observer output: `replaceOrAppendThreadSection` merges a thread's new
lines into that thread's existing section when the section holds the same `Date:` line (the new
lines after its `</thread>`-less body), and only otherwise appends a new section after a message
boundary. So the stored log's leading segment grows at several places over time and the message
boundaries alone cannot give the log as an earlier turn saw it.

Each cycle's end marker keeps the Observer's output for the thread it sits in. `block_at_turn`
uses them both ways: a later cycle's lines are taken off the end of its thread's section, and a
section whose newest applied cycle has a marker is cut after that marker's lines (a later cycle
without a marker, one the Timeline inferred from a boundary, merged its lines below them).

A synchronous observation at a turn's step 0 removes what it observed from the live context by
the record's `observedMessageIds` (`cleanupMessages`); `step0_messages` gives what stayed.
"""

from __future__ import annotations

import re

_SECTION = re.compile(r'<thread id="([^"]+)">\n(.*?)\n?</thread>', re.S)
_SECTION_ID = re.compile(r'<thread id="([^"]+)">')


def observer_lines(observations: str) -> str:
    """Return an Observer output's lines after its first `Date:` line, trimmed (what a merge appends)."""
    text = observations.strip()
    m = re.search(r"^Date:[^\n]*\n?", text, re.M)
    return text[m.end():].strip() if m else text


def block_at_turn(block: str, applied: list[tuple[str, str]], later: list[tuple[str, str]]) -> str:
    """Return resource-scope log BLOCK as it stood before the LATER cycles (the lines they merged taken out).

    APPLIED / LATER: (thread id, Observer output from the cycle's end marker) of the cycles of the
    block's generation that had / had not run at the turn, each in time order. Sections no cycle
    names are kept as they are; a text that is not found is left in place (nothing is guessed).
    A later cycle's lines go with every line below them in the section: lines merge in time order,
    and a synchronous observation a reflection followed in the same step may have left no marker.
    """
    newest_applied = {tid: text for tid, text in applied if observer_lines(text)}
    later_by_thread: dict[str, list[str]] = {}
    for tid, text in later:
        if observer_lines(text):
            later_by_thread.setdefault(tid, []).append(observer_lines(text))

    def cut(m: re.Match) -> str:
        tid, inner = m.group(1), m.group(2)
        # a later cycle's lines and everything merged after them (a cycle may leave no marker)
        found = [at for body in later_by_thread.get(tid, []) if (at := inner.rfind(body)) >= 0]
        if found:
            inner = inner[:min(found)].rstrip()
        if tid in newest_applied:
            body = observer_lines(newest_applied[tid])
            at = inner.rfind(body)
            if at >= 0:
                inner = inner[:at + len(body)]
        return f'<thread id="{tid}">\n{inner}\n</thread>'

    return _SECTION.sub(cut, block)


def step0_messages(before: list[int], observed_ids: set[str], ids: list[str], input_index: int,
                   reflected: bool, marked: set[int] = frozenset()) -> list[int]:
    """Return the message indexes the model kept after a synchronous observation at the turn's step 0.

    BEFORE: the resource's window (indexes into IDS, every thread's) just before the observation;
    OBSERVED_IDS: the `observedMessageIds` of the record in force afterwards; INPUT_INDEX: the
    turn's user message, which Mastra keeps by identity (`preserveMessageIds`). REFLECTED: a
    reflection followed in the same step; its new generation has no observed ids yet and the
    cleanup cuts at the newest marker, so only the turn's input stays (as in thread scope).
    MARKED: the messages of BEFORE holding an earlier cycle's end marker with parts after it; the
    cleanup keeps those (their parts after the marker), observed or not, as in thread scope.
    Messages a later cycle of the same generation observed count as removed here too: the rows
    do not say which cycle added an id (a limit, not met in the corpus).
    """
    if reflected:
        return [input_index]
    kept = [i for i in before if ids[i] not in observed_ids or i in marked]
    return sorted({*kept, input_index})


def step0_reflection_only(kinds: list[str]) -> bool:
    """Return True when the turn's step 0 reflected with no observation event before it (KINDS: event kinds).

    Mastra reflects synchronously after observing; in resource scope a step-0 observation that a
    reflection followed may leave no end marker and no boundary (its lines merged into existing
    sections), so the Timeline has no event for it. The cleanup is then the same as after both.
    """
    from studio.engine.events import OBSERVATION, REFLECTION

    return REFLECTION in kinds and OBSERVATION not in kinds[:kinds.index(REFLECTION)]


def sections_unsure(block: str, applied_threads: set[str], later: list[tuple[str, list[str]]]) -> list[str]:
    """Return the threads whose `<thread>` section in BLOCK may still hold lines a later cycle merged.

    LATER: (marker thread, threads the cycle observed: its start marker's `threadIds`) of the
    block's generation's cycles that had not run at the turn. A multi-thread cycle's end marker
    keeps its own thread's lines only, so what it merged into another observed thread's section
    is not in the rows, unless a cycle that had run cut that section (APPLIED_THREADS: threads
    with such a marker).
    """
    present = set(_SECTION_ID.findall(block))
    return sorted({t for own, observed in later for t in observed
                   if t != own and t in present and t not in applied_threads})

"""Trace a fact through a thread's Observational Memory: every observation line that mentions it, with its lifeline.

For a query ("teal") `trace_fact` finds every observation line of every generation that matches
(the phrase, all of its words, or each word fuzzily) and follows each line's *lifeline*:

* the generation and Observer output (segment between `--- message boundary ---` lines) it first
  appears in, and the messages it was observed from: the `data-om-observation-end` /
  `data-om-activation` marker whose `observations` text is that output names the cycle and the
  message holding it, and the observation cursors (`lastObservedAt`, the boundaries' ISO times)
  bound the messages the cycle covered (`createdAt` after the previous cursor, up to its own);
* every later generation that keeps it, verbatim or reworded (difflib similarity of the line texts,
  0..1); only the Reflector's output (a reflection generation's first segment) and, after a
  buffered reflection, the observations appended with their old message boundaries can carry a
  line from one generation to the next; later segments are new Observer outputs;
* a line a reflection left out but a later observation of the new generation wrote again (Mastra
  re-observed its messages: a synchronous reflection inside a turn starts the new generation from
  the cursor the record had before that turn's observation) is not dropped: its lifeline goes on
  from the line written again (a "reobserved" step, same date, time and text);
* the reflection that dropped it: the generation it is missing from, with that generation's time
  (`lastReflectionAt`), Reflector model (from its stored `config`) and compression: the stored
  `observationTokenCount` the Reflector was given / Mastra's estimate of the Reflector's output
  (the new generation's first segment; later segments are observations made after it).

The thread's messages that mention the query are listed too, each marked observed or not as
Mastra's `getUnobservedMessages` would judge it against the current record. Read-only, no Qt.
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from dataclasses import asdict, dataclass, field

from studio.engine import tokens
from studio.engine.events import ACTIVATION, BUFFERING, OBSERVATION, build_events, split_segments
from studio.engine.observations import parse_log
from studio.engine.unobserved import unobserved_messages
from studio.errors import EngineError
from studio.store.memory_store import MemoryStore
from studio.store.records import Message, OMRecord, iso_to_ms

#: A query word matches a line word fuzzily at this difflib ratio or above.
FUZZY_THRESHOLD = 0.8
#: A line of the Reflector's output continues an older line (reworded) at this similarity or above.
REWORD_THRESHOLD = 0.6
#: A word: a number with its decimal / thousands / version separators kept ("7.2", "2,125", "v2.7"),
#: else a run of word characters. Splitting "7.2" into "7" and "2" made any text holding both digits
#: match the query "Obs 7.2" as words.
_WORD_RE = re.compile(r"\w*\d(?:[.,:]\d+)+\w*|\w+")


class TraceError(EngineError):
    """The trace cannot run: unknown thread or empty query."""


# -- matching -------------------------------------------------------------------------------------

#: Combining marks (accents), dropped after NFKD decomposition.
_COMBINING_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


def normalize(text: str) -> str:
    """Return TEXT case-folded, accents removed and whitespace collapsed (for matching only)."""
    text = text or ""
    if not text.isascii():
        text = _COMBINING_RE.sub("", unicodedata.normalize("NFKD", text))
    return " ".join(text.casefold().split())


def words(text: str) -> list[str]:
    """Return the normalized words of TEXT."""
    return _WORD_RE.findall(normalize(text))


@dataclass
class Match:
    """How a text matched the query: kind "phrase" | "words" | "fuzzy", score 0..1 (1 for phrase/words)."""

    kind: str
    score: float


@functools.lru_cache(maxsize=262_144)
def _word_ratio(word: str, candidate: str, need: float) -> float:
    """Return difflib's ratio of two words, or 0.0 when it is surely below NEED (cached: vocabularies repeat)."""
    sm = difflib.SequenceMatcher(a=word, b=candidate, autojunk=False)
    if sm.real_quick_ratio() < need or sm.quick_ratio() < need:
        return 0.0
    return sm.ratio()


def _phrase_in(q: str, t: str) -> bool:
    """Whether normalized Q occurs in normalized T; a query that starts or ends with a digit must not
    continue a number there ("7.2" is not in "17.2" nor "7.21"; "teal" is still in "teals")."""
    start = 0
    while (i := t.find(q, start)) >= 0:
        j = i + len(q)
        before_ok = not (q[0].isdigit() and i > 0 and (t[i - 1].isdigit() or
                                                        (t[i - 1] in ".," and i > 1 and t[i - 2].isdigit())))
        after_ok = not (q[-1].isdigit() and j < len(t) and (t[j].isdigit() or
                                                            (t[j] in ".," and j + 1 < len(t) and t[j + 1].isdigit())))
        if before_ok and after_ok:
            return True
        start = i + 1
    return False


def match_text(query: str, text: str, threshold: float = FUZZY_THRESHOLD) -> Match | None:
    """Return how TEXT matches QUERY, or None.

    "phrase": the normalized query occurs in the text (a number in it whole); "words": every query word is a word of the
    text (a number keeps its dots and commas: "7.2" is one word); "fuzzy": every query word of 4+
    characters without digits is close to some word of the text (difflib ratio >= THRESHOLD, or >=
    (n-1)/n for an n-letter word: one typo), shorter ones and numbers exact; score = the weakest of
    those ratios.
    """
    q, t = normalize(query), normalize(text)
    if not q:
        return None
    if _phrase_in(q, t):
        return Match("phrase", 1.0)
    qw, tw = _WORD_RE.findall(q), set(_WORD_RE.findall(t))
    if not qw:
        return None
    if all(w in tw for w in qw):
        return Match("words", 1.0)
    weakest = 1.0
    for w in qw:
        if w in tw:
            continue
        if len(w) < 4 or any(c.isdigit() for c in w):  # too short to tell a typo; a number is exact
            return None
        need = min(threshold, (len(w) - 1) / len(w))  # one typo in a short word is still that word
        slack = max(2, len(w) // 2)
        best = max((_word_ratio(w, cand, need) for cand in tw if abs(len(cand) - len(w)) <= slack), default=0.0)
        if best < need:
            return None
        weakest = min(weakest, best)
    return Match("fuzzy", round(weakest, 3))


def similarity(a: str, b: str) -> float:
    """Return difflib's ratio (0..1) between the normalized texts A and B."""
    return difflib.SequenceMatcher(a=normalize(a), b=normalize(b), autojunk=False).ratio()


# -- results --------------------------------------------------------------------------------------

@dataclass
class SourceMessage:
    """A message an observation line was observed from (or that mentions the query).

    `observed` (matching messages only): whether the current OM record has observed it, None when
    no OM record governs the thread.
    """

    id: str
    thread_id: str
    role: str
    created_at: str | None
    excerpt: str
    observed: bool | None = None
    match: str | None = None
    score: float | None = None


@dataclass
class LifelineStep:
    """One step of a lifeline.

    kind: "first" (the line appears), "verbatim" / "reworded" (a later generation keeps it; rewording
    has `similarity` 0..1), "reobserved" (the reflection creating `generation` left it out, and a later
    observation of that generation wrote the same line again), "dropped" (the reflection creating
    `generation` left it out for good). `line_number` is 1-based in that generation's log (None for
    "dropped"); `at` the generation's (or cycle's: "first", "reobserved") time.
    A "dropped" step carries the reflection's `model`, `compression` (tokens before / after) and tokens.
    """

    kind: str
    generation: int
    record_id: str
    line_number: int | None
    text: str | None
    at: str | None
    similarity: float | None = None
    priority: str | None = None
    model: str | None = None
    compression: float | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None


@dataclass
class Lifeline:
    """The life of one observation line: where it came from and every generation after.

    `source` says how its messages were found: "markers" (a completed cycle's marker holds its
    output), "cursor" (only the observation cursors bound them), "reflector" (written by the
    Reflector, no messages), or "unknown". `dropped_in` is the generation whose reflection dropped
    it (None while the current generation keeps it).
    """

    text: str
    match: str
    score: float
    steps: list[LifelineStep]
    source: str
    cycle_id: str | None = None
    marker_message_id: str | None = None
    source_messages: list[SourceMessage] = field(default_factory=list)
    dropped_in: int | None = None

    @property
    def first(self) -> LifelineStep:
        """Return the step where the line first appears."""
        return self.steps[0]


@dataclass
class TraceResult:
    """What `trace_fact` found for one query in one thread."""

    thread_id: str
    lookup_key: str | None
    query: str
    generations: int
    lifelines: list[Lifeline]
    messages: list[SourceMessage]

    def to_json(self) -> dict:
        """Return the stable `trace --json` document."""
        return {
            "thread_id": self.thread_id, "lookup_key": self.lookup_key, "query": self.query,
            "generations": self.generations,
            "lifelines": [{
                "text": ll.text, "match": ll.match, "score": ll.score, "source": ll.source,
                "cycle_id": ll.cycle_id, "marker_message_id": ll.marker_message_id,
                "first_generation": ll.first.generation, "dropped_in": ll.dropped_in,
                "source_messages": [asdict(m) for m in ll.source_messages],
                "steps": [asdict(s) for s in ll.steps],
            } for ll in self.lifelines],
            "messages": [asdict(m) for m in self.messages],
        }


# -- lineage --------------------------------------------------------------------------------------

@dataclass
class _Line:
    number: int
    segment: int
    text: str        # the observation text (no marker, no time)
    raw: str
    priority: str | None
    date: str | None = None
    time: str | None = None

    @property
    def identity(self) -> tuple[str, str | None, str | None]:
        """Return what makes two lines the same observation: text (normalized), date and time."""
        return normalize(self.text), self.date, self.time


def _observation_lines(record: OMRecord) -> list[_Line]:
    out, segment = [], 0
    for ln in parse_log(record.active_observations).lines:
        if ln.kind == "boundary":
            segment += 1
        elif ln.kind == "observation" and ln.text.strip():
            out.append(_Line(ln.number, segment, ln.text.strip(), ln.raw,
                             ln.priority.value if ln.priority else None, ln.date, ln.time))
    return out


def _carried_segments(old: OMRecord, new: OMRecord) -> set[int]:
    """Return the segments of NEW that can continue lines of OLD.

    The Reflector's output (segment 0), and, after a buffered reflection is activated, the
    observations written after the reflection was buffered, which Mastra appends with their
    message boundaries: segments whose boundary OLD's log also holds.
    """
    old_boundaries = {s.boundary for s in split_segments(old) if s.boundary}
    return {s.index for s in split_segments(new) if s.index == 0 or s.boundary in old_boundaries}


def _link(old: list[_Line], new: list[_Line], carried: set[int]) -> dict[int, tuple[_Line, float]]:
    """Map old line numbers to (their continuation among NEW's CARRIED segments, similarity 0..1)."""
    candidates = [ln for ln in new if ln.segment in carried]
    by_text: dict[str, list[_Line]] = {}
    for ln in candidates:
        by_text.setdefault(normalize(ln.text), []).append(ln)
    claimed: set[int] = set()
    links: dict[int, tuple[_Line, float]] = {}
    rest = []
    for ln in old:
        same = [c for c in by_text.get(normalize(ln.text), []) if c.number not in claimed]
        if same:
            claimed.add(same[0].number)
            links[ln.number] = (same[0], 1.0)
        else:
            rest.append(ln)
    free = [c for c in candidates if c.number not in claimed]
    for ln in rest:
        a = normalize(ln.text)
        best, best_ratio = None, REWORD_THRESHOLD
        for c in free:
            sm = difflib.SequenceMatcher(a=a, b=normalize(c.text), autojunk=False)
            if sm.real_quick_ratio() < best_ratio or sm.quick_ratio() < best_ratio:
                continue
            r = sm.ratio()
            if r >= best_ratio and (best is None or r > best_ratio):
                best, best_ratio = c, r
        if best is not None:
            links[ln.number] = (best, round(best_ratio, 3))
    return links


def _reobserved(old: list[_Line], new: list[_Line], links: dict[int, tuple[_Line, float]],
                carried: set[int]) -> dict[int, _Line]:
    """Map OLD lines that LINKS does not continue to the same line (date, time, text) in NEW's later observations.

    A synchronous reflection inside a turn gives the new generation the cursor from before that
    turn's observation, so Mastra's next observation is shown those messages again and can write
    the lines the Reflector left out back into the new generation (outside its CARRIED segments).
    """
    claimed = {line.number for line, _ in links.values()}
    pool: dict[tuple, list[_Line]] = {}
    for ln in new:
        if ln.segment not in carried and ln.number not in claimed:
            pool.setdefault(ln.identity, []).append(ln)
    out = {}
    for ln in old:
        if ln.number not in links and pool.get(ln.identity):
            out[ln.number] = pool[ln.identity].pop(0)
    return out


def _model_name(record: OMRecord) -> str | None:
    from studio.common.om_settings import resolve_settings

    return resolve_settings(record.config, record.scope).reflection_model


def _lead(text: str, width: int = 140) -> str:
    """Return the start of TEXT on one line (at most WIDTH characters)."""
    flat = " ".join((text or "")[:width * 4].split())
    return flat if len(flat) <= width else flat[:width] + "…"


def _excerpt(text: str, query: str, width: int = 140) -> str:
    flat = " ".join((text or "").split())
    if len(flat) <= width:
        return flat
    q = normalize(query)
    pos = normalize(flat).find(q) if q else -1
    if pos < 0:
        first = next(iter(words(query)), "")
        pos = normalize(flat).find(first) if first else -1
    start = max(0, (pos if pos >= 0 else 0) - width // 3)
    piece = flat[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


# -- sources --------------------------------------------------------------------------------------

class _Sources:
    """Which cycle wrote each observation line and which messages that cycle covered."""

    def __init__(self, gens: list[OMRecord], messages: list[Message]):
        self.messages = messages
        self.log = build_events(messages, gens)
        self.segments = {(s.record_id, s.index): s for s in self.log.segments}
        self.times = [m.created_ms for m in messages]
        self.gens = gens
        self._covered: dict[int, list[SourceMessage]] = {}
        cursors = set()
        for g in gens:
            for s in split_segments(g):
                if s.index == 0 and g.origin_type == "reflection":
                    continue
                if (ms := self._cursor(g, s.index, self._segment_event(g, s.index))) is not None:
                    cursors.add(ms)
            if (ms := iso_to_ms(g.last_observed_at)) is not None:
                cursors.add(ms)
        for e in self.log.events:
            if e.kind == ACTIVATION and not e.inferred and (ms := self._cut(self._buffering(e))) is not None:
                cursors.add(ms)
        self.cursors = sorted(cursors)

    def _segment_event(self, record: OMRecord, index: int, raw: str | None = None):
        seg = self.segments.get((record.id, index))
        if seg is None:
            return None
        want = seg.text.strip()
        line = (raw or "").strip()
        for e in self.log.events:
            if e.inferred or not e.detail or e.record_id != record.id:
                continue
            detail = e.detail.strip()
            if e.kind == OBSERVATION and e.status == "completed" and detail == want:
                return e
            if e.kind == ACTIVATION and detail and detail in want and (not line or line in detail):
                return e
        return None

    def _buffering(self, event):
        return next((e for e in self.log.events if e.kind == BUFFERING and e.cycle_id == event.cycle_id), None)

    def _cut(self, event) -> int | None:
        """Return the newest message time before EVENT started (its own message aside)."""
        if event is None or event.at_ms is None:
            return None
        known = [t for m, t in zip(self.messages, self.times, strict=True)
                 if t is not None and t < event.at_ms and m.id != event.message_id]
        return max(known) if known else None

    def _cursor(self, record: OMRecord, index: int, event) -> int | None:
        if event is not None and event.kind == ACTIVATION:  # the chunk was cut when its buffering cycle started
            cut = self._cut(self._buffering(event))
            if cut is not None:
                return cut
        seg = self.segments.get((record.id, index))
        if seg is not None and seg.boundary:
            return iso_to_ms(seg.boundary)
        if event is not None and event.kind == OBSERVATION:
            return self._cut(event)
        last = max((s.index for (rid, _), s in self.segments.items() if rid == record.id), default=0)
        if index == last:
            return iso_to_ms(record.last_observed_at)
        return None

    def find(self, record: OMRecord, index: int, raw: str, query: str
             ) -> tuple[str, str | None, str | None, list[SourceMessage]]:
        """Return (source kind, cycle id, marker message id, messages) of line RAW in segment INDEX of RECORD."""
        if index == 0 and record.origin_type == "reflection":
            return "reflector", None, None, []
        event = self._segment_event(record, index, raw)
        cursor = self._cursor(record, index, event)
        cycle = event.cycle_id if event else None
        host = event.message_id if event else None
        if cursor is None:
            return "unknown", cycle, host, []
        covered = self._covered.get(cursor)
        if covered is None:
            previous = max((c for c in self.cursors if c < cursor), default=None)
            covered = [SourceMessage(m.id, m.thread_id, m.role, m.created_at, _lead(m.text))
                       for m, t in zip(self.messages, self.times, strict=True)
                       if m.role != "system" and t is not None and t <= cursor and (previous is None or t > previous)]
            self._covered[cursor] = covered
        return ("markers" if event is not None else "cursor"), cycle, host, list(covered)


# -- the trace ------------------------------------------------------------------------------------

def trace_fact(store: MemoryStore, thread_id: str, query: str, *, threshold: float = FUZZY_THRESHOLD) -> TraceResult:
    """Trace QUERY through THREAD_ID's observation generations and messages (see the module docstring).

    Returns a TraceResult: lifelines and matching messages, phrase matches first, then word
    matches, then fuzzy ones; within each, lifelines by first generation and line, messages in
    storage order. Raises TraceError (unknown thread, empty query) or StoreError.
    """
    from studio.engine.timeline import governed_messages

    if not normalize(query):
        raise TraceError("Give a text to trace")
    thread = store.get_thread(thread_id)
    if thread is None:
        raise TraceError(f"No thread {thread_id!r} in {store.location.display}")
    key = store.lookup_key_for_thread(thread)
    gens = list(reversed(store.om_history(key))) if key else []
    thread_messages = store.list_messages(thread_id)
    lifelines: list[Lifeline] = []
    if gens:
        governed = governed_messages(store, gens[-1], thread) if gens[-1].scope == "resource" else thread_messages
        lifelines = _lifelines(gens, governed, query, threshold)
    observed = _observed_ids(thread_messages, gens[-1] if gens else None)
    hits = []
    for m in thread_messages:
        if m.role == "system":
            continue
        found = match_text(query, m.text, threshold)
        if found is not None:
            hits.append(SourceMessage(m.id, m.thread_id, m.role, m.created_at, _excerpt(m.text, query),
                                      observed=(m.id in observed) if gens else None, match=found.kind,
                                      score=found.score))
    rank = {"phrase": 0, "words": 1, "fuzzy": 2}
    lifelines.sort(key=lambda ll: rank[ll.match])  # stable: generation and line order within a rank
    hits.sort(key=lambda m: rank[m.match or "fuzzy"])
    return TraceResult(thread_id, key, query, len(gens), lifelines, hits)


def _observed_ids(messages: list[Message], record: OMRecord | None) -> set[str]:
    if record is None:
        return set()
    dicts = [m.as_mastra() for m in messages]
    pending = {m.get("id") for m in unobserved_messages(dicts, record.last_observed_at, record.observed_message_ids)}
    return {m.id for m in messages if m.id not in pending}


def _lifelines(gens: list[OMRecord], messages: list[Message], query: str, threshold: float) -> list[Lifeline]:
    lines = [_observation_lines(g) for g in gens]
    by_number = [{ln.number: ln for ln in gl} for gl in lines]
    links: dict[int, dict[int, tuple[_Line, float]]] = {}
    carried: dict[int, set[int]] = {}

    def carried_into(i: int) -> set[int]:
        if i not in carried:
            carried[i] = _carried_segments(gens[i - 1], gens[i])
        return carried[i]

    def forward(i: int) -> dict[int, tuple[_Line, float]]:
        if i not in links:
            links[i] = _link(lines[i], lines[i + 1], carried_into(i + 1))
        return links[i]

    reobserved_cache: dict[int, dict[int, _Line]] = {}

    def reobserved(i: int) -> dict[int, _Line]:
        """Map lines of generation I the next reflection left out to the same line a later observation wrote."""
        if i not in reobserved_cache:
            reobserved_cache[i] = _reobserved(lines[i], lines[i + 1], forward(i), carried_into(i + 1)) \
                if gens[i + 1].origin_type == "reflection" else {}
        return reobserved_cache[i]

    def predecessor(i: int, ln: _Line) -> tuple[int, _Line] | None:
        if i == 0 or gens[i].origin_type != "reflection":
            return None
        if ln.segment not in carried_into(i):
            old = next((n for n, new in reobserved(i - 1).items() if new.number == ln.number), None)
            return (i - 1, by_number[i - 1][old]) if old is not None else None
        best = None
        for old_number, (new, ratio) in forward(i - 1).items():
            if new.number == ln.number and (best is None or ratio > best[1]):
                best = (by_number[i - 1][old_number], ratio)
        return (i - 1, best[0]) if best else None

    origins: dict[tuple[int, int], Match] = {}
    for i, gl in enumerate(lines):
        for ln in gl:
            found = match_text(query, ln.text, threshold)
            if found is None:
                continue
            j, cur = i, ln
            while (prev := predecessor(j, cur)) is not None:
                j, cur = prev
            key = (j, cur.number)
            if key not in origins or found.score > origins[key].score:
                origins[key] = found

    sources = _Sources(gens, messages)
    out = []
    for (i, number), found in sorted(origins.items()):
        ln = by_number[i][number]
        g = gens[i]
        first_at = g.created_at if i == 0 or ln.segment == 0 else (sources.segments.get((g.id, ln.segment)).boundary
                                                                   if (g.id, ln.segment) in sources.segments else None)
        steps = [LifelineStep("first", g.generation_count, g.id, ln.number, ln.raw, first_at, priority=ln.priority)]
        kind, cycle, host, covered = sources.find(g, ln.segment, ln.raw, query)
        dropped = None
        j, cur = i, ln
        while j + 1 < len(gens):
            nxt = forward(j).get(cur.number)
            new_gen = gens[j + 1]
            again = reobserved(j).get(cur.number) if nxt is None else None
            if again is not None:
                segment = sources.segments.get((new_gen.id, again.segment))
                steps.append(LifelineStep("reobserved", new_gen.generation_count, new_gen.id, again.number,
                                          again.raw, segment.boundary if segment is not None else None,
                                          priority=again.priority))
                j, cur = j + 1, again
                continue
            if nxt is None:
                before = gens[j].observation_token_count  # what the Reflector was given (stored count)
                output = next((sg for sg in split_segments(new_gen) if sg.index == 0), None)
                after = tokens.count_observations(output.text.strip()) if output else new_gen.observation_token_count
                steps.append(LifelineStep(
                    "dropped", new_gen.generation_count, new_gen.id, None, None,
                    new_gen.get("lastReflectionAt") or new_gen.created_at, model=_model_name(new_gen),
                    compression=round(before / after, 3) if after else None, tokens_before=before,
                    tokens_after=after))
                dropped = new_gen.generation_count
                break
            new_line, ratio = nxt
            steps.append(LifelineStep("verbatim" if ratio == 1.0 else "reworded", new_gen.generation_count,
                                      new_gen.id, new_line.number, new_line.raw,
                                      new_gen.get("lastReflectionAt") or new_gen.created_at,
                                      similarity=ratio, priority=new_line.priority))
            j, cur = j + 1, new_line
        out.append(Lifeline(ln.text, found.kind, found.score, steps, kind, cycle, host, covered, dropped))
    return out

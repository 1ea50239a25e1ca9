"""Tell a 🔴 observation a reflection reworded from one it lost (the `lost-high-priority` check).

Rule: a 🔴 observation line of generation N (N not current) is kept when some line of a later
generation of the same lookup key is similar to it (similarity ≥ LOST_SIMILARITY, 0.6) and
carries what tells this fact from another in the same template (`carries`): its names and its
numbers, or (a line with neither) most of its rarest words. A line with two or more names and
numbers that a later line carries all of needs only NAMED_SIMILARITY (0.5): "User's flight to
Oslo leaves March 14" merged into "User flies to Oslo on March 14 and booked the Grand Hotel"
keeps its fact in other words. Otherwise it is lost. Similar alone is not enough: a
Reflector that drops "User asked about sourdough starter: what are the risks?" while keeping
"User asked about Greek translation: what are the risks?" leaves a line 0.6+ similar that lacks
the topic.

* Names: the line's words written with a capital letter, except its first word and a word
  after a sentence end (". ", ": ", "? ", "! "). Numbers: its words holding a digit.
  Rarest words (for a line without names and numbers): RAREST_WORDS (3) of its words of the
  highest weight (below); most = more than half of them. A word is carried when the later line
  has it, or a word of 4+ characters that it starts with or that starts with it ("Sept" /
  "September", "start" / "starts").

* Normalised text: the line's text (without bullet, priority marker and `(HH:MM)`), lower-cased,
  punctuation folded to spaces (a dot inside a word or number stays: "24.1", "v1.24"); its
  words are the tokens of 3+ characters and those holding a digit.
* Similarity: weighted word containment. Each word weighs its inverse document frequency over
  every observation line of the key's generations, log(1 + lines / lines containing it): words
  most lines share ("user", "discussed") count little, distinctive ones (names, numbers) much.
  The shared words' weight is divided by the lighter line's total weight. A fact kept in other
  words keeps its distinctive words (high); a fact merged into a longer line is contained in it
  (high); another fact in the same template shares only common words (low).

A line found word for word later has similarity 1.0. Each loss reports the closest later line,
its generation and its similarity, so the user can judge.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from itertools import chain, compress

from studio.engine.observations import OBS_RE
from studio.store.records import OMRecord

#: Below this similarity to every later line, a 🔴 observation counts as lost.
LOST_SIMILARITY = 0.6
#: A closest later line is quoted only from this similarity up (below it, nothing later is alike).
CLOSEST_SHOWN = 0.5
#: The similarity that suffices when a later line carries 2+ names and numbers of the line, all of them.
NAMED_SIMILARITY = 0.5
#: How many of a line's rarest words (other than names and numbers) a later line must mostly carry.
RAREST_WORDS = 3
_SENTENCE_END = (".", ":", "?", "!", ";")
# Punctuation folds to a space, except a dot inside a word or number ("24.1", "v1.24", "node.js").
_FOLD = re.compile(r"(?:[^\w.]|\.(?!\w)|(?<!\w)\.)+", re.UNICODE)


# A dot not between two word characters (after _ASCII_LOWER_FOLD, whose spaces are not word characters either).
_LONE_DOT = re.compile(r"\.(?!\w)|(?<!\w)\.")


def normalise(text: str) -> str:
    """Return TEXT lower-cased with punctuation runs folded to single spaces."""
    return normalise_words(text)[0]


def words_of(norm: str) -> frozenset[str]:
    """Return the words of a normalised text that carry meaning (3+ characters, or a digit)."""
    # a word shorter than 3 has 1 or 2 characters: its first and last are all of them
    return frozenset(w for w in norm.split() if len(w) >= 3 or w[0].isdigit() or w[-1].isdigit())


# ASCII bytes: an upper-case letter to its lower case, a byte that is neither a word character nor a dot to a space.
_ASCII_LOWER_FOLD = bytes(ord(" ") if c < 128 and not re.match(r"[\w.]", chr(c)) else
                          ord(chr(c).lower()) if c < 128 else c for c in range(256))
_LONGER = (2).__lt__


def normalise_words(text: str) -> tuple[str, frozenset[str]]:
    """Return (`normalise(TEXT)`, `words_of` it).

    ASCII text (nearly every observation) takes a faster road to the same pair: one byte table
    lower-cases it and turns each folded character into a space; the lone dots go (". " first,
    the regex only when one is left), runs of spaces collapse (`_FOLD`'s runs end up as one
    space), and the words of 3+ characters are picked in C, those of 1 or 2 only when a digit is there.
    """
    if not text.isascii():
        norm = _FOLD.sub(" ", text.lower()).strip()
        return norm, words_of(norm)
    low = text.encode("ascii").translate(_ASCII_LOWER_FOLD).decode("ascii")
    if "." in low:
        low = low.replace(". ", "  ")   # a dot before a space is lone: what _LONE_DOT does to it
        if low[:1] == "." or low[-1:] == "." or ". " in low or " ." in low or ".." in low:
            low = _LONE_DOT.sub(" ", low)   # a space or a dot is the only non-word character left
    tokens = low.split()
    words = frozenset(compress(tokens, map(_LONGER, map(len, tokens))))
    if not _DIGITS.isdisjoint(low):
        short = [w for w in tokens if len(w) < 3 and (w[0] in _DIGITS or w[-1] in _DIGITS)]
        if short:
            words = words.union(short)
    return " ".join(tokens), words


_DIGITS = frozenset("0123456789")


def _has_digit(word: str) -> bool:
    """Return True when WORD holds an ASCII digit (a number, for `carries`)."""
    return not _DIGITS.isdisjoint(word)


def _alike(word: str, others: frozenset[str], heads: set[str]) -> bool:
    """Return True when OTHERS holds WORD, or a word of 4+ characters that WORD starts with or that starts with WORD.

    HEADS: the first 4 characters of each word of OTHERS with 4+ (a word whose head is not there has no such word).
    """
    if word in others:
        return True
    if len(word) < 4 or word[:4] not in heads:
        return False
    return any(len(o) >= 4 and (o.startswith(word) or word.startswith(o)) for o in others)


def names_of(text: str) -> frozenset[str]:
    """Return the normalised names of an observation text: capitalised words, not first in a sentence."""
    out = set()
    tokens = text.split()
    for i, token in enumerate(tokens):
        if i == 0 or token[0].islower() or tokens[i - 1].endswith(_SENTENCE_END):
            continue   # (a lower-case first character is the head: not a name)
        head = next((c for c in token if c.isalnum()), "")   # past any opening quote or bracket
        if head.isupper():
            out.update(w for w in normalise(token).split() if len(w) >= 2)
    return frozenset(out)


def carries(words: frozenset[str], names: frozenset[str], later: frozenset[str],
            weights: dict[str, float]) -> tuple[bool, list[str]]:
    """Return (True when LATER carries the fact, the words it lacks) for a line of WORDS and NAMES.

    Carried: every name (as `_alike` finds it) and every number (a word holding a digit: exactly).
    A line with neither is told from its template's other facts by its rarest words: more than half
    of its RAREST_WORDS words of the highest weight (ties by the word) must be `_alike` a later word.
    (A line with a name or a number keeps them through a rewording; its other rare words are often
    the reworded ones: "flight ... leaves" / "flies".)
    """
    missing = _lacks(_fact(words, names, weights), later, _heads(later))
    return not missing, missing


def _heads(words: frozenset[str]) -> set[str]:
    """Return the first 4 characters of each word of WORDS with 4+ (what `_alike` looks up first)."""
    return {o[:4] for o in words if len(o) >= 4}


def _fact(words: frozenset[str], names: frozenset[str], weights: dict[str, float],
          ) -> tuple[list[str], list[str], list[str]]:
    """Return what tells a line's fact (`carries`): its names (sorted), its numbers (sorted) and, with
    neither, its RAREST_WORDS words of the highest weight (ties by the word)."""
    numbers = sorted(w for w in words if not _DIGITS.isdisjoint(w))
    if names or numbers:
        return sorted(names), numbers, []
    others = sorted((w for w in words if w not in names and not _has_digit(w)),
                    key=lambda w: (-weights.get(w, 1.0), w))[:RAREST_WORDS]
    return [], numbers, others


def _lacks(fact: tuple[list[str], list[str], list[str]], later: frozenset[str], heads: set[str]) -> list[str]:
    """Return the words of FACT (`_fact`) that LATER (HEADS: its `_heads`) lacks: `carries`' missing words."""
    names, numbers, others = fact
    missing = [w for w in names if not _alike(w, later, heads)]
    missing += [w for w in numbers if w not in later]
    if names or numbers:
        return missing
    lacking = [w for w in others if not _alike(w, later, heads)]
    if len(others) - len(lacking) <= len(others) / 2:
        missing += lacking
    return missing


def _keeps(fact: tuple[list[str], list[str], list[str]], later: frozenset[str], heads: set[str]) -> bool:
    """Return True when `_lacks` is empty, stopping at the first word that tells it is not."""
    names, numbers, others = fact
    if names or numbers:
        return all(w in later for w in numbers) and all(_alike(w, later, heads) for w in names)
    found = sum(1 for w in others if _alike(w, later, heads))
    return found == len(others) or found > len(others) / 2


@dataclass
class _Line:
    """An observation line of a log: its raw text, 1-based number, text after the markers, and whether it is 🔴."""

    raw: str
    number: int
    text: str
    high: bool


def observation_lines(log: str | None) -> list[_Line]:
    """Return the observation lines of LOG, as `observations.parse_log` classifies them (one regex per line).

    A line is an observation when it starts (after indentation) with `*` or `-` and a space, and
    carries a priority marker, a `(HH:MM)` time or a `->` arrow; date headers and message
    boundaries never match.
    """
    out = []
    for number, raw in enumerate((log or "").splitlines(), start=1):
        head = raw.lstrip()[:1]
        if head != "*" and head != "-":
            continue
        m = OBS_RE.match(raw)
        if m:
            arrow, prio, time, text = m.group("arrow", "prio", "time", "text")
            if prio or time or arrow:
                out.append(_Line(raw, number, text, prio == "🔴"))
    return out


def _weight(words: frozenset[str], weights: dict[str, float]) -> float:
    """Return the total weight of WORDS (a word WEIGHTS lacks weighs 1); fsum: the same total in any set order."""
    if weights.keys() >= words:   # every word of a key's lines has its weight: summed without a call a word
        return math.fsum(map(weights.__getitem__, words))
    return math.fsum(weights.get(w, 1.0) for w in words)


def _score(wa: frozenset[str], ta: float, wb: frozenset[str], tb: float, weights: dict[str, float]) -> float:
    """Return the weighted containment of word sets WA and WB (total weights TA and TB), 0..1: the shared
    words' weight (fsum) divided by the lighter total, capped at 1; 0 when they share no word."""
    shared = wa & wb
    if not shared or ta <= 0 or tb <= 0:
        return 0.0
    return min(1.0, _weight(shared, weights) / min(ta, tb))


def similarity(a: str, b: str, weights: dict[str, float] | None = None) -> float:
    """Return how alike two observation texts are, 0..1 (WEIGHTS: word -> weight, default 1 each)."""
    na, nb = normalise(a), normalise(b)
    if na == nb:
        return 1.0
    weights = weights or {}
    wa, wb = words_of(na), words_of(nb)
    return _score(wa, _weight(wa, weights), wb, _weight(wb, weights), weights)


@dataclass
class LostObservation:
    """A 🔴 line of `generation` that no later generation keeps.

    `closest` is the most similar later line (raw text, or None when later logs have no
    observation), `closest_generation` its generation, `similarity` its score (0..1),
    `line_number` the 1-based line in the generation's log, `missing` the names, numbers and rare
    words of the line that the closest line lacks (empty when it has none to lack).
    """

    record: OMRecord
    generation: int
    line: str
    line_number: int
    closest: str | None
    closest_generation: int | None
    similarity: float
    missing: tuple[str, ...] = ()


def find_lost_high_priority(generations: list[OMRecord], threshold: float = LOST_SIMILARITY) -> list[LostObservation]:
    """Return the 🔴 observations lost across GENERATIONS (one lookup key's rows, any order).

    A row is compared with every row of a higher generationCount (rows sharing a count are not
    compared with each other). Cost: 🔴 lines × distinct later texts set intersections (a text
    carried through several generations is compared once, as its nearest copy), paid only when some
    earlier 🔴 line is not found word for word in a later generation (`_all_kept`): a chain of
    generations that carry their 🔴 lines forward costs one parse of each log, and a key whose
    generations below the current one hold no 🔴 line costs none.
    """
    ordered = sorted(generations, key=lambda r: (r.generation_count, r.created_at or "", r.id))
    top = ordered[-1].generation_count if ordered else 0
    if not any(r.generation_count != top and "🔴" in (r.active_observations or "") for r in ordered):
        return []   # no 🔴 line below the current generation (one generation): no log parsed
    parsed = [observation_lines(rec.active_observations) for rec in ordered]   # each log parsed once
    if _all_kept(ordered, parsed):
        return []
    groups: dict[int, list] = {}
    every: list[frozenset[str]] = []   # the words of every line (document frequencies)
    texts: dict[str, tuple[str, frozenset[str]]] = {}   # a line carried word for word is normalised once
    for rec, rec_lines in zip(ordered, parsed):  # noqa: B905 (one list per row, by construction)
        lines = []
        for ln in rec_lines:
            known = texts.get(ln.text)
            if known is None:
                known = texts[ln.text] = normalise_words(ln.text)
            lines.append((ln, *known))
            every.append(known[1])
        groups.setdefault(rec.generation_count, []).append((rec, lines))
    df = Counter(chain.from_iterable(every))
    total = len(every) or 1
    weights = {w: math.log(1 + total / n) for w, n in df.items()}
    line_weight: dict[str, float] = {}
    out: list[LostObservation] = []
    # (generation, line, normalised text, words, weight) of the first line of each normalised text over every higher
    # generation, in the order the lines are compared (higher generations later): a line whose text
    # an earlier one already has scores and carries as that one does, so only the first can be kept
    # or closest (a later tie never replaces the closest line found first)
    later: list = []
    exact: set[str] = set()   # the normalised texts of LATER's lines
    heads_of: dict[str, set[str]] = {}
    for rank, count in enumerate(sorted(groups, reverse=True)):
        for rec, lines in groups[count] if rank else ():   # rank 0: the current generation, nothing after it
            out.extend(_lost_lines(rec, lines, later, exact, weights, threshold, heads_of))
        mine, mine_norms = [], set()
        for _rec, lines in groups[count]:
            for ln, norm, words in lines:
                if norm in mine_norms:
                    continue
                mine_norms.add(norm)
                weight = line_weight.get(norm)
                if weight is None:
                    weight = line_weight[norm] = _weight(words, weights)
                mine.append((count, ln, norm, words, weight))
        later = mine + [entry for entry in later if entry[2] not in mine_norms]
        exact |= mine_norms
    out.sort(key=lambda lost: (lost.generation, lost.line_number))
    return out


def _all_kept(ordered: list[OMRecord], parsed: list[list[_Line]]) -> bool:
    """Return True when no 🔴 line of ORDERED (ascending generationCount; PARSED: each row's lines) can
    be lost: each one's text is the text of a line of a higher generation (then their normalised
    texts are equal too, and `find_lost_high_priority` skips it), or no row below the current
    generation has a 🔴 line.
    """
    top = ordered[-1].generation_count if ordered else 0
    older = [i for i, r in enumerate(ordered) if r.generation_count != top and "🔴" in (r.active_observations or "")]
    if not older:
        return True
    later_texts: dict[int, set[str]] = {}   # generationCount -> texts of the lines of that count
    for rec, lines in zip(ordered, parsed):  # noqa: B905 (one list per row, by construction)
        if rec.generation_count > ordered[older[0]].generation_count:
            later_texts.setdefault(rec.generation_count, set()).update(ln.text for ln in lines)
    for i in older:
        count = ordered[i].generation_count
        kept = set().union(*(t for c, t in later_texts.items() if c > count))
        if any(ln.high and ln.text not in kept for ln in parsed[i]):
            return False
    return True


def _lost_lines(rec: OMRecord, lines: list, later: list, exact: set[str], weights: dict[str, float],
                threshold: float, heads_of: dict[str, set[str]]) -> list[LostObservation]:
    """Return REC's 🔴 LINES that no line of LATER (their normalised texts in EXACT) keeps.

    HEADS_OF: {normalised text: `_heads` of its words}, filled as later lines are looked at."""
    out: list[LostObservation] = []
    for ln, norm, words in lines:
        if not ln.high or not norm or norm in exact:
            continue
        mine = _weight(words, weights)
        names = names_of(ln.text)
        best, best_line, best_gen, best_words, kept = 0.0, None, None, frozenset(), False
        named = len(names) + sum(1 for w in words if not _DIGITS.isdisjoint(w)) >= 2
        floor = min(threshold, NAMED_SIMILARITY) if named else threshold
        weigh = weights.__getitem__ if weights.keys() >= words else (lambda w: weights.get(w, 1.0))
        fact = _fact(words, names, weights)
        for gen, other, onorm, owords, oweight in later:
            shared = words & owords
            # `_score`, inlined (the loop of the check; min() without its calls): a line sharing no word scores 0
            if shared and mine > 0 and oweight > 0:
                score = math.fsum(map(weigh, shared)) / (mine if mine < oweight else oweight)
                if score > 1.0:
                    score = 1.0
            else:
                score = 0.0
            if score >= floor:   # `carries`, its facts and the later line's heads made once
                heads = heads_of.get(onorm)
                if heads is None:
                    heads = heads_of[onorm] = _heads(owords)
                if _keeps(fact, owords, heads):
                    kept = True
                    break
            if score > best:
                best, best_line, best_gen, best_words = score, other.raw.strip(), gen, owords
        if not kept:
            missing = tuple(_lacks(fact, best_words, _heads(best_words))) if best_line else ()
            out.append(LostObservation(rec, rec.generation_count, ln.raw.strip(), ln.number,
                                       best_line, best_gen, round(best, 3), missing))
    return out

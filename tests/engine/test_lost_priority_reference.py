"""`find_lost_high_priority` finds what its rule, applied line by line against every later line, finds.

The check skips work (keys whose older generations hold no 🔴 line, later lines whose normalised text an
earlier later line already has, the score loop inlined); `reference_lost` below is the rule as
lost_priority.py's docstring states it, with no shortcut: each 🔴 line of a generation below the current
one, not found word for word later, is compared with every line of every higher generation (the nearest
generation first), kept by the first similar line that carries its fact, else reported with the first
closest line. The logs are the fixtures' own observation lines, dropped, reworded and carried forward by
seeded random draws (a Reflector's ways), with generations sharing a count among them.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter

from studio.engine.doctor.lost_priority import (
    LOST_SIMILARITY,
    NAMED_SIMILARITY,
    carries,
    find_lost_high_priority,
    names_of,
    normalise,
    normalise_words,
    observation_lines,
    similarity,
    words_of,
)
from studio.store.records import OMRecord


def reference_lost(generations: list[OMRecord], threshold: float = LOST_SIMILARITY) -> list[tuple]:
    """Return (generation, line number, line, closest, closest generation, similarity, missing) of each lost
    🔴 line, by the rule alone."""
    ordered = sorted(generations, key=lambda r: (r.generation_count, r.created_at or "", r.id))
    lines = [(rec, ln) for rec in ordered for ln in observation_lines(rec.active_observations)]
    df = Counter(w for _rec, ln in lines for w in words_of(normalise(ln.text)))
    weights = {w: math.log(1 + (len(lines) or 1) / n) for w, n in df.items()}
    counts = sorted({r.generation_count for r in ordered})
    out = []
    for rec, ln in lines:
        if not ln.high or rec.generation_count == counts[-1]:
            continue
        # the later lines: the nearest higher generation first, each in row and line order
        later = [(r, other) for c in counts if c > rec.generation_count for r, other in lines
                 if r.generation_count == c]
        norm = normalise(ln.text)
        if not norm or any(normalise(other.text) == norm for _r, other in later):
            continue
        words, names = words_of(norm), names_of(ln.text)
        named = len(names) + sum(1 for w in words if any(c in "0123456789" for c in w)) >= 2
        floor = min(threshold, NAMED_SIMILARITY) if named else threshold
        best, closest = 0.0, None
        for r, other in later:
            score = similarity(ln.text, other.text, weights)
            owords = words_of(normalise(other.text))
            if score >= floor and carries(words, names, owords, weights)[0]:
                break
            if score > best:
                best, closest = score, (r, other, owords)
        else:
            missing = tuple(carries(words, names, closest[2], weights)[1]) if closest else ()
            out.append((rec.generation_count, ln.number, ln.raw.strip(),
                        closest[1].raw.strip() if closest else None,
                        closest[0].generation_count if closest else None, round(best, 3), missing))
    return sorted(out, key=lambda lost: (lost[0], lost[1]))


def fixture_lines(fixture_db) -> list[str]:
    """Return the observation lines of every generation of the fixtures' OM records, each once."""
    from studio.store import open_store

    seen: dict[str, None] = {}
    for name in ("support", "buffered", "collab", "resource", "tools", "history"):
        with open_store(fixture_db(name)) as store:
            for key in store.om_lookup_keys():
                for rec in store.om_history(key["lookupKey"]):
                    seen.update(dict.fromkeys(ln.raw for ln in observation_lines(rec.active_observations)))
    return list(seen)


def reword(line: str, rng: random.Random) -> str:
    """Return LINE with a word dropped, two swapped, a number changed or a word capitalised (one of them)."""
    head, _, text = line.partition(") ")
    words = text.split()
    if len(words) < 3:
        return line
    i = rng.randrange(len(words))
    how = rng.randrange(4)
    if how == 0:
        del words[i]
    elif how == 1:
        j = rng.randrange(len(words))
        words[i], words[j] = words[j], words[i]
    elif how == 2:
        words[i] = "".join(str(rng.randrange(10)) if c.isdigit() else c for c in words[i]) or "42"
    else:
        words[i] = words[i].capitalize()
    return f"{head}) {' '.join(words)}"


def chain(pool: list[str], rng: random.Random) -> list[OMRecord]:
    """Return a key's generations: each keeps, rewords or drops the last one's lines and adds new ones."""
    log = rng.sample(pool, min(len(pool), rng.randrange(3, 25)))
    out = []
    count = 0
    for index in range(rng.randrange(1, 6)):
        out.append(OMRecord({"id": f"r{index}", "lookupKey": "thread:t", "generationCount": count,
                             "createdAt": f"2026-01-01T00:00:{index:02d}.000Z",
                             "activeObservations": "Date: Jan 1, 2026\n" + "\n".join(log)}))
        count += rng.choice((0, 1, 1, 1))   # now and then two rows of one count
        kept = []
        for line in log:
            draw = rng.random()
            if draw < 0.6:
                kept.append(line)
            elif draw < 0.85:
                kept.append(reword(line, rng))
        kept += rng.sample(pool, rng.randrange(0, 6))
        rng.shuffle(kept)
        log = kept
    return out


def test_lost_high_priority_equals_the_rule_line_by_line(fixture_db):
    pool = fixture_lines(fixture_db)
    assert sum("🔴" in line for line in pool) >= 20, "the fixtures hold too few 🔴 lines to draw from"
    rng = random.Random(2121)
    lost = 0
    for _ in range(300):
        generations = chain(pool, rng)
        got = [(x.generation, x.line_number, x.line, x.closest, x.closest_generation, x.similarity, x.missing)
               for x in find_lost_high_priority(generations)]
        assert got == reference_lost(generations)
        lost += len(got)
    assert lost >= 50, f"only {lost} lost lines drawn: the comparison says little"


#: The fold of the docstring's rule: punctuation runs to one space, a dot inside a word or number kept.
FOLD_RULE = re.compile(r"(?:[^\w.]|\.(?!\w)|(?<!\w)\.)+")


def test_normalise_and_words_take_the_rule_on_every_text():
    """ASCII text takes a byte-table road (lone dots, short digit words); it must give what the regex rule gives."""
    rng = random.Random(2124)
    alphabet = "aZq7 0.._-:;!?'\"()[]\t\n/é²🔴İKẞ\u0301\u00a0“٣\ud83d"
    texts = ["v1.24 node.js", "a..b", ".x", "x.", "U.S.A. e.g. 3 .5", "x . y", "", "  ", "24.1.", "ab 1 b2 x9 ab."]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 16))) for _ in range(20000)]
    texts += ["".join(rng.choice(alphabet[:-11]) for _ in range(rng.randrange(0, 16))) for _ in range(20000)]
    for text in texts:
        norm = FOLD_RULE.sub(" ", text.lower()).strip()
        words = frozenset(w for w in norm.split() if len(w) >= 3 or any(c.isdigit() for c in w))
        assert normalise(text) == norm, text
        assert words_of(normalise(text)) == words, text
        assert normalise_words(text) == (norm, words), text

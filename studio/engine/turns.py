"""Speaker tags of multi-user threads: `<turn author_id=".." author_name=".." functional_role="..">`.

Mastra's multi-user threads (docs: "Multi-user threads") wrap each user message as

    <turn author_id="u_alice" author_name="Alice" functional_role="editor">
    ...message text...
    </turn>

with `& " < >` in attribute values escaped as `&amp; &quot; &lt; &gt;`. Mastra itself never
parses the tag (the model reads it); this module reads it the way a careful reader would:
attributes in any order, single or double quotes (or none), missing attributes, several turns in
one text, and malformed input (an opening tag without `>`, an unterminated turn, a stray
`</turn>`) are all tolerated and reported as problems instead of raising. Values are decoded
once (`&amp;lt;` stays `&lt;`): `&amp; &quot; &lt; &gt; &apos;` and numeric references.
Everything returned is plain text: callers must never render it as markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["SPEAKER_ATTRIBUTES", "Turn", "TurnParse", "decode_entities", "has_turn_tag", "parse_turns"]

SPEAKER_ATTRIBUTES = ("author_id", "author_name", "functional_role")
_OPEN = re.compile(r"<turn(?=[\s>/]|$)", re.IGNORECASE)
_CLOSE = re.compile(r"</turn\s*>", re.IGNORECASE)
_NAME = re.compile(r"[^\s=>/\"'<]+")
_ATTRIBUTE_AHEAD = re.compile(r"[^\s=>/\"'<]+[ \t]*=")
_ENTITY = re.compile(r"&(amp|quot|lt|gt|apos|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_NAMED = {"amp": "&", "quot": '"', "lt": "<", "gt": ">", "apos": "'"}


def decode_entities(value: str) -> str:
    """Decode `&amp; &quot; &lt; &gt; &apos;` and `&#N;` / `&#xH;` in one pass (other text is kept as is)."""
    def one(m: re.Match) -> str:
        name = m.group(1)
        if name in _NAMED:
            return _NAMED[name]
        try:
            code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
        except ValueError:
            return m.group(0)
        if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            return m.group(0)
        return chr(code)
    return _ENTITY.sub(one, value)


@dataclass(frozen=True)
class Turn:
    """One `<turn>`: its decoded speaker attributes, its text, and where it sits in the message text.

    `start`/`end` are character offsets of the whole turn (opening tag to closing tag, or to where
    an unterminated turn stops); `body` is the text between the tags with one leading and one
    trailing line break removed. `attributes` holds every attribute found (decoded).
    """

    author_id: str | None
    author_name: str | None
    functional_role: str | None
    body: str
    start: int
    end: int
    terminated: bool
    attributes: dict = field(default_factory=dict, compare=False)
    open_tag: str = ""

    @property
    def missing(self) -> list[str]:
        """Return the speaker attributes the tag lacks (or leaves empty)."""
        return [a for a in SPEAKER_ATTRIBUTES if not self.attributes.get(a)]


@dataclass
class TurnParse:
    """What a message text holds: its turns in order, the text outside them, and problems found."""

    turns: list[Turn]
    outside: str
    problems: list[str]

    @property
    def tagged(self) -> bool:
        """Return True when the text has at least one `<turn>`."""
        return bool(self.turns)

    def display_text(self) -> str:
        """Return the text without the tags: the turns' bodies and any text outside them, in order."""
        pieces = [t.body for t in self.turns]
        if self.outside:
            pieces.append(self.outside)
        return "\n\n".join(p for p in pieces if p)


def has_turn_tag(text: str) -> bool:
    """Return True when TEXT contains a `<turn` opening (well-formed or not)."""
    return bool(text) and _OPEN.search(text) is not None


def _read_value(text: str, i: int) -> tuple[str, int, bool]:
    """Read an attribute value at I (after `=`); return (raw value, next index, well formed)."""
    n = len(text)
    if i < n and text[i] in "\"'":
        quote = text[i]
        close = text.find(quote, i + 1)
        stop = text.find(">", i + 1)
        newline = text.find("\n", i + 1)
        if close != -1 and (newline == -1 or close < newline):
            return text[i + 1:close], close + 1, True
        # No closing quote on the tag: take the value up to `>` (or the line end) and report it.
        ends = [e for e in (stop, newline) if e != -1]
        end = min(ends) if ends else n
        return text[i + 1:end], end, False
    m = re.compile(r"[^\s>]*").match(text, i)
    value = m.group(0)
    if value.endswith("/") and text.startswith(">", m.end()):
        value = value[:-1]
        return value, m.end() - 1, True
    return value, m.end(), True


def _parse_open_tag(text: str, start: int) -> tuple[dict, int, list[str], bool]:
    """Parse the opening tag at START (`<turn`...); return (attributes, end of tag, problems, self-closing)."""
    attrs: dict[str, str] = {}
    problems: list[str] = []
    i = start + len("<turn")
    n = len(text)
    while True:
        crossed_line = False
        while i < n and text[i] in " \t\r\n":
            crossed_line = crossed_line or text[i] == "\n"
            i += 1
        if crossed_line and i < n and not _ATTRIBUTE_AHEAD.match(text, i) and text[i] not in ">/":
            # A tag left open at the end of its line: the next line is the turn's text, not attributes.
            problems.append("an opening <turn> tag has no closing '>'")
            return attrs, i, problems, False
        if i >= n:
            problems.append("an opening <turn> tag has no closing '>'")
            return attrs, n, problems, False
        ch = text[i]
        if ch == ">":
            return attrs, i + 1, problems, False
        if text.startswith("/>", i):
            return attrs, i + 2, problems, True
        if ch == "<":
            problems.append("an opening <turn> tag has no closing '>'")
            return attrs, i, problems, False
        m = _NAME.match(text, i)
        if not m:
            problems.append(f"unexpected {ch!r} inside a <turn> tag")
            i += 1
            continue
        name = m.group(0).lower()
        i = m.end()
        j = i
        while j < n and text[j] in " \t":
            j += 1
        if j < n and text[j] == "=":
            j += 1
            while j < n and text[j] in " \t":
                j += 1
            raw, i, ok = _read_value(text, j)
            if not ok:
                problems.append(f"the value of {name} in a <turn> tag has no closing quote")
                if name not in attrs:
                    attrs[name] = decode_entities(raw)
                if i < n and text[i] == ">":
                    return attrs, i + 1, problems, False
                problems.append("an opening <turn> tag has no closing '>'")
                return attrs, (i + 1 if text.startswith("\n", i) else i), problems, False
        else:
            raw = ""
        if name in attrs:
            problems.append(f"a <turn> tag repeats the attribute {name}")
            continue  # the first one counts, as in HTML
        attrs[name] = decode_entities(raw)


def _trim_body(body: str) -> str:
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    if body.endswith("\r\n"):
        body = body[:-2]
    elif body.endswith("\n"):
        body = body[:-1]
    return body


def parse_turns(text: str | None) -> TurnParse:
    """Split TEXT into its `<turn>` blocks; never raises.

    A turn ends at its `</turn>`; an unterminated turn ends where the next `<turn` starts, or at the
    end of the text. Problems are plain sentences (unterminated turn, tag without `>`, quote not
    closed, repeated attribute, stray `</turn>`, missing speaker attributes).
    """
    text = text or ""
    turns: list[Turn] = []
    problems: list[str] = []
    outside: list[str] = []
    pos = 0
    while True:
        m = _OPEN.search(text, pos)
        if m is None:
            break
        between = text[pos:m.start()]
        outside.append(between)
        attrs, body_start, tag_problems, self_closing = _parse_open_tag(text, m.start())
        problems += tag_problems
        if self_closing:
            body, end, terminated = "", body_start, True
        else:
            nxt = _OPEN.search(text, body_start)
            close = _CLOSE.search(text, body_start)
            if close is not None and (nxt is None or close.start() < nxt.start()):
                body, end, terminated = text[body_start:close.start()], close.end(), True
            else:
                stop = nxt.start() if nxt is not None else len(text)
                body, end, terminated = text[body_start:stop], stop, False
                problems.append("a <turn> is not closed with </turn>")
        turn = Turn(author_id=attrs.get("author_id") or None, author_name=attrs.get("author_name") or None,
                    functional_role=attrs.get("functional_role") or None, body=_trim_body(body),
                    start=m.start(), end=end, terminated=terminated, attributes=attrs,
                    open_tag=text[m.start():body_start])
        if turn.missing:
            problems.append(f"a <turn> tag lacks {', '.join(turn.missing)}")
        turns.append(turn)
        pos = end
    outside.append(text[pos:])
    rest = "".join(outside)
    strays = len(_CLOSE.findall(rest))
    if strays:
        problems.append("a </turn> closes no <turn>" if strays == 1 else f"{strays} </turn> tags close no <turn>")
        rest = _CLOSE.sub("", rest)
    return TurnParse(turns=turns, outside=rest.strip(), problems=problems)

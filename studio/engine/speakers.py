"""Who said what in a multi-user thread: participants from `<turn>` tags, their counts, and anomalies.

A user message whose text carries a `<turn>` tag (studio.engine.turns) is attributed to the
speaker of its first turn; speakers are keyed by `author_id` (by name when the id is missing).
Each speaker gets its message count and the Mastra token estimate of those messages (the
per-message figure of Mastra's TokenCounter, as `tokens --json` reports it). Anomalies flag what a
reviewer should look at: one author_id under several names or roles, a tag in a non-user message,
unterminated or malformed tags, tags missing speaker attributes, several speakers in one message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from studio.engine.turns import TurnParse, has_turn_tag, parse_turns
from studio.errors import StudioError
from studio.store.records import Message

__all__ = [
    "UNKNOWN_SPEAKER",
    "Anomaly",
    "MessageAttribution",
    "Speaker",
    "SpeakerReport",
    "analyze_messages",
    "attribute_message",
    "speaker_key",
    "speakers_json",
    "thread_speakers",
]

UNKNOWN_SPEAKER = "unknown"


def speaker_key(author_id: str | None, author_name: str | None) -> str:
    """Return the key that identifies a speaker: its author_id, else `name:<author_name>`, else "unknown"."""
    if author_id:
        return author_id
    if author_name:
        return f"name:{author_name}"
    return UNKNOWN_SPEAKER


@dataclass
class Speaker:
    """A participant: identity (first name and role seen), every name and role seen, messages and tokens."""

    key: str
    author_id: str | None
    author_name: str | None
    functional_role: str | None
    names: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    messages: int = 0
    tokens: int = 0

    @property
    def label(self) -> str:
        """Return "name (role)" for display (plain text)."""
        name = self.author_name or self.author_id or "(unnamed speaker)"
        return f"{name} ({self.functional_role})" if self.functional_role else name


@dataclass
class Anomaly:
    """Something odd about the tags: KIND (a stable word), the message concerned (if one), a plain sentence."""

    kind: str
    message_id: str | None
    text: str


@dataclass
class MessageAttribution:
    """How one message is attributed: its speaker key (None for untagged/agent) and its parsed turns."""

    message_id: str
    role: str
    speaker: str | None
    parse: TurnParse


@dataclass
class SpeakerReport:
    """Participants of a thread, in order of first appearance, with the untagged user messages counted.

    `untagged_messages` counts *user* messages without a `<turn>` tag (assistant and tool messages
    are the agent's, not an unknown speaker's). `by_message` maps message id -> speaker key.
    """

    thread_id: str | None
    speakers: list[Speaker] = field(default_factory=list)
    untagged_messages: int = 0
    anomalies: list[Anomaly] = field(default_factory=list)
    by_message: dict[str, str] = field(default_factory=dict)
    messages: int = 0

    def speaker(self, key: str) -> Speaker | None:
        """Return the speaker with KEY, or None."""
        return next((s for s in self.speakers if s.key == key), None)


def attribute_message(message: Message) -> MessageAttribution:
    """Parse MESSAGE's text for turns; a user message is attributed to its first turn's speaker."""
    text = message.text
    parse = parse_turns(text) if has_turn_tag(text) else TurnParse([], text.strip(), [])
    speaker = None
    if message.role == "user" and parse.turns:
        first = parse.turns[0]
        speaker = speaker_key(first.author_id, first.author_name)
    return MessageAttribution(message.id, message.role, speaker, parse)


def _message_tokens(message: Message) -> int:
    from studio.engine import tokens

    try:
        return tokens.count_messages([message.as_mastra()])
    except StudioError:
        return 0


def analyze_messages(messages: Iterable[Message], *, thread_id: str | None = None,
                     count_tokens: Callable[[Message], int] | None = _message_tokens,
                     cancel: threading.Event | None = None,
                     attribute: Callable[[Message], MessageAttribution] = attribute_message) -> SpeakerReport:
    """Build the SpeakerReport of MESSAGES (a thread's messages in storage order).

    COUNT_TOKENS(message) -> tokens (default: Mastra's per-message estimate; None: no counting).
    ATTRIBUTE(message) -> its MessageAttribution (default `attribute_message`; a view that parsed its rows
    already hands in what it holds, so a report made again after one new message parses that message only).
    Stops early, with what it has, once CANCEL is set.
    """
    report = SpeakerReport(thread_id=thread_id)
    by_key: dict[str, Speaker] = {}
    conflicts: dict[str, list] = {}   # speaker key -> [message where a 2nd name, a 2nd role appeared]
    for m in messages:
        if cancel is not None and cancel.is_set():
            break
        report.messages += 1
        if m.role == "system":
            continue
        att = attribute(m)
        parse = att.parse
        for problem in dict.fromkeys(parse.problems):
            kind = ("unterminated_tag" if "not closed" in problem else
                    "missing_attributes" if "lacks" in problem else "malformed_tag")
            report.anomalies.append(Anomaly(kind, m.id, problem))
        if parse.turns and m.role != "user":
            report.anomalies.append(Anomaly("tag_in_non_user_message", m.id,
                                            f"a <turn> tag appears in an {m.role} message" if m.role[:1] in "aeiou"
                                            else f"a <turn> tag appears in a {m.role} message"))
        if m.role != "user":
            continue
        if att.speaker is None:
            report.untagged_messages += 1
            continue
        keys = list(dict.fromkeys(speaker_key(t.author_id, t.author_name) for t in parse.turns))
        if len(keys) > 1:
            report.anomalies.append(Anomaly("several_speakers_in_message", m.id,
                                            f"one message holds turns of {len(keys)} speakers; it is counted "
                                            "for the first one"))
        first = parse.turns[0]
        sp = by_key.get(att.speaker)
        if sp is None:
            sp = Speaker(key=att.speaker, author_id=first.author_id, author_name=first.author_name,
                         functional_role=first.functional_role)
            by_key[att.speaker] = sp
            report.speakers.append(sp)
        if first.author_name and first.author_name not in sp.names:
            sp.names.append(first.author_name)
            if len(sp.names) == 2:
                conflicts.setdefault(sp.key, [None, None])[0] = m.id
        if first.functional_role and first.functional_role not in sp.roles:
            sp.roles.append(first.functional_role)
            if len(sp.roles) == 2:
                conflicts.setdefault(sp.key, [None, None])[1] = m.id
        sp.messages += 1
        if count_tokens is not None:
            sp.tokens += count_tokens(m)
        report.by_message[m.id] = att.speaker
    for sp in report.speakers:
        names_at, roles_at = conflicts.get(sp.key, (None, None))
        who = f"author_id {sp.author_id}" if sp.author_id else sp.label
        if names_at:
            report.anomalies.append(Anomaly("several_names", names_at,
                                            f"{who} appears under {len(sp.names)} names: {', '.join(sp.names)}"))
        if roles_at:
            report.anomalies.append(Anomaly("several_roles", roles_at,
                                            f"{who} appears with {len(sp.roles)} roles: {', '.join(sp.roles)}"))
    return report


def thread_speakers(store, thread_id: str, *, cancel: threading.Event | None = None,
                    count_tokens: Callable[[Message], int] | None = _message_tokens,
                    batch: int = 2000) -> SpeakerReport:
    """Return the SpeakerReport of THREAD_ID's messages (read BATCH at a time, storage order).

    STORE is a MemoryStore; raises StoreError when a read fails.
    """
    def messages() -> Iterable[Message]:
        offset = 0
        while True:
            page = store.list_messages(thread_id, limit=batch, offset=offset)
            yield from page
            if len(page) < batch:
                return
            offset += batch

    return analyze_messages(messages(), thread_id=thread_id, count_tokens=count_tokens, cancel=cancel)


def speakers_json(report: SpeakerReport) -> dict:
    """Return the `speakers --json` document: {speakers: [{author_id, author_name, functional_role,
    messages, tokens}], untagged_messages}."""
    return {
        "speakers": [{"author_id": s.author_id, "author_name": s.author_name, "functional_role": s.functional_role,
                      "messages": s.messages, "tokens": s.tokens} for s in report.speakers],
        "untagged_messages": report.untagged_messages,
    }

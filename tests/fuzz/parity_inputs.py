"""Edge-case inputs for the fuzz parity test (tests/fuzz/test_fuzz_parity.py), drawn from a fixed seed.

Each generator takes a `random.Random` and a size and returns a JSON-serialisable list: texts made of
fragments chosen to sit on the parsers' edges (tags half open, nested, in other case; whitespace
JavaScript trims and Python would not; control characters; list markers; anchors), messages whose
parts touch every branch of Mastra's TokenCounter (attachments, bad URL escapes, tool states,
caches), and metadata filters with every kind of key and value. A handful of fixed cases head each
list, so the edges the issue named are covered whatever the draw.
"""

from __future__ import annotations

import hashlib
import json
import random

SPACES = [" ", "  ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", "\u00a0", "\u2028", "\u2029", "\ufeff", "\u3000",
          "\u0085", "\u180e", "\u200b", "\v", "\f"]
CONTROLS = ["\x00", "\x01", "\x08", "\x1b", "\x1f", "\x7f", "\x9f", "\u200e", "\ud83d\ude00", "é", "日本語"]
WORDS = ["text", "User likes tea", "🔴 (10:00) fact", "Date: Nov 1, 2026", "null", "123", '"quoted"', "true",
         "<b>", ">", "<", "&amp;", "x" * 30]

GROUP_FRAGMENTS = ["<observation-group", '<observation-group id="g1" range="a:b">', "</observation-group>",
                   '<observation-group id="g2" range="c:d" kind="reflection">', "<observation-group>",
                   "<observation-groupx>", "<observation-group\n>", '<observation-group id="x">', ">", "\n"]

PARSE_TAGS = ["<observations>", "</observations>", "<OBSERVATIONS>", "</Observations>", "<current-task>",
              "</current-task>", "<suggested-response>", "</suggested-response>", "<thread-title>",
              "</thread-title>", "<extracted-values>", "</extracted-values>",
              '{"current-task": "json task", "suggested-response": "json reply"}', '{"current-task": ""}',
              "- item", "* item", "1. item", "  - nested", "[O1] ", "[O2-N1] ", "-item", "* ", "<thread>",
              "</thread>", '<thread id="t1">', "<\u017fuggested-response>", "</\u017fuggested-response>",
              "\r<observations>", "\u2028</observations>", "\r<current-task>", "\u2029</current-task>"]


def _text(rng: random.Random, fragments: list[str], parts: int) -> str:
    pool = fragments + SPACES + CONTROLS + WORDS
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, parts)))


def strip_inputs(rng: random.Random, size: int) -> list[str]:
    """Observation logs for stripObservationGroups: group tags whole, half, nested, amid whitespace."""
    fixed = ["", " ", "\n\n\n", "\u00a0x\u00a0",
             '<observation-group id="a" range="1:2">\n\n x \n\n</observation-group>',
             '\n<observation-group id="a" range="1:2">\nA\n<observation-group id="b" range="3:4">\nB\n'
             '</observation-group>\n', '<observation-group id="a" range="1:2">\nno close',
             'x <observation-group id="a" range="1:2">\nno close, not at a line start']
    out = list(fixed)
    while len(out) < size:
        out.append(_text(rng, GROUP_FRAGMENTS * 3, 14))
    return out[:size]


def _answer(rng: random.Random) -> str:
    text = _text(rng, PARSE_TAGS * 2, 24)
    if rng.random() < 0.04:  # long enough for the degenerate-repetition check
        unit = _text(rng, PARSE_TAGS, 6) or "- repeated line of observations\n"
        text += unit * (2100 // max(1, len(unit)) + 1)
    return text


def parse_inputs(rng: random.Random, size: int) -> list[str]:
    """Reflector / Observer answers: tags, lists, anchors, JSON values, control characters."""
    fixed = ["", "   ", "<observations>\n- a\x01\n</observations>", "<observations>\n- a\n</observations>\x7f",
             "<current-task>\x00</current-task>\n- x", "<observations></observations>",
             "<observations>\n  \n</observations>\n- fallback", "- " + "w " * 6000]
    out = list(fixed)
    while len(out) < size:
        out.append(_answer(rng))
    return out[:size]


URLS = ["https://example.com/a.png", "https://example.com/doc%20one.pdf", "https://example.com/bad%zz.pdf",
        "https://example.com/%E0%A4%A.png", "https://example.com/%", "file:///tmp/a%2.txt", "data:image/png;base64,",
        "data:application/pdf;base64,JVBERi0xLjQ=", "data:text/plain,hello%20world", "data:text/plain,bad%zzescape",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "", "not a url", "%", "a%2Fb.txt", "https://example.com/caf%C3%A9.png"]
MIME = ["image/png", "image/jpeg", "application/pdf", "text/plain", "audio/mpeg", "", None, "IMAGE/PNG", "video/mp4"]
MODELS = [None, None, "openai/gpt-4o", "anthropic/claude-sonnet-4", "google/gemini-2.5-flash", "gpt-4o", "x/y"]
STATES = ["call", "partial-call", "result", "output-error", "output-denied", "approval-requested",
          "approval-responded", "weird", None]


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 7, 2 ** 53 + 1, 1.5, -0.0, 1e21, 1e-7, 123456789012])
    if kind in (3, 4, 5):
        return _text(rng, [], 6)
    if kind in (6, 7):
        return {rng.choice(["a", "b", "2", "10", "type", "text", "é"]): _value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _attachment(rng: random.Random, remote: bool) -> dict:
    urls = URLS if remote else [u for u in URLS if not u.startswith("https://")]
    if rng.random() < 0.5:
        part = {"type": "file", "data": rng.choice(urls), "mimeType": rng.choice(MIME)}
        if rng.random() < 0.3:
            part["filename"] = rng.choice(["a.pdf", "b%zz.txt", "", "image.png"])
    else:
        part = {"type": "image", "image": rng.choice(urls)}
        if rng.random() < 0.6:
            part["mimeType"] = rng.choice(MIME)
    if part.get("mimeType") is None:
        part.pop("mimeType", None)
    return part


def _part(rng: random.Random, remote: bool) -> dict:
    kind = rng.randrange(10)
    if kind <= 2:
        return {"type": "text", "text": _text(rng, [], 10)}
    if kind == 3:
        return _attachment(rng, remote)
    if kind == 4:
        inv = {"state": rng.choice(STATES), "toolCallId": "c1", "toolName": rng.choice(["search", "", 3])}
        if rng.random() < 0.7:
            inv["args"] = rng.choice([_value(rng), _text(rng, [], 4)])
        if rng.random() < 0.6:
            inv["result"] = _value(rng)
        if rng.random() < 0.2:
            inv["errorText"] = rng.choice(["", " ", "boom", 5, None, False, {}])
        if rng.random() < 0.2:
            inv["isError"] = rng.choice([True, False, 1, ""])
        if rng.random() < 0.2:
            inv["approval"] = rng.choice([{"reason": rng.choice(["", "no", None, 5, 0, False, {}])}, "x", None])
        return {"type": "tool-invocation", "toolInvocation": inv}
    if kind == 5:
        return {"type": rng.choice(["reasoning", "data-progress", "step-start", "source", "weird"]),
                "text": _text(rng, [], 4)}
    if kind == 6:
        return {"type": "tool-invocation", "toolInvocation": {
            "state": "result", "toolName": "shot", "args": {},
            "result": {"type": "content", "value": [
                {"type": rng.choice(["image-data", "media", "file-data", "text"]), "data": rng.choice(URLS),
                 "mediaType": rng.choice(["image/png", "application/pdf", "text/plain"]), "text": "t"}]}}}
    if kind == 7:
        return rng.choice([{"type": "text"}, {"type": "text", "text": 5}, {"type": None}, {},
                           {"type": "file"}, {"type": "image"}, {"type": "file", "data": 7},
                           {"type": "image", "image": {"x": 1}}, None, 5, "part", True, [], [1],
                           {"type": "tool-invocation"}, {"type": "tool-invocation", "toolInvocation": None},
                           {"type": "tool-invocation", "toolInvocation": "x"},
                           {"type": "text", "text": "t", "providerMetadata": rng.choice([5, "x", True, [], None])},
                           {"type": "text", "text": "t",
                            "providerMetadata": {"mastra": rng.choice([5, "x", [], None])}},
                           {"type": "file", "data": "data:text/plain,a", "filename": rng.choice([5, " ", None])},
                           {"type": "image", "image": "data:image/png;base64,", "mimeType": 5}])
    if kind == 8:
        part = _attachment(rng, remote)
        part["providerMetadata"] = {"mastra": {"tokenEstimate": rng.choice([
            {"v": 7, "source": "client", "key": "k", "tokens": 42}, {"v": 7, "source": "client", "tokens": "x"},
            {"v": 1, "source": "v7:tokenx", "key": "bad", "tokens": 3}, None, "x"])}}
        return part
    return {"type": "text", "text": _text(rng, [], 3), "providerMetadata": {"mastra": {"tokenEstimate": {
        "v": 7, "source": "v7:tokenx", "key": "text:0", "tokens": 1}}}}


def _stamped_text(text: str, tokens, version=7, source: str = "v7:tokenx") -> dict:
    """A text part carrying a tokenEstimate under its right key (`"text:" + sha256`), as Mastra stamps it."""
    key = "text:" + hashlib.sha256(text.encode()).hexdigest()
    return {"type": "text", "text": text, "providerMetadata": {"mastra": {"tokenEstimate": {
        "v": version, "source": source, "key": key, "tokens": tokens}}}}


#: Stamped tokens Mastra reuses or refuses: whole, negative, fractional, past 2**40 and 2**53, not numbers.
STAMPED_TOKENS = [146, 0, -5, 2.5, -0.0, 2 ** 41, 2 ** 53 - 1, 2 ** 53 + 2, 1e308, True, "5", None, [3]]


def stamped_messages() -> list[dict]:
    """Messages of stamped text parts (each of STAMPED_TOKENS, version 7 and 7.0, a stale source), alone or
    beside parts that cost nothing (data-*, reasoning) and tool calls: a warm count's every road."""
    out = []
    for n, tokens in enumerate(STAMPED_TOKENS):
        text = f"A stamped reply, number {n}."
        out.append({"role": "assistant", "content": {"format": 2, "parts": [_stamped_text(text, tokens)]}})
        out.append({"role": "user", "content": {"format": 2, "parts": [
            {"type": "data-om-observation-start", "data": {"n": n}}, _stamped_text(text, tokens, 7.0),
            {"type": "reasoning", "text": "thinking"}, _stamped_text(text + " Again.", 3, 7, "v6:tokenx")]}})
        out.append({"role": "assistant", "content": {"format": 2, "parts": [
            _stamped_text(text, tokens), {"type": "tool-invocation", "toolInvocation": {
                "state": "result", "toolCallId": "c1", "toolName": "search", "args": {"q": n}, "result": "ok"}}]}})
    return out


def count_inputs(rng: random.Random, size: int, remote: bool = True) -> list[list]:
    """[model, message] pairs for TokenCounter.countMessage(Async); REMOTE=False leaves out https URLs
    (countMessageAsync would probe them over the network)."""
    fixed_urls = [u for u in URLS if remote or not u.startswith("https://")]
    out: list[list] = [[None, {"role": "user", "content": {"format": 2, "parts": [
        {"type": "file", "data": url, "mimeType": "application/pdf"}]}}] for url in fixed_urls]
    out += [[None, message] for message in stamped_messages()]
    out += [[None, {"role": "user", "content": {"format": 2, "parts": [{"type": "image", "image": url}]}}]
            for url in fixed_urls]
    while len(out) < size:
        message: dict = {"role": rng.choice(["user", "assistant", "system", "tool", "", "robot"] * 6
                                             + [5, 0, True, None])}
        shape = rng.randrange(8)
        if shape == 0:
            message["content"] = _text(rng, [], 8)
            if rng.random() < 0.3:
                message["metadata"] = rng.choice([5, "x", {}, {"mastra": rng.choice([5, "x", {}])}, None])
        elif shape == 1:
            message["content"] = {"format": 2, "content": rng.choice([_text(rng, [], 8), "", 5, True, {}]),
                                  **({"parts": "x"} if rng.random() < 0.2 else {})}
            if rng.random() < 0.3:
                message["content"]["metadata"] = rng.choice([5, "x", {}, {"mastra": rng.choice([5, "x", {}])}])
        elif shape == 2:
            message["content"] = rng.choice([None, 5, [], {"format": 2}, {"format": 2, "parts": []}])
        else:
            message["content"] = {"format": 2, "parts": [_part(rng, remote) for _ in range(rng.randint(0, 4))]}
            if rng.random() < 0.2:
                message["content"]["content"] = _text(rng, [], 4)
        if rng.random() < 0.05:
            message.pop("role")
        out.append([rng.choice(MODELS), message])
    return out[:size]


KEYS = ["a", "b_2", "_x", "A9", "", "1a", "a-b", "a b", "é", "__proto__", "constructor", "prototype", "x" * 128,
        "y" * 129, "toString", "hasOwnProperty", "$a", "a.b", "a\u0000"]
FILTER_VALUES = ["s", "", 0, -1, 1.5, "1e999", "-1e999", "NaN", True, False, None, [], {}, [1], {"a": 1},
                 12345678901234567890, -0.0]


def _filter_text(rng: random.Random) -> str:
    shape = rng.randrange(10)
    if shape == 0:
        return rng.choice(["null", "[]", "[1]", '"s"', "1", "true", "false", "{}", "0"])
    pairs = []
    for _ in range(rng.randint(0, 4)):
        value = rng.choice(FILTER_VALUES)
        raw = value if value in ("1e999", "-1e999") else json.dumps(value)
        if value == "NaN":
            raw = '"NaN"'
        key = rng.choice(KEYS) if rng.random() < 0.3 else rng.choice(["a", "b_2", "_x", "A9", "x" * 128])
        pairs.append(f"{json.dumps(key)}: {raw}")
    return "{" + ", ".join(pairs) + "}"


MATCH_KEYS = ["a", "b", "_c"]
MATCH_VALUES = ['"1"', "1", "1.0", "-0", "0", "true", "false", "null", '""', "12345678901234567890",
                "12345678901234567000", "9007199254740993", "9007199254740992", "1e400", '"x"', "[1]", "{}"]


def _match_content(rng: random.Random):
    shape = rng.randrange(12)
    if shape == 0:
        return rng.choice(["", "not json", "[]", "null", '"s"', "{", '{"metadata": NaN}', "5"])
    if shape == 1:
        return rng.choice([None, [], {"metadata": None}, {"metadata": []}, {"metadata": "a"}, {}])
    pairs = []
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(MATCH_KEYS)
        values = [*MATCH_VALUES, "NaN", "Infinity"] if rng.random() < 0.1 else MATCH_VALUES
        pairs.append(f'"{key}": {rng.choice(values)}')
    text = '{"format": 2, "parts": [], "metadata": {' + ", ".join(pairs) + "}}"
    if shape == 2 and not any(word in text for word in ("NaN", "Infinity", "1e400")):
        return json.loads(text)   # an object, as a store that parsed the JSON hands it over
    return text


def metadata_match_inputs(rng: random.Random, size: int) -> list[list]:
    """[stored content, filter JSON text] pairs for storageMessageMatchesMetadataFilter (after validation)."""
    out: list[list] = [['{"metadata": {"a": 12345678901234567890}}', '{"a": 12345678901234567000}'],
                       ['{"metadata": {"a": 1, "b": NaN}}', '{"a": 1}'], ['{"metadata": {"a": -0}}', '{"a": 0}'],
                       ['{"metadata": {"a": 1e400}}', '{"a": 1}'], ['{"metadata": {"a": null}}', '{"b": null}']]
    while len(out) < size:
        filt = "{" + ", ".join(f'"{rng.choice(MATCH_KEYS)}": {rng.choice(MATCH_VALUES[:-3])}'
                               for _ in range(rng.randint(0, 2))) + "}"
        out.append([_match_content(rng), filt])
    return out[:size]


def metadata_inputs(rng: random.Random, size: int) -> list[str]:
    """Metadata filters as JSON text (what `--metadata` takes) for validateStorageMetadataFilter."""
    fixed = ["null", "{}", '{"a": null}', '{"a": 1e999}', '{"__proto__": 1}', '{"a": [1]}', "[]", '"x"', "7",
             '{"a": 1, "a": {}}', '{"' + "k" * 129 + '": 1}']
    out = list(fixed)
    while len(out) < size:
        out.append(_filter_text(rng))
    return out[:size]

"""What the commands print: JSON exactly as `json.dumps(..., ensure_ascii=False, indent=2)` writes it, fast.

`print_json` writes a command's document to stdout in one write; `pretty_json` is the text.
"""

from __future__ import annotations

import json
import sys

_FLAT = (str, int, float)  # with None: the values json writes without nesting (bool is an int)
_FLAT_TYPES = frozenset({str, int, float, bool, type(None)})
_ENCODER = json.JSONEncoder(ensure_ascii=False)  # one encoder: json.dumps(..., ensure_ascii=False) builds one per call
_STRING = json.encoder.encode_basestring  # a str as json writes it with ensure_ascii=False (C)
_FLAT_ENCODERS: dict[int, json.JSONEncoder] = {}


def _scalar(value: object) -> str:
    """`json.dumps(VALUE, ensure_ascii=False)` of a str, int, float, bool or None."""
    if value.__class__ is str:
        return _STRING(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return _ENCODER.encode(value)


def pretty_json(data: object, level: int = 0) -> str:
    """Return `json.dumps(DATA, ensure_ascii=False, indent=2)` byte for byte (LEVEL: the nesting depth).

    json's pretty printer runs in Python, one call per value; here every list or object whose values
    are all scalars is written by json's C encoder in one call (its separators carry the line breaks
    and indentation), keys and other scalars by one shared encoder: ~10x faster on `threads --all`'s
    5,007 ids and on inspect's per-thread rows. Raises TypeError for a value json cannot write, as
    json.dumps does.
    """
    if isinstance(data, dict):
        if not data:
            return "{}"
        values = data.values()
    elif isinstance(data, (list, tuple)):
        if not data:
            return "[]"
        values = data
    else:
        return _scalar(data) if data is None or isinstance(data, _FLAT) else json.dumps(data, ensure_ascii=False)
    inner = "\n" + "  " * (level + 1)
    if _FLAT_TYPES.issuperset(map(type, values)) or all(v is None or isinstance(v, _FLAT) for v in values):
        encoder = _FLAT_ENCODERS.get(level)
        if encoder is None:
            encoder = _FLAT_ENCODERS[level] = json.JSONEncoder(ensure_ascii=False, separators=("," + inner, ": "))
        text = encoder.encode(data)
        return text[0] + inner + text[1:-1] + "\n" + "  " * level + text[-1]
    if isinstance(data, dict):
        if not all(k.__class__ is str for k in data):  # json's own key conversions (numbers, null...)
            return json.dumps(data, ensure_ascii=False, indent=2).replace("\n", "\n" + "  " * level)
        body = ("," + inner).join(
            f"{_STRING(k)}: {_scalar(v) if v is None or isinstance(v, _FLAT) else pretty_json(v, level + 1)}"
            for k, v in data.items())
        return "{" + inner + body + "\n" + "  " * level + "}"
    body = ("," + inner).join(_scalar(v) if v is None or isinstance(v, _FLAT) else pretty_json(v, level + 1)
                              for v in data)
    return "[" + inner + body + "\n" + "  " * level + "]"


def print_json(data: object) -> None:
    """Print DATA as `pretty_json` text and a newline to stdout, in one write.

    A lone surrogate (a file name's byte that is not UTF-8, e.g. a backup beside `caf\\xe9.db`) is
    written as U+FFFD, the replacement char: UTF-8 cannot carry it, and a path is shown that way
    everywhere (`studio.store.target.display_path`).
    """
    # one write of the whole text: json.dump to a stream writes every token separately (1.1 M writes
    # for inspect of the benchmark file)
    text = pretty_json(data) + "\n"
    if not text.isascii():
        import re

        text = re.sub("[\ud800-\udfff]", "\ufffd", text)
    sys.stdout.write(text)

"""tokenx's CJK test gives the answer of its regex class `_CJK_CLASS` for every run, short or long.

First principle: the class is tokenx's own (a run holding one of its letters is priced per code
point); the short-run path tests it char by char without building the regex, so both must agree at
every range edge, for characters on either side, and past the length where the regex takes over.
"""

import re

import pytest

from studio.engine import tokenx

_CLASS = re.compile(tokenx._CJK_CLASS)
_EDGES = sorted({chr(ord(c) + d) for lo, hi in tokenx._CJK_SPANS for c in (lo, hi) for d in (-1, 0, 1)})


@pytest.mark.parametrize("pad", [0, 3, tokenx._CJK_LOOP_MAX_CHARS + 5])
def test_every_range_edge_agrees_with_the_class(pad):
    for ch in _EDGES:
        run = "é" * pad + ch + "\u2014"
        assert tokenx._has_cjk(run) == (_CLASS.search(run) is not None), hex(ord(ch))


def test_runs_without_cjk():
    for run in ("hello", "caf\u00e9", "\u2014\u2019", "\U0001f600", "\u0e01" * 200, "\u0410\u0411"):
        assert not tokenx._has_cjk(run)
    assert tokenx._has_cjk("\u4e2d\u6587") and tokenx._has_cjk("x" * 100 + "\uac00")

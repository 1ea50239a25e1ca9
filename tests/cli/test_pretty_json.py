"""`pretty_json` writes what `json.dumps(indent=2, ensure_ascii=False)` writes, byte for byte.

First principle: the CLI's JSON is a stable interface, so the faster writer must not change one
byte of it, for any document json can write (nested objects and lists, empty ones, non-string
keys, unicode, NaN, big numbers).
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.cli.output import pretty_json

_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
            | st.text(max_size=12))
_KEYS = st.text(max_size=6) | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
_DOCS = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=5)
                     | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(_DOCS)
def test_same_text_as_json_dumps(doc):
    assert pretty_json(doc) == json.dumps(doc, ensure_ascii=False, indent=2)


def test_known_shapes():
    doc = {"thread_ids": ["a", "é\n\"b\""], "total": 2, "has_more": False, "empty": [], "none": {},
           "rows": [{"id": 1, "x": [1.5, None]}, {}], 3: {"k": float("inf")}}
    assert pretty_json(doc) == json.dumps(doc, ensure_ascii=False, indent=2)


@pytest.mark.parametrize("doc", [{"a": {1, 2}}, [object()], {"a": [1, {"b": b"x"}]}])
def test_unwritable_value_raises_type_error_as_json_does(doc):
    with pytest.raises(TypeError):
        json.dumps(doc, indent=2)
    with pytest.raises(TypeError):
        pretty_json(doc)

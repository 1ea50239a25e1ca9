"""Differential fuzzing of our ports against Mastra's own functions, run through node as the oracle.

For each function, a fixed seed draws a fixed number of edge-case inputs (tests/fuzz/parity_inputs.py);
one node process (tests/interop/scripts/studio-fuzz-worker.mjs) runs real Mastra over the whole list,
and every answer must equal ours: the same value, or, where Mastra throws, a StudioError from us
(`UncountableMessage` for a token count, `ValidationError` for a metadata filter). One differing input
fails the test and is printed with both answers.

Deterministic: the inputs depend only on the seed and the sizes; the worker is run without any
provider API key in its environment and countMessageAsync gets no https URL, so Mastra never goes to
the network (it would probe remote images and call count-token endpoints).
"""

from __future__ import annotations

import json
import math
import os
import random

import pytest

from studio.common.metadata_filter import ValidationError, message_metadata_matches, parse_metadata_json
from studio.engine.observer_parse import parse_observer_output
from studio.engine.reflector_parse import parse_reflector_output, strip_observation_groups
from studio.engine.tokens import UncountableMessage, count_message, count_message_for_status
from tests.fuzz import parity_inputs
from tests.interop.conftest import install_corpus, run_node
from tests.uncountable_db import uncountable_message

SEED = 26
OBSERVER_SLUGS = ("current-task", "suggested-response", "thread-title")
#: function: (inputs per run, generator)
CASES = {
    "strip-groups": (400, parity_inputs.strip_inputs),
    "reflector": (600, parity_inputs.parse_inputs),
    "observer": (600, parity_inputs.parse_inputs),
    "count": (2500, parity_inputs.count_inputs),
    "count-async": (1500, lambda rng, size: parity_inputs.count_inputs(rng, size, remote=False)),
    "metadata-filter": (500, parity_inputs.metadata_inputs),
    "metadata-match": (500, parity_inputs.metadata_match_inputs),
}
NO_KEYS = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def _normal(value):
    """JSON values compared the way JavaScript sees them (every number a double)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else repr(float(value))
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return [_normal(v) for v in value]


def ours(function: str, value):
    """Our port's answer to VALUE, in the worker's shape ({"ok": …} or {"error": …})."""
    try:
        if function == "strip-groups":
            return {"ok": strip_observation_groups(value)}
        if function == "reflector":
            r = parse_reflector_output(value)
            return {"ok": {"observations": r.observations, "currentTask": r.current_task,
                           "suggestedResponse": r.suggested_response, "degenerate": r.degenerate}}
        if function == "observer":
            r = parse_observer_output(value, OBSERVER_SLUGS)
            return {"ok": {"observations": r.observations, "currentTask": r.current_task,
                           "suggestedContinuation": r.suggested_response, "threadTitle": r.thread_title,
                           "degenerate": r.degenerate}}
        if function in ("count", "count-async"):
            model, message = value
            count = count_message if function == "count" else count_message_for_status
            return {"ok": count(message, model=model)}
        if function == "metadata-filter":
            return {"ok": parse_metadata_json(value)}
        if function == "metadata-match":
            content, filter_text = value
            return {"ok": message_metadata_matches(content, parse_metadata_json(filter_text))}
    except (UncountableMessage, ValidationError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    raise AssertionError(function)


def differences(corpus, function: str, tmp_path) -> tuple[int, list]:
    """Run FUNCTION's inputs through Mastra and ours; return (inputs, [(input, Mastra's, ours)] that differ)."""
    size, generate = CASES[function]
    inputs = generate(random.Random(f"{SEED}:{function}"), size)
    assert len(inputs) == size
    source, answers = tmp_path / f"{function}.in.json", tmp_path / f"{function}.out.json"
    source.write_text(json.dumps(inputs))
    run_node_env(corpus, function, source, answers)
    theirs = json.loads(answers.read_text())
    assert len(theirs) == size
    diffs = []
    for value, their in zip(inputs, theirs, strict=True):
        our = ours(function, json.loads(json.dumps(value)))
        same = ("error" in our) == ("error" in their) and (
            "error" in our or _normal(our["ok"]) == _normal(their["ok"]))
        if not same:
            diffs.append((value, their, our))
    return size, diffs


def run_node_env(corpus, function, source, answers):
    """Run the worker without provider API keys (so Mastra's async count never calls an endpoint)."""
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(NO_KEYS)
        run_node(corpus, "studio-fuzz-worker.mjs", function, str(source), str(answers))
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def corpus():
    return install_corpus()


@pytest.mark.parametrize("function", list(CASES))
def test_our_port_answers_like_mastra(corpus, function, tmp_path):
    size, diffs = differences(corpus, function, tmp_path)
    shown = "\n".join(f"input {json.dumps(v, ensure_ascii=True)[:300]}\n  Mastra {json.dumps(t)[:300]}\n"
                      f"  ours   {json.dumps(o, default=str)[:300]}" for v, t, o in diffs[:5])
    assert not diffs, f"{function}: {len(diffs)} of {size} inputs differ from Mastra\n{shown}"


def test_the_test_databases_uncountable_message_is_one_mastra_cannot_count(corpus, tmp_path):
    """tests/uncountable_db.py's message: Mastra's countMessage and countMessageAsync throw on it, as our count does."""
    message = uncountable_message()
    for function in ("count", "count-async"):
        source, answers = tmp_path / f"{function}.in.json", tmp_path / f"{function}.out.json"
        source.write_text(json.dumps([[None, message], ["openai/gpt-4o", message]]))
        run_node_env(corpus, function, source, answers)
        assert json.loads(answers.read_text()) == [{"error": "URIError: URI malformed"}] * 2
        for model in (None, "openai/gpt-4o"):
            assert ours(function, [model, message])["error"].startswith("UncountableMessage: ")

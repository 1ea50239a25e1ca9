"""Expected data of the fast (no-node) tests, recomputed by real Mastra: check it, or write it anew.

Three sets of figures are stored in the repository so that the unit tests run without node; each is
recomputed here by the real npm packages of ../shared/mastra-corpus (installed once with `npm ci`
into the cache, as for the interop tests):

* tests/engine/data/observer_format_expected.json: `formatMessagesForObserver`, the other-threads
  context blocks and tokenx estimates (tests/interop/scripts/studio-observer-format.mjs). Its inputs
  (fixture copies, and the hand-made messages and texts stored in the file) are kept; the outputs are
  recomputed.
* SYNTHETIC_EXPECTED and ASYNC_EXPECTED of tests/engine/test_tokens_parity.py: `new TokenCounter({model})`'s
  countMessages([m]) of each synthetic message, and countMessages / countMessagesAsync of the messages
  carrying cached provider estimates (tests/interop/scripts/studio-token-counter.mjs).
* MASTRA of tests/engine/test_status_edge_cases.py: the pendingTokens of Mastra's `getStatus` on the
  altered fixture copies the builders of that module make (the corpus's oracle.mjs).

tests/interop/test_expected_data_interop.py compares all three with what is stored, on every run.
To regenerate after a Mastra upgrade or a new case:

    PYTHONPATH=. python -m tests.interop.regenerate            # compare; exit 1 and list what differs
    PYTHONPATH=. python -m tests.interop.regenerate --write    # rewrite the JSON, print the two dicts to paste
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import REPO, copy_fixture

OBSERVER_FORMAT_FILE = REPO / "tests" / "engine" / "data" / "observer_format_expected.json"
NODE_TIMEOUT_S = 300
OBSERVER_FORMAT_COMMAND = ("PYTHONPATH=. python -m tests.interop.regenerate --write (runs "
                           "tests/interop/scripts/studio-observer-format.mjs with node in the npm-installed "
                           "../shared/mastra-corpus, time zone UTC)")


def node(corpus: Path, script: str, *args: object) -> dict:
    """Run `node SCRIPT ARGS` in CORPUS; return the JSON it prints last; raise AssertionError if it fails."""
    done = subprocess.run(["node", script, *map(str, args)], cwd=corpus, capture_output=True, text=True,
                          timeout=NODE_TIMEOUT_S)
    if done.returncode != 0:
        raise AssertionError(f"node {script} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def observer_format_document(corpus: Path, work: Path, stored: dict | None = None) -> dict:
    """Return observer_format_expected.json recomputed by Mastra from STORED's inputs (default: the committed file)."""
    stored = stored if stored is not None else json.loads(OBSERVER_FORMAT_FILE.read_text(encoding="utf-8"))
    inputs = {
        "fixtures": {name: str(copy_fixture(name, work / "fixtures")) for name in stored["fixtures"]},
        "synthetic": [{"name": c["name"], "messages": c["messages"]} for c in stored["synthetic"]],
        "syntheticContext": [{"name": c["name"], "threads": c["threads"], "currents": list(c["expected"])}
                             for c in stored["syntheticContext"]],
        "tokenx": [text for text, _ in stored["tokenx"]],
    }
    (work / "observer-format-in.json").write_text(json.dumps(inputs), encoding="utf-8")
    node(corpus, "studio-observer-format.mjs", work / "observer-format-in.json", work / "observer-format-out.json")
    out = json.loads((work / "observer-format-out.json").read_text(encoding="utf-8"))
    header = dict(stored["_header"], command=OBSERVER_FORMAT_COMMAND)
    return {"_header": header, **out}


def token_counter_expected(corpus: Path, work: Path) -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, int]]]:
    """Return test_tokens_parity's (SYNTHETIC_EXPECTED, ASYNC_EXPECTED) as Mastra computes them now.

    SYNTHETIC_EXPECTED: {case: countMessages([message]) per model of MODELS}; ASYNC_EXPECTED:
    {case: (countMessages, countMessagesAsync)} of each ASYNC_CASES message with its model.
    """
    from tests.engine.test_tokens_parity import ASYNC_CASES, MODELS, SYNTHETIC

    inputs = {"models": MODELS, "cases": copy.deepcopy(SYNTHETIC),
              "asyncCases": {name: list(case) for name, case in copy.deepcopy(ASYNC_CASES).items()}}
    (work / "token-counter-in.json").write_text(json.dumps(inputs), encoding="utf-8")
    node(corpus, "studio-token-counter.mjs", work / "token-counter-in.json", work / "token-counter-out.json")
    out = json.loads((work / "token-counter-out.json").read_text(encoding="utf-8"))
    return ({name: tuple(counts) for name, counts in out["cases"].items()},
            {name: tuple(counts) for name, counts in out["asyncCases"].items()})


def status_edge_cases(corpus: Path, work: Path) -> dict[str, int]:
    """Return {case: pendingTokens} of Mastra's getStatus on each altered copy test_status_edge_cases builds."""
    from tests.engine import test_status_edge_cases as edge

    out = {}
    for case, (name, build) in edge.CASES.items():
        path = copy_fixture(name, work / f"edge-{case}")
        thread_id = build(path)
        out[case] = node(corpus, "studio-om-status.mjs", path, thread_id)["pendingTokens"]
    return out


def main(argv: list[str] | None = None) -> int:
    """Compare (or with --write, rewrite) the stored expected data with what Mastra computes now."""
    from tests.engine.test_status_edge_cases import MASTRA
    from tests.engine.test_tokens_parity import ASYNC_EXPECTED, SYNTHETIC_EXPECTED
    from tests.interop.conftest import install_corpus

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite observer_format_expected.json; print the dicts")
    args = parser.parse_args(argv)
    corpus = install_corpus()
    differences = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        document = observer_format_document(corpus, work)
        stored = json.loads(OBSERVER_FORMAT_FILE.read_text(encoding="utf-8"))
        if {k: v for k, v in document.items() if k != "_header"} != {k: v for k, v in stored.items() if k != "_header"}:
            differences.append(str(OBSERVER_FORMAT_FILE.relative_to(REPO)))
        counts, async_counts = token_counter_expected(corpus, work)
        if counts != SYNTHETIC_EXPECTED:
            differences.append("SYNTHETIC_EXPECTED (tests/engine/test_tokens_parity.py)")
        if async_counts != ASYNC_EXPECTED:
            differences.append("ASYNC_EXPECTED (tests/engine/test_tokens_parity.py)")
        pending = status_edge_cases(corpus, work)
        if pending != MASTRA:
            differences.append("MASTRA (tests/engine/test_status_edge_cases.py)")
    if args.write:
        text = json.dumps(document, indent=1, ensure_ascii=False)
        # lone UTF-16 surrogates (test inputs) stay escaped, as JSON.stringify writes them
        text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
        OBSERVER_FORMAT_FILE.write_text(text + "\n", encoding="utf-8")
        print("SYNTHETIC_EXPECTED = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in counts.items()) + "}")
        print(f"ASYNC_EXPECTED = {async_counts!r}")
        print(f"MASTRA = {pending!r}")
        return 0
    for item in differences:
        print(f"differs from Mastra: {item}", file=sys.stderr)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())

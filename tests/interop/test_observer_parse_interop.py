"""Observer answers are read exactly as real Mastra's parseObserverOutput reads them (run via node)."""

from __future__ import annotations

import hashlib
import json

from studio.engine.observer_parse import DEFAULT_SLUGS, parse_observer_output
from tests.interop.conftest import run_node

LOOP = "* 🔴 (10:00) The assistant keeps repeating the very same sentence again.\n" * 80
# 10,050 characters that never repeat a 200-character window (so not degenerate): a sha256 chain
LONG = "* 🟡 (10:00) " + "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(315))[:10_050]
WITH_TITLE = (*DEFAULT_SLUGS, "thread-title")
CASES = {
    "tagged": ("<observations>\nDate: Jan 1, 2026\n* 🔴 (10:00) User's favourite colour is teal.\n</observations>\n"
               "<current-task>\n- Primary: remember colours\n</current-task>\n"
               "<suggested-response>\nAsk about the next colour.\n</suggested-response>\n"
               "<thread-title>Colours</thread-title>", WITH_TITLE),
    "title-not-an-extractor": ("<observations>\n* 🟢 (09:00) A\n</observations>\n"
                               "<thread-title>Plain title</thread-title>", DEFAULT_SLUGS),
    "two-blocks-one-empty": ("<observations>\n* 🔴 (1:00) one\n</observations>\ntext\n<observations>\n\n"
                             "</observations>\n  <observations>\n  * 🟡 (2:00) two\n  </observations>", DEFAULT_SLUGS),
    "inline-mention-only": ("The user asked about <observations> tags.\n- a list line\n  * nested item\n"
                            "1. numbered\nplain prose", DEFAULT_SLUGS),
    "no-list-at-all": ("Nothing to observe here.", DEFAULT_SLUGS),
    "last-task-wins": ("<observations>\n* x (1:00) y\n</observations>\n<current-task>first</current-task>\n"
                       "<current-task>\"second, quoted\"</current-task>", DEFAULT_SLUGS),
    "extracted-values-json": ("<observations>\n* 🔴 (1:00) z\n</observations>\n<extracted-values>"
                              "{\"current-task\": \"from json\", \"suggested-response\": 3}</extracted-values>\n"
                              "<suggested-response>tag value</suggested-response>", DEFAULT_SLUGS),
    "no-extractors": ("<observations>\n* 🔴 (1:00) q\n</observations>\n  <current-task>\n  task at line start\n"
                      "  </current-task>\n<suggested-response>inline only</suggested-response>", ()),
    "uppercase-tags": ("<OBSERVATIONS>\n* ✅ (3:00) done\n</OBSERVATIONS>", DEFAULT_SLUGS),
    "degenerate-loop": (LOOP, DEFAULT_SLUGS),
    "overlong-line": (f"<observations>\n{LONG}\n* 🟢 (1:00) short\n</observations>", DEFAULT_SLUGS),
    "emoji-and-cjk": ("<observations>\n* 🔴 (1:00) 東京の引っ越し 🎉 naïve café\n</observations>", WITH_TITLE),
    "empty": ("", DEFAULT_SLUGS),
    "json-title-first": ("<observations>\n* 🔴 (1:00) k\n</observations>\n<current-task>tag task</current-task>\n"
                         "<extracted-values>{\"thread-title\": \"  from json  \"}</extracted-values>\n"
                         "<thread-title>tag title</thread-title>", WITH_TITLE),
}


def test_parse_observer_output_equals_mastra(mastra_corpus, tmp_path):
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps([{"name": n, "answer": a, "slugs": list(s)} for n, (a, s) in CASES.items()]),
                          encoding="utf-8")
    mastra = run_node(mastra_corpus, "studio-observer-parse.mjs", str(cases_file))["results"]
    assert set(mastra) == set(CASES)
    for name, (answer, slugs) in CASES.items():
        ours = parse_observer_output(answer, tuple(slugs))
        # extractedValues (the end marker's): the same pairs in the same key order
        assert {**ours.to_json(), "extractedValues": [list(kv) for kv in ours.extracted.items()]} == mastra[name], name
    # the cases exercise what they are named for
    assert mastra["degenerate-loop"]["degenerate"] and mastra["overlong-line"]["observations"].split("\n")[0].endswith(
        " … [truncated]")
    assert mastra["tagged"]["threadTitle"] == "Colours" and mastra["last-task-wins"]["currentTask"] == "second, quoted"
    assert [k for k, _ in mastra["tagged"]["extractedValues"]] == ["current-task", "suggested-response", "thread-title"]
    assert mastra["json-title-first"]["extractedValues"] == [["thread-title", "  from json  "],
                                                             ["current-task", "tag task"]]

"""Record how real Mastra parses Reflector answers: tests/engine/data/reflector_answers.oracle.json.

For each answer below, copies the support fixture to a temporary folder and runs
`mastra-reflect.mjs` (real @mastra/memory 1.31.0 `ObservationalMemory.reflect` with a model that
always gives that answer), then keeps what Mastra wrote: whether it reflected, the new row's
activeObservations and observationTokenCount, and the thread's `metadata.mastra.om`.

`prior` records support-1's `mastra.om` hints before the reflection (from the fixture's oracle), which
the answers without those tags leave as they were.

usage: PYTHONPATH=. python tests/engine/data/make_reflector_oracle.py [CORPUS_DIR]
CORPUS_DIR: a mastra-corpus copy with node_modules (default: the npm-installed copy the interop tests use,
tests/interop/conftest.py install_corpus).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[2].parent / "shared" / "fixtures" / "mastra"

# varied text (no repeated 200-character windows), so that the 10,000th UTF-16 unit of the line
# "* 🔴 (10:00) " + LONG is the high half of an emoji
_WORDS = " ".join(f"w{i}" for i in range(4000))
LONG = _WORDS[:10_000 - 13 - 1] + "🎉🎉 tail " + _WORDS[-500:]


def answers() -> dict[str, str]:
    """Return {case name: answer text}."""
    return {
        "tagged": ("<observations>\nDate: Nov 1, 2026\n* 🔴 (17:22) User stated they file taxes in April\n"
                   "* 🟡 (17:30) Discussed Postgres indexes\n</observations>\n\n<current-task>\n- Primary: taxes\n"
                   "</current-task>\n\n<suggested-response>\nAsk about the deadline.\n</suggested-response>\n\n"
                   "<thread-title>April tax deadline</thread-title>\n"),
        "list-fallback": ("Here is the memory:\n- 🔴 (09:00) User likes tea\n* 🟡 (09:05) Talked about Lisbon\n"
                          "Some prose that is not a list line.\n1. numbered item\n"),
        "prose-fallback": "Just a paragraph of memory without tags or list lines.\nSecond line.",
        "multi-blocks": ("<observations>\n* 🔴 (10:00) First block\n</observations>\n"
                         "User discussed <observations> tags inline\n"
                         "  <observations>\n* 🟡 (11:00) Second block\n  </observations>\n"),
        "last-current-task": ("<observations>\n* 🔴 (10:00) A\n</observations>\n"
                              "<current-task>\nfirst\n</current-task>\n"
                              "<current-task>\"second, quoted\"</current-task>\n<suggested-response>\n123\n"
                              "</suggested-response>\n"),
        "extracted-values": ("<observations>\n* 🔴 (10:00) B\n</observations>\n<extracted-values>\n"
                             "{\"current-task\": \"from json\", \"suggested-response\": \"\"}\n</extracted-values>\n"
                             "<current-task>from tag</current-task>\n"
                             "<suggested-response>tag response</suggested-response>\n"),
        "tasks-without-observation-tags": ("<current-task>\n- Primary: keep me out of the log\n</current-task>\n"
                                           "* 🔴 (10:00) Only line\n"),
        "anchors": ("<observations>\n[O1] * 🔴 (10:00) Anchored\n  [O2-N1] * -> step\n[X1] not an anchor\n"
                    "</observations>\n"),
        "uppercase-tags": ("<OBSERVATIONS>\n* 🔴 (10:00) Upper\n</OBSERVATIONS>\n"
                           "<Current-Task>upper task</Current-Task>\n"),
        "blank-task": "<observations>\n* 🔴 (10:00) C\n</observations>\n<current-task>\n   \n</current-task>\n",
        "overlong-line": f"<observations>\n* 🔴 (10:00) {LONG}\n* 🟡 (10:01) short\n</observations>\n",
        "degenerate-lines": ("<observations>\n" + "* 🟡 (10:00) the same observation again and again\n" * 60
                             + "</observations>\n"),
        "degenerate-windows": "<observations>\n* 🟡 (10:00) " + "abcdefghij" * 400 + "\n</observations>\n",
        "empty-block": "<observations>\n\n</observations>\n<current-task>something</current-task>\n",
        "empty-answer": "",
    }


def run(corpus: Path) -> dict:
    out = {}
    for name, text in answers().items():
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            for ext in ("", "-wal", "-shm"):
                src = SHARED / f"support.db{ext}"
                if src.exists():
                    shutil.copyfile(src, tmp / f"support.db{ext}")
                    (tmp / f"support.db{ext}").chmod(0o644)
            (tmp / "answer.txt").write_text(text, encoding="utf-8")
            proc = subprocess.run(["node", str(corpus / "mastra-reflect.mjs"), str(tmp / "support.db"), "support-1",
                                   str(tmp / "answer.txt")], capture_output=True, text=True, timeout=120)
            start = proc.stdout.index("{")
            doc = json.loads(proc.stdout[start:])
            om = ((doc.get("threadMetadata") or {}).get("mastra") or {}).get("om") or {}
            row = doc.get("row") or {}
            out[name] = {
                "answer": text,
                "reflected": doc["reflected"],
                "activeObservations": row.get("activeObservations") if doc["reflected"] else None,
                "observationTokenCount": row.get("observationTokenCount") if doc["reflected"] else None,
                "currentTask": om.get("currentTask"),
                "suggestedResponse": om.get("suggestedResponse"),
                "threadTitle": om.get("threadTitle"),
            }
            print(name, doc["reflected"], file=sys.stderr)
    return out


def prior() -> dict:
    """Return support-1's `metadata.mastra.om` hints in the support fixture, as Mastra's oracle lists them."""
    oracle = json.loads((SHARED / "support.oracle.json").read_text(encoding="utf-8"))
    [thread] = [t for r in oracle["resources"].values() for t in r["threads"] if t["id"] == "support-1"]
    om = thread["metadata"]["mastra"]["om"]
    return {key: om.get(key) for key in ("currentTask", "suggestedResponse", "threadTitle")}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        corpus = Path(sys.argv[1])
    else:
        from tests.interop.conftest import install_corpus
        corpus = install_corpus()
    data = {"mastra": "@mastra/memory 1.31.0 via mastra-corpus/mastra-reflect.mjs on support.db, thread support-1",
            "prior": prior(), "cases": run(corpus)}
    (HERE / "reflector_answers.oracle.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n",
                                                        encoding="utf-8")

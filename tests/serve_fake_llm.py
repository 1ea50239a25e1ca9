"""Serve tests/fake_llm.py's fake LLM on 127.0.0.1 until SIGTERM or SIGINT (packaging/smoke.sh uses it).

    python tests/serve_fake_llm.py > url.txt &      # prints the OpenAI-compatible base URL, then serves

Every request is answered with the Reflector answer of tests/engine/data/reflector_answers.oracle.json
("tagged" case), so `memory-studio reflect PATH --thread ID --model openai-compatible/m --base-url URL
--dry-run` runs the whole LLM path of an installed studio without a network.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fake_llm import FakeLLM, Reply

ORACLE = Path(__file__).resolve().parent / "engine" / "data" / "reflector_answers.oracle.json"


def main() -> None:
    """Start the server, print its base URL, serve until SIGTERM or SIGINT."""
    answer = json.loads(ORACLE.read_text(encoding="utf-8"))["cases"]["tagged"]["answer"]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with FakeLLM() as fake:
        fake.default = Reply(text=answer)
        print(fake.base_url, flush=True)
        while not done.wait(0.2):
            pass


if __name__ == "__main__":
    main()

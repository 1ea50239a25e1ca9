"""Time `memory-studio tokens` and the GUI's thread loads on a thread holding one 50 MB message.

Usage: PYTHONPATH=. python -m benchmarks.big_message_benchmark [MEGABYTES]

Builds a private copy of the `support` fixture with one user message whose text part is MEGABYTES
(default 50) of words, then prints seconds for: the `tokens` command (Mastra estimate + exact
o200k per message), the thread detail (OM status) and the first message page, as the GUI loads them.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO.parent / "shared" / "fixtures" / "mastra" / "support.db"
WORDS = "the quick brown fox jumps over lazy dog memory observation agent reflection token 12345 café über".split()


def build(folder: Path, megabytes: int) -> tuple[Path, str]:
    """Write FOLDER/big.db with one MEGABYTES message; return (path, thread id)."""
    path = folder / "big.db"
    shutil.copyfile(FIXTURE, path)
    rng = random.Random(1)
    words, size = [], 0
    while size < megabytes * 1_000_000:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    text = " ".join(words)
    conn = sqlite3.connect(path)
    thread_id, resource_id = conn.execute('SELECT thread_id, "resourceId" FROM mastra_messages GROUP BY thread_id '
                                          "ORDER BY COUNT(*) DESC LIMIT 1").fetchone()
    conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                 "VALUES (?, ?, ?, 'user', 'v2', '2026-12-01T00:00:00.000Z', ?)",
                 ("big-message", thread_id, json.dumps({"format": 2, "parts": [{"type": "text", "text": text}]}),
                  resource_id))
    conn.commit()
    conn.close()
    return path, thread_id


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as tmp:
        path, thread_id = build(Path(tmp), megabytes)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "studio", "tokens", str(path), thread_id], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL)
        print(f"tokens command: {time.perf_counter() - started:.1f} s")
        from studio.store.memory_store import MemoryStore
        from studio.ui import loaders  # no Qt: plain functions the GUI runs off its thread

        with MemoryStore.open(path) as store:
            for name, load in (("thread detail (status)", lambda: loaders.load_thread_detail(store, thread_id)),
                               ("message page", lambda: loaders.load_message_page(store, thread_id, 0, 200))):
                started = time.perf_counter()
                load()
                print(f"{name}: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()

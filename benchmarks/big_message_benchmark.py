"""Time `memory-studio tokens`, `--screenshot` and the GUI's thread loads on a thread holding one 50 MB message.

Usage: PYTHONPATH=. python -m benchmarks.big_message_benchmark [MEGABYTES] [--tab TAB]

Builds a private copy of the `support` fixture with one user message whose text part is MEGABYTES
(default 50) of words, then prints seconds (wall clock and CPU, so a figure taken on a loaded
machine can be read) for: the `tokens` command (Mastra estimate + exact o200k per message), the
studio's `--screenshot` of that thread (offscreen, default size; TAB default: the Messages tab),
and the thread detail (OM status) and first message page as the GUI loads them.
Before the fix of issue 10 (af63b05), `tokens` and the screenshot each took ~36 s on 50 MB. With one
split shared by both counts and the cache key hashed once (CPU s, user + system, best of 4, load ~12
on 2 cores): `tokens` 3.4 → 2.0, `--screenshot` 6.0 → 4.3; wall clock there 5.6–14 s and 12.7–29 s.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO.parent / "shared" / "fixtures" / "mastra" / "support.db"
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "memory", "observation", "agent",
         "reflection", "token", "12345", "café", "über"]


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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_command(name: str, args: list[str]) -> None:
    """Run `python -m studio ARGS` and print its wall-clock and CPU seconds (user + system)."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "studio", *args], cwd=REPO, check=True, env=env,
                   stdout=subprocess.DEVNULL)
    print(f"{name}: {time.perf_counter() - started:.1f} s wall, {_children_cpu() - cpu:.1f} s CPU", flush=True)


def main() -> None:
    argv = sys.argv[1:]
    tab = "messages"
    if "--tab" in argv:
        i = argv.index("--tab")
        tab = argv[i + 1]
        del argv[i:i + 2]
    megabytes = int(argv[0]) if argv else 50
    with tempfile.TemporaryDirectory() as tmp:
        path, thread_id = build(Path(tmp), megabytes)
        print(f"{megabytes} MB message in thread {thread_id}", flush=True)
        run_command("tokens command", ["tokens", str(path), thread_id])
        run_command(f"--screenshot ({tab} tab)",
                    [str(path), "--screenshot", str(Path(tmp) / "shot.png"), "--thread", thread_id, "--tab", tab])
        from studio.app.messages import load_message_page  # no Qt: plain functions the GUI runs off its thread
        from studio.app.thread_detail import load_thread_detail
        from studio.store import open_store

        with open_store(path) as store:
            for name, load in (("thread detail (status)", lambda: load_thread_detail(store, thread_id)),
                               ("message page", lambda: load_message_page(store, thread_id, 0, 200))):
                cpu, started = time.process_time(), time.perf_counter()
                load()
                print(f"{name}: {time.perf_counter() - started:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")


if __name__ == "__main__":
    main()

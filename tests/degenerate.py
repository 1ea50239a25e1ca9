"""A fixture thread whose OM generations hold Mastra's degenerate-repetition case.

An Observer or Reflector model that loops repeats itself; @mastra/memory before its
`detectDegenerateRepetition` check stored such output as is. `make_degenerate_db` copies the
real `support` fixture and rewrites every reflection generation of its most reflected thread
(picked from Mastra's oracle) the way Mastra would have written those outputs: the first holds a
21-line block repeated 62 times, each later one the log before it plus 2,300 more identical short
lines, and each row's `observationTokenCount` is the tokenx estimate of its log (what Mastra
stores for a reflection). Each reflection therefore wrote more than it read: the thread's
measured Reflector ratio is above 1.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from studio.engine import tokens
from tests.conftest import copy_fixture, load_oracle

BLOCK_LINES, BLOCK_REPEATS, SHORT_LINES = 21, 62, 2300


def most_reflected_thread(name: str = "support") -> str:
    """Return the thread of fixture NAME whose thread-scope OM record has the most generations (Mastra's oracle)."""
    records = [(len(r["history"]), key.split(":", 1)[1]) for key, r in load_oracle(name)["om"].items()
               if r["scope"] == "thread"]
    count, thread = max(records)
    assert count >= 3, f"no thread of the {name} fixture has two reflections (three generations)"
    return thread


THREAD = most_reflected_thread()


def degenerate_logs(count: int = 2) -> list[str]:
    """Return COUNT logs: a 21-line block repeated 62 times, then each the one before plus 2,300 short lines."""
    block = "\n".join(f"* 🟡 (10:{i:02d}) User asked again about the tax filing deadline, step {i}."
                      for i in range(BLOCK_LINES))
    logs = ["* 🔴 (09:00) Reflection: condensed earlier lines.\n" + "\n".join([block] * BLOCK_REPEATS)]
    while len(logs) < count:
        logs.append(logs[-1] + "\n" + "\n".join(["* 🟡 (09:00) ok"] * SHORT_LINES))
    return logs


def make_degenerate_db(dest_dir: Path) -> Path:
    """Copy the support fixture into DEST_DIR and give THREAD's reflections degenerate logs; return the db path."""
    path = copy_fixture("support", dest_dir)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id FROM mastra_observational_memory WHERE lookupKey = ? "
                            "AND originType = 'reflection' ORDER BY generationCount",
                            (f"thread:{THREAD}",)).fetchall()
        assert len(rows) >= 2, f"the support fixture's {THREAD} should have two reflections"
        for (record_id,), log in zip(rows, degenerate_logs(len(rows)), strict=True):
            conn.execute("UPDATE mastra_observational_memory SET activeObservations = ?, "
                         "observationTokenCount = ? WHERE id = ?",
                         (log, tokens.count_observations(log), record_id))
    return path

"""A fixture thread whose OM generations hold Mastra's degenerate-repetition case.

An Observer or Reflector model that loops repeats itself; @mastra/memory before its
`detectDegenerateRepetition` check stored such output as is. `make_degenerate_db` copies the
real `support` fixture and rewrites the two reflection generations of thread support-1 the
way Mastra would have written those outputs: generation 1 holds a 21-line block repeated 62
times, generation 2 holds 2,300 identical short lines, and each row's `observationTokenCount`
is the tokenx estimate of its log (what Mastra stores for a reflection). Each reflection
therefore wrote more than it read: the thread's measured Reflector ratio is above 1.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from studio.engine import tokens
from tests.conftest import copy_fixture

THREAD = "support-1"
BLOCK_LINES, BLOCK_REPEATS, SHORT_LINES = 21, 62, 2300


def degenerate_logs() -> tuple[str, str]:
    """Return the two logs: a 21-line block repeated 62 times, and 2,300 identical short lines."""
    block = "\n".join(f"* 🟡 (10:{i:02d}) User asked again about the tax filing deadline, step {i}."
                      for i in range(BLOCK_LINES))
    first = "* 🔴 (09:00) Reflection: condensed earlier lines.\n" + "\n".join([block] * BLOCK_REPEATS)
    second = "\n".join(["* 🟡 (09:00) ok"] * SHORT_LINES)
    return first, second


def make_degenerate_db(dest_dir: Path) -> Path:
    """Copy the support fixture into DEST_DIR and give support-1's reflections degenerate logs; return the db path."""
    path = copy_fixture("support", dest_dir)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id FROM mastra_observational_memory WHERE lookupKey = ? "
                            "AND originType = 'reflection' ORDER BY generationCount",
                            (f"thread:{THREAD}",)).fetchall()
        assert len(rows) == 2, "the support fixture's support-1 has two reflections"
        for (record_id,), log in zip(rows, degenerate_logs()):
            conn.execute("UPDATE mastra_observational_memory SET activeObservations = ?, "
                         "observationTokenCount = ? WHERE id = ?",
                         (log, tokens.count_observations(log), record_id))
    return path

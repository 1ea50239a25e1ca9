"""The precision / recall table in docs/doctor.md is what the doctor scores on its labelled case files now.

tests/doctor_cases.py builds the cases (real fixtures edited with sqlite3, labels from first principles
and the raw rows); benchmarks/doctor_precision.py prints the same table. Every figure is deterministic:
fixed cases, a fixed clock, no random draw.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.doctor_cases import CASES, run_cases, table

DOC = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"


def documented_table() -> str:
    """Return the table between the precision markers of docs/doctor.md."""
    m = re.search(r"<!-- precision table -->\n(.*?)\n<!-- end precision table -->", DOC.read_text(encoding="utf-8"),
                  re.DOTALL)
    assert m, "docs/doctor.md has no <!-- precision table --> block"
    return m.group(1).strip()


def test_documented_precision_and_recall_are_the_doctors_own(tmp_path):
    results = run_cases(tmp_path)
    assert len(results) == len(CASES) >= 42
    assert table(results) == documented_table()

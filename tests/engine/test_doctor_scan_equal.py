"""The cheaper health scan of issue 21 finds exactly what the scan before it found, on every fixture.

tests/engine/data/doctor_baseline.json holds the findings the doctor of commit 96fac0c (before the
change) reported on every fixture database and on a small benchmark database built by
benchmarks/build_large_db.py (duplicates, ties, stale updatedAt, foreign ids, lost 🔴 lines), all
at one fixed clock (tests/engine/data/make_doctor_baseline.py wrote it; re-recorded when issue 26
changed the rules on purpose). The code must report the same findings, byte for byte once each is
serialised with sorted keys.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(DATA))

import make_doctor_baseline as baseline  # noqa: E402  (the recorder's own helpers: same copies, same clock)

EXPECTED = json.loads((DATA / "doctor_baseline.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_doctor_finds_what_the_scan_before_issue_21_found(name, tmp_path):
    path = (baseline.bench_db(tmp_path) if name == "bench"
            else baseline.private_copy(baseline.fixture_paths()[name], tmp_path))
    findings, checked = baseline.doctor_findings(path)
    assert findings == EXPECTED[name]["findings"]
    assert checked == EXPECTED[name]["checked"]

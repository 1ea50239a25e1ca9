"""Write doctor_baseline.json: the doctor's findings on every fixture, as the scan computed them before issue 21.

    PYTHONPATH=<checkout of the code to record> python tests/engine/data/make_doctor_baseline.py

Issue 21 made the whole-file health scan cheaper (lost-priority matching only for the 🔴 lines a
later generation does not carry word for word, fewer date conversions, one read per thread); its
findings had to stay exactly the same. This file records what the code before that change found
on every fixture database (../shared/fixtures/mastra/*.db, live/*.db, the bundled sample), with a
fixed clock, so tests/engine/test_doctor_scan_equal.py can compare the new scan with the old one.
Recorded from commit 96fac0c (the parent of the change) with one fix applied: the similarity sums of
lost_priority.py use math.fsum (a plain sum over a set of words depends on the hash seed in its last
bits, so the "closest line" of a tie could differ from run to run).
Re-recorded for issue 26 item 4, whose rules changed the findings on purpose (lost 🔴 lines: one
finding per thread, a similar line must carry the names, numbers and rarest words; duplicates
compared within one role's run, without per-part times: the bench file's 171 "duplicates" were a
conversation replayed with other messages between the copies; summaries in words).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures" / "mastra"
#: The clock every run uses (stale flags depend on it): 2026-12-01T00:00:00Z.
NOW_MS = 1_796_083_200_000


def fixture_paths() -> dict[str, Path]:
    """Return {name: path} of every fixture database the baseline covers."""
    from studio.paths import SAMPLE_DATABASE

    found = {p.relative_to(FIXTURES).with_suffix("").as_posix(): p for p in sorted(FIXTURES.rglob("*.db"))}
    found["sample"] = SAMPLE_DATABASE
    return found


def private_copy(src: Path, dest_dir: Path) -> Path:
    """Copy SRC (with its -wal / -shm) into DEST_DIR; return the copy (fixtures are never opened in place)."""
    dst = dest_dir / src.name
    for ext in ("", "-wal", "-shm"):
        if Path(str(src) + ext).exists():
            shutil.copyfile(str(src) + ext, str(dst) + ext)
    return dst


def canonical(findings: list[dict]) -> list[str]:
    """Return FINDINGS as sorted JSON texts (the order of a run's batches is not part of the result)."""
    return sorted(json.dumps(f, sort_keys=True, ensure_ascii=False) for f in findings)


def doctor_findings(path: Path) -> tuple[list[str], dict]:
    """Return (canonical findings, checked counts) of `run_doctor` on PATH at NOW_MS."""
    from studio.engine.doctor import run_doctor
    from studio.store import open_store

    with open_store(path) as store:
        report = run_doctor(store, now_ms=NOW_MS).to_json()
    return canonical(report["findings"]), report["checked"]


#: The small benchmark database the baseline also covers (benchmarks/build_large_db.py, deterministic):
#: every thread a copy of a support.db thread, so thousands of lost 🔴 lines and timestamp ties.
BENCH = {"threads": 60, "per_thread": 40, "big": 300}


def bench_db(dest_dir: Path) -> Path:
    """Build the BENCH database in DEST_DIR; return its path."""
    sys.path.insert(0, str(REPO))
    from benchmarks.build_large_db import DEFAULT_SOURCE, build

    out = dest_dir / "bench.db"
    build(out, DEFAULT_SOURCE, BENCH["threads"], BENCH["per_thread"], BENCH["big"])
    return out


def main() -> int:
    out = {}
    for name, src in [*fixture_paths().items(), ("bench", None)]:
        with tempfile.TemporaryDirectory() as tmp:
            path = bench_db(Path(tmp)) if src is None else private_copy(src, Path(tmp))
            findings, checked = doctor_findings(path)
        out[name] = {"findings": findings, "checked": checked}
        print(f"{name}: {len(findings)} findings", file=sys.stderr)
    (HERE / "doctor_baseline.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Print the doctor's precision and recall per check on its labelled case files (tests/doctor_cases.py).

    python benchmarks/doctor_precision.py [--cases]

Builds every case in a temporary folder (copies of the real Mastra fixtures in ../shared, edited the
way Mastra or a bug leaves them), runs the doctor on each and prints the Markdown table that
docs/doctor.md holds (tests/engine/test_doctor_precision.py checks they agree). `--cases` also lists
each case's missed and unexpected findings.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.doctor_cases import CASES, run_cases, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", action="store_true", help="list each case's misses and false alarms")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = run_cases(Path(tmp))
    if args.cases:
        for name, labels, got in results:
            for label in sorted(labels - got):
                print(f"missed  {name}: {label}")
            for label in sorted(got - labels):
                print(f"extra   {name}: {label}")
    print(f"{len(CASES)} case files\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

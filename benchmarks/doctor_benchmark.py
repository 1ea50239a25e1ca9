"""Time `memory-studio doctor` against `memory-studio inspect` on one database (the issue's budget: doctor ≤ 2× inspect).

    python benchmarks/doctor_benchmark.py DB [--rounds N]

Runs inspect and doctor alternately in fresh subprocesses (so page-cache warmth and machine load
are shared fairly), N rounds (default 2), and prints each wall time, the best of each, and the ratio.
Figures are measurements, not assertions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def wall(args: list[str]) -> float:
    """Return the wall time (s) of `python -m studio ARGS` with its output discarded."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "studio", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"inspect": [], "doctor": []}
    for i in range(args.rounds):
        for name in ("inspect", "doctor"):
            t = wall([name, args.db, "--json"])
            times[name].append(t)
            print(f"round {i + 1}: {name} {t:.1f} s", flush=True)
    best = {k: min(v) for k, v in times.items()}
    print(f"best: inspect {best['inspect']:.1f} s, doctor {best['doctor']:.1f} s, "
          f"ratio {best['doctor'] / best['inspect']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

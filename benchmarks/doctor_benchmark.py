"""Time `memory-studio doctor` against `memory-studio inspect` on one database (the budget: doctor ≤ 2× inspect).

    python benchmarks/doctor_benchmark.py DB [--rounds N]

Runs inspect and doctor alternately in fresh subprocesses (so page-cache warmth and machine load
are shared fairly), N rounds (default 2), and prints each run's wall time and CPU time (user + sys,
less sensitive to other processes on a shared machine), the best of each, and the ratios.
Figures are measurements, not assertions.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def measure(args: list[str]) -> tuple[float, float]:
    """Return (wall s, CPU s) of `python -m studio ARGS` with its output discarded."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "studio", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {"inspect": [], "doctor": []}
    for i in range(args.rounds):
        for name in ("inspect", "doctor"):
            wall, cpu = measure([name, args.db, "--json"])
            times[name].append((wall, cpu))
            print(f"round {i + 1}: {name} wall {wall:.1f} s, CPU {cpu:.1f} s", flush=True)
    wall = {k: min(w for w, _ in v) for k, v in times.items()}
    cpu = {k: min(c for _, c in v) for k, v in times.items()}
    print(f"best wall: inspect {wall['inspect']:.1f} s, doctor {wall['doctor']:.1f} s, "
          f"ratio {wall['doctor'] / wall['inspect']:.2f}")
    print(f"best CPU:  inspect {cpu['inspect']:.1f} s, doctor {cpu['doctor']:.1f} s, "
          f"ratio {cpu['doctor'] / cpu['inspect']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run Memory Studio with `python -m studio`."""

from studio.cli import run_program

run_program()

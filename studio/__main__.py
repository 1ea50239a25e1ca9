"""Run Memory Studio with `python -m studio`."""

from studio.main import run_program

run_program()

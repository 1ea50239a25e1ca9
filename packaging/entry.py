"""Entry script of the PyInstaller app: the same `run_program` as the `memory-studio` console script."""

from studio.main import run_program

if __name__ == "__main__":
    run_program()

"""Entry script of the PyInstaller app: the same `main` as the `memory-studio` console script."""

import sys

from studio.cli import main

if __name__ == "__main__":
    sys.exit(main())

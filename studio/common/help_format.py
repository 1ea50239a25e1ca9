"""argparse's help formatter as the command line and the studio print their --help (no Qt, no third party)."""

from __future__ import annotations

import argparse
import sys


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, told the terminal width: its own probe imports shutil (and bz2, lzma),
    ~3 ms of every command's start. Width as shutil.get_terminal_size gives it: $COLUMNS, the terminal, 80."""

    def __init__(self, prog: str, **kwargs) -> None:
        if kwargs.get("width") is None:
            import os

            try:
                columns = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(sys.__stdout__.fileno()).columns
            except (ValueError, OSError, AttributeError):
                columns = 80
            kwargs["width"] = (columns or 80) - 2
        super().__init__(prog, **kwargs)

    def _split_lines(self, text: str, width: int) -> list[str]:
        """argparse's wrapping, never at a hyphen: `memory-studio sample-path` or `--password-stdin` stay whole."""
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        """argparse's paragraph filling (descriptions), never breaking at a hyphen either."""
        import textwrap

        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)

"""Where the studio's bundled resources live (sample database, tokenizer ranks, prompts)."""

from __future__ import annotations

from pathlib import Path

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SAMPLE_DATABASE = RESOURCES / "sample" / "memory.db"
TOKENIZERS = RESOURCES / "tokenizers"

"""Memory Studio's bundled data, installed as the package `studio.resources` (see studio/paths.py).

sample/memory.db (a real Mastra file), tokenizers/o200k_base.tiktoken (exact counts, offline),
prompts/*.md (our Reflector prompts), icons/ (the application icon, SVG and PNG sizes).
"""

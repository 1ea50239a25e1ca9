"""The leaf layer: pure helpers that every other layer (store, llm, engine, cli, ui) may import.

A module belongs here when it (a) does no I/O and holds no state beyond constants, (b) imports
nothing of the studio except other `studio.common` modules and the leaf modules `studio.errors`
and `studio.paths`, and (c) is needed below the engine as well as in it. Today:

- `jscompat`, `jsdates`, `jsurl`: JavaScript value semantics Mastra's numbers and strings depend on
  (UTF-16 lengths, `JSON.stringify`, `Date` parsing and formatting, WHATWG URL parsing);
- `metadata_filter`: Mastra's metadata-filter rules for listThreads and recall (validation, parsing,
  message matching), used by the store's queries and the CLI/UI that build filters;
- `om_settings`: Observational Memory settings resolved from a record's stored `config` (thresholds,
  buffer activation), as Mastra resolves them; read by the engine and by the store's writes;
- `cancel`: the thread-safe cancel token shared by the LLM client, the engine and the studio.

Mastra's token counter is *not* here: it is engine logic (`studio.engine.tokens`); a store write
that needs a count receives it, or the engine's estimator, from its caller. The layers are checked
by the import-linter contract in `pyproject.toml` (tests/test_layers.py).
"""

"""The application layer: the services both faces use (no Qt).

`studio.cli` (the command line) and `studio.ui` (the studio) are two faces over it and never
import each other; `studio.main` picks one. It imports the engine, the store and the leaf
modules below it, never Qt.

Loads the studio runs off its GUI thread (`loads`: what they share): `listing`, `thread_detail`,
`messages`, `history` (speakers), `statuses` (OM statuses in batches: the thread list, the
Overview and `inspect`), `health`, `trace`; `helper_process` runs them in a child process for
big databases. Documents the commands print, each from an open store: `inspection` (inspect,
tokens), `history` (threads, recall, speakers), `timeline` (timeline, whatif), `trace` (trace,
context), `health` (doctor). Writes: `reflection` (reflect, revert), `observation` (observe,
activate), `thread_writes` (clone, delete, clear), all through the one OM write protocol
(`write_protocol`, whose questions go through an `Interaction`) and returning what they changed
(`changes`). `failures` says how a failure reaches the user (exit codes, sentences); `text`
formats figures for display.
"""

"""The application layer: the services both faces use (no Qt).

`studio.cli` (the command line) and `studio.ui` (the studio) are two faces over it and never
import each other; `studio.main` picks one. Here live the loads the studio runs off its GUI
thread (`listing`, `thread_detail`, `messages`, `history`, `statuses`, `health`, `trace`), the
documents the commands print (`inspection`, `history`, `timeline`, `trace`, `health`), the jobs
that write (`reflection`, `observation`) and the one write protocol they go through
(`write_protocol`, with its `Interaction`), the change sets every write returns (`changes`), the
helper process (`helper_process`), how failures reach the user (`failures`) and text formatting
(`text`). It imports the engine, the store and the leaf modules below it, never Qt.
"""

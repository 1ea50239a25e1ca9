"""`memory-studio doctor TARGET [--thread ID] [--json]`: find what went wrong in an agent's memory.

Prints the doctor's findings (see studio.engine.doctor and docs/doctor.md): with `--json` the
document `{"findings": [...], "checked": {...}}`; otherwise one line per finding, grouped by
severity. Exit 0 whenever the run completed (findings are data, not failures); 2 for bad input
(missing file, not a Mastra database, unknown thread); 1 otherwise. The file is opened read-only.
"""

from __future__ import annotations

import sys

from studio.app.failures import EXIT_OK
from studio.app.health import doctor_document
from studio.cli import JSON_HELP, READ_PATH_HELP, add_target_argument, reading
from studio.cli.output import print_json


def format_human(report: dict) -> str:
    """Return the findings as text: a heading per severity, one line per finding, then what was checked."""
    lines = []
    for severity in ("error", "warning", "info"):
        group = [f for f in report["findings"] if f["severity"] == severity]
        if not group:
            continue
        lines.append(f"{severity.upper()} ({len(group)})")
        for f in group:
            where = f["thread_id"] or f["lookup_key"] or f["resource_id"] or "database"
            gen = f" gen {f['generation']}" if f["generation"] is not None else ""
            summary = " ".join(str(f["summary"]).split())   # stored text on one line, never markup
            lines.append(f"  {f['check']}  {where}{gen}: {summary}")
    checked = report["checked"]
    if not report["findings"]:
        lines.append("No findings.")
    lines.append("Checked " + ", ".join(f"{v:,} {_counted(k, v)}" for k, v in checked.items()) + ".")
    return "\n".join(lines)


def _counted(key: str, count: int) -> str:
    """KEY of `checked` ("lookup_keys") as words, in the singular for a count of one ("lookup key")."""
    words = key.replace("_", " ")
    return words[:-1] if count == 1 and words.endswith("s") else words


def add_doctor_command(subparsers) -> None:
    """Register `doctor TARGET [--thread ID] [--json]`."""
    p = subparsers.add_parser("doctor", help="check a memory.db for known Mastra memory failures")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", metavar="ID", help="check only this thread (and its OM record)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help=JSON_HELP)
    fmt.add_argument("--markdown", action="store_true", help="print the report as Markdown (stored text escaped)")
    p.set_defaults(run=_run_doctor)


def _run_doctor(args) -> int:
    with reading(args.path) as store:
        report = doctor_document(store, args.thread)
    if args.json:
        print_json(report)
    elif args.markdown:
        from studio.app.export import doctor_markdown
        from studio.store.target import redact_url

        sys.stdout.write(doctor_markdown(report, source=redact_url(str(args.path))))
    else:
        sys.stdout.write(format_human(report) + "\n")
    return EXIT_OK

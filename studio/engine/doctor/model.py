"""What the Memory doctor reports: findings, the check catalogue, and the report document.

A `Finding` is one problem in one place (a thread, an OM generation, a message) with the Mastra
report it comes from and what the user can do about it in the studio. `DoctorReport.to_json()` is
the stable `memory-studio doctor --json` document:
`{"findings": [...], "checked": {"threads", "records", "messages", "lookup_keys", "checks"}}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Check:
    """One check of the catalogue: its id, default severity, the public report and the usual fix."""

    id: str
    severity: str
    reference: str
    fix: str
    pending: bool = False


#: Every check id of issue 11, in the order the documentation lists them.
CHECKS: dict[str, Check] = {c.id: c for c in (
    Check("reflection-not-compressing", "warning",
          "mastra #14110 (reflection loop that cannot get under the threshold)",
          "Reflect now with a stronger model, or raise reflection.observationTokens"),
    Check("empty-generation", "error", "mastra PR #22074 (empty reflections wiped memory)",
          "Revert to the last non-empty generation (History ▸ Revert to this generation)"),
    Check("degenerate-repetition", "error", "mastra PR #22072, #24354 (degenerate-output detector)",
          "Revert to the generation before it, then Reflect now"),
    Check("message-over-threshold", "warning", "mastra #16523 (a single message over messageTokens is never observed)",
          "Reflect now, or raise observation.messageTokens above this message's size"),
    Check("uncountable-message", "error",
          "Mastra's TokenCounter throws on this message (getStatus and the Observer fail on its thread)",
          "Delete the message or clone the thread without it (Thread menu)"),
    Check("oversized-tool-result", "warning",
          "mastra #20930, #13301 (tool results and inline binaries flood the context)",
          "Delete the message or clone the thread without it (Thread menu); keep tool results small"),
    Check("stale-flag", "warning", "mastra PR #22210 (a busy flag left by a dead process blocks OM)",
          "Clear the stale flag (Reflect now offers to clear it)"),
    Check("duplicate-generation", "error", "mastra #22188 (concurrent initialisation), or a write race",
          "Reflect now or Revert: one new generation above both; then Mastra reads one row again"),
    Check("superseded-write", "error", "a running agent wrote onto the record it read at the start of its turn",
          "Revert to the superseded generation, or reflect again from it, so its later observations are kept"),
    Check("orphan-record", "warning", "mastra #16621 (deleting a thread left its OM rows behind)",
          "Nothing reads these rows; delete them with SQL if the data must go"),
    Check("duplicate-messages", "warning", "mastra #13089 (OM saved a user message once per agent step)",
          "Clone the thread without the duplicates, or delete them (Messages ▸ Delete message)"),
    Check("timestamp-ties", "info",
          "mastra #3735, PR #17598, #24237 (ties in createdAt make order and paging unstable)",
          "Nothing to fix in the file; expect the order of these messages to vary between reads"),
    Check("stale-thread-updatedat", "info", "mastra #17932 (thread updatedAt not bumped when messages are saved)",
          "Sort the thread list by last message instead of updatedAt; the file is otherwise fine"),
    Check("prompt-leak", "error", "mastra #22195 (Observer/Reflector instructions stored as memory)",
          "Revert to a generation without the leak, or Reflect now to rewrite the log"),
    Check("status-only-message", "warning", "mastra #18869, #16491 (data-om-status parts persisted as messages)",
          "Delete these messages (Messages ▸ Delete message); they hold no conversation"),
    Check("context-message-persisted", "warning", "mastra #19730 (ephemeral context messages stored as user messages)",
          "Delete the message (Messages ▸ Delete message); the agent replays it on every turn"),
    Check("duplicate-buffered-chunk", "warning", "mastra PR #23019 (one buffering cycle stored twice)",
          "Let Mastra activate the chunks, then Reflect now; or revert to the generation before"),
    Check("foreign-observed-ids", "warning", "mastra PR #19917 (a clone kept the source thread's observed ids)",
          "Reflect now on the thread so its record is rebuilt from its own messages"),
    Check("orphan-tool-result", "warning", "mastra #15244 (tool call observed, its result left in the window)",
          "Reflect now so the call and its result are observed together"),
    Check("lost-high-priority", "warning", "no single Mastra report: a high-priority fact a reflection dropped",
          "Revert to the generation that still has it, or Reflect now with a stronger model"),
    Check("malformed-json", "error", "Mastra reads these columns with JSON.parse; a bad value breaks or resets them",
          "Restore the value from a backup; Mastra treats it as empty"),
    Check("schema-drift", "info",
          "columns missing or unknown for the Mastra version this studio reads (@mastra/libsql 1.23.1)",
          "Open the file with the Mastra version that wrote it; the studio reads missing columns as NULL"),
    Check("timestamp-twin-mismatch", "error", "@mastra/pg reads the TIMESTAMPTZ twin (\"<col>Z\"), not the column "
          "another writer set (a twin left out gets its insert time: NOW())",
          "Set the twin to the column's time with SQL (the column holds what the writer meant), "
          "or write through Mastra"),
)}


@dataclass
class Finding:
    """One problem the doctor found.

    `check` is an id of CHECKS; `severity` "error" | "warning" | "info"; ids are None where they do
    not apply; `message_ids` lists the messages concerned (may be empty); `evidence` holds the
    figures the rule compared (tokens, ms, similarity…), JSON-ready.
    """

    check: str
    severity: str
    summary: str
    thread_id: str | None = None
    resource_id: str | None = None
    record_id: str | None = None
    lookup_key: str | None = None
    generation: int | None = None
    message_ids: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    reference: str = ""
    fix: str = ""

    def to_json(self) -> dict:
        """Return the finding in the `doctor --json` shape (every key present, null where not applicable)."""
        return {
            "check": self.check, "severity": self.severity, "thread_id": self.thread_id,
            "resource_id": self.resource_id, "record_id": self.record_id, "lookup_key": self.lookup_key,
            "generation": self.generation, "message_ids": list(self.message_ids), "summary": self.summary,
            "evidence": self.evidence, "reference": self.reference, "fix": self.fix,
        }


def finding(check: str, summary: str, *, severity: str | None = None, fix: str | None = None, **where: Any) -> Finding:
    """Return a Finding of CHECK with the catalogue's severity, reference and fix (SEVERITY/FIX override)."""
    spec = CHECKS[check]
    return Finding(check=check, severity=severity or spec.severity, summary=summary,
                   reference=spec.reference, fix=fix if fix is not None else spec.fix, **where)


def spans(numbers: list[int]) -> str:
    """Return NUMBERS (any order, repeats ignored) as ranges: [1, 2, 3, 7, 9, 10] -> "1–3, 7, 9–10"."""
    out: list[str] = []
    ordered = sorted(set(numbers))
    start = prev = None
    for n in [*ordered, None]:
        if start is not None and (n is None or n != prev + 1):
            out.append(str(start) if start == prev else f"{start}–{prev}")
            start = None
        if n is not None and start is None:
            start = n
        prev = n
    return ", ".join(out)


def repeats(numbers: list[int], noun: str = "generation") -> str:
    """Return how often and where something repeats: "generation 3" once, "14× generations 1–14" more often."""
    distinct = sorted(set(numbers))
    if len(distinct) == 1:
        return f"{noun} {distinct[0]}"
    return f"{len(distinct)}× {noun}s {spans(distinct)}"


@dataclass
class DoctorReport:
    """Everything one doctor run found, and how much it looked at (`checked`)."""

    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        """Return the `doctor --json` document (findings sorted by severity, check, thread, generation)."""
        order = {s: i for i, s in enumerate(SEVERITIES)}
        ranked = sorted(self.findings, key=lambda f: (order.get(f.severity, 9), f.check, f.thread_id or "",
                                                      f.lookup_key or "",
                                                      f.generation if f.generation is not None else -1,
                                                      f.message_ids[:1]))
        return {"findings": [f.to_json() for f in ranked], "checked": dict(self.checked)}

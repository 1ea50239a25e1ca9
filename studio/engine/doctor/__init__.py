"""The Memory doctor: checks a Mastra memory.db for the failures Mastra's public issues describe.

No Qt here. `run_doctor(store)` returns a `DoctorReport`; the studio runs `plan_batches` /
`run_batch` as a chain of short background tasks. Each check's rule and thresholds are in its
module's docstring and in docs/doctor.md.
"""

from studio.engine.doctor.model import CHECKS, Check, DoctorReport, Finding
from studio.engine.doctor.runner import DoctorPlan, plan_batches, run_batch, run_doctor
from studio.engine.doctor.supersede import SupersededWrite, find_superseded_writes

__all__ = ["CHECKS", "Check", "DoctorPlan", "DoctorReport", "Finding", "SupersededWrite",
           "find_superseded_writes", "plan_batches", "run_batch", "run_doctor"]

"""A manual reflection and a revert of an OM record, for both faces (no Qt): read, preview, commit.

`memory-studio reflect` / `revert` and the studio's *Reflect now…* and History ▸ *Revert* run
these: `load_input` and `preview` read the database read-only (the studio on its TaskRunner's
pool, the command line in its thread) and propose a new generation (the Reflector against a
model, or the offline condenser); `commit` and `revert` write one generation, only after the user
confirmed, through the OM write protocol (`studio.app.write_protocol`: they take its quiet period)
and return what they changed (`studio.app.changes.Written`). Errors are raised as they come
(StoreError, ProviderError, EngineError, WriteRefused, Cancelled); each face says them its way
(`studio.app.failures`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from studio.app.changes import Written, record_changes
from studio.app.failures import BadInput

TYPE_CHECKING = False  # the Reflector and the LLM client load when a reflection runs (`revert` needs neither)
if TYPE_CHECKING:
    from studio.engine.diff import GenerationDiff
    from studio.engine.reflector import ReflectionInput, ReflectionProgress, ReflectionResult
    from studio.llm import CancelToken, LLMClient

LLM = "llm"
RULE_BASED = "rule-based"


@dataclass
class PreviewRequest:
    """What to preview: the database PATH, the thread (its OM record, thread or resource scope), the strategy.

    MODEL is `provider/model` and BASE_URL an optional server address (strategy "llm" only);
    TIMEOUT_S the longest wait for one model answer (None: the client's default).
    """

    path: str
    thread_id: str
    strategy: str = LLM
    model: str | None = None
    base_url: str | None = None
    lookup_key: str | None = None
    timeout_s: float | None = None


@dataclass
class Preview:
    """A proposed new generation: the input it was made from, the result and the current → proposed diff."""

    request: PreviewRequest
    input: ReflectionInput
    result: ReflectionResult
    diff: GenerationDiff

    @property
    def new_generation(self) -> int:
        """Return the generation a commit would write (the previewed one + 1)."""
        return self.input.generation_count + 1


def load_input(path: str, thread_id: str, lookup_key: str | None = None) -> ReflectionInput:
    """Read what a reflection of THREAD_ID's record starts from (read-only); raises StoreError, ReflectionInputError."""
    from studio.engine.reflector import load_reflection_input

    return load_reflection_input(path, thread_id=thread_id, lookup_key=lookup_key)


def make_client(model: str, base_url: str | None, timeout_s: float | None = None) -> LLMClient:
    """Return a client for MODEL (key from the environment or the OS keyring); raises ProviderConfigError.

    TIMEOUT_S bounds the wait for one answer (s; sending takes at most 60 s of it); None: the client's defaults.
    """
    from studio.llm.client import LLMClient, Timeouts

    if timeout_s is None:
        return LLMClient.for_model(model, base_url=base_url or None)
    return LLMClient.for_model(model, base_url=base_url or None,
                               timeouts=Timeouts(read_s=timeout_s, write_s=min(60.0, timeout_s)))


def propose(request: PreviewRequest, inp: ReflectionInput, client: LLMClient | None,
            progress: Callable[[ReflectionProgress], None] | None, cancel: CancelToken) -> Preview:
    """Run the Reflector (CLIENT) or the condenser (REQUEST.strategy) on INP; write nothing.

    Raises ReflectionRejected (every answer degenerate or empty), ProviderError, Cancelled.
    """
    from studio.engine.reflector import proposal_diff, run_reflection

    result = run_reflection(inp, strategy=request.strategy, client=client, progress=progress, cancel=cancel)
    cancel.raise_if_cancelled()
    return Preview(request, inp, result, proposal_diff(inp, result))


def preview(request: PreviewRequest, progress: Callable[[ReflectionProgress], None] | None,
            cancel: CancelToken) -> Preview:
    """Read the current generation afresh and run the Reflector (or the condenser) on it; write nothing.

    Raises StoreError, ReflectionInputError, ProviderError (studio.llm.errors), ReflectionRejected
    or Cancelled.
    """
    inp = load_input(request.path, request.thread_id, request.lookup_key)
    cancel.raise_if_cancelled()
    client = None
    if request.strategy == LLM:
        client = make_client(request.model or "", request.base_url, request.timeout_s)
    return propose(request, inp, client, progress, cancel)


def studio_metadata(p: Preview, via: str | None = None) -> dict[str, Any]:
    """Return what the new row's metadata records under its `studio` key about how it was made (VIA: "cli")."""
    meta: dict[str, Any] = {"kind": "reflection", "strategy": p.result.strategy,
                            "fromGeneration": p.input.generation_count, "fromRecordId": p.input.record_id}
    if p.result.model:
        meta["model"] = p.result.model
    if via:
        meta["via"] = via
    return meta


def still_current(path: str, lookup_key: str, record_id: str) -> bool:
    """True while RECORD_ID is still the latest generation of LOOKUP_KEY in PATH (read-only; before a backup)."""
    from studio.store import open_store

    with open_store(path) as store, store.snapshot():
        record = store.om_current(lookup_key)
    return record is not None and record.id == record_id


def commit(p: Preview, *, clear_stale_reflecting: bool = False, session=None, quiet_ms: int = 0,
           via: str | None = None) -> Written:
    """Write P's proposed generation in one transaction (studio.store.writes.commit_reflection).

    SESSION (a studio.store.writes.WriteSession, optional) routes the row backup each write saves before its COMMIT.
    Refused (WriteRefused, nothing written) when the latest generation is no longer the previewed
    one, observations were appended to it since the preview, or a process is reflecting (a stale
    isReflecting only with CLEAR_STALE_REFLECTING), or ("busy", "the agent is active") the
    conversation was written less than QUIET_MS (ms) ago (studio.store.write.protocol). Returns
    the new row and what changed (the record; the thread that receives the current task).
    """
    from studio.store import writes  # the write path is loaded only when used

    r = p.result
    write = session.commit_reflection if session is not None else writes.commit_reflection
    row = write(
        p.request.path, lookup_key=p.input.lookup_key, expected_record_id=p.input.record_id,
        expected_active_observations=p.input.observations,
        observations=r.observations, observation_tokens=r.observation_token_count, current_task=r.current_task,
        suggested_response=r.suggested_response,
        thread_title=r.thread_title, thread_id=p.input.thread_id, clear_stale_reflecting=clear_stale_reflecting,
        studio_metadata=studio_metadata(p, via), idle_ms=quiet_ms)
    return Written(row, record_changes(p.input.lookup_key, threads=[p.input.thread_id]))


def reflect_document(p: Preview, *, dry_run: bool, written: dict | None, backup=None) -> dict:
    """Return the `reflect --json` document of the proposal P (WRITTEN: the new row, or None; BACKUP: its path).

    {"reflected", "dry_run", "thread_id", "lookup_key", "from_generation", "record_id", "generation_count",
    "input_tokens", "observation_token_count", "reflection_threshold", "attempts", "diff": {"kept",
    "added", "removed"}, "observations", "strategy", "model", "from_record_id", "reached_target",
    "current_task", "suggested_response", "high_priority_losses", "usage", "notes", "backup"}
    (tokens: Mastra's estimate; `record_id` null when nothing was written).
    """
    inp, result, diff = p.input, p.result, p.diff
    return {
        "reflected": written is not None,
        "dry_run": dry_run,
        "thread_id": inp.thread_id,
        "lookup_key": inp.lookup_key,
        "from_generation": inp.generation_count,
        "record_id": written["id"] if written else None,
        "generation_count": int(written["generationCount"]) if written else inp.generation_count + 1,
        "input_tokens": inp.input_tokens,
        "observation_token_count": int(written["observationTokenCount"]) if written else result.observation_token_count,
        "reflection_threshold": inp.reflection_threshold,
        "attempts": [a.to_json() for a in result.attempts],
        "diff": {"kept": diff.kept, "added": diff.added, "removed": diff.removed},
        "observations": result.observations,
        "strategy": result.strategy,
        "model": result.model,
        "from_record_id": inp.record_id,
        "reached_target": result.reached_target,
        "current_task": result.current_task,
        "suggested_response": result.suggested_response,
        "high_priority_losses": [r.text for r in diff.high_priority_losses],
        "usage": result.usage.to_json(),
        "notes": list(result.notes),
        "backup": str(backup) if backup is not None else None,
    }


# -- revert ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RevertPlan:
    """A revert of LOOKUP_KEY: CURRENT (the latest generation as read) and TARGET (the one restored).

    REFLECTING: None, or "live" / "stale" when isReflecting is set on CURRENT (a live one refuses;
    a stale one is cleared after the user confirms, as Mastra does before a manual reflection).
    """

    thread_id: str
    lookup_key: str
    current: Any
    target: Any
    reflecting: str | None = None


def plan_revert(path: str, thread_id: str, to_generation: int) -> RevertPlan:
    """Read THREAD_ID's OM history (read-only) and plan restoring generation TO_GENERATION.

    Raises BadInput for an unknown thread, one without OM, a generation that does not exist or
    is the current one.
    """
    from studio.engine.status import flag_states
    from studio.store import open_store

    with open_store(path) as store, store.snapshot():
        thread = store.get_thread(thread_id)
        if thread is None:
            raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
        key = store.lookup_key_for_thread(thread)
        history = store.om_history(key) if key else []
    if not history:
        raise BadInput(f"Thread {thread_id!r} has no observational memory")
    current = history[0]
    target = next((h for h in history if h.generation_count == to_generation), None)
    if target is None:
        raise BadInput(f"{key} has no generation {to_generation} "
                       f"(generations: {', '.join(str(h.generation_count) for h in reversed(history))})")
    if target.id == current.id:
        raise BadInput(f"Generation {to_generation} is already the current one of {key}")
    flag = next((f for f in flag_states(current) if f.name == "isReflecting" and f.set), None)
    reflecting = None if flag is None else "stale" if flag.stale else "live"
    return RevertPlan(thread_id, key, current, target, reflecting)


def revert(path: str, *, lookup_key: str, generation_count: int, expected_record_id: str, session=None,
           quiet_ms: int = 0, clear_stale_reflecting: bool = False) -> Written:
    """Write generation latest+1 restoring GENERATION_COUNT's log (studio.store.writes.revert_to_generation).

    SESSION as in `commit`; a stale isReflecting is cleared only with CLEAR_STALE_REFLECTING. Raises
    WriteRefused (nothing written) as revert_to_generation does. Returns the new row and what changed.
    """
    from studio.engine.tokens import count_observations
    from studio.store import writes

    write = session.revert_to_generation if session is not None else writes.revert_to_generation
    row = write(path, lookup_key=lookup_key, generation_count=generation_count,
                expected_record_id=expected_record_id, count_observations=count_observations,
                clear_stale_reflecting=clear_stale_reflecting, idle_ms=quiet_ms)
    return Written(row, record_changes(lookup_key))


def revert_document(plan: RevertPlan, *, written: dict | None, backup=None) -> dict:
    """Return the `revert --json` document of PLAN (WRITTEN: the new row, or None; BACKUP: its path).

    {"reverted", "thread_id", "lookup_key", "from_generation", "to_generation", "record_id",
    "generation_count", "observation_token_count", "diff": {"kept", "added", "removed"}, "observations",
    "backup"} (tokens: Mastra's estimate of the restored log).
    """
    from studio.engine.diff import diff_logs
    from studio.engine.tokens import count_observations

    current, target = plan.current, plan.target
    tokens = int(written["observationTokenCount"]) if written else count_observations(target.active_observations)
    diff = diff_logs(current.active_observations, target.active_observations, current.observation_token_count, tokens)
    return {
        "reverted": written is not None, "thread_id": plan.thread_id, "lookup_key": plan.lookup_key,
        "from_generation": current.generation_count, "to_generation": target.generation_count,
        "record_id": written["id"] if written else None,
        "generation_count": int(written["generationCount"]) if written else current.generation_count + 1,
        "observation_token_count": tokens,
        "diff": {"kept": diff.kept, "added": diff.added, "removed": diff.removed},
        "observations": target.active_observations,
        "backup": str(backup) if backup is not None else None,
    }


def backup_note(session, path: str, write_note: str | None = None) -> str:
    """Return the sentences a confirmation shows about SESSION's backup of PATH ("" without a session) and, when
    given, WRITE_NOTE (the store's `write_note`: a standalone MongoDB server, where a write is not atomic)."""
    if session is None:
        return write_note or ""
    from studio.store.write.row_backup import backup_root

    folder = session.backup_dir or backup_root()
    note = (f"Before its COMMIT this write saves the rows it changes as a row backup in {folder} "
            "(Undo Last Write restores them).")
    if session.full_backup:
        note += " The whole file is copied (verified) beside it first, as asked."
    return f"{note} {write_note}" if write_note else note

"""What the *Reflect now…* dialog runs off the GUI thread: read, preview, commit (plain functions, no Qt).

Each function runs on the TaskRunner's pool (`submit_pooled`) and opens the database itself:
`load_input` and `preview` read-only, `commit` for writing (only after the user confirmed).
Errors are raised as they come (StoreError, ProviderError, EngineError, Cancelled) and turned
into one user-facing sentence by `describe_error` at the dialog's slot boundary.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from studio.engine.diff import GenerationDiff
from studio.engine.reflector import (
    ReflectionInput,
    ReflectionProgress,
    ReflectionRejected,
    ReflectionResult,
    load_reflection_input,
    proposal_diff,
    run_reflection,
)
from studio.errors import StudioError
from studio.llm import CancelToken, LLMClient
from studio.common.cancel import Cancelled

LLM = "llm"
RULE_BASED = "rule-based"

#: Sentences for the write refusals of studio.store.writes (WriteRefused.reason).
REFUSALS = {
    "generation-changed": ("The agent reflected (or observed) meanwhile: the record is no longer what this "
                           "preview was made from, so nothing was written. Preview again."),
    "reflecting": ("A running process is reflecting this record right now (isReflecting is set and recent), "
                   "so nothing was written. Try again when it has finished."),
    "busy": ("Another process is writing this database or working on this record right now, so nothing was "
             "written. Try again in a moment."),
}


@dataclass
class PreviewRequest:
    """What to preview: the database PATH, the thread (its OM record, thread or resource scope), the strategy.

    MODEL is `provider/model` and BASE_URL an optional server address (strategy "llm" only).
    """

    path: str
    thread_id: str
    strategy: str = LLM
    model: str | None = None
    base_url: str | None = None
    lookup_key: str | None = None


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
    return load_reflection_input(path, thread_id=thread_id, lookup_key=lookup_key)


def make_client(model: str, base_url: str | None) -> LLMClient:
    """Return a client for MODEL (key from the environment or the OS keyring); raises ProviderConfigError."""
    return LLMClient.for_model(model, base_url=base_url or None)


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
        client = make_client(request.model or "", request.base_url)
    result = run_reflection(inp, strategy=request.strategy, client=client, progress=progress, cancel=cancel)
    cancel.raise_if_cancelled()
    return Preview(request, inp, result, proposal_diff(inp, result))


def studio_metadata(p: Preview) -> dict[str, Any]:
    """Return what the new row's metadata records under its `studio` key about how it was made."""
    meta: dict[str, Any] = {"kind": "reflection", "strategy": p.result.strategy,
                            "fromGeneration": p.input.generation_count, "fromRecordId": p.input.record_id}
    if p.result.model:
        meta["model"] = p.result.model
    return meta


def commit(p: Preview, *, clear_stale_reflecting: bool = False, session=None, quiet_ms: int = 0) -> dict:
    """Write P's proposed generation in one transaction (studio.store.writes.commit_reflection); return the new row.

    SESSION (a studio.store.writes.WriteSession, optional) backs the file up before its first write.
    Refused (WriteRefused, nothing written) when the latest generation is no longer the previewed
    one, observations were appended to it since the preview, or a process is reflecting (a stale
    isReflecting only with CLEAR_STALE_REFLECTING), or ("busy", "the agent is active") the
    conversation was written less than QUIET_MS (ms) ago (studio.store.write.protocol).
    """
    from studio.store import writes  # the write path is loaded only when used

    r = p.result
    write = session.commit_reflection if session is not None else writes.commit_reflection
    return write(
        p.request.path, lookup_key=p.input.lookup_key, expected_record_id=p.input.record_id,
        expected_active_observations=p.input.observations,
        observations=r.observations, observation_tokens=r.observation_token_count, current_task=r.current_task,
        suggested_response=r.suggested_response,
        thread_title=r.thread_title, thread_id=p.input.thread_id, clear_stale_reflecting=clear_stale_reflecting,
        studio_metadata=studio_metadata(p), idle_ms=quiet_ms)


def revert(path: str, *, lookup_key: str, generation_count: int, expected_record_id: str, session=None,
           quiet_ms: int = 0) -> dict:
    """Write generation latest+1 restoring GENERATION_COUNT's log (studio.store.writes.revert_to_generation).

    SESSION as in `commit`. Raises WriteRefused (nothing written) as revert_to_generation does.
    """
    from studio.engine.tokens import count_observations
    from studio.store import writes

    write = session.revert_to_generation if session is not None else writes.revert_to_generation
    return write(path, lookup_key=lookup_key, generation_count=generation_count, expected_record_id=expected_record_id,
                 count_observations=count_observations, idle_ms=quiet_ms)


def repair(path: str, lookup_key: str, *, prefer: str = "carry", session=None) -> dict | None:
    """Write the repair generation of LOOKUP_KEY (studio.store.writes.repair_overtaken_writes); None: nothing to repair."""
    from studio.engine.tokens import count_observations
    from studio.store import writes

    write = session.repair_overtaken_writes if session is not None else writes.repair_overtaken_writes
    return write(path, lookup_key=lookup_key, prefer=prefer, count_observations=count_observations)


@dataclass
class Failure:
    """An expected failure (a StudioError: refused, no key, HTTP 401, cancelled…) handed back as a value."""

    error: Exception


def submit(runner, fn: Callable[[Any, threading.Event], Any], *, on_done: Callable[[Any], None],
           on_error: Callable[[Exception], None], on_progress: Callable[..., None] | None = None,
           key: str | None = None, on_worker: bool = False):
    """Run FN(progress, cancel) on RUNNER (a studio.ui.tasks.TaskRunner); return the Task.

    ON_WORKER runs it on the database worker, between the studio's own reads (writes go there, so
    no read of ours overlaps a write); otherwise on the pool (network calls). A StudioError raised
    by FN reaches ON_ERROR as a value, so the runner does not log a user's missing key or a refused
    write as a crash; any other exception still goes through the runner.
    """
    def guarded(progress, cancel):
        try:
            return fn(progress, cancel)
        except StudioError as exc:
            return Failure(exc)

    def deliver(value):
        if isinstance(value, Failure):
            on_error(value.error)
        else:
            on_done(value)

    if on_worker:
        return runner.submit(lambda _store, progress, cancel: guarded(progress, cancel), on_done=deliver,
                             on_error=on_error, on_progress=on_progress, key=key, load=False)  # opens its own
    return runner.submit_pooled(guarded, on_done=deliver, on_error=on_error, on_progress=on_progress, key=key)


def backup_note(session, path: str) -> str:
    """Return the sentence a confirmation shows about SESSION's backup of PATH ("" without a session)."""
    if session is None:
        return ""
    from studio.store.write.row_backup import backup_root, is_row_backup_target

    if is_row_backup_target(path):   # PostgreSQL, libSQL server: no file to copy
        folder = session.backup_dir or backup_root()
        return (f"Before its COMMIT this write saves the rows it changes as a row backup in {folder} "
                "(Undo Last Write restores them).")
    done = session.backup_for(path)
    if done is not None:
        return f"This session already backed the file up to {done}."
    return "Before this first write of the session, the whole file is backed up (verified) beside it."


def run_in_pool(fn: Callable[[CancelToken], Any], cancel_event: threading.Event, token: CancelToken) -> Any:
    """Run FN(TOKEN), firing TOKEN when the TaskRunner's CANCEL_EVENT is set (the runner's own cancel)."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if cancel_event.wait(0.05):
                token.cancel()
                return

    watcher = threading.Thread(target=watch, name="studio-reflect-cancel", daemon=True)
    watcher.start()
    try:
        return fn(token)
    finally:
        stop.set()


def refusal_reason(exc: BaseException) -> str | None:
    """Return a write refusal's reason ("generation-changed", "reflecting", …), or None for other errors."""
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) and not isinstance(exc, ReflectionRejected) else None


def describe_error(exc: BaseException) -> str:
    """Return one user-facing sentence for a failed read, preview or commit (never a key: messages are redacted)."""
    if isinstance(exc, Cancelled):
        return "Cancelled: nothing was written."
    reason = refusal_reason(exc)
    if reason in REFUSALS:
        detail = str(exc).strip()
        return f"{REFUSALS[reason]}\n{detail}" if detail else REFUSALS[reason]
    text = str(exc).strip() or exc.__class__.__name__
    if isinstance(exc, ReflectionRejected):
        return text
    if not text.endswith((".", "!", "?")):
        text += "."
    return text

"""The documents of `memory-studio inspect` and `tokens` (no Qt): what a store holds, with Mastra's figures.

Each function reads an open store (the caller opens it and holds one snapshot) and returns a
JSON-ready dict; the command prints it. `inspect_document` reads one batch per kind of row
(threads, message counts, OM generations, unobserved messages): its statements do not grow with
the number of threads (issue 13).
"""

from __future__ import annotations

from studio.app.failures import BadInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore


def inspect_document(store: MemoryStore, *, recount: bool = False) -> dict:
    """Return the `inspect --json` document of STORE (open, inside one snapshot): its threads, and every
    OM record with Mastra's status figures of each thread it governs and its history.

    A thread whose pending messages hold one Mastra cannot count has, instead of figures, a status
    {"uncountable": `uncountable_note`} (Mastra's getStatus throws there). RECOUNT adds to each history
    entry the tokenx and exact o200k recounts of its log and which one the stored observationTokenCount
    matches (see studio.engine.recount).
    """
    from studio.app.statuses import iter_statuses
    from studio.app.uncountable import UncountableMessage, uncountable_note
    from studio.common.om_settings import max_threshold, resolve_settings
    from studio.store.records import Thread

    if recount:  # tiktoken's o200k table costs ~30 ms to build: only when asked for
        from studio.engine.recount import recount_observations
    # one statement per kind of row (threads, message counts, OM generations, unobserved
    # messages): the count does not grow with the number of threads (issue 13)
    threads = store.list_threads(with_counts=True)
    by_id = {t.id: t for t in threads}
    by_resource: dict[str | None, list[Thread]] = {}
    for t in threads:
        by_resource.setdefault(t.resource_id, []).append(t)
    out_threads = [{
        "id": t.id, "resource_id": t.resource_id, "title": t.title, "metadata": t.metadata,
        "created_at": t.created_at, "updated_at": t.updated_at, "message_count": t.message_count,
    } for t in sorted(threads, key=lambda t: str(t.resource_id))]  # stable: createdAt DESC within a resource
    histories = store.om_histories()
    keyed = []
    for key in store.om_lookup_keys():
        history = histories.get(key["lookupKey"])
        if not history:
            continue
        current = history[0]
        if current.scope == "resource":
            governed = by_resource.get(current.resource_id, [])
        elif current.thread_id in by_id:
            governed = [by_id[current.thread_id]]
        elif current.thread_id:  # deleted thread, record left (Mastra #16621): getStatus still reports on it
            governed = [Thread(id=current.thread_id, resource_id=current.resource_id or "")]
        else:
            governed = []
        keyed.append((history, governed))
    uncountable: dict[str, UncountableMessage] = {}

    def on_error(thread: Thread, exc: Exception) -> None:
        if not isinstance(exc, UncountableMessage):
            raise exc
        uncountable[thread.id] = exc

    # each thread's unobserved messages are decoded, counted and dropped in turn (iter_statuses)
    statuses = {(s.thread_id, s.record_id): s.to_json() for s in iter_statuses(
        store, [(t, h[0]) for h, governed in keyed for t in governed], threads, on_error=on_error)}
    om = []
    for history, governed in keyed:
        current = history[0]
        settings = resolve_settings(current.config, current.scope)
        status = {t.id: statuses.get((t.id, current.id)) or {"uncountable": uncountable_note(uncountable[t.id])}
                  for t in governed}
        om.append({
            "lookup_key": current.lookup_key, "scope": current.scope, "resource_id": current.resource_id,
            "thread_id": current.thread_id, "record_id": current.id,
            "generation_count": current.generation_count, "origin_type": current.origin_type,
            "observation_token_count": current.observation_token_count,
            "message_tokens": max_threshold(settings.message_tokens),
            "observation_tokens": max_threshold(settings.reflection_tokens),
            "thread_missing": current.scope == "thread" and current.thread_id not in by_id,
            "json_errors": current.json_errors,
            "status": status,
            "history": [{
                "record_id": h.id, "generation_count": h.generation_count, "origin_type": h.origin_type,
                "observation_token_count": h.observation_token_count, "created_at": h.created_at,
                **({"recount": recount_observations(h.active_observations, h.observation_token_count).to_json()}
                   if recount else {}),
            } for h in history],
        })
    return {"path": store.location.display, "threads": out_threads, "observational_memory": om}


def tokens_document(store: MemoryStore, thread_id: str) -> dict:
    """Return the `tokens --json` document of THREAD_ID in STORE: Mastra's estimates and exact o200k counts.

    {"thread_id", "per_message": {message id: estimate}, "all_messages": estimate of the whole thread,
    "exact": {"encoding": "o200k_base", "per_message": {message id: tokens}}, "uncountable": [notes]}.
    A message Mastra cannot count has the estimate None and a note (`uncountable_note`) in
    "uncountable"; "all_messages" is then None too (Mastra's countMessages throws on the list).
    Raises BadInput for an unknown thread.
    """
    from studio.app.uncountable import UncountableMessage, uncountable_note
    from studio.engine import tokens

    if store.get_thread(thread_id) is None:
        raise BadInput(f"No thread {thread_id!r} in {store.location.display}")
    messages = [m.as_mastra() for m in store.list_messages(thread_id)]
    per_message: dict[str, int | None] = {}
    notes = []
    for m in messages:
        try:
            per_message[m["id"]] = tokens.count_messages([m])
        except UncountableMessage as exc:
            per_message[m["id"]] = None
            notes.append(uncountable_note(exc))
    return {
        "thread_id": thread_id,
        "per_message": per_message,
        "all_messages": None if notes else tokens.count_messages(messages),
        "exact": {"encoding": "o200k_base",
                  "per_message": {m["id"]: tokens.exact_message_tokens(m) for m in messages}},
        "uncountable": notes,
    }

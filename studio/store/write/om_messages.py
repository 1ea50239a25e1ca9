"""Writes shared by the observation and activation writes: marker parts on messages, thread OM metadata.

Mirrors `ObservationalMemory.persistMarkerToStorage` / `persistMarkerToMessage` and
`setThreadOMMetadata` / `resolveThreadTitleUpdate` (@mastra/memory 1.31.0) with the libSQL store
(@mastra/libsql 1.23.1): a marker is appended to the newest assistant message (of the thread's
20 newest by createdAt), and the whole message is upserted (content re-serialised with
JSON.stringify, createdAt kept), after which the thread's `updatedAt` is bumped.
"""

from __future__ import annotations

from typing import Any

from studio.common.jscompat import UNDEFINED, js_trim, utf16_len
from studio.store.schema import MESSAGES, THREADS
from studio.store.write.common import js_parse, stringify, update_row
from studio.store.write.tx import WriteTx

MESSAGE_COLUMNS = ["id", "thread_id", "content", "role", "type", "createdAt", "resourceId"]
#: How many of the thread's newest messages Mastra looks through for the marker's assistant message.
MARKER_SEARCH_LIMIT = 20


def newest_assistant_message(tx: WriteTx, thread_id: str) -> dict | None:
    """Return the newest assistant message row of THREAD_ID among its 20 newest (content parsed), or None.

    A message whose content is not a JSON object with a `parts` list is passed over (Mastra could
    not append a part to it either).
    """
    if tx.dialect == "mongodb":   # find({thread_id}).sort({createdAt: -1}): no tie-break, as @mastra/mongodb reads
        rows = tx.decoded(MESSAGES, {"thread_id": thread_id}, [("createdAt", -1)], limit=MARKER_SEARCH_LIMIT)
    else:
        rows = tx.select(MESSAGES, f'WHERE thread_id = ? ORDER BY "createdAt" DESC, {tx.insertion_tie} DESC LIMIT ?',
                         (thread_id, MARKER_SEARCH_LIMIT), wanted=MESSAGE_COLUMNS)
    for row in rows:
        if row.get("role") != "assistant":
            continue
        content = js_parse(row.get("content"), f"content of message {row.get('id')!r}")
        if isinstance(content, dict) and isinstance(content.get("parts"), list):
            return {**row, "content": content}
    return None


WORKING_MEMORY_START, WORKING_MEMORY_END = "<working_memory>", "</working_memory>"


def remove_working_memory_tags(text: str) -> str:
    """Return TEXT without `<working_memory>…</working_memory>` blocks (an unclosed one is kept), as Mastra does."""
    out, pos = [], 0
    while pos < len(text):
        start = text.find(WORKING_MEMORY_START, pos)
        if start == -1:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = text.find(WORKING_MEMORY_END, start + len(WORKING_MEMORY_START))
        if end == -1:
            out.append(text[start:])
            break
        pos = end + len(WORKING_MEMORY_END)
    return "".join(out)


def filter_for_persistence(content: dict) -> dict:
    """Return CONTENT as MessageHistory.filterMessagesForPersistence stores it (a copy).

    `partial-call` tool invocations and `updateWorkingMemory` tool calls are dropped; working-memory
    tags are removed from text parts and from `content.content` (the result trimmed when changed).
    """
    out = dict(content)
    legacy = out.get("content")
    if isinstance(legacy, str) and legacy:
        cleaned = remove_working_memory_tags(legacy)
        out["content"] = js_trim(cleaned) if cleaned != legacy else legacy
    parts = []
    for part in out.get("parts") or []:
        if isinstance(part, dict) and part.get("type") == "tool-invocation":
            call = part.get("toolInvocation") if isinstance(part.get("toolInvocation"), dict) else {}
            if call.get("state") == "partial-call" or call.get("toolName") == "updateWorkingMemory":
                continue
        if isinstance(part, dict) and part.get("type") == "text":
            text = part.get("text") if isinstance(part.get("text"), str) else ""
            cleaned = remove_working_memory_tags(text)
            part = {**part, "text": js_trim(cleaned) if cleaned != text else text}
        parts.append(part)
    out["parts"] = parts
    return out


def upsert_message(tx: WriteTx, message: dict, thread_updated_at: str) -> None:
    """Store MESSAGE (a row dict with parsed `content`) as Mastra's saveMessages upsert does; bump its thread.

    Columns written: content (MessageHistory's filter, then JSON.stringify), role, type, thread_id, resourceId;
    createdAt kept. On MongoDB as MongoDBStore.saveMessages: updateOne({id}, {$set: {id, thread_id, content (JSON
    text), role, type || "v2", resourceId}}), then the thread's `$set {updatedAt}`.
    """
    if tx.dialect == "mongodb":
        content = stringify(filter_for_persistence(message["content"]))
        update_row(tx, MESSAGES, {"id": message["id"]}, {
            "id": message["id"], "thread_id": message.get("thread_id"), "content": content,
            "role": message.get("role"), "type": message.get("type") or "v2", "resourceId": message.get("resourceId")})
        update_row(tx, THREADS, {"id": message.get("thread_id")}, {"updatedAt": thread_updated_at})
        return
    tx.update(MESSAGES, {"content": stringify(filter_for_persistence(message["content"])), "role": message.get("role"),
                         "type": message.get("type"), "thread_id": message.get("thread_id"),
                         "resourceId": message.get("resourceId")}, "id = ?", (message["id"],))
    tx.update(THREADS, {"updatedAt": thread_updated_at}, "id = ?", (message.get("thread_id"),))


def thread_om(metadata: Any) -> dict:
    """Return thread METADATA's `mastra.om` object ({} when missing or not an object)."""
    mastra = metadata.get("mastra") if isinstance(metadata, dict) else None
    om = mastra.get("om") if isinstance(mastra, dict) else None
    return om if isinstance(om, dict) else {}


def set_thread_om(metadata: dict, values: dict[str, Any], *, undefined_as_null: bool = False) -> dict:
    """Return METADATA with `mastra.om` = `{...om, **VALUES}` (a value UNDEFINED or None drops that key).

    Mirrors setThreadOMMetadata: keys keep their place in the old object, new keys are appended;
    an undefined value is left out by JSON.stringify. UNDEFINED_AS_NULL (MongoDB): the key stays, null, as the
    JS driver stores `undefined` (`ignoreUndefined: false`).
    """
    mastra = metadata.get("mastra") if isinstance(metadata.get("mastra"), dict) else {}
    om = dict(mastra.get("om")) if isinstance(mastra.get("om"), dict) else {}
    for key, value in values.items():
        if value is UNDEFINED or value is None:
            om[key] = UNDEFINED  # keeps the key's place, as `{...om, key: undefined}` does
        else:
            om[key] = value
    om = {k: (None if v is UNDEFINED else v) for k, v in om.items() if undefined_as_null or v is not UNDEFINED}
    out = dict(metadata)
    out["mastra"] = {**mastra, "om": om}
    return out


def new_thread_title(thread: dict, metadata: dict, title: str | None) -> str | None:
    """Return the title Mastra's resolveThreadTitleUpdate sets from an Observer's TITLE, or None (unchanged).

    THREAD: the stored row ({"title", ...}); METADATA: its stored metadata (a dict). As Mastra 1.31
    (observation-strategies/thread-title.ts): the candidate is TITLE trimmed (JavaScript's trim); it is
    set when it has at least 3 UTF-16 code units (`.length`: two emoji are a title, "ab" is not), the
    thread's `metadata.titlePinned` is not `true` (Mastra's isThreadTitlePinned: a user's rename stays)
    and it differs from the stored title trimmed (a stored "  Budget  " equals a candidate "Budget").
    """
    if not isinstance(title, str):
        return None
    trimmed = js_trim(title)
    if utf16_len(trimmed) < 3 or metadata.get("titlePinned") is True:
        return None
    stored = thread.get("title")
    if isinstance(stored, str) and trimmed == js_trim(stored):
        return None
    return trimmed


def _present(value: Any) -> bool:
    return value is not None and value is not UNDEFINED and value != ""


def extracted_values(output, extractors) -> dict:
    """Return Mastra's `extractedValues` of an Observer OUTPUT (an ObserverOutput) for the record's EXTRACTORS.

    OUTPUT.extracted (the parse's values by slug, in Mastra's order) when the parse gave it, empty
    values left out (normalizeExtractedValues); else the trimmed built-in sections of OUTPUT for
    the built-in EXTRACTORS (`studio.common.om_settings.observer_extractors`), in their order.
    An empty dict stands for Mastra's undefined.
    """
    if output.extracted is not None:
        return {k: v for k, v in output.extracted.items() if _present(v)}
    sections = {"current-task": output.current_task, "suggested-response": output.suggested_response,
                "thread-title": output.thread_title}
    values = {}
    for spec in extractors:
        value = sections.get(spec.slug)
        if isinstance(value, str) and js_trim(value):
            values[spec.slug] = js_trim(value)
    return values


def _set_at_path(target: dict, path: str, value: Any) -> None:
    segments = [s for s in path.split(".") if s]
    if not segments or any(s in ("__proto__", "constructor", "prototype") for s in segments):
        return
    for segment in segments[:-1]:
        if not isinstance(target.get(segment), dict):
            target[segment] = {}
        target = target[segment]
    target[segments[-1]] = value


def observed_thread_om(output, extractors, values: dict, previous_om: dict) -> dict:
    """Return the `mastra.om` values an observation stores for OUTPUT (an ObserverOutput) on one thread.

    Mirrors the persist step of Mastra's observation strategies (buildThreadMetadataFromExtractedValues):
    each extractor's value in VALUES (`extracted_values`) goes to its metadata path; `suggestedResponse`,
    `currentTask`, `threadTitle` take that value, else the answer's trimmed section, else UNDEFINED
    (the key is deleted); `extracted` = PREVIOUS_OM's `extracted` updated with the user extractors' values.
    """
    update: dict = {}
    for spec in extractors:
        if spec.metadata_key_path and spec.slug in values:
            _set_at_path(update, spec.metadata_key_path, values[spec.slug])

    def hint(field: str, section: str | None):
        if _present(update.get(field)):
            return update[field]
        return js_trim(section) if isinstance(section, str) and js_trim(section) else UNDEFINED

    old = previous_om.get("extracted") if isinstance(previous_om.get("extracted"), dict) else {}
    new = update.get("extracted") if isinstance(update.get("extracted"), dict) else {}
    return {"suggestedResponse": hint("suggestedResponse", output.suggested_response),
            "currentTask": hint("currentTask", output.current_task),
            "threadTitle": hint("threadTitle", output.thread_title), "extracted": {**old, **new}}

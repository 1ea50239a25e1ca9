"""What `inspect`, `threads` and `recall` print without `--json`: a few lines a person reads, no JSON.

Each renderer takes the command's own JSON document (`studio.app.inspection` / `studio.app.history`),
so the text says nothing the document does not; `threads` and `recall` name the ids' titles, roles
and times read from the open store. Times are local, with seconds; numbers with thousands separators.
"""

from __future__ import annotations

from studio.common.wording import plural

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~3 ms of a command's start)
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore

__all__ = ["inspect_text", "recall_text", "threads_text"]

#: Characters of a message's text shown on its line.
PREVIEW_CHARS = 100


def _more(doc: dict, shown: int, noun: str, flag: str) -> str:
    total = int(doc.get("total") or 0)
    if doc.get("has_more"):
        return f"{plural(shown, noun)} shown of {total:,}: --page N for the next ones, {flag} for every one."
    return f"{plural(total, noun)}." if shown == total else f"{plural(shown, noun)} shown of {total:,}."


def threads_text(store: MemoryStore, doc: dict) -> str:
    """Return `threads`' text for DOC (`threads_document`): one line per thread (id, title, resource, updated)."""
    from studio.app import text as fmt

    lines = []
    for thread_id in doc["thread_ids"]:
        thread = store.get_thread(thread_id)
        if thread is None:
            lines.append(f"{thread_id}")
            continue
        lines.append(f"{thread_id}  “{fmt.preview(thread.title or '', 60)}”  resource {thread.resource_id}  "
                     f"updated {fmt.local_time(thread.updated_at, seconds=True)}")
    lines.append(_more(doc, len(doc["thread_ids"]), "thread", "--all"))
    return "\n".join(lines)


def recall_text(store: MemoryStore, thread_id: str, doc: dict) -> str:
    """Return `recall`'s text for DOC (`recall_document`): one line per message (time, role, id, text)."""
    from studio.app import text as fmt
    from studio.store.message_queries import messages_by_id

    ids = doc["message_ids"]
    found = messages_by_id(store, ids)
    lines = [f"Thread {thread_id}: Mastra's Memory.recall, page by page (10 messages a page unless --per-page):"]
    for message_id in ids:
        m = found.get(message_id)
        if m is None:
            lines.append(f"  {message_id}")
            continue
        shown = fmt.preview(m.text, PREVIEW_CHARS) or "(no text)"
        lines.append(f"  {fmt.local_time(m.created_at, seconds=True)}  {m.role:<9} {m.id}  {shown}")
    lines.append(_more(doc, len(ids), "message", "--all"))
    return "\n".join(lines)


def inspect_text(doc: dict) -> str:
    """Return `inspect`'s text for DOC (`inspect_document`): the threads, then each OM record and its status."""
    from studio.app import text as fmt

    threads = doc.get("threads") or []
    records = doc.get("observational_memory") or []
    lines = [f"{doc.get('path', '')}: {plural(len(threads), 'thread')}, "
             f"{plural(len(records), 'observational memory record')}", "", "Threads:"]
    for t in threads:
        lines.append(f"  {t['id']}  “{fmt.preview(t.get('title') or '', 60)}”  resource {t.get('resource_id')}  "
                     f"{plural(int(t.get('message_count') or 0), 'message')}  "
                     f"updated {fmt.local_time(t.get('updated_at'), seconds=True)}")
    if records:
        lines += ["", "Observational memory (Mastra's figures, tokens):"]
    for r in records:
        lines.append(f"  {r['lookup_key']}  generation {r.get('generation_count')} ({r.get('origin_type')}), "
                     f"observations {fmt.tokens(r.get('observation_token_count'))} / "
                     f"{fmt.tokens(r.get('observation_tokens'))} to reflect")
        for thread_id, s in (r.get("status") or {}).items():
            if isinstance(s, dict) and isinstance(s.get("uncountable"), dict):
                lines.append(f"    {thread_id}: ⚠ pending messages unknown — {s['uncountable']['sentence']}")
                continue
            if not isinstance(s, dict) or "pending_tokens" not in s:
                continue
            due = [what for what, flag in (("observe", s.get("should_observe")), ("reflect", s.get("should_reflect")))
                   if flag]
            chunks = int(s.get("buffered_chunk_count") or 0)
            lines.append(f"    {thread_id}: pending messages {fmt.tokens(s['pending_tokens'])} / "
                         f"{fmt.tokens(s.get('threshold'))}"
                         + (f", {plural(chunks, 'buffered chunk')}" if chunks else "")
                         + (f" — due: {' and '.join(due)}" if due else ""))
    lines += ["", "Add --json for every figure (the stable document)."]
    return "\n".join(lines)

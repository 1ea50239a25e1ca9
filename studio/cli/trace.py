"""Command line of the trace area: `trace` (follow a fact through the generations) and `context` (turn N).

  memory-studio trace PATH --thread ID --text "teal" [--json]
      {"thread_id", "lookup_key", "query", "generations",
       "lifelines": [{"text", "match", "score", "source", "cycle_id", "marker_message_id",
                      "first_generation", "dropped_in", "source_messages": [...],
                      "steps": [{"kind", "generation", "record_id", "line_number", "text", "at",
                                 "similarity", "priority", "model", "compression",
                                 "tokens_before", "tokens_after"}]}],
       "messages": [{"id", "thread_id", "role", "created_at", "excerpt", "observed", "match", "score"}]}
  memory-studio context PATH --thread ID --turn N [--last-messages N] [--top-k K] [--message-range N]
                        [--scope resource|thread] [--vector-store PATH|URL] [--json]
      {"turn", "turns", "generation", "segments_shown", "activated_chunks", "pending_chunks",
       "observations": {"text", "estimate", "exact"}, "window": [...], "working_memory": {...},
       "tokens": {"observations"|"window"|"working_memory"|"total": {"estimate", "exact"}},
       "model_view": {"observations"|"current_task"|"suggested_response": {"text", "tokens", "source"},
                      "messages": [{"role", "text", "id", "thread_id", "tokens"} | {"role", "kind"}]}, ...}

Both carry "semantic_recall" (null when the turn's user message has no stored vector): {"query_message_id",
  "index_name", "query_exact", "agent_turn", "semantic_recall", "vector_hits": [{"id", "message_id", "thread_id",
  "score", "text"}], "brought_in_ids", "recalled": [{"id", "role", "thread_id", "created_at"}], "other_threads": [...],
  "system_message"}; the model view then holds the recalled messages (`"recalled": true`) and the other
  threads' system message (`model_view.remembered`).

A thread without OM gets {"scope": "history", "turn", "turns", "last_messages", "token_limit",
  "boundary_at_turn", "replayed_boundary", "stored_boundary", "boundary_matches", "model_view"}: its
  message history (`studio.engine.history_view`).

Without --json both print a short human-readable summary. Read-only. Exit codes as
`memory-studio`: 2 for a missing file, an unknown thread, an empty text or a turn out of range.
"""

from __future__ import annotations

import argparse

from studio.app.failures import EXIT_OK
from studio.app.text import preview
from studio.app.trace import context_document, trace_document
from studio.cli import JSON_HELP, READ_PATH_HELP, add_target_argument, reading
from studio.cli.output import print_json
from studio.engine.semantic import DEFAULT_MESSAGE_RANGE, DEFAULT_TOP_K


def _print_trace(doc: dict) -> None:
    print(f"{len(doc['lifelines'])} observation line(s) and {len(doc['messages'])} message(s) match "
          f"{doc['query']!r} in thread {doc['thread_id']} ({doc['generations']} generation(s))")
    for ll in doc["lifelines"]:
        print(f"\n  {ll['text']}   [{ll['match']}]")
        marker = f"; written by the cycle whose marker is on message {ll['marker_message_id']}" \
            if ll.get("marker_message_id") else ""
        print(f"    observed from {len(ll['source_messages'])} message(s) ({ll['source']}){marker}")
        for step in ll["steps"]:
            if step["kind"] == "dropped":
                print(f"    gen {step['generation']}: dropped by the reflection at {step['at']} "
                      f"(model {step['model'] or '?'}, {step['tokens_before']} → {step['tokens_after']} tokens)")
            elif step["kind"] == "reobserved":
                print(f"    gen {step['generation']}: left out by the reflection, observed again at {step['at']}, "
                      f"line {step['line_number']}")
            else:
                extra = f" (similarity {step['similarity']:.2f})" if step["kind"] == "reworded" else ""
                print(f"    gen {step['generation']}: {step['kind']}{extra}, line {step['line_number']}")
    for m in doc["messages"]:
        state = {True: "observed", False: "not observed yet", None: "no OM record"}[m["observed"]]
        print(f"\n  message {m['id']} ({m['role']}, {m['created_at']}, {state}): {m['excerpt']}")


def _print_history_context(doc: dict) -> None:
    view = doc["model_view"]["messages"]
    print(f"Turn {doc['turn']} of {doc['turns']} in thread {doc['thread_id']} (from {doc['at']}): no Observational "
          f"Memory; the model got its message history")
    limit = doc["token_limit"]
    cap = "no count cap" if doc["last_messages"] is None else f"lastMessages {doc['last_messages']}"
    if limit:
        match = "equals" if doc["boundary_matches"] else "differs from"
        print(f"  token budget {limit['maxTokens']:,} (remove {limit['atMaxRemoveTokens']:,} at the limit), {cap}; "
              f"the replayed boundary {match} the stored memoryTokenLimiter")
    else:
        print(f"  {cap} (code, not data: --last-messages), no token budget stored")
    print(f"  messages            {len(view)} ({sum(m['tokens']['estimate'] for m in view):,} tokens, Mastra estimate)")
    _print_recall(doc)


def _print_context(doc: dict) -> None:
    if doc.get("scope") == "history":
        _print_history_context(doc)
        return
    t = doc["tokens"]
    print(f"Turn {doc['turn']} of {doc['turns']} in thread {doc['thread_id']} (from {doc['at']}): "
          f"generation {doc['generation']}, {doc['segments_shown']} of {doc['segments_total']} observer output(s)")
    for name in ("observations", "window", "working_memory", "total"):
        print(f"  {name:15} {t[name]['estimate']:>7} tokens (Mastra estimate)  {t[name]['exact']:>7} exact o200k")
    print(f"  window: {len(doc['window'])} message(s); activated chunks {len(doc['activated_chunks'])}, "
          f"waiting {len(doc['pending_chunks'])}")
    from studio.engine.context import after_turn_lines

    for line in after_turn_lines(doc):
        print(f"  {line}")
    view = doc["model_view"]
    print("  What the model was given (Mastra's rendering):")
    for name in ("observations", "current_task", "suggested_response"):
        part = view[name]
        source = (part["source"] or {}).get("kind", "none")
        text = "source unknown" if source == "unknown" else ("none" if part["text"] is None else
                                                            f"{part['tokens']['estimate']:,} tokens, from {source}")
        print(f"    {name:19} {text}")
    hints = sum(1 for m in view["messages"] if m.get("kind"))
    print(f"    messages            {len(view['messages']) - hints} stored"
          f"{' + the continuation reminder' if hints else ''}")
    _print_recall(doc)


#: Characters of a semantic-recall hit's stored text shown on its line of `context` (the JSON has it whole).
RECALL_HIT_CHARS = 80


def _print_recall(doc: dict) -> None:
    recall = doc.get("semantic_recall")
    if recall is None:
        return
    print(f"  Semantic recall ({len(recall['vector_hits'])} hit(s) for the turn's stored vector): "
          f"{len(recall['recalled'])} message(s) of this thread recalled, {len(recall['other_threads'])} of "
          f"other threads remembered")
    for hit in recall["vector_hits"]:   # one line each; stored text flattened and cut with "…"
        print(f"    {hit['score']:.3f}  {hit['thread_id']}  {preview(hit.get('text'), RECALL_HIT_CHARS)}")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a turn number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("turns are numbered from 1")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of messages, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("a number of messages is 0 or more")
    return value


def add_trace_command(subparsers) -> None:
    """Register `trace PATH --thread ID --text T [--json]`."""
    p = subparsers.add_parser("trace", help="follow a fact through a thread's observation generations")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--text", required=True, help="the words to trace (matched by phrase, words, or fuzzily)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_trace)


def _run_trace(args) -> int:
    with reading(args.path) as store:
        doc = trace_document(store, args.thread, args.text)
    print_json(doc) if args.json else _print_trace(doc)
    return EXIT_OK


def add_context_command(subparsers) -> None:
    """Register `context PATH --thread ID --turn N [--json]`."""
    p = subparsers.add_parser("context", help="what Observational Memory put into the model's context at turn N")
    add_target_argument(p, help=READ_PATH_HELP)
    p.add_argument("--thread", required=True, metavar="ID", help="the thread's id")
    p.add_argument("--turn", required=True, type=_positive_int, metavar="N", help="the turn (1 = first user message)")
    p.add_argument("--last-messages", type=_count, metavar="N", default=None,
                   help="the agent's lastMessages, for a thread without OM (default: Mastra's, 10; 0: no history)")
    meaning = p.add_argument_group("semantic recall (Memory's semanticRecall: code, not data; defaults are Mastra's)")
    meaning.add_argument("--top-k", type=_top_k, default=DEFAULT_TOP_K, metavar="K",
                         help=f"hits per query (default {DEFAULT_TOP_K})")
    meaning.add_argument("--message-range", type=_count, default=DEFAULT_MESSAGE_RANGE, metavar="N",
                         help=f"messages kept before and after each hit (default {DEFAULT_MESSAGE_RANGE})")
    meaning.add_argument("--scope", choices=["resource", "thread"], default="resource",
                         help="search the resource's messages (default) or the thread's")
    meaning.add_argument("--vector-store", metavar="PATH|URL",
                         help="the database of Memory's vector store when it is not PATH (a libSQL file or server "
                              "holding LibSQLVector's memory_messages tables)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(run=_run_context)


def _top_k(text: str) -> int:
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError("topK is 1 or more")
    return value


def _run_context(args) -> int:
    from studio.app.vector_store import vector_store_attached
    from studio.engine.semantic import SemanticConfig

    semantic = SemanticConfig(args.top_k, args.message_range, args.scope)
    with reading(args.path) as opened, vector_store_attached(opened, args.vector_store) as store:
        doc = context_document(store, args.thread, args.turn, last_messages=args.last_messages, semantic=semantic)
    print_json(doc) if args.json else _print_context(doc)
    return EXIT_OK

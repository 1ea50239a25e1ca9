"""What a server store must report, compared with the oracle Mastra recorded for it (shared by the server tests).

Each function takes a store TARGET (a PostgreSQL or libSQL-server URL) and the oracle `oracle.mjs`
wrote for it, runs the studio's CLI documents / Python API on TARGET and returns a list of
differences (empty when every value equals Mastra's).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from studio.cli import main
from studio.store import open_store
from studio.store.history import list_threads, recall

#: Every tab of a thread in the studio window (`--tab` names).
TABS = ["observations", "history", "messages", "participants", "working-memory", "timeline", "trace", "context",
        "health"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def tab_failures(target: str, thread_id: str, out_dir: Path) -> list[str]:
    """Open the studio on TARGET at THREAD_ID once per tab (`--screenshot`, offscreen); return the tabs that failed.

    `--screenshot` exits non-zero when a tab could not load (tests/ui/test_screenshot.py), so an empty list
    means every tab showed its data from the server. PNGs are left in OUT_DIR (`<tab>.png`).
    """
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    failed = []
    for tab in TABS:
        out = out_dir / f"{tab}.png"
        done = subprocess.run([sys.executable, "-m", "studio", target, "--screenshot", str(out), "--thread",
                               thread_id, "--tab", tab], capture_output=True, text=True, timeout=180, env=env)
        if done.returncode != 0 or "Traceback" in done.stderr or out.read_bytes()[:8] != PNG_MAGIC:
            failed.append(f"{tab}: exit {done.returncode}: {done.stderr[-1500:]}")
    return failed


def cli_json(argv: list[str]) -> dict:
    """Run the CLI with ARGV; return its JSON (AssertionError naming stderr when it exits non-zero)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, f"{argv}: exit {code}: {err.getvalue()}"
    return json.loads(out.getvalue())


def run_every_read_command(target: str) -> None:
    """Run every read command of the CLI on TARGET (a server store URL) as JSON: inspect, then tokens, recall and
    speakers of every thread, timeline and turn context of every thread with an OM record, doctor and threads.
    Each must exit 0 with a JSON document (`cli_json`); the reads-leave-the-data-unchanged tests call it."""
    data = cli_json(["inspect", target, "--json"])
    with_om = {tid for om in data["observational_memory"] for tid in om["status"]}
    assert with_om
    for t in data["threads"]:
        argvs = [["tokens", target, t["id"], "--json"], ["recall", target, "--thread", t["id"], "--all", "--json"],
                 ["speakers", target, "--thread", t["id"], "--json"]]
        if t["id"] in with_om:   # the Timeline and turn context need an OM record
            argvs += [["timeline", target, "--thread", t["id"], "--json"],
                      ["context", target, "--thread", t["id"], "--turn", "1", "--json"]]
        for argv in argvs:
            cli_json(argv)
    cli_json(["doctor", target, "--json"])
    cli_json(["threads", target, "--all", "--json"])


def inspect_differences(target: str, oracle: dict) -> list[str]:
    """Differences between `inspect --json` on TARGET and ORACLE (threads, statuses, histories)."""
    data = cli_json(["inspect", target, "--json"])
    diffs = []
    for resource_id, res in oracle["resources"].items():
        ours = [t for t in data["threads"] if t["resource_id"] == resource_id]
        if [t["id"] for t in ours] != [t["id"] for t in res["threads"]]:
            diffs.append(f"{resource_id}: threads {[t['id'] for t in ours]} != {[t['id'] for t in res['threads']]}")
        for o, m in zip(ours, res["threads"], strict=False):
            got = (o["title"], o["metadata"], o["created_at"], o["updated_at"])
            want = (m["title"], m["metadata"], m["createdAt"], m["updatedAt"])
            if got != want:
                diffs.append(f"thread {o['id']}: {got} != {want}")
    for t in data["threads"]:
        if t["message_count"] != len(oracle["threads"][t["id"]]["messages"]):
            diffs.append(f"thread {t['id']}: {t['message_count']} messages")
    om = {r["lookup_key"]: r for r in data["observational_memory"]}
    if set(om) != set(oracle["om"]):
        diffs.append(f"lookup keys {sorted(om)} != {sorted(oracle['om'])}")
    names = {"pending_tokens": "pendingTokens", "threshold": "threshold",
             "reflection_threshold": "effectiveObservationTokensThreshold",
             "unbuffered_pending_tokens": "unbufferedPendingTokens", "should_observe": "shouldObserve",
             "should_reflect": "shouldReflect", "buffered_chunk_count": "bufferedChunkCount",
             "buffered_chunk_tokens": "bufferedChunkTokens", "can_activate": "canActivate"}
    for key, expected in oracle["om"].items():
        got = om.get(key)
        if got is None:
            continue
        for thread_id, st in expected["status"].items():
            g = got["status"].get(thread_id)
            if g is None:
                diffs.append(f"{key}: no status for {thread_id}")
                continue
            for ours, theirs in names.items():
                if g[ours] != st[theirs]:
                    diffs.append(f"{key} {thread_id} {theirs}: {g[ours]} != {st[theirs]}")
            for ours, theirs in (("record_id", "recordId"), ("generation_count", "generationCount"),
                                 ("observation_token_count", "observationTokenCount")):
                if got[ours] != st[theirs]:
                    diffs.append(f"{key} {theirs}: {got[ours]} != {st[theirs]}")
        hist = [(h["record_id"], h["generation_count"], h["origin_type"], h["observation_token_count"])
                for h in got["history"]]
        want = [(h["id"], h["generationCount"], h["originType"], h["observationTokenCount"])
                for h in expected["history"]]
        if hist != want:
            diffs.append(f"{key} history {hist} != {want}")
    return diffs


def tokens_differences(target: str, oracle: dict) -> list[str]:
    """Differences between `tokens --json` (Mastra's estimate per message and per thread) and ORACLE."""
    diffs = []
    for thread_id, expected in oracle["tokens"].items():
        data = cli_json(["tokens", target, thread_id, "--json"])
        if data["per_message"] != expected["perMessage"]:
            bad = {k: (v, expected["perMessage"].get(k)) for k, v in data["per_message"].items()
                   if expected["perMessage"].get(k) != v}
            diffs.append(f"{thread_id} per message: {bad}")
        if data["all_messages"] != expected["allMessages"]:
            diffs.append(f"{thread_id} all: {data['all_messages']} != {expected['allMessages']}")
        if set(data["exact"]["per_message"]) != set(expected["perMessage"]):
            diffs.append(f"{thread_id}: exact counts for other messages")
    return diffs


def history_differences(target: str, oracle: dict) -> list[str]:
    """Differences between listThreads / recall through the Python API and ORACLE's recorded calls."""
    diffs = []
    with open_store(target) as store:
        for res in oracle["resources"].values():
            for case in res["listThreads"]:
                args = case["args"]
                try:
                    got = list_threads(store, filter=args.get("filter"), order_by=args.get("orderBy"),
                                       page=args.get("page", 0), per_page=args.get("perPage"))
                except Exception as exc:
                    diffs.append(f"listThreads {args}: {exc}")
                    continue
                if (got.thread_ids, got.total, got.has_more) != (case["threadIds"], case["total"], case["hasMore"]):
                    diffs.append(f"listThreads {args}: {(got.thread_ids, got.total, got.has_more)} != "
                                 f"{(case['threadIds'], case['total'], case['hasMore'])}")
        for thread_id, t in oracle["threads"].items():
            for case in t["recall"]:
                args = case["args"]
                try:
                    got = recall(store, thread_id, page=args.get("page"), per_page=args.get("perPage"),
                                 order_by=args.get("orderBy"), filter=args.get("filter"), include=args.get("include"))
                except Exception as exc:
                    diffs.append(f"recall {thread_id} {args}: {exc}")
                    continue
                if got.message_ids != case["messageIds"]:
                    diffs.append(f"recall {thread_id} {args}: ids differ")
                if "total" in case and got.total != case["total"]:
                    diffs.append(f"recall {thread_id} {args}: total {got.total} != {case['total']}")
                if "hasMore" in case and got.has_more != case["hasMore"]:
                    diffs.append(f"recall {thread_id} {args}: hasMore {got.has_more} != {case['hasMore']}")
    return diffs

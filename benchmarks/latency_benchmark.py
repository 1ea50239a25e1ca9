"""Measure how soon the studio gives up when it must not wait: a write refused on a held lock, a model call cancelled.

    python benchmarks/latency_benchmark.py [--json OUT.json] [--runs N]

These figures were wall-clock assertions in the tests (a refused write "< 5 s", a cancelled Reflect
preview "< 10 s"); the tests now check the behaviour (refused; aborted before the answer came) and
the speed is reported here, in ms (median and worst of N runs):
  write_refusal_ms  commit_reflection on a copy of the live/support fixture while another connection
                    holds BEGIN IMMEDIATE, a lock wait of 50 ms in all, until WriteRefused(reason="busy");
  llm_cancel_ms     LLMClient.complete against the local fake model server, which holds its answer;
                    from CancelToken.cancel() (once the request has arrived) until Cancelled is raised.
Figures are measurements, not assertions: rerun to compare before and after a change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def write_refusal_s() -> float:
    """Return the seconds commit_reflection takes to refuse while another connection holds the write lock."""
    import libsql

    from studio.engine.tokens import count_observations
    from studio.errors import WriteRefused
    from studio.store import open_store
    from studio.store.writes import commit_reflection
    from tests.conftest import copy_fixture

    with tempfile.TemporaryDirectory() as tmp:
        path = copy_fixture("live/support", Path(tmp))
        with open_store(path) as store:
            record = store.om_current("thread:support-1")
        holder = libsql.connect(f"file:{path}", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            started = time.perf_counter()
            try:
                commit_reflection(path, lookup_key="thread:support-1", expected_record_id=record.id,
                                  observations="* 🔴 (09:00) benchmark", busy_timeout_ms=50,
                                  observation_tokens=count_observations("* 🔴 (09:00) benchmark"))
            except WriteRefused as exc:
                if exc.reason != "busy":
                    raise
                return time.perf_counter() - started
            raise RuntimeError("the write was not refused")
        finally:
            holder.execute("ROLLBACK")
            holder.close()


def llm_cancel_s() -> float:
    """Return the seconds from cancelling a model call in flight until `complete` raises Cancelled."""
    from studio.llm import Cancelled, CancelToken, LLMClient
    from tests.fake_llm import FakeLLM, Reply

    with FakeLLM() as fake:
        fake.push(Reply(text="never sent", delay_s=3600))
        client = LLMClient.for_model("openai-compatible/fake", base_url=fake.base_url, env={}, keyring_get=None)
        token = CancelToken()
        cancelled_at: list[float] = []

        def cancel_once_sent() -> None:
            while not fake.requests:
                time.sleep(0.001)
            cancelled_at.append(time.perf_counter())
            token.cancel()

        threading.Thread(target=cancel_once_sent, daemon=True).start()
        try:
            client.complete("S", "P", cancel=token)
        except Cancelled:
            return time.perf_counter() - cancelled_at[0]
        raise RuntimeError("the call was not cancelled")


def main(argv=None) -> int:
    """Run each case N times; print (and optionally save) median and worst in ms."""
    p = argparse.ArgumentParser(description="Memory Studio latency benchmark")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    figures = {}
    for name, case in (("write_refusal_ms", write_refusal_s), ("llm_cancel_ms", llm_cancel_s)):
        runs = [case() for _ in range(max(1, args.runs))]
        figures[name] = {"median": _ms(statistics.median(runs)), "worst": _ms(max(runs))}
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
